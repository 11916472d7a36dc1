//! The browser pages (GraphiQL and GraphQL Playground, `src/http/pages.rs`) in a real browser
//! and offline, against both stores: Debian's Chromium, headless and driven by playwright-core
//! (`tests/support/browser_pages.mjs`), loads each page from a served gateway with every
//! request that is not for loopback recorded and blocked, waits for the editor, types a query
//! into it, presses the run button and reads the result pane. Any request that leaves the
//! machine, any Content-Security-Policy violation, console error or page error fails the test.
//! The pages' headers and the asset routes are checked over plain HTTP too.
//!
//! Needs Chromium, Node.js and npm: see `tests/support/browser.rs`.

use std::time::Instant;

use crate::support::app::{Backend, TestApp};
use crate::support::browser;
use gridgate::app::Settings;
use serde_json::{json, Value};

/// A query the demo data answers: the Forth Rail Bridge project and its issues.
const QUERY: &str =
    r#"{ project(id: "project-35e9") { name issues(first: 3) { nodes { num name state } } } }"#;

/// The page's Content-Security-Policy with its nonce replaced by `{nonce}`.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'nonce-{nonce}'; \
     connect-src 'self'; img-src 'self' data:; font-src 'self' data:; object-src 'none'; \
     frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// What `browser_pages.mjs` reports of one page.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageReport {
    name: String,
    status: Option<u16>,
    headers: serde_json::Map<String, Value>,
    requests: Vec<String>,
    blocked: Vec<String>,
    console_errors: Vec<String>,
    page_errors: Vec<String>,
    violations: Vec<Value>,
    steps: serde_json::Map<String, Value>,
    result: Option<String>,
    failure: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct Report {
    pages: Vec<PageReport>,
}

/// Loads both pages from `base_url` in the browser and runs [`QUERY`] in each.
async fn browse(base_url: String) -> Report {
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = json!({
        "baseUrl": base_url,
        "userDataDir": dir.path().join("profile"),
        "query": QUERY,
        "graphiqlDialog": "Open settings dialog",
    });
    let report = browser::run("browser_pages.mjs", spec).await;
    drop(dir);
    serde_json::from_value(report.clone())
        .unwrap_or_else(|e| panic!("browser report ({e}): {report}"))
}

/// Whether `url` is on this machine.
fn is_loopback(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .or_else(|| url.strip_prefix("ws://"));
    let Some(rest) = rest else {
        return url.starts_with("data:") || url.starts_with("blob:");
    };
    let host = rest.split('/').next().unwrap_or("");
    let host = if host.starts_with('[') {
        host.split(']').next().map(|h| &h[1..]).unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Checks a page's Content-Security-Policy against [`POLICY`] and returns its nonce.
fn check_policy(page: &str, policy: &str) -> String {
    let nonce = policy
        .split("'nonce-")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or_else(|| panic!("{page}: no style nonce in the policy {policy:?}"));
    assert!(
        nonce.len() >= 22
            && nonce
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{page}: a 128-bit base64url nonce, not {nonce:?}"
    );
    assert_eq!(
        policy,
        POLICY.replace("{nonce}", nonce),
        "{page}: the Content-Security-Policy"
    );
    nonce.to_string()
}

// ---------------------------------------------------------------------------------------------
// The tests.

async fn pages_app(backend: Backend) -> TestApp {
    // Served with the default limits: the tools' introspection queries (15 levels deep for
    // GraphiQL 3, 13 for the Playground) must pass them, or their explorers go blank.
    let app = TestApp::spawn_with_settings(backend, Settings::default()).await;
    app.seed_demo().await;
    app
}

/// Both pages render in the browser offline, under their policy, and run a query.
async fn pages_run_a_query_offline(backend: Backend) {
    let app = pages_app(backend).await;
    let expected = app.data(QUERY, json!({})).await;
    assert_eq!(expected["project"]["name"], "Forth Rail Bridge");

    let started = Instant::now();
    let report = browse(app.url("")).await;
    eprintln!(
        "{backend:?}: both pages in the browser took {} ms",
        started.elapsed().as_millis()
    );
    let names: Vec<&str> = report.pages.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["graphiql", "playground"]);
    for page in &report.pages {
        let name = &page.name;
        eprintln!("{backend:?} {name}: steps (ms) {:?}", page.steps);
        assert_eq!(page.failure, None, "{name} did not complete: {page:#?}");
        assert_eq!(page.status, Some(200), "{name}: {page:#?}");
        let policy = page.headers["content-security-policy"]
            .as_str()
            .unwrap_or_default();
        check_policy(name, policy);
        assert_eq!(page.headers["x-content-type-options"], "nosniff", "{name}");

        // Offline: nothing left the machine, and the page did load its assets and call the API.
        assert!(page.blocked.is_empty(), "{name} reached out: {page:#?}");
        let outside: Vec<&String> = page.requests.iter().filter(|u| !is_loopback(u)).collect();
        assert!(outside.is_empty(), "{name} requested {outside:#?}");
        let assets = page
            .requests
            .iter()
            .filter(|u| u.starts_with(&app.url("/assets/")))
            .count();
        assert!(
            assets >= 3,
            "{name} loaded its assets: {:#?}",
            page.requests
        );
        assert!(
            page.requests.iter().any(|u| *u == app.url("/graphql")),
            "{name} called the API: {:#?}",
            page.requests
        );

        assert!(
            page.violations.is_empty(),
            "{name}: Content-Security-Policy violations {:#?}",
            page.violations
        );
        assert!(
            page.console_errors.is_empty(),
            "{name}: console errors {:#?}",
            page.console_errors
        );
        assert!(
            page.page_errors.is_empty(),
            "{name}: page errors {:#?}",
            page.page_errors
        );

        let shown: Value = serde_json::from_str(page.result.as_deref().unwrap_or(""))
            .unwrap_or_else(|e| panic!("{name}: the result pane is not JSON ({e}): {page:#?}"));
        assert_eq!(shown["data"], expected, "{name}: the result pane");
    }
}

/// Each page response has its policy with a fresh nonce, handed to the first script only;
/// assets are served with their types and caching, and unknown ones are JSON 404s.
async fn pages_and_assets_over_http(backend: Backend) {
    let app = pages_app(backend).await;
    let get = |path: &str, accept: &str| {
        app.client
            .get(app.url(path))
            .header("accept", accept)
            .send()
    };
    let mut nonces = Vec::new();
    let mut assets = Vec::new();
    for (path, title) in [
        ("/graphql", "GraphiQL"),
        ("/graphiql", "GraphiQL"),
        ("/playground", "GraphQL Playground"),
        ("/playground", "GraphQL Playground"),
    ] {
        let response = get(path, "text/html").await.expect("GET page");
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(header("content-type"), "text/html; charset=utf-8", "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("cache-control"), "no-store", "{path}");
        let nonce = check_policy(path, &header("content-security-policy"));
        let html = response.text().await.expect("page body");
        assert!(html.contains(&format!("<title>{title}")), "{path}: {html}");
        // No inline script or style: every <script> has a src, and there is no <style>.
        assert_eq!(
            html.matches("<script").count(),
            html.matches("<script src=\"/assets/").count(),
            "{path}: {html}"
        );
        assert!(!html.contains("<style"), "{path}: {html}");
        assert!(!html.contains(" style="), "{path}: {html}");
        // The nonce goes to the first script alone.
        assert_eq!(html.matches(&nonce).count(), 1, "{path}: {html}");
        assert_eq!(
            html.find("<script"),
            html.find(&format!(
                "<script src=\"/assets/style-nonce.js\" nonce=\"{nonce}\">"
            )),
            "{path}: the nonce's script comes first: {html}"
        );
        assert!(!html.contains("http://") && !html.contains("https://"));
        nonces.push(nonce);
        for reference in html.split("=\"/assets/").skip(1) {
            let name = reference.split('"').next().unwrap_or_default().to_string();
            if !assets.contains(&name) {
                assets.push(name);
            }
        }
    }
    let mut distinct = nonces.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), nonces.len(), "a fresh nonce per response");

    assert!(assets.len() >= 9, "{assets:?}");
    for name in &assets {
        let path = format!("/assets/{name}");
        let response = get(&path, "*/*").await.expect("GET asset");
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        let header = |h: &str| {
            headers
                .get(h)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        let expected_type = if name.ends_with(".js") {
            "text/javascript; charset=utf-8"
        } else {
            "text/css; charset=utf-8"
        };
        assert_eq!(header("content-type"), expected_type, "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        // Vendored files carry their version in their name and may be kept for good; the
        // others are revalidated.
        let versioned = name.chars().any(|c| c.is_ascii_digit());
        assert_eq!(
            header("cache-control"),
            if versioned {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            },
            "{path}"
        );
        let etag = header("etag");
        assert!(etag.starts_with('"') && etag.len() > 2, "{path}: {etag}");
        let body = response.bytes().await.expect("asset body");
        assert!(!body.is_empty(), "{path}");
        let revalidated = app
            .client
            .get(app.url(&path))
            .header("if-none-match", &etag)
            .send()
            .await
            .expect("conditional GET");
        assert_eq!(revalidated.status(), 304, "{path}");
    }

    let licence = get("/assets/graphiql-3.8.3.LICENSE", "*/*")
        .await
        .expect("licence");
    assert_eq!(licence.status(), 200);
    assert!(licence.text().await.expect("text").contains("MIT License"));

    for missing in [
        "/assets/nope.js",
        "/assets/..%2FCargo.toml",
        "/assets/pages.css.map",
    ] {
        let response = get(missing, "*/*").await.expect("GET missing asset");
        assert_eq!(response.status(), 404, "{missing}");
        let body: Value = response.json().await.expect("a JSON refusal");
        assert_eq!(body["errors"][0]["extensions"]["code"], "BAD_REQUEST");
    }
    let post = app
        .client
        .post(app.url("/assets/pages.css"))
        .body("x")
        .send()
        .await
        .expect("POST asset");
    assert_eq!(post.status(), 405);
}

crate::both_stores!(pages_run_a_query_offline, pages_and_assets_over_http);
