//! Operations over HTTP, against both stores: `/metrics` scraped before and after each
//! request, asserting exact deltas (each app has its own registry, so tests running in
//! parallel do not disturb each other's counts): the DynamoDB calls and read units of a grid
//! page against its `extensions.cost`, requests by operation type and outcome code (HTTP
//! refusals included), the in-flight gauge while a request is held inside the store, our own
//! retries of unprocessed keys; and the exposition parsed strictly as Prometheus text. The
//! tracing spans are checked in `traces.rs`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::support::app::{Backend, TestApp, TestStore};
use async_trait::async_trait;
use gridgate::app::Settings;
use gridgate::auth::{AuthArgs, AuthMode, Authenticator};
use gridgate::paging::Limits;
use gridgate::store::{
    AttributeValue, BatchGetOutput, DynStore, GetOutput, Item, Key, Query, QueryOutput, RawItem,
    ScanOutput, Store, StoreError, WriteOp, WriteOutput,
};
use serde_json::{json, Value};
use tokio::sync::Notify;

const BRIDGE: &str = "project-35e9";

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

// ---------------------------------------------------------------------------------------------
// The Prometheus text format, parsed strictly.

/// One sample line: name, labels, value.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A parsed exposition.
#[derive(Debug)]
struct Exposition {
    samples: Vec<Sample>,
}

impl Exposition {
    /// The value of the sample with exactly these labels; 0 when absent (a counter series
    /// that has not been created yet).
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels == labels)
            .map_or(0.0, |s| s.value)
    }

    /// The sum over every sample of `name` whose labels include `having`.
    fn sum(&self, name: &str, having: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                having
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(v))
            })
            .map(|s| s.value)
            .sum()
    }
}

fn is_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => text.parse().map_err(|_| format!("bad value {text:?}")),
    }
}

/// Parses the text format (version 0.0.4) and checks what a scraper relies on: every sample
/// belongs to a family declared by `# TYPE` (before it, once), names and labels are valid,
/// label values are quoted and escaped, no series is repeated, and each histogram's buckets
/// are cumulative, end with `+Inf` and agree with `_count`.
fn parse_exposition(text: &str) -> Result<Exposition, String> {
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut samples: Vec<Sample> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", n + 1);
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (keyword, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            if !is_metric_name(name) {
                return Err(at("bad metric name".into()));
            }
            match keyword {
                "HELP" => {}
                "TYPE" => {
                    let ty = parts.next().unwrap_or("");
                    if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&ty) {
                        return Err(at("bad type".into()));
                    }
                    if types.insert(name.into(), ty.into()).is_some() {
                        return Err(at("family declared twice".into()));
                    }
                }
                _ => return Err(at("unknown comment".into())),
            }
            continue;
        }
        if line.is_empty() {
            return Err(at("empty line".into()));
        }
        let name_end = line.find(['{', ' ']).ok_or_else(|| at("no value".into()))?;
        let name = &line[..name_end];
        if !is_metric_name(name) {
            return Err(at("bad sample name".into()));
        }
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices().peekable();
            let end = loop {
                let (start, c) = chars.next().ok_or_else(|| at("unclosed labels".into()))?;
                if c == '}' {
                    break start;
                }
                let eq = body[start..]
                    .find('=')
                    .ok_or_else(|| at("label without '='".into()))?
                    + start;
                let label = &body[start..eq];
                if !is_label_name(label) {
                    return Err(at(format!("bad label name {label:?}")));
                }
                while chars.peek().is_some_and(|(i, _)| *i <= eq) {
                    chars.next();
                }
                if chars.next().map(|(_, c)| c) != Some('"') {
                    return Err(at("unquoted label value".into()));
                }
                let mut value = String::new();
                loop {
                    match chars.next().map(|(_, c)| c) {
                        Some('"') => break,
                        Some('\\') => match chars.next().map(|(_, c)| c) {
                            Some('\\') => value.push('\\'),
                            Some('"') => value.push('"'),
                            Some('n') => value.push('\n'),
                            _ => return Err(at("bad escape".into())),
                        },
                        Some(c) => value.push(c),
                        None => return Err(at("unterminated label value".into())),
                    }
                }
                if labels.insert(label.to_string(), value).is_some() {
                    return Err(at("repeated label".into()));
                }
                match chars.peek().map(|(_, c)| *c) {
                    Some(',') => {
                        chars.next();
                    }
                    Some('}') => {}
                    _ => return Err(at("expected ',' or '}'".into())),
                }
            };
            rest = &body[end + 1..];
        }
        let mut fields = rest
            .strip_prefix(' ')
            .ok_or_else(|| at("no space before the value".into()))?
            .split(' ');
        let value = parse_value(fields.next().unwrap_or("")).map_err(at)?;
        if let Some(timestamp) = fields.next() {
            timestamp
                .parse::<i64>()
                .map_err(|_| at("bad timestamp".into()))?;
        }
        if fields.next().is_some() {
            return Err(at("trailing text".into()));
        }
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                name.strip_suffix(suffix).filter(|f| {
                    types
                        .get(*f)
                        .is_some_and(|t| t == "histogram" || t == "summary")
                })
            })
            .unwrap_or(name);
        if !types.contains_key(family) {
            return Err(at(format!("sample of undeclared family {family}")));
        }
        let sample = Sample {
            name: name.to_string(),
            labels,
            value,
        };
        if samples
            .iter()
            .any(|s| s.name == sample.name && s.labels == sample.labels)
        {
            return Err(at("repeated series".into()));
        }
        samples.push(sample);
    }
    // Histograms: per series (labels without `le`), cumulative buckets ending at +Inf = count.
    for (family, _) in types.iter().filter(|(_, t)| *t == "histogram") {
        let bucket = format!("{family}_bucket");
        let mut series: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
        for s in samples.iter().filter(|s| s.name == bucket) {
            let mut labels = s.labels.clone();
            let le = labels
                .remove("le")
                .ok_or_else(|| format!("{bucket} without le"))?;
            series
                .entry(labels)
                .or_default()
                .push((parse_value(&le)?, s.value));
        }
        for (labels, buckets) in series {
            let mut last = (f64::NEG_INFINITY, 0.0);
            for &(le, count) in &buckets {
                if le <= last.0 || count < last.1 {
                    return Err(format!("{bucket}{labels:?}: buckets not cumulative"));
                }
                last = (le, count);
            }
            let count = samples
                .iter()
                .find(|s| s.name == format!("{family}_count") && s.labels == labels)
                .map(|s| s.value);
            if last.0 != f64::INFINITY || count != Some(last.1) {
                return Err(format!("{bucket}{labels:?}: +Inf bucket is not _count"));
            }
        }
    }
    Ok(Exposition { samples })
}

#[test]
fn the_parser_refuses_what_scrapers_refuse() {
    let ok = "# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"q\\\"\\\\\"} 1\n";
    assert_eq!(
        parse_exposition(ok)
            .unwrap()
            .value("x_total", &[("a", "q\"\\")]),
        1.0
    );
    for bad in [
        "x_total 1\n",                     // undeclared
        "# TYPE x counter\nx{a=b} 1\n",    // unquoted
        "# TYPE x counter\nx{a=\"b\"}1\n", // no space
        "# TYPE x counter\nx 1\nx 2\n",    // repeated series
        "# TYPE x counter\nx one\n",       // not a number
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
    ] {
        assert!(parse_exposition(bad).is_err(), "accepted {bad:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers.

async fn scrape(app: &TestApp) -> Exposition {
    let response = app
        .client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let text = response.text().await.expect("body");
    parse_exposition(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn requests(m: &Exposition, ty: &str, code: &str) -> f64 {
    m.value("gridgate_requests_total", &[("type", ty), ("code", code)])
}

fn calls(m: &Exposition, operation: &str) -> f64 {
    m.value(
        "gridgate_dynamodb_calls_total",
        &[("operation", operation), ("source", "api")],
    )
}

/// The difference of every API-call counter between two scrapes, by operation.
fn call_deltas(before: &Exposition, after: &Exposition) -> BTreeMap<&'static str, f64> {
    [
        "GetItem",
        "BatchGetItem",
        "Query",
        "Scan",
        "TransactWriteItems",
        "BatchWriteItem",
    ]
    .into_iter()
    .map(|op| (op, calls(after, op) - calls(before, op)))
    .filter(|(_, d)| *d != 0.0)
    .collect()
}

async fn demo_app(backend: Backend) -> TestApp {
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    app
}

// ---------------------------------------------------------------------------------------------
// Metrics.

async fn a_grid_page_is_counted_exactly(backend: Backend) {
    let app = demo_app(backend).await;
    let before = scrape(&app).await;
    let body = app
        .post(
            GRID,
            json!({"p": BRIDGE, "first": 100, "order": {"field": "NUM"}}),
        )
        .await;
    assert!(body.get("errors").is_none(), "{body:#}");
    let cost = &body["extensions"]["cost"];
    assert_eq!(cost["dynamodbCalls"], json!(2), "{body:#}");
    let rcu = cost["readCapacityUnits"].as_f64().unwrap();
    assert!(rcu > 0.0);
    let after = scrape(&app).await;

    // Sorted by NUM: the project partition's Query and the GSI1 Query, nothing else.
    assert_eq!(
        call_deltas(&before, &after),
        BTreeMap::from([("Query", 2.0)])
    );
    let units = |m: &Exposition, kind: &str| {
        m.sum(
            &format!("gridgate_dynamodb_{kind}_capacity_units_total"),
            &[("source", "api")],
        )
    };
    assert_eq!(units(&after, "read") - units(&before, "read"), rcu);
    assert_eq!(units(&after, "write") - units(&before, "write"), 0.0);
    let query_rcu = |m: &Exposition| {
        m.value(
            "gridgate_dynamodb_read_capacity_units_total",
            &[("operation", "Query"), ("source", "api")],
        )
    };
    assert_eq!(query_rcu(&after) - query_rcu(&before), rcu);
    let retries = |m: &Exposition| m.sum("gridgate_dynamodb_retries_total", &[("source", "api")]);
    assert_eq!(retries(&after), retries(&before));
    assert_eq!(
        after.sum("gridgate_dynamodb_errors_total", &[("source", "api")]),
        0.0
    );

    assert_eq!(
        requests(&after, "query", "ok") - requests(&before, "query", "ok"),
        1.0
    );
    let total = |m: &Exposition| m.sum("gridgate_requests_total", &[]);
    assert_eq!(total(&after) - total(&before), 1.0);
    let durations = |m: &Exposition| {
        m.value(
            "gridgate_request_duration_seconds_count",
            &[("type", "query")],
        )
    };
    assert_eq!(durations(&after) - durations(&before), 1.0);
    let call_durations = |m: &Exposition| {
        m.value(
            "gridgate_dynamodb_call_duration_seconds_count",
            &[("operation", "Query"), ("source", "api")],
        )
    };
    assert_eq!(call_durations(&after) - call_durations(&before), 2.0);
    assert_eq!(after.value("gridgate_requests_in_flight", &[]), 0.0);

    // Other routes are not API requests.
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(total(&scrape(&app).await), total(&after));
}

async fn refusals_are_counted_by_code(backend: Backend) {
    let app = demo_app(backend).await;
    let before = scrape(&app).await;
    // In the resolver: the arguments are wrong.
    let page = r#"query($p: ID!, $first: Int) { project(id: $p) { issues(first: $first) { nodes { num } } } }"#;
    let (code, _) = app.error(page, json!({"p": BRIDGE, "first": 0})).await;
    assert_eq!(code, "BAD_USER_INPUT");
    // Before execution: over the alias limit (a query all the same), and not a document.
    let aliases: String = (0..100).map(|i| format!("a{i}: __typename ")).collect();
    let (code, _) = app.error(&format!("{{ {aliases} }}"), json!({})).await;
    assert_eq!(code, "LIMIT_EXCEEDED");
    let (code, _) = app.error("{", json!({})).await;
    assert_eq!(code, "GRAPHQL_PARSE_FAILED");
    // At the HTTP layer: a form body (415), and a mutation sent with GET (405).
    let form = app
        .client
        .post(app.url("/graphql"))
        .header("content-type", "text/plain")
        .body("{ __typename }")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 415);
    let get = app
        .client
        .get(app.url("/graphql"))
        .query(&[("query", "mutation { __typename }")])
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 405);
    let after = scrape(&app).await;

    let delta = |ty: &str, code: &str| requests(&after, ty, code) - requests(&before, ty, code);
    assert_eq!(delta("query", "BAD_USER_INPUT"), 1.0);
    assert_eq!(delta("query", "LIMIT_EXCEEDED"), 1.0);
    assert_eq!(delta("none", "GRAPHQL_PARSE_FAILED"), 1.0);
    assert_eq!(delta("none", "BAD_REQUEST"), 1.0);
    assert_eq!(delta("mutation", "BAD_REQUEST"), 1.0);
    let total = |m: &Exposition| m.sum("gridgate_requests_total", &[]);
    assert_eq!(total(&after) - total(&before), 5.0);
    assert_eq!(after.value("gridgate_requests_in_flight", &[]), 0.0);

    // Without credentials, where they are needed: UNAUTHENTICATED, before any GraphQL.
    let auth = Authenticator::from_args(&AuthArgs {
        auth: AuthMode::Jwt,
        jwt_secret: Some("metrics-test-secret-metrics-test-secret".into()),
        ..AuthArgs::default()
    })
    .expect("jwt settings");
    let guarded = TestApp::spawn_with_settings(
        backend,
        Settings {
            auth,
            ..Settings::default()
        },
    )
    .await;
    let refused = guarded
        .client
        .post(guarded.url("/graphql"))
        .json(&json!({"query": "{ __typename }"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let scraped = scrape(&guarded).await;
    assert_eq!(requests(&scraped, "none", "UNAUTHENTICATED"), 1.0);
    assert_eq!(scraped.sum("gridgate_requests_total", &[]), 1.0);
}

/// Forwards to a real store; can hold Query calls until released, and leave all but the
/// first key of the next BatchGetItem calls unprocessed.
struct HeldStore {
    inner: DynStore,
    hold: AtomicBool,
    entered: Notify,
    release: Notify,
    partial_batches: AtomicUsize,
}

impl HeldStore {
    fn new(inner: DynStore) -> Arc<HeldStore> {
        Arc::new(HeldStore {
            inner,
            hold: AtomicBool::new(false),
            entered: Notify::new(),
            release: Notify::new(),
            partial_batches: AtomicUsize::new(0),
        })
    }
}

impl HeldStore {
    /// The keys of a batch call to ask the store for: the first alone while partial batches
    /// are due (the rest come back unprocessed), else all of them.
    fn asked<'k>(&self, keys: &'k [Key]) -> &'k [Key] {
        let partial = self
            .partial_batches
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if partial && keys.len() > 1 {
            &keys[..1]
        } else {
            keys
        }
    }

    /// Holds the next Query until released, when asked to.
    async fn maybe_hold(&self) {
        if self.hold.swap(false, Ordering::SeqCst) {
            self.entered.notify_one();
            self.release.notified().await;
        }
    }
}

#[async_trait]
impl Store for HeldStore {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn table_name(&self) -> &str {
        self.inner.table_name()
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.inner.get(key).await
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.inner.get_consistent(key).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        let asked = self.asked(keys);
        let mut out = self.inner.batch_get(asked).await?;
        out.unprocessed.extend_from_slice(&keys[asked.len()..]);
        Ok(out)
    }

    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        let asked = self.asked(keys);
        let mut out = self.inner.batch_get_raw(asked).await?;
        out.unprocessed.extend_from_slice(&keys[asked.len()..]);
        Ok(out)
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.maybe_hold().await;
        self.inner.query(query).await
    }

    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        self.maybe_hold().await;
        self.inner.query_raw(query).await
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        self.inner.scan(start, limit).await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        self.inner.transact_write(ops).await
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        self.inner.batch_put(items).await
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.inner.ensure_table().await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
}

async fn held_app(backend: Backend) -> (TestApp, Arc<HeldStore>) {
    let test_store = TestStore::new(backend).await;
    gridgate::seed::demo(&test_store.store)
        .await
        .expect("seed demo");
    let held = HeldStore::new(test_store.store.clone());
    let app = TestApp::serve_store(held.clone(), test_store, Limits::default()).await;
    (app, held)
}

async fn requests_in_flight_are_gauged(backend: Backend) {
    let (app, held) = held_app(backend).await;
    assert_eq!(
        scrape(&app).await.value("gridgate_requests_in_flight", &[]),
        0.0
    );
    held.hold.store(true, Ordering::SeqCst);
    let request = {
        let client = app.client.clone();
        let url = app.url("/graphql");
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({"query": GRID, "variables": {"p": BRIDGE, "first": 10}}))
                .send()
                .await
                .expect("POST")
                .status()
        })
    };
    held.entered.notified().await;
    let during = scrape(&app).await;
    assert_eq!(during.value("gridgate_requests_in_flight", &[]), 1.0);
    assert_eq!(requests(&during, "query", "ok"), 0.0);
    held.release.notify_one();
    assert_eq!(request.await.unwrap(), 200);
    let after = scrape(&app).await;
    assert_eq!(after.value("gridgate_requests_in_flight", &[]), 0.0);
    assert_eq!(requests(&after, "query", "ok"), 1.0);
}

async fn unprocessed_keys_are_retried_and_counted(backend: Backend) {
    let (app, held) = held_app(backend).await;
    let before = scrape(&app).await;
    held.partial_batches.store(1, Ordering::SeqCst);
    // Sorted by NAME: Query (project), Query (GSI1 name rows), BatchGetItem of the 3 issues,
    // which answers one key and leaves two for a second call.
    let body = app
        .post(
            GRID,
            json!({"p": BRIDGE, "first": 3, "order": {"field": "NAME"}}),
        )
        .await;
    assert!(body.get("errors").is_none(), "{body:#}");
    assert_eq!(
        body["data"]["project"]["issues"]["edges"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let after = scrape(&app).await;
    assert_eq!(
        call_deltas(&before, &after),
        BTreeMap::from([("BatchGetItem", 2.0), ("Query", 2.0)])
    );
    assert_eq!(
        body["extensions"]["cost"]["dynamodbCalls"],
        json!(4),
        "the response counts the retry too"
    );
    let retried = |m: &Exposition| {
        m.value(
            "gridgate_dynamodb_unprocessed_retries_total",
            &[("operation", "BatchGetItem"), ("source", "api")],
        )
    };
    assert_eq!(retried(&after) - retried(&before), 1.0);
}

async fn metrics_can_be_turned_off(backend: Backend) {
    let mut settings = Settings::default();
    settings.telemetry.metrics = false;
    let app = TestApp::spawn_with_settings(backend, settings).await;
    assert!(app.app.metrics().is_none());
    let response = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), 404);
    // The API itself is unaffected.
    let data = app.data("{ __typename }", json!({})).await;
    assert_eq!(data["__typename"], "Query");
}

// ---------------------------------------------------------------------------------------------
// Fast paths and their fall-backs.

/// The README's grid query (its first `graphql` block) with its `issues` arguments taken from
/// variables, so that each ordering it describes runs forward and backward.
fn readme_grid_query() -> String {
    let readme = include_str!("../../README.md");
    let fence = "```graphql\n";
    let start = readme.find(fence).expect("README shows a grid query") + fence.len();
    let block = &readme[start..];
    let block = &block[..block.find("```").expect("the block ends")];
    let args = block.find("issues(").expect("the grid asks for issues") + "issues(".len();
    let args_end = args + block[args..].find(") {").expect("the issues arguments end");
    let query = format!(
        "{}first: $first, last: $last, orderBy: $order, filter: $filter{}",
        &block[..args],
        &block[args_end..]
    );
    let body = query
        .trim_start()
        .strip_prefix('{')
        .expect("an anonymous query");
    format!(
        "query Grid($first: Int, $last: Int, $order: IssueOrder, $filter: IssueFilter) {{{body}"
    )
}

/// The variables of every grid page the README describes: sorted by each column (`NUM`,
/// `NAME`, `STATE`, a custom field) in both directions, paged forward and backward, without a
/// filter and with each kind of filter (one the state partition answers, a range on a column,
/// one tested on the rows read).
fn readme_grid_pages() -> Vec<serde_json::Value> {
    let filters = [
        Value::Null,
        json!({"column": {"field": "STATE"}, "eq": "OPEN"}),
        json!({"column": {"field": "CUSTOM_FIELD", "customFieldId": "xattrib-3812"}, "gte": "2023-01-01"}),
        json!({"or": [{"column": {"field": "NAME"}, "contains": "E"}, {"not": {"column": {"field": "NUM"}, "lt": "2"}}]}),
    ];
    let orders = [
        json!({"field": "NUM"}),
        json!({"field": "NAME"}),
        json!({"field": "STATE"}),
        json!({"field": "CUSTOM_FIELD", "customFieldId": "xattrib-3812"}),
    ];
    let mut pages = Vec::new();
    for order in orders {
        for direction in ["ASC", "DESC"] {
            let mut order = order.clone();
            order["direction"] = json!(direction);
            for filter in &filters {
                pages.push(json!({"first": 20, "order": order.clone(), "filter": filter}));
                pages.push(json!({"last": 20, "order": order.clone(), "filter": filter}));
            }
        }
    }
    pages
}

fn fallbacks(m: &Exposition, path: &str, reason: &str) -> f64 {
    m.value(
        "gridgate_fast_path_fallbacks_total",
        &[("path", path), ("reason", reason)],
    )
}

async fn readme_grid_pages_never_fall_back(backend: Backend) {
    let app = demo_app(backend).await;
    let query = readme_grid_query();
    let first = scrape(&app).await;
    // Every series is exported from the start, at zero.
    assert_eq!(
        fallbacks(&first, "graphql_rows", "field")
            + fallbacks(&first, "issue_text", "unknown_attribute"),
        0.0
    );
    assert!(first
        .samples
        .iter()
        .any(|s| s.name == "gridgate_fast_path_fallbacks_total"));
    for variables in readme_grid_pages() {
        let body = app.post(&query, variables.clone()).await;
        assert!(body.get("errors").is_none(), "{variables}: {body:#}");
        let edges = body["data"]["project"]["issues"]["edges"].as_array();
        assert!(
            edges.is_some_and(|e| !e.is_empty()),
            "{variables}: {body:#}"
        );
        let m = scrape(&app).await;
        assert_eq!(
            m.sum("gridgate_fast_path_fallbacks_total", &[]),
            0.0,
            "{variables} fell back"
        );
    }
}

async fn fall_backs_are_counted_by_path_and_reason(backend: Backend) {
    let app = demo_app(backend).await;
    let page = |selection: &str| {
        format!("query($p: ID!) {{ project(id: $p) {{ issues(first: 3) {{ {selection} }} }} }}")
    };
    let nums = vec!["num"; 33].join(" ");
    // Selections no plan covers: the executor answers them, and each row it resolves is
    // counted once (an edge list once more, as a list).
    for (selection, reason, lists) in [
        ("nodes { num project { id } }".to_string(), "field", 0.0),
        (
            r#"nodes { num fieldValue(fieldId: "xattrib-3812") { value } }"#.to_string(),
            "argument",
            0.0,
        ),
        ("nodes { a: num a: num }".to_string(), "merged_key", 0.0),
        ("nodes { ... on Node { id } }".to_string(), "fragment", 0.0),
        (format!("nodes {{ {nums} }}"), "size", 0.0),
        (
            "edges { cursor node { project { id } } }".to_string(),
            "field",
            1.0,
        ),
    ] {
        let before = scrape(&app).await;
        let body = app.post(&page(&selection), json!({"p": BRIDGE})).await;
        assert!(body.get("errors").is_none(), "{selection}: {body:#}");
        let issues = &body["data"]["project"]["issues"];
        let rows = issues["nodes"]
            .as_array()
            .or(issues["edges"].as_array())
            .map_or(0, Vec::len);
        assert_eq!(rows, 3, "{body:#}");
        let after = scrape(&app).await;
        assert_eq!(
            fallbacks(&after, "graphql_rows", reason) - fallbacks(&before, "graphql_rows", reason),
            rows as f64 + lists,
            "{selection}"
        );
        assert_eq!(
            after.sum("gridgate_fast_path_fallbacks_total", &[])
                - before.sum("gridgate_fast_path_fallbacks_total", &[]),
            rows as f64 + lists,
            "{selection}: only its own reason"
        );
    }

    // Rows whose text the typed decoders do not take as it is (the embedded store hands rows
    // over as text; DynamoDB's come as attribute maps). First a cell that is neither a string
    // nor a number, which sends its issue the general way (which leaves that cell out, with a
    // warning).
    if app.backend == Backend::Embedded {
        let grid = readme_grid_query();
        let num = json!({"first": 20, "order": {"field": "NUM"}});
        let key = Key::new("issue-020e", BRIDGE);
        let mut item = app.store.get(&key).await.unwrap().item.expect("demo row");
        let Some(AttributeValue::M(cells)) = item.get_mut("Values") else {
            panic!("the demo issue has cells: {item:?}");
        };
        cells.insert("xattrib-3812".into(), AttributeValue::Bool(true));
        app.store.batch_put(vec![item]).await.unwrap();
        let before = scrape(&app).await;
        app.data(&grid, num.clone()).await;
        let after = scrape(&app).await;
        assert_eq!(
            fallbacks(&after, "issue_text", "odd_value")
                - fallbacks(&before, "issue_text", "odd_value"),
            1.0
        );

        // An attribute their entity does not declare sends an issue row and the project row
        // the general way (never dropped by the one pass), and the page answers as before.
        let clean = app.data(&grid, num.clone()).await;
        for key in [
            Key::new("issue-67d1", BRIDGE),
            Key::new(BRIDGE, "tenant-0807"),
        ] {
            let mut item = app.store.get(&key).await.unwrap().item.expect("demo row");
            item.insert("Extra".into(), AttributeValue::S("kept".into()));
            app.store.batch_put(vec![item]).await.unwrap();
        }
        let before = scrape(&app).await;
        assert_eq!(app.data(&grid, num).await, clean);
        let after = scrape(&app).await;
        let delta = |path| {
            fallbacks(&after, path, "unknown_attribute")
                - fallbacks(&before, path, "unknown_attribute")
        };
        assert_eq!(delta("issue_text"), 1.0);
        assert!(delta("partition_text") >= 1.0);
    }
}

crate::both_stores!(
    a_grid_page_is_counted_exactly,
    refusals_are_counted_by_code,
    requests_in_flight_are_gauged,
    unprocessed_keys_are_retried_and_counted,
    metrics_can_be_turned_off,
    readme_grid_pages_never_fall_back,
    fall_backs_are_counted_by_path_and_reason,
);
