//! Test fixtures: an isolated store of either kind, and the gateway served over HTTP on port 0.
//!
//! Modelled on zero2prod's `spawn_app()`: every test gets its own data (a temporary directory
//! for the embedded store, a uniquely named table in the shared DynamoDB Local) and its own
//! server on a free port, so tests never see each other's data and can run in parallel.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use gridgate::app::{self, App, Settings};
use gridgate::paging::Limits;
use gridgate::store::dynamodb::{DynamoConfig, DynamoStore, SdkSettings};
use gridgate::store::embedded::EmbeddedStore;
use gridgate::store::{DynStore, Store};
use serde_json::{json, Value};

use super::dynamodb_local;

/// Which store a test runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Embedded,
    Dynamodb,
}

/// A fresh, empty store with the table created.
pub struct TestStore {
    pub store: DynStore,
    pub backend: Backend,
    // Keeps the embedded store's directory alive for the test's duration.
    _dir: Option<tempfile::TempDir>,
}

impl TestStore {
    pub async fn new(backend: Backend) -> TestStore {
        match backend {
            Backend::Embedded => {
                let dir = tempfile::tempdir().expect("temp dir");
                let store =
                    EmbeddedStore::open(dir.path(), "gridgate").expect("open embedded store");
                store.ensure_table().await.expect("ensure table");
                TestStore {
                    store: Arc::new(store),
                    backend,
                    _dir: Some(dir),
                }
            }
            Backend::Dynamodb => {
                let endpoint = dynamodb_local::endpoint().to_string();
                let table = format!("gridgate-test-{}", ulid_like());
                let store = DynamoStore::connect_with(
                    DynamoConfig {
                        table,
                        endpoint: Some(endpoint),
                        local_credentials: true,
                    },
                    shared_local_settings(),
                )
                .await
                .expect("connect to DynamoDB Local");
                store.ensure_table().await.expect("create table");
                TestStore {
                    store: Arc::new(store),
                    backend,
                    _dir: None,
                }
            }
        }
    }
}

/// Client settings for the shared DynamoDB Local: the production defaults, but with time
/// limits for a JVM shared by every test of the process on a small machine. DynamoDB Local runs
/// transactions one at a time, so under the concurrency tests a TransactWriteItems can queue
/// for seconds, which DynamoDB itself never does; tests of outages set their own limits.
pub fn shared_local_settings() -> SdkSettings {
    SdkSettings {
        attempt_timeout: std::time::Duration::from_secs(30),
        operation_timeout: std::time::Duration::from_secs(60),
        ..SdkSettings::default()
    }
}

impl TestStore {
    /// A store the test opened itself (e.g. over its own DynamoDB Local), table created.
    pub fn from_store(store: DynStore, backend: Backend) -> TestStore {
        TestStore {
            store,
            backend,
            _dir: None,
        }
    }

    /// A table name no other test uses.
    pub fn unique_table(prefix: &str) -> String {
        format!("{prefix}-{}", ulid_like())
    }
}

/// A unique suffix for table names: time plus a process-wide counter.
fn ulid_like() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{nanos:x}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The gateway served on 127.0.0.1:0 over a fresh store.
pub struct TestApp {
    pub app: Arc<App>,
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    pub store: DynStore,
    pub backend: Backend,
    _store: TestStore,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> TestApp {
        TestApp::spawn_with(backend, Limits::default()).await
    }

    pub async fn spawn_with(backend: Backend, limits: Limits) -> TestApp {
        let test_store = TestStore::new(backend).await;
        TestApp::serve(test_store, limits).await
    }

    /// Serves an existing store (e.g. one a test wrapped to inject faults).
    pub async fn serve(test_store: TestStore, limits: Limits) -> TestApp {
        TestApp::serve_store(test_store.store.clone(), test_store, limits).await
    }

    /// Serves `store` (possibly a wrapper of `test_store.store`).
    pub async fn serve_store(store: DynStore, test_store: TestStore, limits: Limits) -> TestApp {
        let mut settings = Settings::default();
        settings.gateway.limits = limits;
        // The shared DynamoDB Local runs transactions one at a time, so under the concurrency
        // tests a mutation can queue for longer than production's 10 s request timeout (see
        // `shared_local_settings`); tests of the timeout itself set their own.
        settings.http.request_timeout = std::time::Duration::from_secs(120);
        TestApp::serve_with_settings(store, test_store, settings).await
    }

    /// A fresh store of `backend`, served with `settings` (auth, limits).
    pub async fn spawn_with_settings(backend: Backend, settings: Settings) -> TestApp {
        let test_store = TestStore::new(backend).await;
        TestApp::serve_with_settings(test_store.store.clone(), test_store, settings).await
    }

    /// Serves `store` with `settings`.
    pub async fn serve_with_settings(
        store: DynStore,
        test_store: TestStore,
        mut settings: Settings,
    ) -> TestApp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        // Both test stores update GSI1 with the table, so sweeps need not wait for it.
        settings.sweep.settle = std::time::Duration::ZERO;
        let app = Arc::new(app::build(store, settings));
        let server = app.clone();
        tokio::spawn(async move {
            server
                .serve(listener, async {
                    let _ = rx.await;
                })
                .await
                .expect("server");
        });
        TestApp {
            app,
            addr,
            client: reqwest::Client::new(),
            store: test_store.store.clone(),
            backend: test_store.backend,
            _store: test_store,
            _shutdown: tx,
        }
    }

    /// Waits until every sweep the app started (and the start-up resume) has ended.
    pub async fn sweeps_idle(&self) {
        self.app.sweeps().wait_idle().await;
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Loads the demo data.
    pub async fn seed_demo(&self) {
        gridgate::seed::demo(&self.store).await.expect("seed demo");
    }

    /// POSTs a GraphQL request and returns the whole response body.
    pub async fn post(&self, query: &str, variables: Value) -> Value {
        let response = self
            .client
            .post(self.url("/graphql"))
            .json(&json!({ "query": query, "variables": variables }))
            .send()
            .await
            .expect("POST /graphql");
        assert_eq!(response.status(), 200, "GraphQL responses are 200");
        response.json().await.expect("JSON body")
    }

    /// POSTs a request that must succeed and returns its `data`.
    pub async fn data(&self, query: &str, variables: Value) -> Value {
        let body = self.post(query, variables).await;
        assert!(body.get("errors").is_none(), "unexpected errors: {body:#}");
        body["data"].clone()
    }

    /// POSTs a request that must fail and returns its first error's (code, message).
    pub async fn error(&self, query: &str, variables: Value) -> (String, String) {
        let body = self.post(query, variables).await;
        let error = &body["errors"][0];
        assert!(error.is_object(), "expected an error: {body:#}");
        (
            error["extensions"]["code"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            error["message"].as_str().unwrap_or("").to_string(),
        )
    }
}

/// Every test that serves the gateway checks, when its app goes, that no resolver error left
/// it without a code: such an error is answered `INTERNAL_SERVER_ERROR` (its text replaced),
/// and is a bug wherever it comes from.
impl Drop for TestApp {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let uncoded = self.app.gateway().uncoded_errors();
        assert_eq!(
            uncoded, 0,
            "{uncoded} resolver error(s) reached a response without a code (see the log)"
        );
    }
}

/// The sweeps of a test that runs some itself: `owner` is its lease owner (shared with the
/// app's, so the test can finish a job the app claimed and left), and nothing waits for an
/// index to settle (both test stores update theirs with the table).
pub fn test_sweeps(owner: &str) -> gridgate::repo::sweep::SweepConfig {
    gridgate::repo::sweep::SweepConfig {
        owner: owner.into(),
        settle: std::time::Duration::ZERO,
        ..Default::default()
    }
}

/// An app whose own sweeps stop before their first batch, so a test sees their work pending
/// and runs them itself (with [`test_sweeps`] of the same `owner`).
pub async fn paused_app(backend: Backend, owner: &str) -> TestApp {
    let settings = Settings {
        sweep: gridgate::repo::sweep::SweepConfig {
            stop_after_batches: Some(0),
            ..test_sweeps(owner)
        },
        ..Settings::default()
    };
    TestApp::spawn_with_settings(backend, settings).await
}

/// Runs a test body against both stores: `both_stores!(name, body_fn)` expands to a module
/// with one `#[tokio::test]` per store.
#[macro_export]
macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::support::app::Backend::Embedded).await
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::support::app::Backend::Dynamodb).await
                }
            )*
        }
    };
}
