//! The authorization matrix over HTTP, on both stores: every query field, connection and
//! mutation × {own tenant, other tenant, no token, expired, wrong signature, wrong algorithm,
//! `alg: none`, read-only scope}.
//!
//! Another tenant's entities must behave exactly like ones that do not exist: the same
//! response, byte for byte once ids and request ids are normalised, including
//! `extensions.cost`.

use std::time::Duration;

use crate::support::app::{Backend, TestApp};
use base64::Engine;
use gridgate::app::Settings;
use gridgate::auth::{mint_hs256, AuthArgs, AuthMode, Authenticator, Claims};
use serde_json::{json, Value};

const SECRET: &str = "test-secret-test-secret-test-secret!";
const ACME: &str = "tenant-0807";
const MEDIA: &str = "tenant-3cc8";
const BRIDGE: &str = "project-35e9";
const NEWS: &str = "project-7b7e";
const ISSUE: &str = "issue-020e";
const FIELD: &str = "xattrib-3812";

/// ACME's ids and ids nobody has, of the same kinds.
const FOREIGN_AND_MISSING: [(&str, &str); 4] = [
    (ACME, "tenant-ffff"),
    (BRIDGE, "project-ffff"),
    (ISSUE, "issue-ffff"),
    (FIELD, "xattrib-ffff"),
];

/// Settings of an app that authenticates callers with HS256 tokens signed with [`SECRET`].
pub(crate) fn settings() -> Settings {
    let auth = Authenticator::from_args(&AuthArgs {
        auth: AuthMode::Jwt,
        jwt_secret: Some(SECRET.into()),
        ..AuthArgs::default()
    })
    .expect("jwt settings");
    Settings {
        auth,
        ..Settings::default()
    }
}

/// A token of `tenant`'s caller with `scope`, valid for ten minutes.
pub(crate) fn token(tenant: &str, scope: &str) -> String {
    mint_hs256(
        SECRET,
        "tester",
        tenant,
        scope,
        Duration::from_secs(600),
        None,
        None,
    )
    .expect("token")
}

const READ_WRITE: &str = "grid:read grid:write";

/// The ways a request can fail to authenticate, as `Authorization` header values.
fn bad_credentials() -> Vec<(&'static str, Option<String>)> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = |exp: u64| Claims {
        sub: "tester".into(),
        tenant: ACME.into(),
        scope: READ_WRITE.into(),
        exp,
        iss: None,
        aud: None,
    };
    let sign = |alg, secret: &str, claims: &Claims| {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(alg),
            claims,
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    };
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let unsigned = format!(
        "{}.{}.",
        b64.encode(br#"{"alg":"none","typ":"JWT"}"#),
        b64.encode(serde_json::to_vec(&claims(now + 600)).unwrap())
    );
    vec![
        ("no token", None),
        ("not a bearer token", Some(format!("Basic {SECRET}"))),
        (
            "expired",
            Some(format!(
                "Bearer {}",
                sign(jsonwebtoken::Algorithm::HS256, SECRET, &claims(now - 3600))
            )),
        ),
        (
            "wrong signature",
            Some(format!(
                "Bearer {}",
                sign(
                    jsonwebtoken::Algorithm::HS256,
                    "another-secret-another-secret-abc",
                    &claims(now + 600)
                )
            )),
        ),
        (
            "wrong algorithm",
            Some(format!(
                "Bearer {}",
                sign(jsonwebtoken::Algorithm::HS384, SECRET, &claims(now + 600))
            )),
        ),
        ("alg none", Some(format!("Bearer {unsigned}"))),
        ("garbage", Some("Bearer not.a.token".into())),
    ]
}

/// Sends a request with an optional `Authorization` value; returns status and body.
async fn send(
    app: &TestApp,
    authorization: Option<&str>,
    query: &str,
    variables: Value,
) -> (u16, Value) {
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .header("accept", "application/graphql-response+json")
        .json(&json!({ "query": query, "variables": variables }));
    if let Some(value) = authorization {
        request = request.header("authorization", value);
    }
    let response = request.send().await.expect("POST /graphql");
    let status = response.status().as_u16();
    if status == 401 {
        assert_eq!(
            response
                .headers()
                .get("www-authenticate")
                .map(|v| v.to_str().unwrap()),
            Some("Bearer")
        );
    }
    (status, response.json().await.expect("JSON body"))
}

/// The response with request ids removed and every foreign id replaced by the missing id of
/// its kind, so a foreign answer can be compared with a missing one.
fn normalised(body: &Value) -> String {
    let mut body = body.clone();
    if let Some(errors) = body.get_mut("errors").and_then(Value::as_array_mut) {
        for error in errors {
            if let Some(ext) = error.get_mut("extensions").and_then(Value::as_object_mut) {
                ext.remove("requestId");
            }
        }
    }
    let mut text = body.to_string();
    for (foreign, missing) in FOREIGN_AND_MISSING {
        text = text.replace(foreign, missing);
    }
    text
}

/// One operation of the matrix: its document and variables naming ACME's entities.
struct Op {
    name: &'static str,
    query: &'static str,
    variables: Value,
    mutation: bool,
}

fn with_missing_ids(variables: &Value) -> Value {
    let mut text = variables.to_string();
    for (foreign, missing) in FOREIGN_AND_MISSING {
        text = text.replace(foreign, missing);
    }
    serde_json::from_str(&text).unwrap()
}

fn queries() -> Vec<Op> {
    let q = |name, query, variables| Op {
        name,
        query,
        variables,
        mutation: false,
    };
    vec![
        q(
            "tenant",
            "query($id: ID!) { tenant(id: $id) { id name projects { nodes { id } } } }",
            json!({ "id": ACME }),
        ),
        q(
            "project",
            "query($id: ID!) { project(id: $id) { id name version tenant { id } customFields { id } } }",
            json!({ "id": BRIDGE }),
        ),
        q(
            "project issues connection",
            "query($id: ID!) { project(id: $id) { issues(first: 2) { edges { cursor node { id num } } pageInfo { hasNextPage endCursor } } } }",
            json!({ "id": BRIDGE }),
        ),
        q(
            "issue",
            "query($id: ID!) { issue(id: $id) { id name project { id } fieldValues { value field { id } } } }",
            json!({ "id": ISSUE }),
        ),
        q(
            "node tenant",
            "query($id: ID!) { node(id: $id) { id ... on Tenant { name } } }",
            json!({ "id": ACME }),
        ),
        q(
            "node project",
            "query($id: ID!) { node(id: $id) { id ... on Project { name } } }",
            json!({ "id": BRIDGE }),
        ),
        q(
            "node issue",
            "query($id: ID!) { node(id: $id) { id ... on Issue { name } } }",
            json!({ "id": ISSUE }),
        ),
        q(
            "node custom field",
            "query($id: ID!) { node(id: $id) { id ... on CustomField { name project { id } } } }",
            json!({ "id": FIELD }),
        ),
        q(
            "nodes",
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({ "ids": [ACME, BRIDGE, ISSUE, FIELD] }),
        ),
    ]
}

fn mutations() -> Vec<Op> {
    let m = |name, query, variables| Op {
        name,
        query,
        variables,
        mutation: true,
    };
    vec![
        m(
            "updateTenant",
            "mutation($id: ID!) { updateTenant(input: {id: $id, name: \"Renamed\"}) { tenant { id name } } }",
            json!({ "id": ACME }),
        ),
        m(
            "createProject",
            "mutation($id: ID!) { createProject(input: {tenantId: $id, name: \"New\"}) { project { id } } }",
            json!({ "id": ACME }),
        ),
        m(
            "updateProject",
            "mutation($id: ID!) { updateProject(input: {id: $id, name: \"Renamed\"}) { project { id name } } }",
            json!({ "id": BRIDGE }),
        ),
        m(
            "createCustomField",
            "mutation($id: ID!) { createCustomField(input: {projectId: $id, name: \"Cost\", type: INT}) { customField { id } } }",
            json!({ "id": BRIDGE }),
        ),
        m(
            "updateCustomField",
            "mutation($id: ID!) { updateCustomField(input: {id: $id, name: \"Begin\"}) { customField { id name } } }",
            json!({ "id": FIELD }),
        ),
        m(
            "createIssue",
            "mutation($id: ID!) { createIssue(input: {projectId: $id, name: \"New issue\"}) { issue { id num } } }",
            json!({ "id": BRIDGE }),
        ),
        m(
            "updateIssue",
            "mutation($id: ID!) { updateIssue(input: {id: $id, name: \"Renamed\"}) { issue { id name } } }",
            json!({ "id": ISSUE }),
        ),
        m(
            "setIssueFieldValues",
            "mutation($id: ID!, $field: ID!) { setIssueFieldValues(input: {issueId: $id, values: [{fieldId: $field, value: \"2024-01-01\"}]}) { issue { id } } }",
            json!({ "id": ISSUE, "field": FIELD }),
        ),
        m(
            "deleteIssue",
            "mutation($id: ID!) { deleteIssue(input: {id: $id}) { deletedId } }",
            json!({ "id": ISSUE }),
        ),
        m(
            "deleteCustomField",
            "mutation($id: ID!) { deleteCustomField(input: {id: $id}) { deletedId } }",
            json!({ "id": FIELD }),
        ),
        m(
            "deleteProject",
            "mutation($id: ID!) { deleteProject(input: {id: $id}) { deletedId } }",
            json!({ "id": BRIDGE }),
        ),
    ]
}

const CREATE_TENANT: &str =
    "mutation { createTenant(input: {name: \"Newco\"}) { tenant { id name } } }";

/// What ACME's data looks like, to prove refused writes changed nothing.
const SNAPSHOT: &str = "{ tenant(id: \"tenant-0807\") { name projects(first: 5) { nodes { id name version customFields { id name version } issues(first: 20) { nodes { id name version fieldValues { value } } } } } } }";

async fn authorization_matrix(backend: Backend) {
    let app = TestApp::spawn_with_settings(backend, settings()).await;
    app.seed_demo().await;
    let acme = format!("Bearer {}", token(ACME, READ_WRITE));
    let media = format!("Bearer {}", token(MEDIA, READ_WRITE));
    let acme_read_only = format!("Bearer {}", token(ACME, "grid:read"));
    let all: Vec<Op> = queries().into_iter().chain(mutations()).collect();

    // Bad credentials: 401 UNAUTHENTICATED for every operation, before anything runs.
    for (case, authorization) in bad_credentials() {
        for op in &all {
            let (status, body) = send(
                &app,
                authorization.as_deref(),
                op.query,
                op.variables.clone(),
            )
            .await;
            assert_eq!(status, 401, "{case} / {}: {body}", op.name);
            assert_eq!(
                body["errors"][0]["extensions"]["code"], "UNAUTHENTICATED",
                "{case} / {}: {body}",
                op.name
            );
            assert!(body.get("data").is_none(), "{body}");
        }
    }

    let before = send(&app, Some(&acme), SNAPSHOT, json!({})).await.1;
    assert!(before.get("errors").is_none(), "{before}");

    // Another tenant: exactly what an id nobody has gets, cost figures included.
    for op in &all {
        let (foreign_status, foreign) =
            send(&app, Some(&media), op.query, op.variables.clone()).await;
        let (missing_status, missing) = send(
            &app,
            Some(&media),
            op.query,
            with_missing_ids(&op.variables),
        )
        .await;
        assert_eq!(foreign_status, missing_status, "{}", op.name);
        assert_eq!(
            normalised(&foreign),
            normalised(&missing),
            "{}: another tenant's entity must look missing",
            op.name
        );
        if op.mutation {
            assert_eq!(
                foreign["errors"][0]["extensions"]["code"], "NOT_FOUND",
                "{}: {foreign}",
                op.name
            );
        } else {
            assert!(foreign.get("errors").is_none(), "{}: {foreign}", op.name);
            let text = foreign["data"].to_string();
            for (id, _) in FOREIGN_AND_MISSING {
                assert!(!text.contains(id), "{}: {text}", op.name);
            }
        }
    }
    // Nothing of ACME's changed.
    let after = send(&app, Some(&acme), SNAPSHOT, json!({})).await.1;
    // (Only the data: this nested query's call count can differ by one between runs, when a
    // project load is requested again while the first is still in flight.)
    assert_eq!(before["data"], after["data"]);

    // Read-only scope: queries run, mutations are FORBIDDEN (403) before anything runs.
    for op in &all {
        let (status, body) =
            send(&app, Some(&acme_read_only), op.query, op.variables.clone()).await;
        if op.mutation {
            assert_eq!(status, 403, "{}: {body}", op.name);
            assert_eq!(body["errors"][0]["extensions"]["code"], "FORBIDDEN");
            assert_eq!(body["extensions"]["cost"]["dynamodbCalls"], 0);
        } else {
            assert_eq!(status, 200, "{}: {body}", op.name);
            assert!(body.get("errors").is_none(), "{}: {body}", op.name);
        }
    }

    // The own tenant: every query finds its entity, every mutation applies.
    for op in queries() {
        let (status, body) = send(&app, Some(&acme), op.query, op.variables.clone()).await;
        assert_eq!(status, 200, "{}: {body}", op.name);
        assert!(body.get("errors").is_none(), "{}: {body}", op.name);
        let text = body["data"].to_string();
        assert!(!text.contains("null"), "{}: {text}", op.name);
    }
    for op in mutations() {
        let (status, body) = send(&app, Some(&acme), op.query, op.variables.clone()).await;
        assert_eq!(status, 200, "{}: {body}", op.name);
        assert!(body.get("errors").is_none(), "{}: {body}", op.name);
    }

    // Creating tenants needs grid:admin, checked before anything runs, like every scope.
    let (status, body) = send(&app, Some(&acme), CREATE_TENANT, json!({})).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "FORBIDDEN",
        "{body}"
    );
    let admin = format!("Bearer {}", token(ACME, "grid:read grid:write grid:admin"));
    let (_, body) = send(&app, Some(&admin), CREATE_TENANT, json!({})).await;
    assert_eq!(
        body["data"]["createTenant"]["tenant"]["name"], "Newco",
        "{body}"
    );
}

/// Cursors are bound to the tenant, list and ordering that issued them, and signed.
async fn cursors_do_not_cross_tenants(backend: Backend) {
    let app = TestApp::spawn_with_settings(backend, settings()).await;
    app.seed_demo().await;
    let acme = format!("Bearer {}", token(ACME, READ_WRITE));
    let media = format!("Bearer {}", token(MEDIA, READ_WRITE));
    let page = "query($id: ID!, $after: String) { project(id: $id) { issues(first: 1, after: $after) { nodes { id } pageInfo { endCursor } } } }";
    let (_, body) = send(&app, Some(&acme), page, json!({ "id": BRIDGE })).await;
    let cursor = body["data"]["project"]["issues"]["pageInfo"]["endCursor"]
        .as_str()
        .expect("a cursor")
        .to_string();
    // ACME's cursor on Big Media's own project: refused, never read as a position.
    let (_, body) = send(
        &app,
        Some(&media),
        page,
        json!({ "id": NEWS, "after": cursor }),
    )
    .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{body}"
    );
    // A tampered cursor: refused.
    let mut tampered = cursor.clone();
    tampered.pop();
    tampered.push(if cursor.ends_with('A') { 'B' } else { 'A' });
    let (_, body) = send(
        &app,
        Some(&acme),
        page,
        json!({ "id": BRIDGE, "after": tampered }),
    )
    .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{body}"
    );
    // The genuine cursor still works for its own tenant.
    let (_, body) = send(
        &app,
        Some(&acme),
        page,
        json!({ "id": BRIDGE, "after": cursor }),
    )
    .await;
    assert!(body.get("errors").is_none(), "{body}");
}

/// `clientMutationId` records are per caller: another tenant's retry with the same id neither
/// replays nor blocks the first caller's result.
async fn client_mutation_ids_are_per_caller(backend: Backend) {
    let app = TestApp::spawn_with_settings(backend, settings()).await;
    app.seed_demo().await;
    let acme = format!("Bearer {}", token(ACME, READ_WRITE));
    let media = format!("Bearer {}", token(MEDIA, READ_WRITE));
    let create = "mutation($p: ID!) { createIssue(input: {projectId: $p, name: \"Same id\", clientMutationId: \"shared-1\"}) { issue { id project { id } } } }";
    let (_, first) = send(&app, Some(&acme), create, json!({ "p": BRIDGE })).await;
    let (_, second) = send(&app, Some(&media), create, json!({ "p": NEWS })).await;
    assert_eq!(
        first["data"]["createIssue"]["issue"]["project"]["id"],
        BRIDGE
    );
    assert_eq!(
        second["data"]["createIssue"]["issue"]["project"]["id"], NEWS,
        "{second}"
    );
    assert_ne!(
        first["data"]["createIssue"]["issue"]["id"],
        second["data"]["createIssue"]["issue"]["id"]
    );
}

/// The call budget cannot tell another tenant's id from a missing one either: a request sized
/// to end exactly at the budget behaves the same whichever it names (the visibility checks a
/// found row needs count against a separate allowance, and reads count as charged).
async fn the_call_budget_does_not_reveal_existence(backend: Backend) {
    let mut settings = settings();
    settings.gateway.max_calls = 3;
    let app = TestApp::spawn_with_settings(backend, settings).await;
    app.seed_demo().await;
    let media = format!("Bearer {}", token(MEDIA, READ_WRITE));
    let query = "query($ids: [ID!]!) { nodes(ids: $ids) { id } }";
    for (foreign, missing) in [(ISSUE, "issue-ffff"), (FIELD, "xattrib-ffff")] {
        let kind = foreign.split('-').next().unwrap();
        let filler: Vec<String> = (0..2).map(|i| format!("{kind}-aaa{i}")).collect();
        let with = |id: &str| {
            let mut ids = filler.clone();
            ids.push(id.to_string());
            json!({ "ids": ids })
        };
        let (fs, f) = send(&app, Some(&media), query, with(foreign)).await;
        let (ms, m) = send(&app, Some(&media), query, with(missing)).await;
        assert_eq!(fs, ms, "{f} / {m}");
        assert_eq!(normalised(&f), normalised(&m), "{foreign}");
    }
    // And a mutation at the edge: NOT_FOUND spends one consistent read, found or not.
    let update = "mutation($id: ID!) { a: updateIssue(input: {id: $id, name: \"x\"}) { issue { id } } b: updateIssue(input: {id: $id, name: \"y\"}) { issue { id } } c: updateIssue(input: {id: $id, name: \"z\"}) { issue { id } } }";
    let (fs, f) = send(&app, Some(&media), update, json!({ "id": ISSUE })).await;
    let (ms, m) = send(&app, Some(&media), update, json!({ "id": "issue-ffff" })).await;
    assert_eq!(fs, ms);
    assert_eq!(normalised(&f), normalised(&m));
}

/// Scopes: a write-only token cannot read, not even through a mutation's payload; subjects
/// are bounded.
async fn mutations_need_read_and_write(backend: Backend) {
    let app = TestApp::spawn_with_settings(backend, settings()).await;
    app.seed_demo().await;
    let write_only = format!("Bearer {}", token(ACME, "grid:write"));
    let (status, body) = send(
        &app,
        Some(&write_only),
        "mutation { updateProject(input: {id: \"project-35e9\"}) { project { name issues { nodes { name } } } } }",
        json!({}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["errors"][0]["extensions"]["code"], "FORBIDDEN");
    assert!(body.get("data").is_none(), "{body}");
    let long_subject = mint_hs256(
        SECRET,
        &"s".repeat(3000),
        ACME,
        READ_WRITE,
        Duration::from_secs(600),
        None,
        None,
    )
    .unwrap();
    let (status, body) = send(
        &app,
        Some(&format!("Bearer {long_subject}")),
        "{ __typename }",
        json!({}),
    )
    .await;
    assert_eq!(status, 401, "{body}");
}

crate::both_stores!(
    authorization_matrix,
    cursors_do_not_cross_tenants,
    client_mutation_ids_are_per_caller,
    the_call_budget_does_not_reveal_existence,
    mutations_need_read_and_write
);
