//! A real DynamoDB outage under load, over HTTP: the test's own DynamoDB Local is killed in
//! the middle of a mixed read/write load and started again on the same port. While it is down
//! every request fails fast with a clean coded error and `/readyz` says 503 (`/healthz` stays
//! 200); once it is back the same gateway serves again without a restart, `verify` finds no
//! drift and every mutation that reported success is there.
//!
//! Phases are ordered by counters (a `watch` channel of outcome counts), never by sleeping:
//! the outage starts after enough successes, ends after enough failures during it, and the
//! load stops after enough successes after it.
//!
//! A binary of its own, not a module of `tests/api/`: its store client's timeouts are half a
//! second so that an outage is felt at once, and on a 2-core machine the other API tests
//! running beside it slowed DynamoDB Local past them while it was up. It starts no shared
//! DynamoDB Local, only its own.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::app::{Backend, TestApp, TestStore};
use crate::support::dynamodb_local::PrivateDynamoDbLocal;
use gridgate::config::StoreConfig;
use gridgate::paging::Limits;
use gridgate::repo::verify;
use serde_json::{json, Value};
use tokio::sync::watch;

/// The store's client settings for this test: small, so an outage is felt quickly.
const CONNECT_TIMEOUT_MS: u64 = 200;
const ATTEMPT_TIMEOUT_MS: u64 = 500;
const OPERATION_TIMEOUT_MS: u64 = 1500;

/// A hang guard around each request, not a timing assertion: a request makes a few store
/// calls in sequence (at most 4 before it fails or answers), each bounded by the operation
/// timeout, plus a margin for a loaded 2-core machine. A request that outlives this is hung.
const HANG_GUARD: Duration = Duration::from_millis(4 * OPERATION_TIMEOUT_MS + 3000);

/// Bounds on each phase, so a broken gateway fails the test instead of stalling it.
const PHASE_GUARD: Duration = Duration::from_secs(90);

/// Concurrent load tasks, and the pace of each (load shaping, not synchronisation: without it
/// failing requests would spin and starve the JVM that is starting again on 2 cores).
const WORKERS: usize = 6;
const PACE: Duration = Duration::from_millis(20);

/// Successes before the outage, failures during it, successes after it.
const SUCCESSES_BEFORE: usize = 40;
const FAILURES_DURING: usize = 60;
const SUCCESSES_AFTER: usize = 40;

/// The codes an outage may produce.
const OUTAGE_CODES: &[&str] = &["STORE_UNAVAILABLE", "THROTTLED"];
/// Text that must never reach a client (compared in lower case).
const INTERNAL_TEXT: &[&str] = &[
    "dispatch",
    "connection",
    "connector",
    "hyper",
    "secret",
    "aws",
    "sdk",
    "error sending",
    "refused",
    "timeout",
    "timed out",
    "127.0.0.1",
    "dynamodb",
    "table",
    "gridgate-outage",
];

const GRID: &str = r#"
query($project: ID!, $order: IssueOrder) {
  project(id: $project) {
    name
    customFields { id name }
    issues(first: 20, orderBy: $order) {
      edges { cursor node { id num name fieldValues { field { id } value } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"#;

const CREATE_ISSUE: &str = r#"
mutation($project: ID!, $name: String!, $values: [FieldValueInput!]) {
  createIssue(input: {projectId: $project, name: $name, fieldValues: $values}) {
    issue { id num name }
  }
}"#;

const SET_VALUES: &str = r#"
mutation($issue: ID!, $values: [FieldValueInput!]!) {
  setIssueFieldValues(input: {issueId: $issue, values: $values}) {
    issue { id version }
  }
}"#;

const ISSUE: &str = r#"
query($id: ID!) {
  issue(id: $id) { id num name version fieldValues { field { id } value } }
}"#;

/// Where the outage is when a request is sent or answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
enum Phase {
    /// DynamoDB Local up, before the outage.
    Before = 0,
    /// Being killed: a request may or may not reach it.
    Stopping = 1,
    /// Dead: the JVM is gone (reaped) and nothing listens on its port.
    Down = 2,
    /// Being started again on the same port.
    Restarting = 3,
    /// Up again and the gateway ready.
    After = 4,
}

impl Phase {
    fn from_u8(n: u8) -> Phase {
        [
            Phase::Before,
            Phase::Stopping,
            Phase::Down,
            Phase::Restarting,
            Phase::After,
        ][usize::from(n)]
    }
}

#[derive(Clone, Debug)]
enum Op {
    Grid,
    Set { issue: String, value: String },
    Create { name: String, value: String },
}

#[derive(Clone, Debug)]
enum Outcome {
    /// The response's `data`, without errors.
    Ok(Value),
    /// A GraphQL error response: every error's code, and the errors.
    Failed {
        codes: Vec<String>,
        errors: Vec<Value>,
    },
    /// No answer within [`HANG_GUARD`].
    Hung,
    /// Not a GraphQL response at all (transport failure, non-200, unparsable body).
    Broken(String),
}

#[derive(Clone, Debug)]
struct Record {
    worker: usize,
    op: Op,
    sent: Phase,
    done: Phase,
    elapsed: Duration,
    /// When it was answered, from the start of the load.
    finished_at: Duration,
    outcome: Outcome,
}

impl Record {
    /// Sent and answered while the JVM was dead: it cannot have reached DynamoDB.
    fn wholly_down(&self) -> bool {
        self.sent == Phase::Down && self.done == Phase::Down
    }
}

/// Counts the phases wait for.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    ok_before: usize,
    failed_down: usize,
    ok_after: usize,
}

/// What the load tasks share.
struct Load {
    app: Arc<TestApp>,
    project: String,
    int_field: String,
    text_field: String,
    phase: AtomicU8,
    stop: AtomicBool,
    started: Instant,
    records: Mutex<Vec<Record>>,
    counts: watch::Sender<Counts>,
}

impl Load {
    fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::SeqCst))
    }

    fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::SeqCst);
    }

    async fn run(self: Arc<Self>, worker: usize, owned_issue: String) {
        let mut pace = tokio::time::interval(PACE);
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut i = 0usize;
        while !self.stop.load(Ordering::SeqCst) {
            pace.tick().await;
            let op = match i % 3 {
                0 => Op::Grid,
                1 => Op::Set {
                    issue: owned_issue.clone(),
                    value: format!("w{worker}-{i}"),
                },
                _ => Op::Create {
                    name: format!("load w{worker} #{i}"),
                    value: (worker * 100_000 + i).to_string(),
                },
            };
            let (query, variables) = match &op {
                Op::Grid if i % 2 == 0 => (
                    GRID,
                    json!({"project": self.project, "order": {"field": "NUM"}}),
                ),
                Op::Grid => (
                    GRID,
                    json!({"project": self.project, "order": {
                        "field": "CUSTOM_FIELD", "customFieldId": self.int_field, "direction": "DESC"
                    }}),
                ),
                Op::Set { issue, value } => (
                    SET_VALUES,
                    json!({"issue": issue, "values": [{"fieldId": self.text_field, "value": value}]}),
                ),
                Op::Create { name, value } => (
                    CREATE_ISSUE,
                    json!({"project": self.project, "name": name,
                           "values": [{"fieldId": self.int_field, "value": value}]}),
                ),
            };
            let sent = self.phase();
            let start = Instant::now();
            let outcome =
                match tokio::time::timeout(HANG_GUARD, post(&self.app, query, variables)).await {
                    Ok(outcome) => outcome,
                    Err(_) => Outcome::Hung,
                };
            let record = Record {
                worker,
                op,
                sent,
                done: self.phase(),
                elapsed: start.elapsed(),
                finished_at: self.started.elapsed(),
                outcome,
            };
            self.counts.send_modify(|counts| match &record.outcome {
                Outcome::Ok(_) if record.sent == Phase::Before => counts.ok_before += 1,
                Outcome::Ok(_) if record.sent == Phase::After => counts.ok_after += 1,
                Outcome::Failed { .. } if record.wholly_down() => counts.failed_down += 1,
                _ => {}
            });
            self.records.lock().unwrap().push(record);
            i += 1;
        }
    }
}

/// POSTs a GraphQL request and classifies the answer.
async fn post(app: &TestApp, query: &str, variables: Value) -> Outcome {
    let response = match app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": query, "variables": variables }))
        .send()
        .await
    {
        Ok(response) => response,
        Err(e) => return Outcome::Broken(format!("transport: {e}")),
    };
    let status = response.status();
    let body: Value = match response.json().await {
        Ok(body) => body,
        Err(e) => return Outcome::Broken(format!("HTTP {status}, body not JSON: {e}")),
    };
    if status != 200 {
        return Outcome::Broken(format!("HTTP {status}: {body}"));
    }
    match body.get("errors").and_then(Value::as_array) {
        None => Outcome::Ok(body["data"].clone()),
        Some(errors) if errors.is_empty() => Outcome::Broken(format!("empty errors: {body}")),
        Some(errors) => Outcome::Failed {
            codes: errors
                .iter()
                .map(|e| e["extensions"]["code"].as_str().unwrap_or("").to_string())
                .collect(),
            errors: errors.clone(),
        },
    }
}

async fn status(app: &TestApp, path: &str) -> u16 {
    tokio::time::timeout(HANG_GUARD, app.client.get(app.url(path)).send())
        .await
        .unwrap_or_else(|_| panic!("GET {path} hung"))
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
        .status()
        .as_u16()
}

/// Waits for `future`, failing the test after [`PHASE_GUARD`].
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(PHASE_GUARD, future)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

async fn wait_counts(
    rx: &mut watch::Receiver<Counts>,
    what: &str,
    done: impl FnMut(&Counts) -> bool,
) {
    within(what, rx.wait_for(done))
        .await
        .expect("the load keeps the counts' sender");
}

/// Runs blocking work (starting or killing a JVM) off the async workers.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.expect("blocking task")
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {value:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_outage_under_load_fails_cleanly_and_recovers() {
    // The store: the test's own DynamoDB Local, small client timeouts.
    let local = blocking(PrivateDynamoDbLocal::start_new).await;
    let mut config = StoreConfig::dynamodb(
        TestStore::unique_table("gridgate-outage"),
        Some(local.endpoint()),
    );
    config.dynamodb_connect_timeout_ms = Some(CONNECT_TIMEOUT_MS);
    config.dynamodb_attempt_timeout_ms = Some(ATTEMPT_TIMEOUT_MS);
    config.dynamodb_operation_timeout_ms = Some(OPERATION_TIMEOUT_MS);
    let store = config.open().await.expect("open the DynamoDB store");
    store.ensure_table().await.expect("create the table");
    let test_store = TestStore::from_store(store.clone(), Backend::Dynamodb);
    let app = Arc::new(TestApp::serve_store(store, test_store, Limits::default()).await);

    // Seed over HTTP: a project with two custom fields and one issue per worker (the cells
    // each worker edits are its own, so the last write of each cell is known).
    let tenant = app
        .data(
            r#"mutation { createTenant(input: {name: "Outage"}) { tenant { id } } }"#,
            json!({}),
        )
        .await;
    let tenant = str_at(&tenant, "/createTenant/tenant/id").to_string();
    let project = app
        .data(
            r#"mutation($t: ID!) { createProject(input: {tenantId: $t, name: "Grid"}) { project { id } } }"#,
            json!({"t": tenant}),
        )
        .await;
    let project = str_at(&project, "/createProject/project/id").to_string();
    let mut fields = Vec::new();
    for (name, ty) in [("Estimate", "INT"), ("Owner", "TEXT")] {
        let data = app
            .data(
                r#"mutation($p: ID!, $n: String!, $t: CustomFieldType!) {
                     createCustomField(input: {projectId: $p, name: $n, type: $t}) { customField { id } }
                   }"#,
                json!({"p": project, "n": name, "t": ty}),
            )
            .await;
        fields.push(str_at(&data, "/createCustomField/customField/id").to_string());
    }
    let (int_field, text_field) = (fields[0].clone(), fields[1].clone());
    let mut owned = Vec::new();
    for k in 0..WORKERS + 4 {
        let data = app
            .data(
                CREATE_ISSUE,
                json!({"project": project, "name": format!("seed {k}"), "values": [
                    {"fieldId": int_field, "value": (k * 7 % 5).to_string()},
                ]}),
            )
            .await;
        owned.push(str_at(&data, "/createIssue/issue/id").to_string());
    }
    assert_eq!(
        status(&app, "/readyz").await,
        200,
        "ready before the outage"
    );

    // The load.
    let (counts, mut rx) = watch::channel(Counts::default());
    let load = Arc::new(Load {
        app: app.clone(),
        project: project.clone(),
        int_field: int_field.clone(),
        text_field: text_field.clone(),
        phase: AtomicU8::new(Phase::Before as u8),
        stop: AtomicBool::new(false),
        started: Instant::now(),
        records: Mutex::new(Vec::new()),
        counts,
    });
    let tasks: Vec<_> = (0..WORKERS)
        .map(|k| tokio::spawn(load.clone().run(k, owned[k].clone())))
        .collect();

    // The outage: after enough successes, kill DynamoDB Local.
    wait_counts(&mut rx, "successes before the outage", |c| {
        c.ok_before >= SUCCESSES_BEFORE
    })
    .await;
    load.set_phase(Phase::Stopping);
    let stopping_at = load.started.elapsed();
    let mut local = blocking(move || {
        let mut local = local;
        local.stop();
        local
    })
    .await;
    load.set_phase(Phase::Down);
    let down_at = load.started.elapsed();

    // While it is down: not ready, but alive.
    let ready_down = status(&app, "/readyz").await;
    let health_down = status(&app, "/healthz").await;
    wait_counts(&mut rx, "failures during the outage", |c| {
        c.failed_down >= FAILURES_DURING
    })
    .await;
    let ready_down_late = status(&app, "/readyz").await;

    // Back on the same port, with its data; the gateway is not touched.
    load.set_phase(Phase::Restarting);
    let restart_at = load.started.elapsed();
    let local = blocking(move || {
        local.start();
        local
    })
    .await;
    let local_up_at = load.started.elapsed();
    // Poll readiness (the store answering again), bounded.
    let ready_at = within("/readyz to answer 200 after the restart", async {
        let mut poll = tokio::time::interval(Duration::from_millis(50));
        loop {
            poll.tick().await;
            if status(&app, "/readyz").await == 200 {
                return load.started.elapsed();
            }
        }
    })
    .await;
    load.set_phase(Phase::After);
    wait_counts(&mut rx, "successes after the restart", |c| {
        c.ok_after >= SUCCESSES_AFTER
    })
    .await;
    load.stop.store(true, Ordering::SeqCst);
    for task in tasks {
        within("a load task to end", task)
            .await
            .expect("load task panicked");
    }
    let health_after = status(&app, "/healthz").await;
    let ready_after = status(&app, "/readyz").await;
    let records = load.records.lock().unwrap().clone();

    // What happened, for the report.
    let mut tally: BTreeMap<(Phase, Phase, String), usize> = BTreeMap::new();
    for r in &records {
        let what = match &r.outcome {
            Outcome::Ok(_) => "ok".to_string(),
            Outcome::Failed { codes, .. } => codes.join("+"),
            Outcome::Hung => "HUNG".to_string(),
            Outcome::Broken(_) => "BROKEN".to_string(),
        };
        *tally.entry((r.sent, r.done, what)).or_default() += 1;
    }
    let max_elapsed = |pred: &dyn Fn(&Record) -> bool| {
        records
            .iter()
            .filter(|r| pred(r))
            .map(|r| r.elapsed)
            .max()
            .unwrap_or_default()
    };
    let first_ok_after_restart = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Ok(_)) && r.sent >= Phase::Restarting)
        .map(|r| r.finished_at)
        .min()
        .unwrap_or_default();
    let last_ok_before = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Ok(_)) && r.sent <= Phase::Stopping)
        .map(|r| r.finished_at)
        .max()
        .unwrap_or_default();
    eprintln!(
        "OUTAGE requests={} by (sent, answered, outcome): {tally:?}\n\
         OUTAGE stop began at {stopping_at:?}, JVM dead at {down_at:?}, restart began at \
         {restart_at:?}, DynamoDB Local answering at {local_up_at:?}, /readyz 200 at {ready_at:?} \
         (+{:?}), first success after restart at {first_ok_after_restart:?} (+{:?}), last success \
         before at {last_ok_before:?}; unavailable for clients {:?}\n\
         OUTAGE max latency: wholly down {:?}, any failure {:?}, overall {:?}",
        records.len(),
        ready_at.saturating_sub(local_up_at),
        first_ok_after_restart.saturating_sub(local_up_at),
        first_ok_after_restart.saturating_sub(last_ok_before),
        max_elapsed(&|r| r.wholly_down()),
        max_elapsed(&|r| matches!(r.outcome, Outcome::Failed { .. })),
        max_elapsed(&|_| true),
    );

    // No request hung and every answer was a GraphQL response.
    for r in &records {
        match &r.outcome {
            Outcome::Hung => panic!("no answer within {HANG_GUARD:?}: {r:#?}"),
            Outcome::Broken(why) => panic!("not a GraphQL response ({why}): {r:#?}"),
            Outcome::Ok(_) | Outcome::Failed { .. } => {}
        }
    }
    // Every request made while DynamoDB was dead failed, with a clean outage code; and no
    // failure at any time was anything else or carried internal text.
    for r in records.iter().filter(|r| r.wholly_down()) {
        assert!(
            matches!(r.outcome, Outcome::Failed { .. }),
            "answered while DynamoDB was dead: {r:#?}"
        );
    }
    // Before the outage everything succeeds. (Not necessarily right after it: the restarted
    // JVM is cold, and a call may still outlast this test's short attempt timeout; those
    // failures must be clean, like every other.)
    for r in &records {
        if r.sent == Phase::Before && r.done == Phase::Before {
            assert!(
                matches!(r.outcome, Outcome::Ok(_)),
                "failed while DynamoDB was up: {r:#?}"
            );
        }
    }
    for r in &records {
        if let Outcome::Failed { codes, errors } = &r.outcome {
            assert!(
                codes
                    .iter()
                    .all(|code| OUTAGE_CODES.contains(&code.as_str())),
                "unexpected codes {codes:?} in {r:#?}"
            );
            for error in errors {
                // Everything a client reads but the request id (random letters).
                let mut visible = error.clone();
                if let Some(extensions) = visible["extensions"].as_object_mut() {
                    extensions.remove("requestId");
                }
                let text = visible.to_string().to_lowercase();
                for internal in INTERNAL_TEXT {
                    assert!(!text.contains(internal), "{internal:?} leaked into {error}");
                }
            }
        }
    }
    // Health: alive throughout, ready only with the store.
    assert_eq!(ready_down, 503, "/readyz while DynamoDB is down");
    assert_eq!(ready_down_late, 503, "/readyz later in the outage");
    assert_eq!(health_down, 200, "/healthz while DynamoDB is down");
    assert_eq!(ready_after, 200, "/readyz after the restart");
    assert_eq!(health_after, 200, "/healthz after the restart");

    // Recovered without a restart of the gateway: a grid page answers.
    let page = app
        .data(GRID, json!({"project": project, "order": {"field": "NUM"}}))
        .await;
    assert_eq!(page["project"]["name"], "Grid");

    // No drift between source and index rows.
    let drift = verify::verify(&app.store, None).await.expect("verify");
    assert!(drift.is_empty(), "verify found drift: {drift:#?}");

    // Every mutation that succeeded is visible.
    let mut created_nums = HashSet::new();
    for r in &records {
        if let (Op::Create { name, value }, Outcome::Ok(data)) = (&r.op, &r.outcome) {
            let id = str_at(data, "/createIssue/issue/id");
            let num = data["createIssue"]["issue"]["num"].as_i64().unwrap();
            assert!(created_nums.insert(num), "issue number {num} given twice");
            let issue = app.data(ISSUE, json!({"id": id})).await;
            assert_eq!(issue["issue"]["name"], name.as_str(), "{issue:#}");
            assert_eq!(issue["issue"]["num"], num, "{issue:#}");
            assert_eq!(
                issue["issue"]["fieldValues"],
                json!([{"field": {"id": int_field}, "value": value}]),
                "{issue:#}"
            );
        }
    }
    for (worker, issue) in owned.iter().enumerate().take(WORKERS) {
        let sets: Vec<&Record> = records
            .iter()
            .filter(|r| r.worker == worker && matches!(r.op, Op::Set { .. }))
            .collect();
        let last_ok = sets
            .iter()
            .rposition(|r| matches!(r.outcome, Outcome::Ok(_)))
            .unwrap_or_else(|| panic!("worker {worker} never set a value"));
        // The last acknowledged value, unless a later write whose answer was an error did
        // reach DynamoDB before the kill (its outcome is unknown to the client).
        let allowed: Vec<&str> = sets[last_ok..]
            .iter()
            .map(|r| match &r.op {
                Op::Set { value, .. } => value.as_str(),
                _ => unreachable!(),
            })
            .collect();
        let data = app.data(ISSUE, json!({"id": issue})).await;
        let cell = data["issue"]["fieldValues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["field"]["id"] == text_field.as_str())
            .map(|v| v["value"].as_str().unwrap_or("").to_string())
            .unwrap_or_default();
        assert!(
            allowed.contains(&cell.as_str()),
            "worker {worker}: {issue} holds {cell:?}, neither its last acknowledged value \
             {:?} nor a later unacknowledged one {:?}",
            allowed[0],
            &allowed[1..]
        );
        if cell != allowed[0] {
            eprintln!("OUTAGE worker {worker}: an unacknowledged write was applied: {cell}");
        }
        let acknowledged = sets
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Ok(_)))
            .count();
        let version = data["issue"]["version"].as_i64().unwrap();
        assert!(
            version > acknowledged as i64,
            "{issue}: version {version} after {acknowledged} acknowledged edits"
        );
    }
    drop(local);
}
