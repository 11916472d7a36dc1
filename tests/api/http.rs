//! GraphQL over HTTP: the `graphql-http` package's server audits (the reference conformance
//! suite of the GraphQL-over-HTTP spec) run against a served gateway, plus the transport's own
//! rules: `Accept` negotiation, request ids, GET with `operationName`, `variables` and
//! `extensions`, and mutations refused over GET.
//!
//! The audit needs Node.js 18+ and npm (as the DynamoDB Local harness does): the package is
//! installed once, at the pinned version, into a cache directory
//! (`$GRIDGATE_GRAPHQL_HTTP_HOME`, else `<target dir>/graphql-http`); without them the test
//! fails, it never skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use crate::support::app::{Backend, TestApp};
use crate::support::npm::Packages;
use serde_json::{json, Value};

/// The audited version of `graphql-http`, and of its peer dependency `graphql`.
const GRAPHQL_HTTP_VERSION: &str = "1.23.1";
const GRAPHQL_VERSION: &str = "16.15.0";
/// Use this directory as the npm prefix the package is installed under.
const HOME_ENV: &str = "GRIDGATE_GRAPHQL_HTTP_HOME";

/// Audits that may warn, by id, each justified in README.md's "GraphQL over HTTP" section.
/// Any other warning or notice fails the test, and so does an error.
const EXPECTED_WARNINGS: &[&str] = &[];

// ---------------------------------------------------------------------------------------------
// The package, installed once.

/// The npm prefix holding `node_modules/graphql-http` at the pinned version.
fn graphql_http() -> &'static Path {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let packages = Packages {
        home_env: HOME_ENV,
        default_dir: "graphql-http",
        packages: &[
            ("graphql-http", GRAPHQL_HTTP_VERSION),
            ("graphql", GRAPHQL_VERSION),
        ],
    };
    match INSTALLED.get_or_init(|| packages.install()) {
        Ok(prefix) => prefix,
        Err(message) => panic!("{message}"),
    }
}

/// One audit's outcome, as `tests/support/graphql_http_audit.mjs` prints it.
#[derive(Debug, serde::Deserialize)]
struct Audit {
    id: String,
    name: String,
    status: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default, rename = "httpStatus")]
    http_status: Option<u16>,
}

/// Runs every server audit of `graphql-http` against `url`.
async fn audit(url: String) -> Vec<Audit> {
    let prefix = graphql_http().to_path_buf();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/graphql_http_audit.mjs");
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .arg(&script)
            .arg(&url)
            .arg(&prefix)
            .stdin(Stdio::null())
            .output()
    })
    .await
    .expect("the audit thread")
    .expect("could not run `node`: the audit needs Node.js 18+");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the audit script failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("audit summary ({e}): {stdout}"))
}

impl Audit {
    fn describe(&self) -> String {
        format!(
            "{} {} [{}]: {} (HTTP {})",
            self.status,
            self.id,
            self.name,
            self.reason.as_deref().unwrap_or("-"),
            self.http_status.map_or("-".into(), |s| s.to_string())
        )
    }
}

#[tokio::test]
async fn graphql_over_http_audit() {
    let app = TestApp::spawn(Backend::Embedded).await;
    app.seed_demo().await;
    let audits = audit(app.url("/graphql")).await;
    assert!(audits.len() >= 50, "the whole suite ran: {audits:#?}");
    let failed: Vec<String> = audits
        .iter()
        .filter(|a| a.status != "ok")
        .map(Audit::describe)
        .collect();
    let errors: Vec<&String> = failed.iter().filter(|a| a.starts_with("error")).collect();
    assert!(errors.is_empty(), "audits failed: {errors:#?}");
    let mut warnings: Vec<&str> = audits
        .iter()
        .filter(|a| a.status != "ok")
        .map(|a| a.id.as_str())
        .collect();
    warnings.sort_unstable();
    let mut expected = EXPECTED_WARNINGS.to_vec();
    expected.sort_unstable();
    assert_eq!(
        warnings, expected,
        "the warnings changed (justify each in README.md): {failed:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The transport's own rules.

const TENANT: &str = r#"{ tenant(id: "tenant-3cc8") { name } }"#;

async fn demo_app() -> TestApp {
    let app = TestApp::spawn(Backend::Embedded).await;
    app.seed_demo().await;
    app
}

/// A reply: status, content type, request id header, JSON body.
struct Reply {
    status: u16,
    content_type: String,
    request_id: Option<String>,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

async fn reply(request: reqwest::RequestBuilder) -> Reply {
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header("content-type").unwrap_or_default();
    let request_id = header("x-request-id");
    let text = response.text().await.expect("a body");
    let body =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("JSON ({e}), {status}: {text:?}"));
    Reply {
        status,
        content_type,
        request_id,
        headers,
        body,
    }
}

fn post_with_accept(app: &TestApp, accept: Option<&str>, query: &str) -> reqwest::RequestBuilder {
    let request = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": query }));
    match accept {
        Some(accept) => request.header("accept", accept),
        None => request,
    }
}

#[tokio::test]
async fn accept_negotiation() {
    let app = demo_app().await;
    const JSON: &str = "application/json";
    const GRAPHQL: &str = "application/graphql-response+json";
    for (accept, expected) in [
        (None, JSON),
        (Some("application/json"), JSON),
        (Some("*/*"), JSON),
        (Some("application/*"), JSON),
        (Some("text/html, */*;q=0.8"), JSON),
        (Some(GRAPHQL), GRAPHQL),
        (
            Some("application/graphql-response+json, application/json"),
            GRAPHQL,
        ),
        (
            Some("application/json, application/graphql-response+json"),
            GRAPHQL,
        ),
        (
            Some("application/graphql-response+json;q=0.5, application/json"),
            JSON,
        ),
        (
            Some("application/json;q=0.9, application/graphql-response+json"),
            GRAPHQL,
        ),
        (
            Some("application/graphql-response+json, */*;q=0.1"),
            GRAPHQL,
        ),
        // An explicit q=0 excludes a type even when a wildcard would match it.
        (Some("application/json;q=0, */*"), GRAPHQL),
        (Some("application/graphql-response+json;q=0, */*"), JSON),
    ] {
        let ok = reply(post_with_accept(&app, accept, TENANT)).await;
        assert_eq!(ok.status, 200, "{accept:?}: {:#}", ok.body);
        assert!(
            ok.content_type.starts_with(expected),
            "{accept:?}: {} instead of {expected}",
            ok.content_type
        );
        assert!(
            ok.content_type.contains("charset=utf-8"),
            "{}",
            ok.content_type
        );
        assert_eq!(ok.body["data"]["tenant"]["name"], "Big Media");
    }
    // Accepting neither: 406, a coded JSON refusal.
    for accept in [
        "text/html",
        "application/xml, text/*",
        "application/json;q=0",
    ] {
        let refused = reply(post_with_accept(&app, Some(accept), TENANT)).await;
        assert_eq!(refused.status, 406, "{accept}: {:#}", refused.body);
        assert!(
            refused.content_type.starts_with(JSON),
            "{}",
            refused.content_type
        );
        assert_eq!(
            refused.body["errors"][0]["extensions"]["code"],
            "BAD_REQUEST"
        );
        assert_eq!(
            refused.body["errors"][0]["extensions"]["requestId"].as_str(),
            refused.request_id.as_deref()
        );
    }
    // The media type decides the status of request errors: 200 for legacy JSON clients,
    // 400 without `data` for graphql-response+json.
    for (accept, status) in [(JSON, 200), (GRAPHQL, 400)] {
        for query in ["{ tenant(id: ", "{ nope }"] {
            let error = reply(post_with_accept(&app, Some(accept), query)).await;
            assert_eq!(error.status, status, "{accept} {query}: {:#}", error.body);
            assert!(error.body.get("data").is_none(), "{:#}", error.body);
            assert!(error.body["errors"][0]["extensions"]["code"].is_string());
        }
    }
    // Refusals of the transport come in the accepted media type too.
    let refused = reply(
        app.client
            .put(app.url("/graphql"))
            .header("accept", GRAPHQL)
            .json(&json!({ "query": TENANT })),
    )
    .await;
    assert_eq!(refused.status, 405);
    assert!(
        refused.content_type.starts_with(GRAPHQL),
        "{}",
        refused.content_type
    );
}

#[tokio::test]
async fn request_ids() {
    let app = demo_app().await;
    // Honoured when sent: in the header and in every error.
    let sent =
        reply(post_with_accept(&app, None, "{ nope }").header("x-request-id", "abc-123")).await;
    assert_eq!(sent.request_id.as_deref(), Some("abc-123"));
    assert_eq!(sent.body["errors"][0]["extensions"]["requestId"], "abc-123");
    // Transport refusals carry it too.
    let refused = reply(
        app.client
            .post(app.url("/graphql"))
            .header("x-request-id", "abc-123")
            .header("content-type", "text/plain")
            .body(TENANT),
    )
    .await;
    assert_eq!(refused.status, 415);
    assert_eq!(refused.request_id.as_deref(), Some("abc-123"));
    assert_eq!(
        refused.body["errors"][0]["extensions"]["requestId"],
        "abc-123"
    );
    // Successful responses return it in the header.
    let ok = reply(post_with_accept(&app, None, TENANT).header("x-request-id", "abc-123")).await;
    assert_eq!(ok.request_id.as_deref(), Some("abc-123"));
    assert!(ok.body.get("errors").is_none());

    // Minted otherwise, one per request: a lower-case ULID.
    let mut minted = Vec::new();
    for _ in 0..2 {
        let error = reply(post_with_accept(&app, None, "{ nope }")).await;
        let id = error.request_id.expect("a minted request id");
        assert_eq!(id.len(), 26, "{id}");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
            "{id}"
        );
        assert_eq!(
            error.body["errors"][0]["extensions"]["requestId"],
            id.as_str()
        );
        minted.push(id);
    }
    assert_ne!(minted[0], minted[1]);
    // Ids that could forge log lines or bloat them are replaced.
    for bad in ["has space", &"x".repeat(129)] {
        let error =
            reply(post_with_accept(&app, None, "{ nope }").header("x-request-id", bad)).await;
        let id = error.request_id.expect("a request id");
        assert_ne!(id, bad);
        assert_eq!(id.len(), 26, "{id}");
    }
}

#[tokio::test]
async fn get_requests() {
    let app = demo_app().await;
    let get = |params: Vec<(&'static str, String)>| {
        app.client
            .get(app.url("/graphql"))
            .header("accept", "application/graphql-response+json")
            .query(&params)
    };
    let document = r#"
        query Media { tenant(id: "tenant-3cc8") { name } }
        query Acme { tenant(id: "tenant-0807") { name } }
        query Named($id: ID!) { tenant(id: $id) { name } }
        mutation Create { createTenant(input: {name: "Nope"}) { tenant { id } } }
    "#;
    // `operationName` selects among several operations.
    for (operation, name) in [("Media", "Big Media"), ("Acme", "ACME Engineering")] {
        let ok = reply(get(vec![
            ("query", document.to_string()),
            ("operationName", operation.to_string()),
        ]))
        .await;
        assert_eq!(ok.status, 200, "{:#}", ok.body);
        assert_eq!(ok.body["data"]["tenant"]["name"], name, "{operation}");
    }
    // Variables and extensions travel as JSON text; `null` is as good as absent.
    let ok = reply(get(vec![
        ("query", document.to_string()),
        ("operationName", "Named".to_string()),
        ("variables", r#"{"id": "tenant-0807"}"#.to_string()),
        ("extensions", "{}".to_string()),
    ]))
    .await;
    assert_eq!(
        ok.body["data"]["tenant"]["name"], "ACME Engineering",
        "{:#}",
        ok.body
    );
    let ok = reply(get(vec![
        ("query", TENANT.to_string()),
        ("variables", "null".to_string()),
        ("extensions", "null".to_string()),
    ]))
    .await;
    assert_eq!(
        ok.body["data"]["tenant"]["name"], "Big Media",
        "{:#}",
        ok.body
    );
    for (name, value) in [
        ("variables", "[1]"),
        ("variables", "{not json"),
        ("extensions", "\"text\""),
    ] {
        let refused = reply(get(vec![
            ("query", TENANT.to_string()),
            (name, value.to_string()),
        ]))
        .await;
        assert_eq!(refused.status, 400, "{name}={value}: {:#}", refused.body);
        assert_eq!(
            refused.body["errors"][0]["extensions"]["code"],
            "BAD_REQUEST"
        );
    }
    // Several operations and no `operationName`: a request error.
    let ambiguous = reply(get(vec![("query", document.to_string())])).await;
    assert_eq!(ambiguous.status, 400, "{:#}", ambiguous.body);
    assert!(ambiguous.body.get("data").is_none());

    // Mutations never run over GET: the only operation, or the one selected, is refused
    // with 405 and `Allow: POST`.
    for params in [
        vec![(
            "query",
            r#"mutation { createTenant(input: {name: "Nope"}) { tenant { id } } }"#.to_string(),
        )],
        vec![
            ("query", document.to_string()),
            ("operationName", "Create".to_string()),
        ],
    ] {
        let refused = reply(get(params)).await;
        assert_eq!(refused.status, 405, "{:#}", refused.body);
        assert_eq!(
            refused.headers.get("allow").and_then(|v| v.to_str().ok()),
            Some("POST")
        );
        assert_eq!(
            refused.body["errors"][0]["extensions"]["code"],
            "BAD_REQUEST"
        );
    }
    // Nothing was created.
    let tenants = app
        .data(
            r#"{ nodes(ids: ["tenant-0807", "tenant-3cc8"]) { id } }"#,
            json!({}),
        )
        .await;
    assert_eq!(tenants["nodes"].as_array().unwrap().len(), 2);
    // The same mutation over POST runs.
    let created = app
        .data(
            r#"mutation { createTenant(input: {name: "Over POST"}) { tenant { name } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(created["createTenant"]["tenant"]["name"], "Over POST");
}
