//! Traces over HTTP, against both stores: a request's `request` span carries its id, its
//! operation's type and name, its cost and its outcome code, and each of its DynamoDB calls is
//! a `dynamodb` span below it with the call's operation, table, index, items, consumed
//! capacity and retries.
//!
//! One subscriber captures the spans of the whole test process, installed by every test before
//! it does anything else: a per-test (thread-local) subscriber would race with other tests
//! registering the same callsites, which tracing caches process-wide. It keeps only the spans
//! of requests whose id starts with [`TRACED`] (and the spans below them), so the other API
//! tests, which share this process, add nothing to it. Each test sends such an id and finds
//! its own spans by it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::support::app::{Backend, TestApp, TestStore};
use async_trait::async_trait;
use gridgate::paging::Limits;
use gridgate::store::{
    BatchGetOutput, DynStore, GetOutput, Item, Key, Query, QueryOutput, RawItem, ScanOutput, Store,
    StoreError, WriteOp, WriteOutput,
};
use serde_json::{json, Value};

const BRIDGE: &str = "project-35e9";

/// The prefix of the request ids whose spans are captured.
const TRACED: &str = "traced-";

/// A request id the capture keeps, unique in the process.
fn traced_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{TRACED}{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

const GRID: &str = r#"
query Grid($p: ID!, $first: Int, $order: IssueOrder) {
  project(id: $p) {
    id name
    customFields { id name type position }
    issues(first: $first, orderBy: $order) {
      edges { cursor node { id num name state fieldValues { field { id } value } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"#;

/// A span as the capturing layer saw it.
#[derive(Clone, Debug)]
struct SpanRecord {
    id: u64,
    name: &'static str,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
    closed: bool,
}

/// A tracing layer that keeps every span with its fields (as recorded so far) and parent.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<SpanRecord>>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
}

impl Capture {
    /// Whether the open span with this id is kept.
    fn keeps(&self, id: &tracing::span::Id) -> bool {
        let spans = self.0.lock().unwrap();
        spans.iter().any(|s| s.id == id.into_u64() && !s.closed)
    }

    /// The open span with this id (ids are reused once a span closes: it is the latest).
    fn with_open(&self, id: &tracing::span::Id, f: impl FnOnce(&mut SpanRecord)) {
        let mut spans = self.0.lock().unwrap();
        if let Some(span) = spans
            .iter_mut()
            .rev()
            .find(|s| s.id == id.into_u64() && !s.closed)
        {
            f(span);
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for Capture
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = ctx.span(id).and_then(|span| span.parent());
        let kept = if attrs.metadata().name() == "request" {
            fields
                .get("request_id")
                .is_some_and(|id| id.starts_with(TRACED))
        } else {
            parent
                .as_ref()
                .is_some_and(|parent| self.keeps(&parent.id()))
        };
        if !kept {
            return;
        }
        let parent = parent.map(|parent| parent.id().into_u64());
        self.0.lock().unwrap().push(SpanRecord {
            id: id.into_u64(),
            name: attrs.metadata().name(),
            parent,
            fields,
            closed: false,
        });
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        self.with_open(id, |span| values.record(&mut Fields(&mut span.fields)));
    }

    fn on_close(&self, id: tracing::span::Id, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        self.with_open(&id, |span| span.closed = true);
    }
}

/// The process's capturing subscriber, installed on first use (gridgate's spans at DEBUG).
fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let capture = Capture::default();
        let subscriber = tracing_subscriber::registry()
            .with(
                tracing_subscriber::filter::Targets::new()
                    .with_target("gridgate", tracing::Level::DEBUG),
            )
            .with(capture.clone());
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        capture
    })
}

/// The spans of the request with this id: its `request` span, then every span below it.
fn spans_of(request_id: &str) -> (SpanRecord, Vec<SpanRecord>) {
    let spans = capture().0.lock().unwrap().clone();
    let (index, request) = spans
        .iter()
        .enumerate()
        .rev()
        .find(|(_, s)| {
            s.name == "request"
                && s.fields.get("request_id").map(String::as_str) == Some(request_id)
        })
        .unwrap_or_else(|| panic!("no request span for {request_id}"));
    // Spans created after the request's, whose chain of parents reaches it (ids are reused,
    // so the chain is followed among the spans opened since).
    let later = &spans[index..];
    let below = |span: &SpanRecord| {
        let mut parent = span.parent;
        while let Some(id) = parent {
            if id == request.id {
                return true;
            }
            parent = later.iter().find(|s| s.id == id).and_then(|s| s.parent);
        }
        false
    };
    let children = later[1..].iter().filter(|s| below(s)).cloned().collect();
    (request.clone(), children)
}

/// POSTs a GraphQL request under a traced id; returns the id the response carries (the one
/// sent, which the transport propagates) and the body.
async fn post_traced(app: &TestApp, body: Value) -> (String, Value) {
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("x-request-id", traced_id())
        .json(&body)
        .send()
        .await
        .expect("POST");
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    (request_id, response.json().await.unwrap())
}

fn field(span: &SpanRecord, name: &str) -> String {
    span.fields.get(name).cloned().unwrap_or_default()
}

async fn dynamodb_calls_are_spans_of_their_request(backend: Backend) {
    capture();
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    let (request_id, body) = post_traced(
        &app,
        json!({
            "query": GRID,
            "operationName": "Grid",
            "variables": {"p": BRIDGE, "first": 100, "order": {"field": "NUM"}},
        }),
    )
    .await;
    let cost = body["extensions"]["cost"].clone();
    assert_eq!(cost["dynamodbCalls"], json!(2), "{body:#}");
    let rcu = cost["readCapacityUnits"].as_f64().unwrap();

    let (request, below) = spans_of(&request_id);
    assert_eq!(field(&request, "operation_type"), "query");
    assert_eq!(field(&request, "operation_name"), "Grid");
    assert_eq!(field(&request, "code"), "ok");
    assert_eq!(field(&request, "dynamodb_calls"), "2");
    assert_eq!(field(&request, "read_units").parse::<f64>().unwrap(), rcu);
    assert_eq!(field(&request, "write_units").parse::<f64>().unwrap(), 0.0);
    assert!(request.closed);

    let calls: Vec<&SpanRecord> = below.iter().filter(|s| s.name == "dynamodb").collect();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    let table = app.store.table_name().to_string();
    assert!(!table.is_empty());
    let mut indexes: Vec<String> = calls.iter().map(|s| field(s, "index")).collect();
    indexes.sort();
    assert_eq!(indexes, ["GSI1", "table"]);
    let mut read_units = 0.0;
    for call in &calls {
        assert_eq!(field(call, "operation"), "Query", "{call:#?}");
        assert_eq!(field(call, "source"), "api");
        assert_eq!(field(call, "table"), table);
        assert_eq!(field(call, "retries"), "0");
        assert_eq!(field(call, "throttles"), "0");
        assert_eq!(field(call, "write_units").parse::<f64>().unwrap(), 0.0);
        assert!(!call.fields.contains_key("error"), "{call:#?}");
        assert!(call.closed);
        read_units += field(call, "read_units").parse::<f64>().unwrap();
        // The project partition: the project and its 4 fields; GSI1 by num: the 3 issues.
        let expected = if field(call, "index") == "GSI1" { 3 } else { 5 };
        assert_eq!(field(call, "items"), expected.to_string(), "{call:#?}");
    }
    assert_eq!(read_units, rcu);
}

/// Forwards to a real store, but every Query fails as an unreachable DynamoDB would.
struct QueriesFail(DynStore);

#[async_trait]
impl Store for QueriesFail {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn table_name(&self) -> &str {
        self.0.table_name()
    }
    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.0.get(key).await
    }
    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.0.get_consistent(key).await
    }
    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        self.0.batch_get(keys).await
    }
    async fn query(&self, _query: &Query) -> Result<QueryOutput, StoreError> {
        Err(StoreError::Unavailable("connection refused".into()))
    }
    async fn query_raw(&self, _query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        Err(StoreError::Unavailable("connection refused".into()))
    }
    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        self.0.batch_get_raw(keys).await
    }
    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        self.0.scan(start, limit).await
    }
    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        self.0.transact_write(ops).await
    }
    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        self.0.batch_put(items).await
    }
    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.0.ensure_table().await
    }
    async fn ping(&self) -> Result<(), StoreError> {
        self.0.ping().await
    }
}

async fn a_failed_call_names_its_error(backend: Backend) {
    capture();
    let test_store = TestStore::new(backend).await;
    gridgate::seed::demo(&test_store.store).await.expect("seed");
    let failing: DynStore = Arc::new(QueriesFail(test_store.store.clone()));
    let app = TestApp::serve_store(failing, test_store, Limits::default()).await;
    let (request_id, body) = post_traced(
        &app,
        json!({"query": GRID, "variables": {"p": BRIDGE, "first": 10}}),
    )
    .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "STORE_UNAVAILABLE",
        "{body:#}"
    );
    let (request, below) = spans_of(&request_id);
    assert_eq!(field(&request, "operation_type"), "query");
    assert_eq!(field(&request, "code"), "STORE_UNAVAILABLE");
    let calls: Vec<&SpanRecord> = below.iter().filter(|s| s.name == "dynamodb").collect();
    assert!(!calls.is_empty(), "{below:#?}");
    for call in calls {
        assert_eq!(field(call, "operation"), "Query");
        assert_eq!(field(call, "error"), "unavailable", "{call:#?}");
        assert!(!call.fields.contains_key("items"), "{call:#?}");
    }
    // The failure is counted too.
    let metrics = app.app.metrics().expect("metrics").render().unwrap();
    assert!(
        metrics.lines().any(|l| l.starts_with(
            "gridgate_dynamodb_errors_total{error=\"unavailable\",operation=\"Query\",source=\"api\"}"
        )),
        "{metrics}"
    );
}

crate::both_stores!(
    dynamodb_calls_are_spans_of_their_request,
    a_failed_call_names_its_error,
);
