//! Hostile requests over HTTP, one test per limit: every refusal is a JSON GraphQL error with
//! `extensions.code` and `extensions.requestId` (the id of the `x-request-id` header), the HTTP
//! status the limit calls for, and, when the limit is checked before execution, no store call
//! at all. Also: the per-request DynamoDB budget, the request timeout, the in-flight limit,
//! half-open connections, and a normal grid staying healthy while bombs fly.
//!
//! Nothing here sleeps to synchronise or asserts a duration: a parked request is observed
//! through the store wrapper's counters, and timeouts only guard against hangs.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::app::{Backend, TestApp, TestStore};
use async_trait::async_trait;
use gridgate::app::Settings;
use gridgate::auth::{mint_hs256, AuthArgs, AuthMode, Authenticator};
use gridgate::graphql::GatewayOptions;
use gridgate::http::admission::{Rate, Shares};
use gridgate::http::HttpLimits;
use gridgate::store::{
    BatchGetOutput, DynStore, GetOutput, Item, Key, Query, QueryOutput, RawItem, ScanOutput, Store,
    StoreError, WriteOp, WriteOutput,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

const BRIDGE: &str = "project-35e9";
const START: &str = "xattrib-3812";
const ISSUES: [&str; 5] = [
    "issue-020e",
    "issue-3544",
    "issue-67d1",
    "issue-83a4",
    "issue-af34",
];

/// The grid screen's request: a project, its columns and a 100-row page with every cell,
/// sorted by a custom field.
const GRID: &str = r#"
query Grid($project: ID!, $field: ID!) {
  project(id: $project) {
    id name
    customFields { id name type position }
    issues(first: 100, orderBy: {field: CUSTOM_FIELD, customFieldId: $field}) {
      nodes { id num name state fieldValues { field { id } value } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"#;

fn grid_variables() -> Value {
    json!({"project": BRIDGE, "field": START})
}

/// Guards against hangs only: nothing asserts how long anything took.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(60);

pub(crate) async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(HANG_GUARD, future).await {
        Ok(value) => value,
        Err(_) => panic!("{what} did not finish within {HANG_GUARD:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// A store wrapper that counts calls and can park reads.

/// Forwards to a real store, counting every call; while the gate is closed, reads wait at it
/// (and say so in `parked`) until it opens or the request is cancelled.
pub(crate) struct ProbeStore {
    inner: DynStore,
    calls: AtomicU64,
    gate: watch::Sender<bool>,
    parked: watch::Sender<u64>,
}

impl ProbeStore {
    pub(crate) fn new(inner: DynStore) -> Arc<ProbeStore> {
        Arc::new(ProbeStore {
            inner,
            calls: AtomicU64::new(0),
            gate: watch::Sender::new(true),
            parked: watch::Sender::new(0),
        })
    }

    pub(crate) fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }

    pub(crate) fn close_gate(&self) {
        self.gate.send_replace(false);
    }

    pub(crate) fn open_gate(&self) {
        self.gate.send_replace(true);
    }

    /// Waits until at least `n` reads have parked at the closed gate.
    pub(crate) async fn wait_parked(&self, n: u64) {
        let mut parked = self.parked.subscribe();
        within("a read parking at the gate", parked.wait_for(|p| *p >= n))
            .await
            .expect("the store outlives the test");
    }

    async fn enter(&self) {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut gate = self.gate.subscribe();
        if !*gate.borrow_and_update() {
            self.parked.send_modify(|p| *p += 1);
            let _ = gate.wait_for(|open| *open).await;
        }
    }
}

#[async_trait]
impl Store for ProbeStore {
    fn name(&self) -> &'static str {
        "probe"
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.enter().await;
        self.inner.get(key).await
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.enter().await;
        self.inner.get_consistent(key).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        self.enter().await;
        self.inner.batch_get(keys).await
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.enter().await;
        self.inner.query(query).await
    }

    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        self.enter().await;
        self.inner.query_raw(query).await
    }

    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        self.enter().await;
        self.inner.batch_get_raw(keys).await
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.scan(start, limit).await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.transact_write(ops).await
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.batch_put(items).await
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.inner.ensure_table().await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
}

/// The demo data served through a [`ProbeStore`] with `settings`; the sweeper's start-up
/// resume has finished, so the probe counts only what requests do.
pub(crate) async fn probed_app(backend: Backend, settings: Settings) -> (TestApp, Arc<ProbeStore>) {
    let test_store = TestStore::new(backend).await;
    gridgate::seed::demo(&test_store.store)
        .await
        .expect("seed demo");
    let probe = ProbeStore::new(test_store.store.clone());
    let app = TestApp::serve_with_settings(probe.clone(), test_store, settings).await;
    app.sweeps_idle().await;
    (app, probe)
}

async fn default_app(backend: Backend) -> (TestApp, Arc<ProbeStore>) {
    probed_app(backend, Settings::default()).await
}

// ---------------------------------------------------------------------------------------------
// Requests and replies.

/// An HTTP reply, its body parsed as JSON.
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The first error, after checking the refusal's shape: the `status`, no `data` (or
    /// `data: null`), and a first error carrying `code` and the response's request id.
    fn refused(&self, status: u16, code: &str) -> &Value {
        assert_eq!(self.status, status, "{:#}", self.body);
        assert!(
            self.body.get("data").is_none_or(Value::is_null),
            "a refusal has no data: {:#}",
            self.body
        );
        let error = &self.body["errors"][0];
        assert_eq!(error["extensions"]["code"], code, "{:#}", self.body);
        let id = self.header("x-request-id").expect("an x-request-id header");
        assert_eq!(error["extensions"]["requestId"], id, "{:#}", self.body);
        error
    }

    fn message(&self) -> &str {
        self.body["errors"][0]["message"].as_str().unwrap_or("")
    }

    /// `extensions.cost.dynamodbCalls`, when the gateway ran.
    fn calls(&self) -> Option<u64> {
        self.body["extensions"]["cost"]["dynamodbCalls"].as_u64()
    }

    /// A refusal before execution: the gateway reports no call, if it reports at all.
    fn assert_no_calls(&self) {
        assert!(
            self.calls().is_none_or(|calls| calls == 0),
            "a refusal before execution costs no call: {:#}",
            self.body
        );
    }
}

async fn reply(request: reqwest::RequestBuilder) -> Reply {
    let response = within("an HTTP request", request.send())
        .await
        .expect("the server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = within("a response body", response.text())
        .await
        .expect("a body");
    let body = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("a JSON body ({e}), got {status}: {text:?}"));
    Reply {
        status,
        headers,
        body,
    }
}

/// A POST of `query` asking for `application/graphql-response+json`, so request errors are 4xx.
async fn post(app: &TestApp, query: &str, variables: Value) -> Reply {
    post_body(app, json!({"query": query, "variables": variables})).await
}

async fn post_body(app: &TestApp, body: Value) -> Reply {
    reply(
        app.client
            .post(app.url("/graphql"))
            .header("accept", "application/graphql-response+json")
            .json(&body),
    )
    .await
}

/// Sends a hostile POST and checks it is refused before execution with `LIMIT_EXCEEDED`,
/// without one store call; returns the message.
async fn refused_before_execution(
    app: &TestApp,
    probe: &ProbeStore,
    query: &str,
    status: u16,
) -> String {
    let before = probe.calls();
    let reply = post(app, query, json!({})).await;
    reply.refused(status, "LIMIT_EXCEEDED");
    reply.assert_no_calls();
    assert_eq!(probe.calls(), before, "no store call for a refused query");
    reply.message().to_string()
}

/// `fragment F0 on Project { id name }` and `Fk` spreading `F(k-1)` twice, up to `Fn`.
fn fragment_bomb(n: usize) -> String {
    let mut doc = format!(r#"{{ project(id: "{BRIDGE}") {{ ...F{n} }} }}"#);
    doc.push_str("\nfragment F0 on Project { id name }");
    for k in 1..=n {
        doc.push_str(&format!(
            "\nfragment F{k} on Project {{ ...F{p} ...F{p} }}",
            p = k - 1
        ));
    }
    doc
}

const NESTED_CONNECTIONS: &str = r#"{ project(id: "project-35e9") {
  issues(first: 100) { nodes { project {
    issues(first: 100) { nodes { project {
      issues(first: 100) { nodes { id } }
    } } }
  } } }
} }"#;

// ---------------------------------------------------------------------------------------------
// Query limits (pre-execution).

async fn fragment_bombs_are_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    // F60 first: async-graphql's recursion-depth check would refuse it too, with another
    // message, so the analysis's message shows the analysis ran before async-graphql walks
    // the document. Only then is F31 safe to send: the deepest bomb that check lets through,
    // which it would walk 2^31 times without memoizing fragments.
    for n in [60, 20, 31] {
        let message = refused_before_execution(&app, &probe, &fragment_bomb(n), 400).await;
        assert!(message.contains("cost"), "F{n}: {message}");
    }
}

async fn nested_connections_are_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let message = refused_before_execution(&app, &probe, NESTED_CONNECTIONS, 400).await;
    assert!(message.contains("cost"), "{message}");
}

async fn aliases_are_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    // 1,000 aliased grid pages: refused (the token limit comes first at this size).
    let pages: String = (0..1000)
        .map(|i| {
            format!(
                r#" p{i}: project(id: "{BRIDGE}") {{ issues(first: 100) {{ nodes {{ id }} }} }}"#
            )
        })
        .collect();
    refused_before_execution(&app, &probe, &format!("{{{pages}}}"), 400).await;
    // 40 aliased lookups: small, cheap, but past the alias limit.
    let lookups: String = (0..40)
        .map(|i| format!(r#" t{i}: tenant(id: "tenant-0807") {{ name }}"#))
        .collect();
    let message = refused_before_execution(&app, &probe, &format!("{{{lookups}}}"), 400).await;
    assert!(message.contains("aliases"), "{message}");
}

/// 1,000 aliased pages with the token and size limits lifted: the alias limit itself refuses.
async fn aliases_are_refused_without_the_token_limit(backend: Backend) {
    let mut settings = Settings::default();
    settings.gateway.query_limits.max_tokens = 1_000_000;
    settings.http.max_query_bytes = 1024 * 1024;
    let (app, probe) = probed_app(backend, settings).await;
    let pages: String = (0..1000)
        .map(|i| {
            format!(
                r#" p{i}: project(id: "{BRIDGE}") {{ issues(first: 100) {{ nodes {{ id }} }} }}"#
            )
        })
        .collect();
    let message = refused_before_execution(&app, &probe, &format!("{{{pages}}}"), 400).await;
    assert!(message.contains("aliases"), "{message}");
}

/// 175 aliases of `nodes(ids:)` with 100 ids each: a ~262 KB request.
async fn huge_nodes_request_is_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let ids: Vec<String> = (0..100).map(|i| format!("\"issue-{i:05x}\"")).collect();
    let ids = ids.join(", ");
    let aliases: String = (0..175)
        .map(|i| format!(" n{i}: nodes(ids: [{ids}]) {{ id }}"))
        .collect();
    let query = format!("{{{aliases}}}");
    assert!(query.len() > 250_000, "{} bytes", query.len());
    let before = probe.calls();
    let reply = post(&app, &query, json!({})).await;
    let code = reply.body["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        ["LIMIT_EXCEEDED", "BAD_REQUEST"].contains(&code.as_str()),
        "{:#}",
        reply.body
    );
    reply.refused(if code == "BAD_REQUEST" { 413 } else { 400 }, &code);
    reply.assert_no_calls();
    assert_eq!(probe.calls(), before);
}

async fn depth_is_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    // project → (tenant → projects → nodes) × 5 → id: 17 levels, every page of one.
    let mut inner = "id".to_string();
    for _ in 0..5 {
        inner = format!("tenant {{ projects(first: 1) {{ nodes {{ {inner} }} }} }}");
    }
    let query = format!(r#"{{ project(id: "{BRIDGE}") {{ {inner} }} }}"#);
    let message = refused_before_execution(&app, &probe, &query, 400).await;
    assert!(message.contains("levels deep"), "{message}");
    // Inline fragments nest selection sets without adding fields: a refusal too.
    refused_before_execution(&app, &probe, &inline_fragment_tower(40), 400).await;
}

/// `{ ... on Query { ... on Query { … __typename } } }`, `n` inline fragments deep.
fn inline_fragment_tower(n: usize) -> String {
    format!(
        "{{{} __typename {}}}",
        "... on Query { ".repeat(n),
        "} ".repeat(n)
    )
}

async fn root_fields_are_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let query = format!("{{{}}}", " __typename".repeat(25));
    let message = refused_before_execution(&app, &probe, &query, 400).await;
    assert!(message.contains("root fields"), "{message}");
}

async fn directives_are_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let fields = " id @include(if: true)".repeat(60);
    let query = format!(r#"{{ project(id: "{BRIDGE}") {{{fields} }} }}"#);
    let message = refused_before_execution(&app, &probe, &query, 400).await;
    assert!(message.contains("directives"), "{message}");
}

async fn tokens_are_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    // 20,000 `__typename` tokens: refused, by size or by tokens, whichever comes first.
    let query = format!("{{{}}}", " __typename".repeat(20_000));
    refused_before_execution(&app, &probe, &query, 400).await;
    // 6,000 one-letter tokens fit the size limit: the token count refuses them.
    let query = format!("{{{}}}", " a".repeat(6_000));
    assert!(query.len() < HttpLimits::default().max_query_bytes);
    let message = refused_before_execution(&app, &probe, &query, 400).await;
    assert!(message.contains("tokens"), "{message}");
}

/// Values nested hundreds of levels deep (a list, a filter) overflowed a worker's stack in
/// the parser and aborted the server; they are refused by their nesting before anything
/// parses them, and the server goes on answering.
async fn deep_nesting_is_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let list = format!("{}\"x\"{}", "[".repeat(500), "]".repeat(500));
    let message = refused_before_execution(
        &app,
        &probe,
        &format!("{{ nodes(ids: {list}) {{ id }} }}"),
        400,
    )
    .await;
    assert!(
        message.contains("nests brackets more than 64 deep"),
        "{message}"
    );
    let filter = format!(
        "{}{{column: {{field: NUM}}, gt: \"1\"}}{}",
        "{not: ".repeat(300),
        "}".repeat(300)
    );
    let query = format!(
        r#"{{ project(id: "project-35e9") {{ issues(filter: {filter}) {{ nodes {{ num }} }} }} }}"#
    );
    let message = refused_before_execution(&app, &probe, &query, 400).await;
    assert!(message.contains("nests brackets"), "{message}");
    // Brackets in strings and comments are not nesting.
    let quoted = format!("{{ __typename # {}\n }}", "[".repeat(500));
    let body = app.post(&quoted, json!({})).await;
    assert_eq!(body["data"]["__typename"], "Query", "{body:#}");
}

async fn query_length_is_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    // Three tokens, 40 KB: only the length limit applies.
    let query = format!(r#"{{ project(id: "{}") {{ id }} }}"#, "x".repeat(40 * 1024));
    let message = refused_before_execution(&app, &probe, &query, 400).await;
    assert!(message.contains("bytes"), "{message}");
    // A legacy `application/json` client gets the same refusal with 200, as for any
    // GraphQL request error.
    let reply = reply(
        app.client
            .post(app.url("/graphql"))
            .header("accept", "application/json")
            .json(&json!({"query": query})),
    )
    .await;
    reply.refused(200, "LIMIT_EXCEEDED");
}

/// The length limit applies to GET documents before anything parses them.
async fn query_length_is_refused_over_get(backend: Backend) {
    let mut settings = Settings::default();
    settings.http.max_query_bytes = 1024;
    let (app, probe) = probed_app(backend, settings).await;
    let query = format!(
        r#"mutation {{ createTenant(input: {{name: "{}"}}) {{ tenant {{ id }} }} }}"#,
        "x".repeat(2048)
    );
    let before = probe.calls();
    let reply = reply(
        app.client
            .get(app.url("/graphql"))
            .header("accept", "application/graphql-response+json")
            .query(&[("query", &query)]),
    )
    .await;
    reply.refused(400, "LIMIT_EXCEEDED");
    assert_eq!(probe.calls(), before);
}

// ---------------------------------------------------------------------------------------------
// HTTP limits (no GraphQL at all).

async fn body_size_is_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let before = probe.calls();
    let big = format!(
        r#"{{"query": "{{ __typename }}", "variables": {{"pad": "{}"}}}}"#,
        "x".repeat(600 * 1024)
    );
    let declared = reply(
        app.client
            .post(app.url("/graphql"))
            .header("content-type", "application/json")
            .body(big.clone()),
    )
    .await;
    declared.refused(413, "BAD_REQUEST");
    // The rest of the body is never read, so the connection closes, and the answer says so:
    // a pooled client must not send its next request into it.
    assert_eq!(declared.header("connection"), Some("close"));
    // Without a Content-Length (chunked), the limit stops the read.
    let head = "POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
                transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let mut raw = head.as_bytes().to_vec();
    for chunk in big.as_bytes().chunks(16 * 1024) {
        raw.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        raw.extend_from_slice(chunk);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    let (status, body) = raw_exchange(&app, &raw).await;
    assert_eq!(status, 413, "{body}");
    let body: Value = serde_json::from_str(&body).expect("a JSON refusal");
    assert_eq!(body["errors"][0]["extensions"]["code"], "BAD_REQUEST");
    assert!(body["errors"][0]["extensions"]["requestId"].is_string());
    assert_eq!(probe.calls(), before);
}

async fn uri_length_is_refused(backend: Backend) {
    let (app, _probe) = default_app(backend).await;
    let query = format!(r#"{{ project(id: "{}") {{ id }} }}"#, "x".repeat(20 * 1024));
    let reply = reply(
        app.client
            .get(app.url("/graphql"))
            .query(&[("query", query)]),
    )
    .await;
    let error = reply.refused(414, "BAD_REQUEST");
    assert!(
        error["message"].as_str().unwrap().contains("POST"),
        "{error}"
    );
}

async fn headers_are_refused(backend: Backend) {
    let (app, _probe) = default_app(backend).await;
    let limits = HttpLimits::default();
    // Too many headers.
    let mut request = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({"query": "{ __typename }"}));
    for i in 0..limits.max_headers + 10 {
        request = request.header(format!("x-filler-{i}"), "1");
    }
    reply(request).await.refused(431, "BAD_REQUEST");
    // Headers too large together (one huge cookie, say).
    let reply = reply(
        app.client
            .post(app.url("/graphql"))
            .header("cookie", "x".repeat(limits.max_header_bytes + 1))
            .json(&json!({"query": "{ __typename }"})),
    )
    .await;
    reply.refused(431, "BAD_REQUEST");
}

async fn methods_are_refused(backend: Backend) {
    let (app, _probe) = default_app(backend).await;
    for method in [
        reqwest::Method::PUT,
        reqwest::Method::DELETE,
        reqwest::Method::PATCH,
    ] {
        let reply = reply(
            app.client
                .request(method.clone(), app.url("/graphql"))
                .header("content-type", "application/json")
                .body(r#"{"query": "{ __typename }"}"#),
        )
        .await;
        reply.refused(405, "BAD_REQUEST");
        let allow = reply.header("allow").unwrap_or_default();
        assert!(
            allow.contains("GET") && allow.contains("POST"),
            "{method}: {allow}"
        );
    }
    // The other routes answer only GET, and refuse the rest the same way.
    for path in ["/healthz", "/readyz", "/playground"] {
        let reply = reply(app.client.post(app.url(path)).body("x")).await;
        reply.refused(405, "BAD_REQUEST");
        assert_eq!(reply.header("allow"), Some("GET, HEAD"), "{path}");
    }
}

async fn content_types_are_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let before = probe.calls();
    let body = r#"{"query": "{ tenant(id: \"tenant-0807\") { name } }"}"#;
    // No Content-Type at all.
    let reply_none = reply(app.client.post(app.url("/graphql")).body(body)).await;
    reply_none.refused(415, "BAD_REQUEST");
    // What a cross-site form or a `no-cors` fetch can send without a preflight.
    for content_type in [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/graphql",
    ] {
        let reply = reply(
            app.client
                .post(app.url("/graphql"))
                .header("content-type", content_type)
                .body(body),
        )
        .await;
        reply.refused(415, "BAD_REQUEST");
    }
    assert_eq!(probe.calls(), before);
}

async fn batches_are_refused(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let before = probe.calls();
    let batch: Vec<Value> = (0..100)
        .map(|_| json!({"query": "{ tenant(id: \"tenant-0807\") { name } }"}))
        .collect();
    let reply = post_body(&app, Value::Array(batch)).await;
    let error = reply.refused(400, "BAD_REQUEST");
    assert!(
        error["message"].as_str().unwrap().contains("batched"),
        "{error}"
    );
    assert_eq!(probe.calls(), before);
}

// ---------------------------------------------------------------------------------------------
// The per-request DynamoDB budget (during execution: the whole request fails).

async fn call_budget_fails_the_whole_request(backend: Backend) {
    let settings = Settings {
        gateway: GatewayOptions {
            max_calls: 3,
            ..GatewayOptions::default()
        },
        ..Settings::default()
    };
    let (app, _probe) = probed_app(backend, settings).await;
    // A grid page by num takes 2 calls: within the budget.
    let fits = post(
        &app,
        r#"{ project(id: "project-35e9") { name issues(first: 100) { nodes { num } } } }"#,
        json!({}),
    )
    .await;
    assert_eq!(fits.status, 200, "{:#}", fits.body);
    assert!(fits.body.get("errors").is_none(), "{:#}", fits.body);
    // Five issues by id alone: one Query each.
    let ids = ISSUES.map(|id| format!("\"{id}\"")).join(", ");
    let nodes = format!("{{ nodes(ids: [{ids}]) {{ id ... on Issue {{ num }} }} }}");
    // Two grid pages sorted by custom fields: 3 calls each at least.
    let two_pages = format!(
        r#"{{
          a: project(id: "{BRIDGE}") {{ issues(orderBy: {{field: CUSTOM_FIELD, customFieldId: "xattrib-3812"}}) {{ nodes {{ num }} }} }}
          b: project(id: "{BRIDGE}") {{ issues(orderBy: {{field: CUSTOM_FIELD, customFieldId: "xattrib-47e5"}}) {{ nodes {{ num }} }} }}
        }}"#
    );
    for query in [nodes.as_str(), two_pages.as_str()] {
        let reply = post(&app, query, json!({})).await;
        let error = reply.refused(400, "LIMIT_EXCEEDED");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("DynamoDB calls"),
            "{error}"
        );
        // Project reads (which may be the visibility check of a row found by id) count
        // against a second allowance of the same size, so that the budget cannot tell
        // another tenant's row from a missing one: a request stays within twice its budget.
        let calls = reply.calls().expect("the cost of the refused request");
        assert!(calls <= 2 * 3, "{calls} calls: {:#}", reply.body);
    }
    // A legacy client sees the same whole-request failure with 200.
    let legacy = reply(
        app.client
            .post(app.url("/graphql"))
            .json(&json!({"query": nodes})),
    )
    .await;
    legacy.refused(200, "LIMIT_EXCEEDED");
}

async fn read_unit_budget_fails_the_whole_request(backend: Backend) {
    let settings = Settings {
        gateway: GatewayOptions {
            max_read_units: 1.0,
            ..GatewayOptions::default()
        },
        ..Settings::default()
    };
    let (app, _probe) = probed_app(backend, settings).await;
    // One GetItem (0.5 RCU) fits.
    let fits = post(&app, r#"{ tenant(id: "tenant-0807") { name } }"#, json!({})).await;
    assert!(fits.body.get("errors").is_none(), "{:#}", fits.body);
    assert_eq!(fits.body["data"]["tenant"]["name"], "ACME Engineering");
    // A grid page by name reads the project partition, the name rows and three issues
    // (2.5 RCU): the call after the first unit is refused and the request fails.
    let reply = post(
        &app,
        r#"{ project(id: "project-35e9") { name issues(orderBy: {field: NAME}) { nodes { num name } } } }"#,
        json!({}),
    )
    .await;
    let error = reply.refused(400, "LIMIT_EXCEEDED");
    assert!(
        error["message"].as_str().unwrap().contains("read capacity"),
        "{error}"
    );
    let calls = reply.calls().expect("the cost of the refused request");
    assert!(calls < 3, "{calls} calls: {:#}", reply.body);
    // Calls admitted together (four project reads issued at once) are counted as they
    // finish: past the ceiling, the request fails all the same.
    let concurrent = post(
        &app,
        r#"{ a: project(id: "project-35e9") { name } b: project(id: "project-7b7e") { name } c: issue(id: "issue-020e") { name } d: issue(id: "issue-3544") { name } }"#,
        json!({}),
    )
    .await;
    concurrent.refused(400, "LIMIT_EXCEEDED");
}

/// A repeated id in `nodes` would be loaded once and answered once per mention.
async fn repeated_node_ids_are_refused(backend: Backend) {
    let (app, _probe) = probed_app(backend, Settings::default()).await;
    let reply = post(
        &app,
        r#"{ nodes(ids: ["issue-020e", "issue-020e"]) { id } }"#,
        json!({}),
    )
    .await;
    assert_eq!(
        reply.body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{:#}",
        reply.body
    );
}

/// A response past the size limit is refused while it is written.
async fn responses_are_bounded(backend: Backend) {
    let settings = Settings {
        http: HttpLimits {
            max_response_bytes: 300,
            ..HttpLimits::default()
        },
        ..Settings::default()
    };
    let (app, _probe) = probed_app(backend, settings).await;
    let small = post(&app, "{ __typename }", json!({})).await;
    assert_eq!(small.body["data"]["__typename"], "Query");
    let reply = post(&app, GRID, grid_variables()).await;
    let error = reply.refused(400, "LIMIT_EXCEEDED");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("larger than 300 bytes"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Time and concurrency.

async fn slow_requests_time_out(backend: Backend) {
    let settings = Settings {
        http: HttpLimits {
            request_timeout: Duration::from_millis(200),
            ..HttpLimits::default()
        },
        ..Settings::default()
    };
    let (app, probe) = probed_app(backend, settings).await;
    probe.close_gate();
    let reply = post(&app, GRID, grid_variables()).await;
    let error = reply.refused(504, "TIMEOUT");
    assert!(
        error["message"].as_str().unwrap().contains("cancelled"),
        "{error}"
    );
    // The server still answers: what needs no store at once, the rest once the store does.
    let typename = post(&app, "{ __typename }", json!({})).await;
    assert_eq!(
        typename.body["data"]["__typename"], "Query",
        "{:#}",
        typename.body
    );
    probe.open_gate();
    let grid = post(&app, GRID, grid_variables()).await;
    assert!(grid.body.get("errors").is_none(), "{:#}", grid.body);
    assert_eq!(grid.body["data"]["project"]["name"], "Forth Rail Bridge");
}

/// A mutation that committed before the request failed is in the answer's `extensions.applied`,
/// whatever ended the request: the time limit (the read back of a created tenant parks at the
/// gate and the request is cancelled), or the call budget (a second mutation needs more calls
/// than are left). The budget's answer is no request error: it ran, so it is 200 with `data`.
async fn answers_say_what_was_applied_whatever_ends_the_request(backend: Backend) {
    let settings = Settings {
        http: HttpLimits {
            // Long enough for the transaction to commit before the request runs out of time:
            // DynamoDB Local runs transactions one at a time, and the other tests of this
            // binary share it, so 200 ms was sometimes spent queueing. The read back parks at
            // the gate until the timeout either way.
            request_timeout: Duration::from_secs(2),
            ..HttpLimits::default()
        },
        ..Settings::default()
    };
    let (app, probe) = probed_app(backend, settings).await;
    probe.close_gate();
    const CREATE: &str =
        r#"mutation { createTenant(input: {name: "Timed out"}) { tenant { id } } }"#;
    let timed_out = post(&app, CREATE, json!({})).await;
    let error = timed_out.refused(504, "TIMEOUT");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("clientMutationId"),
        "{error}"
    );
    let applied = &timed_out.body["extensions"]["applied"];
    assert_eq!(
        applied[0]["mutation"], "createTenant",
        "{:#}",
        timed_out.body
    );
    assert!(applied[0]["id"].as_str().unwrap().starts_with("tenant-"));
    probe.open_gate();

    let settings = Settings {
        gateway: GatewayOptions {
            max_calls: 3,
            ..GatewayOptions::default()
        },
        ..Settings::default()
    };
    let (app, _probe) = probed_app(backend, settings).await;
    let two = r#"mutation {
        a: updateTenant(input: {id: "tenant-0807", name: "Renamed"}) { tenant { name } }
        b: updateTenant(input: {id: "tenant-3cc8", name: "Renamed too"}) { tenant { name } }
    }"#;
    let reply = post(&app, two, json!({})).await;
    assert_eq!(reply.status, 200, "{:#}", reply.body);
    assert_eq!(
        reply.body["errors"][0]["extensions"]["code"], "LIMIT_EXCEEDED",
        "{:#}",
        reply.body
    );
    assert!(reply.body["data"].is_null(), "{:#}", reply.body);
    assert_eq!(
        reply.body["extensions"]["applied"],
        json!([{"mutation": "updateTenant", "id": "tenant-0807"}]),
        "{:#}",
        reply.body
    );
}

async fn requests_beyond_the_in_flight_limit_are_shed(backend: Backend) {
    let settings = Settings {
        http: HttpLimits {
            max_in_flight: 1,
            ..HttpLimits::default()
        },
        ..Settings::default()
    };
    let (app, probe) = probed_app(backend, settings).await;
    let app = Arc::new(app);
    probe.close_gate();
    let parked = {
        let app = app.clone();
        tokio::spawn(async move { post(&app, GRID, grid_variables()).await })
    };
    probe.wait_parked(1).await;
    let calls = probe.calls();
    let shed = post(&app, "{ __typename }", json!({})).await;
    shed.refused(503, "OVERLOADED");
    assert!(shed.header("retry-after").is_some(), "503 with Retry-After");
    assert_eq!(probe.calls(), calls, "a shed request costs nothing");
    // Health checks are not GraphQL requests and are never shed.
    let health = within("healthz", app.client.get(app.url("/healthz")).send())
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    probe.open_gate();
    let first = within("the parked request", parked).await.unwrap();
    assert!(first.body.get("errors").is_none(), "{:#}", first.body);
    assert_eq!(first.body["data"]["project"]["name"], "Forth Rail Bridge");
    let after = post(&app, GRID, grid_variables()).await;
    assert!(after.body.get("errors").is_none(), "{:#}", after.body);
}

/// While attackers send fragment bombs, nested connections and deep documents, the grid keeps
/// working, and every refusal costs no store call.
async fn healthy_under_attack(backend: Backend) {
    const ATTACKERS: usize = 8;
    const GRIDS: usize = 10;
    let (app, probe) = default_app(backend).await;
    let app = Arc::new(app);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(watch::Sender::new(0usize));
    let bombs = Arc::new([
        fragment_bomb(20),
        fragment_bomb(60),
        NESTED_CONNECTIONS.to_string(),
        inline_fragment_tower(40),
    ]);
    let attackers: Vec<_> = (0..ATTACKERS)
        .map(|i| {
            let (app, stop, sent, bombs) = (app.clone(), stop.clone(), sent.clone(), bombs.clone());
            tokio::spawn(async move {
                // (status, code, calls) of every reply, checked once the attack is over.
                let mut replies = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let bomb = &bombs[(i + replies.len()) % bombs.len()];
                    let reply = post(&app, bomb, json!({})).await;
                    let code = reply.body["errors"][0]["extensions"]["code"].clone();
                    replies.push((
                        reply.status,
                        code,
                        reply.calls(),
                        reply.message().to_string(),
                    ));
                    sent.send_modify(|s| *s += 1);
                }
                replies
            })
        })
        .collect();
    // The grid runs only once the attack is under way.
    let mut progress = sent.subscribe();
    within(
        "the attack starting",
        progress.wait_for(|s| *s >= ATTACKERS),
    )
    .await
    .unwrap();
    for _ in 0..GRIDS {
        let grid = post(&app, GRID, grid_variables()).await;
        assert_eq!(grid.status, 200, "{:#}", grid.body);
        assert!(grid.body.get("errors").is_none(), "{:#}", grid.body);
        let rows = grid.body["data"]["project"]["issues"]["nodes"]
            .as_array()
            .unwrap();
        assert_eq!(rows.len(), 3, "{:#}", grid.body);
    }
    stop.store(true, Ordering::SeqCst);
    let calls_during_attack = probe.calls();
    let mut refused = 0;
    for attacker in attackers {
        for (status, code, calls, message) in within("an attacker", attacker).await.unwrap() {
            assert_eq!(
                (status, code.as_str()),
                (400, Some("LIMIT_EXCEEDED")),
                "{message}"
            );
            assert_eq!(calls, Some(0), "{message}");
            refused += 1;
        }
    }
    assert!(refused >= ATTACKERS, "{refused}");
    assert!(calls_during_attack > 0, "the grids read the store");
}

// ---------------------------------------------------------------------------------------------
// Variables, introspection, suggestions.

async fn variable_errors_are_coded(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let before = probe.calls();
    let query = "query P($project: ID!, $first: Int) { project(id: $project) { issues(first: $first) { nodes { num } } } }";
    let missing = post(&app, query, json!({})).await;
    let error = missing.refused(400, "BAD_USER_INPUT");
    assert!(
        error["message"].as_str().unwrap().contains("$project"),
        "{error}"
    );
    let wrong = post(&app, query, json!({"project": BRIDGE, "first": "ten"})).await;
    let code = wrong.body["errors"][0]["extensions"]["code"].clone();
    assert!(
        code == "GRAPHQL_VALIDATION_FAILED" || code == "BAD_USER_INPUT",
        "{:#}",
        wrong.body
    );
    wrong.refused(400, code.as_str().unwrap());
    assert_eq!(
        probe.calls(),
        before,
        "bad variables are refused before any call"
    );
}

/// A document that passed validation skips it for later requests whose variables have the
/// same shape, and every reply is exactly the one a never-seen copy of the document gets
/// (which is validated in full): text variables may change their text, nothing else.
async fn validation_is_skipped_only_where_it_would_pass(backend: Backend) {
    let (app, _probe) = default_app(backend).await;
    let gateway = app.app.gateway().clone();
    let query = "query Page($project: ID!, $first: Int, $after: String, $order: IssueOrder) { \
        project(id: $project) { issues(first: $first, after: $after, orderBy: $order) { \
        edges { cursor node { num } } pageInfo { hasNextPage endCursor } } } }";
    let num = json!({"field": "NUM"});
    let first_page = post(
        &app,
        query,
        json!({"project": BRIDGE, "first": 2, "order": num}),
    )
    .await;
    let cursor = first_page.body["data"]["project"]["issues"]["pageInfo"]["endCursor"].clone();
    assert!(cursor.is_string(), "{:#}", first_page.body);
    let by_field = json!({"field": "CUSTOM_FIELD", "customFieldId": START});
    // Variables of the wrong type are refused before validation, as the client's input.
    const REFUSED: Option<&str> = Some("BAD_USER_INPUT");
    // (variables, whether validation is skipped (`None`: the variables are refused before
    // validation), the code of the reply's first error)
    let cases = [
        (
            json!({"project": BRIDGE, "first": 2, "order": num}),
            Some(true),
            None,
        ),
        (
            json!({"project": "project-0000", "first": 2, "order": num}),
            Some(true),
            None,
        ),
        (
            json!({"project": "x", "first": 2, "order": num}),
            Some(true),
            Some("BAD_USER_INPUT"),
        ),
        (
            json!({"project": BRIDGE, "first": 3, "order": num}),
            Some(false),
            None,
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": {"field": "NUMB"}}),
            None,
            REFUSED,
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": {"field": "NUMB"}}),
            None,
            REFUSED,
        ),
        (
            json!({"project": BRIDGE, "first": "2", "order": num}),
            None,
            REFUSED,
        ),
        (
            json!({"project": 35, "first": 2, "order": num}),
            Some(false),
            Some("BAD_USER_INPUT"),
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": num, "after": cursor}),
            Some(false),
            None,
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": num, "after": "x"}),
            Some(true),
            Some("BAD_USER_INPUT"),
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": num, "after": 5}),
            None,
            REFUSED,
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": num, "after": null}),
            Some(false),
            None,
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": by_field}),
            Some(false),
            None,
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": by_field}),
            Some(true),
            None,
        ),
        (
            json!({"project": BRIDGE, "first": 2, "order": num, "unused": 1}),
            Some(false),
            None,
        ),
    ];
    for (i, (variables, skips, code)) in cases.into_iter().enumerate() {
        let before = gateway.validation_counts();
        let reply = post(&app, query, variables.clone()).await;
        let counts = gateway.validation_counts();
        assert_eq!(
            (
                counts.skipped - before.skipped,
                counts.validated - before.validated
            ),
            match skips {
                Some(true) => (1, 0),
                Some(false) => (0, 1),
                None => (0, 0),
            },
            "case {i}: {variables}"
        );
        assert_eq!(
            reply.body["errors"][0]["extensions"]["code"].as_str(),
            code,
            "case {i}: {:#}",
            reply.body
        );
        // The same document under another text, so never seen before: validated in full.
        let fresh = post(&app, &format!("{query}\n# case {i}"), variables.clone()).await;
        assert_eq!(reply.status, fresh.status, "case {i}");
        assert_eq!(
            without_request_ids(reply.body),
            without_request_ids(fresh.body),
            "case {i}"
        );
    }
}

/// A reply's body without the request ids its errors carry (every request has its own).
fn without_request_ids(mut body: Value) -> Value {
    if let Some(errors) = body["errors"].as_array_mut() {
        for error in errors {
            if let Some(extensions) = error["extensions"].as_object_mut() {
                extensions.remove("requestId");
            }
        }
    }
    body
}

async fn introspection_can_be_turned_off(backend: Backend) {
    let settings = Settings {
        gateway: GatewayOptions {
            introspection: false,
            ..GatewayOptions::default()
        },
        ..Settings::default()
    };
    let (app, _probe) = probed_app(backend, settings).await;
    for query in [
        "{ __schema { types { name } } }",
        r#"{ __type(name: "Project") { fields { name } } }"#,
    ] {
        let reply = post(&app, query, json!({})).await;
        assert_eq!(
            reply.body["errors"][0]["extensions"]["code"], "FORBIDDEN",
            "{:#}",
            reply.body
        );
        assert!(reply.body.get("data").is_none(), "{:#}", reply.body);
        assert!(
            !reply.body.to_string().contains("customFields"),
            "{:#}",
            reply.body
        );
    }
    // `__typename` is not introspection and still works.
    let typename = post(&app, "{ __typename }", json!({})).await;
    assert_eq!(typename.body["data"]["__typename"], "Query");
}

async fn suggestions_are_off(backend: Backend) {
    let (app, _probe) = default_app(backend).await;
    for query in [
        r#"{ projct(id: "x") { id } }"#,
        r#"{ project(id: "project-35e9") { nam } }"#,
        r#"{ project(idd: "project-35e9") { name } }"#,
    ] {
        let reply = post(&app, query, json!({})).await;
        reply.refused(400, "GRAPHQL_VALIDATION_FAILED");
        let text = reply.body.to_string();
        assert!(!text.to_lowercase().contains("did you mean"), "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// Half-open connections (transport only: one store is enough).

/// Writes `bytes` on a fresh connection, then reads to the end: (status, body).
async fn raw_exchange(app: &TestApp, bytes: &[u8]) -> (u16, String) {
    let mut stream = within("connect", tokio::net::TcpStream::connect(app.addr))
        .await
        .expect("connect");
    // The server may answer (413) and close before taking the whole body.
    let _ = within("write", stream.write_all(bytes)).await;
    let mut response = Vec::new();
    let _ = within("read", stream.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP response: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Connects, writes `bytes` and waits for the server to close the connection: `read` returns
/// 0 or an error. Returns what the server sent before closing.
async fn closed_by_server(app: &TestApp, bytes: &[u8]) -> Vec<u8> {
    let mut stream = tokio::net::TcpStream::connect(app.addr)
        .await
        .expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match within("the server closing the connection", stream.read(&mut buf)).await {
            Ok(0) | Err(_) => return received,
            Ok(n) => received.extend_from_slice(&buf[..n]),
        }
    }
}

async fn half_open_app() -> TestApp {
    let settings = Settings {
        http: HttpLimits {
            header_read_timeout: Duration::from_millis(300),
            body_read_timeout: Duration::from_millis(300),
            ..HttpLimits::default()
        },
        ..Settings::default()
    };
    TestApp::spawn_with_settings(Backend::Embedded, settings).await
}

#[tokio::test]
async fn half_open_connections_are_closed() {
    let app = half_open_app().await;
    // A partial request line, then nothing.
    closed_by_server(&app, b"GET /graphql HT").await;
    // Headers begun but never finished (slowloris).
    closed_by_server(&app, b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-ty").await;
    // Nothing at all after connecting.
    closed_by_server(&app, b"").await;
    // The start of the HTTP/2 preface, then nothing.
    closed_by_server(&app, b"PRI * HTTP/2.0\r\n").await;
    // The whole HTTP/2 preface, then no frame.
    closed_by_server(&app, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
    // A keep-alive connection left idle after a complete request.
    let received = closed_by_server(&app, b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").await;
    assert!(
        String::from_utf8_lossy(&received).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&received)
    );
    // The server is fine.
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn slow_bodies_are_refused() {
    let app = half_open_app().await;
    // The body is announced but only part of it arrives.
    let received = closed_by_server(
        &app,
        b"POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
          content-length: 100\r\n\r\n{\"query\":",
    )
    .await;
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    let body: Value = serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(body["errors"][0]["extensions"]["code"], "BAD_REQUEST");
    assert!(body["errors"][0]["extensions"]["requestId"].is_string());
}

// ---------------------------------------------------------------------------------------------
// Fair shares between tenants.

pub(crate) const SECRET: &str = "abuse-secret-abuse-secret-abuse-secret";
pub(crate) const ACME: &str = "tenant-0807";
pub(crate) const MEDIA: &str = "tenant-3cc8";

pub(crate) fn jwt_settings(shares: Shares) -> Settings {
    let auth = Authenticator::from_args(&AuthArgs {
        auth: AuthMode::Jwt,
        jwt_secret: Some(SECRET.into()),
        ..AuthArgs::default()
    })
    .expect("jwt settings");
    Settings {
        auth,
        http: HttpLimits {
            max_in_flight: 8,
            shares,
            ..HttpLimits::default()
        },
        ..Settings::default()
    }
}

pub(crate) fn bearer(tenant: &str) -> String {
    let token = mint_hs256(
        SECRET,
        "tester",
        tenant,
        "grid:read grid:write",
        Duration::from_secs(600),
        None,
        None,
    )
    .expect("token");
    format!("Bearer {token}")
}

async fn post_as(app: &TestApp, authorization: &str, query: &str) -> Reply {
    reply(
        app.client
            .post(app.url("/graphql"))
            .header("accept", "application/graphql-response+json")
            .header("authorization", authorization)
            .json(&json!({ "query": query })),
    )
    .await
}

/// `gridgate_admission_refusals_total` for one reason and caller, from `/metrics`.
pub(crate) async fn refusals(app: &TestApp, reason: &str, caller: &str) -> u64 {
    let text = within("/metrics", app.client.get(app.url("/metrics")).send())
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let series =
        format!("gridgate_admission_refusals_total{{caller=\"{caller}\",reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0, |n| n.parse().unwrap())
}

/// A tenant with its share of requests in flight gets 429 with `Retry-After`, while another
/// tenant is served at once; the share comes back as its requests finish.
async fn a_tenant_past_its_share_does_not_take_the_others_room(backend: Backend) {
    let shares = Shares {
        caller_in_flight: 2,
        rate: None,
        cost_rate: None,
    };
    let (app, probe) = probed_app(backend, jwt_settings(shares)).await;
    let app = Arc::new(app);
    let (acme, media) = (bearer(ACME), bearer(MEDIA));
    const READ: &str = r#"{ tenant(id: "tenant-0807") { name } }"#;
    probe.close_gate();
    let parked: Vec<_> = (0..2)
        .map(|_| {
            let (app, acme) = (app.clone(), acme.clone());
            tokio::spawn(async move { post_as(&app, &acme, READ).await })
        })
        .collect();
    probe.wait_parked(2).await;
    let calls = probe.calls();
    let refused = post_as(&app, &acme, "{ __typename }").await;
    refused.refused(429, "RATE_LIMITED");
    assert_eq!(refused.header("retry-after"), Some("1"));
    // Another tenant, and an unauthenticated request, are answered as ever.
    let other = post_as(&app, &media, "{ __typename }").await;
    assert_eq!(other.status, 200, "{:#}", other.body);
    assert_eq!(other.body["data"]["__typename"], "Query");
    let anonymous = reply(
        app.client
            .post(app.url("/graphql"))
            .json(&json!({"query": "{ __typename }"})),
    )
    .await;
    anonymous.refused(401, "UNAUTHENTICATED");
    assert_eq!(probe.calls(), calls, "a refused request costs nothing");
    assert_eq!(refusals(&app, "caller_in_flight", "tenant").await, 1);
    probe.open_gate();
    for request in parked {
        let reply = within("a parked request", request).await.unwrap();
        assert_eq!(reply.body["data"]["tenant"]["name"], "ACME Engineering");
    }
    let after = post_as(&app, &acme, "{ __typename }").await;
    assert_eq!(after.status, 200, "{:#}", after.body);
}

/// Each tenant, and the unauthenticated traffic, has its own token bucket: past it, 429 with
/// the seconds until its next token in `Retry-After`; the others are served.
async fn each_tenant_has_its_own_rate(backend: Backend) {
    // A burst of 3, then one request an hour: nothing refills while the test runs.
    let shares = Shares {
        caller_in_flight: 100,
        rate: Some(Rate {
            refill: Duration::from_secs(3600),
            burst: std::num::NonZeroU32::new(3).unwrap(),
        }),
        cost_rate: None,
    };
    let (app, probe) = probed_app(backend, jwt_settings(shares)).await;
    let (acme, media) = (bearer(ACME), bearer(MEDIA));
    for _ in 0..3 {
        let ok = post_as(&app, &acme, "{ __typename }").await;
        assert_eq!(ok.status, 200, "{:#}", ok.body);
    }
    let calls = probe.calls();
    let limited = post_as(&app, &acme, r#"{ tenant(id: "tenant-0807") { name } }"#).await;
    limited.refused(429, "RATE_LIMITED");
    let retry_after: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!(retry_after > 3000 && retry_after <= 3600, "{retry_after}");
    assert_eq!(probe.calls(), calls, "a refused request costs nothing");
    for _ in 0..3 {
        let other = post_as(&app, &media, "{ __typename }").await;
        assert_eq!(other.status, 200, "{:#}", other.body);
    }
    // Bad credentials share one bucket of their own: always 401 (so a client whose token
    // expired refreshes it), counted past the bucket instead of logged.
    for _ in 0..4 {
        post_as(&app, "Bearer not-a-token", "{ __typename }")
            .await
            .refused(401, "UNAUTHENTICATED");
    }
    assert_eq!(refusals(&app, "rate", "unauthenticated").await, 1);
    // ...which is not a tenant's: a tenant that has sent nothing yet has its whole burst.
    let fresh = bearer("tenant-ffff");
    for _ in 0..3 {
        let ok = post_as(&app, &fresh, "{ __typename }").await;
        assert_eq!(ok.status, 200, "{:#}", ok.body);
    }
    post_as(&app, &media, "{ __typename }")
        .await
        .refused(429, "RATE_LIMITED");
    assert_eq!(refusals(&app, "rate", "tenant").await, 2);
}

/// Each tenant has its own bucket of query cost: a query is charged its estimated cost before
/// it runs, and past the bucket the tenant gets 429 with `Retry-After` while the others run the
/// same query.
async fn each_tenant_has_its_own_query_cost(backend: Backend) {
    // 5,000 points, then one an hour: nothing refills while the test runs.
    let shares = Shares {
        caller_in_flight: 100,
        rate: None,
        cost_rate: Some(Rate {
            refill: Duration::from_secs(3600),
            burst: std::num::NonZeroU32::new(5_000).unwrap(),
        }),
    };
    let (app, probe) = probed_app(backend, jwt_settings(shares)).await;
    let (acme, media) = (bearer(ACME), bearer(MEDIA));
    // A 100-row page: over 200 points, so the bucket empties within 25 of them.
    const PAGE: &str =
        r#"{ project(id: "project-35e9") { issues(first: 100) { nodes { num name } } } }"#;
    let mut ran = 0;
    let refused = loop {
        let reply = post_as(&app, &acme, PAGE).await;
        if reply.status != 200 {
            break reply;
        }
        assert!(reply.body.get("errors").is_none(), "{:#}", reply.body);
        ran += 1;
        assert!(ran < 25, "the bucket never emptied");
    };
    assert!(ran >= 1);
    let calls = probe.calls();
    let error = refused.refused(429, "RATE_LIMITED");
    assert!(
        error["message"].as_str().unwrap().contains("cost"),
        "{error}"
    );
    let retry_after: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!(retry_after > 60, "{retry_after}");
    assert_eq!(probe.calls(), calls, "a refused query costs no call");
    let other = post_as(
        &app,
        &media,
        r#"{ project(id: "project-7b7e") { issues(first: 100) { nodes { num name } } } }"#,
    )
    .await;
    assert_eq!(other.status, 200, "{:#}", other.body);
    // A query costing more than a full bucket is refused, and says why.
    let huge = format!(
        r#"{{ project(id: "project-7b7e") {{ {} }} }}"#,
        (0..6).map(|i| format!("p{i}: issues(first: 100) {{ nodes {{ num name state id fieldValues {{ value }} }} }}")).collect::<String>()
    );
    let refused = post_as(&app, &media, &huge).await;
    let error = refused.refused(400, "LIMIT_EXCEEDED");
    assert!(
        error["message"].as_str().unwrap().contains("allowance"),
        "{error}"
    );
    assert!(
        refused.header("retry-after").is_none(),
        "waiting would not help"
    );
    assert_eq!(refusals(&app, "cost", "tenant").await, 2);
}

/// Requests whose credentials or body are ambiguous are refused before anything runs: two
/// `Authorization` headers (over HTTP/1.1 and HTTP/2), a JSON body that repeats a key at any
/// depth, a URL that repeats a parameter.
async fn ambiguous_requests_are_refused(backend: Backend) {
    let (app, probe) = probed_app(backend, jwt_settings(Shares::default())).await;
    let (acme, media) = (bearer(ACME), bearer(MEDIA));
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    for client in [&app.client, &h2] {
        let twice = reply(
            client
                .post(app.url("/graphql"))
                .header("authorization", &acme)
                .header("authorization", &media)
                .json(&json!({"query": "{ __typename }"})),
        )
        .await;
        let error = twice.refused(400, "BAD_REQUEST");
        assert!(
            error["message"].as_str().unwrap().contains("Authorization"),
            "{error}"
        );
    }
    let calls = probe.calls();
    for body in [
        r#"{"query": "{ __typename }", "query": "mutation { deleteIssue(input: {id: \"issue-020e\"}) { deletedId } }"}"#,
        r#"{"query": "query($p: ID!) { project(id: $p) { name } }", "variables": {"p": "project-35e9", "p": "project-7b7e"}}"#,
        r#"{"query": "{ __typename }", "extensions": {"a": {"b": 1, "b": 2}}}"#,
    ] {
        let refused = reply(
            app.client
                .post(app.url("/graphql"))
                .header("authorization", &acme)
                .header("content-type", "application/json")
                .body(body),
        )
        .await;
        let error = refused.refused(400, "BAD_REQUEST");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("repeats the key"),
            "{body}: {error}"
        );
    }
    let repeated = reply(
        app.client
            .get(format!(
                "{}?query=%7B__typename%7D&query=%7Btenant(id%3A%22tenant-0807%22)%7Bname%7D%7D",
                app.url("/graphql")
            ))
            .header("authorization", &acme),
    )
    .await;
    repeated.refused(400, "BAD_REQUEST");
    assert_eq!(probe.calls(), calls, "refused before any call");
    // The scheme is case-insensitive.
    let upper = reply(
        app.client
            .post(app.url("/graphql"))
            .header("authorization", acme.replace("Bearer", "BEARER"))
            .json(&json!({"query": "{ __typename }"})),
    )
    .await;
    assert_eq!(upper.status, 200, "{:#}", upper.body);
}

/// A token valid for longer than the server's maximum lifetime is refused, whatever its
/// signature says.
async fn tokens_past_the_maximum_lifetime_are_refused(backend: Backend) {
    let mut settings = jwt_settings(Shares::default());
    settings.auth = Authenticator::from_args(&AuthArgs {
        auth: AuthMode::Jwt,
        jwt_secret: Some(SECRET.into()),
        jwt_max_lifetime: 3600,
        ..AuthArgs::default()
    })
    .unwrap();
    let (app, _probe) = probed_app(backend, settings).await;
    let token = |ttl| {
        mint_hs256(
            SECRET,
            "t",
            ACME,
            "grid:read",
            Duration::from_secs(ttl),
            None,
            None,
        )
        .unwrap()
    };
    let fits = post_as(&app, &format!("Bearer {}", token(3000)), "{ __typename }").await;
    assert_eq!(fits.status, 200, "{:#}", fits.body);
    let long = post_as(
        &app,
        &format!("Bearer {}", token(10 * 365 * 86400)),
        "{ __typename }",
    )
    .await;
    let error = long.refused(401, "UNAUTHENTICATED");
    assert!(
        error["message"].as_str().unwrap().contains("lifetime"),
        "{error}"
    );
}

/// The specification's variable rules: a `String` variable may not stand for an `ID`, and a
/// variable used only in a directive of `__typename` is used.
async fn variables_are_checked_where_they_are_used(backend: Backend) {
    let (app, probe) = default_app(backend).await;
    let calls = probe.calls();
    let string_for_id = post(
        &app,
        "query($p: String!) { project(id: $p) { id } }",
        json!({"p": BRIDGE}),
    )
    .await;
    let error = string_for_id.refused(400, "GRAPHQL_VALIDATION_FAILED");
    assert!(
        error["message"].as_str().unwrap().contains("`ID!`"),
        "{error}"
    );
    assert_eq!(probe.calls(), calls);
    let query = "query($b: Boolean!) { __typename @skip(if: $b) }";
    let skipped = post(&app, query, json!({"b": true})).await;
    assert_eq!(skipped.status, 200, "{:#}", skipped.body);
    assert_eq!(skipped.body["data"], json!({}));
    let kept = post(&app, query, json!({"b": false})).await;
    assert_eq!(kept.body["data"], json!({"__typename": "Query"}));
    let included = post(
        &app,
        "query($b: Boolean!) { project(id: \"project-35e9\") { t: __typename @include(if: $b) name } }",
        json!({"b": true}),
    )
    .await;
    assert_eq!(
        included.body["data"],
        json!({"project": {"t": "Project", "name": "Forth Rail Bridge"}})
    );
}

crate::both_stores!(
    a_tenant_past_its_share_does_not_take_the_others_room,
    each_tenant_has_its_own_rate,
    each_tenant_has_its_own_query_cost,
    answers_say_what_was_applied_whatever_ends_the_request,
    ambiguous_requests_are_refused,
    tokens_past_the_maximum_lifetime_are_refused,
    variables_are_checked_where_they_are_used,
    fragment_bombs_are_refused,
    nested_connections_are_refused,
    aliases_are_refused,
    aliases_are_refused_without_the_token_limit,
    huge_nodes_request_is_refused,
    depth_is_refused,
    root_fields_are_refused,
    directives_are_refused,
    tokens_are_refused,
    deep_nesting_is_refused,
    query_length_is_refused,
    query_length_is_refused_over_get,
    call_budget_fails_the_whole_request,
    read_unit_budget_fails_the_whole_request,
    repeated_node_ids_are_refused,
    responses_are_bounded,
    slow_requests_time_out,
    requests_beyond_the_in_flight_limit_are_shed,
    healthy_under_attack,
    variable_errors_are_coded,
    validation_is_skipped_only_where_it_would_pass,
    introspection_can_be_turned_off,
    suggestions_are_off,
);

/// Limits of the transport, refused before any GraphQL runs: the store behind does not
/// matter, so they run on the embedded one only.
mod transport {
    use super::*;

    #[tokio::test]
    async fn body_size_is_refused() {
        super::body_size_is_refused(Backend::Embedded).await
    }

    #[tokio::test]
    async fn uri_length_is_refused() {
        super::uri_length_is_refused(Backend::Embedded).await
    }

    #[tokio::test]
    async fn headers_are_refused() {
        super::headers_are_refused(Backend::Embedded).await
    }

    #[tokio::test]
    async fn methods_are_refused() {
        super::methods_are_refused(Backend::Embedded).await
    }

    #[tokio::test]
    async fn content_types_are_refused() {
        super::content_types_are_refused(Backend::Embedded).await
    }

    #[tokio::test]
    async fn batches_are_refused() {
        super::batches_are_refused(Backend::Embedded).await
    }
}
