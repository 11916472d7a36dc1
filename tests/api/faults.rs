//! Failure handling over HTTP, against both stores: store outages surface as
//! `STORE_UNAVAILABLE` without internal text, partial batch answers are retried, corrupt items
//! become `INTERNAL_SERVER_ERROR`, and an unreachable DynamoDB fails readiness checks
//! (`/readyz`) while liveness (`/healthz`) holds.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::support::app::{Backend, TestApp, TestStore};
use async_trait::async_trait;
use gridgate::paging::Limits;
use gridgate::store::{
    AttributeValue, BatchGetOutput, DynStore, GetOutput, Item, Key, Query, QueryOutput, RawItem,
    Store, StoreError, WriteOp, WriteOutput,
};
use serde_json::json;

/// Forwards to a real store, but can fail every call or leave part of a batch unprocessed.
struct FaultyStore {
    inner: DynStore,
    fail: AtomicBool,
    /// How many first BatchGetItem calls answer only their first key.
    partial_batches: AtomicUsize,
}

impl FaultyStore {
    /// The outage, while it lasts.
    fn check(&self) -> Result<(), StoreError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("SECRET connection detail".into()));
        }
        Ok(())
    }

    /// The keys of a batch call to ask the store for: the first alone while partial batches
    /// are due (the rest come back unprocessed), else all of them.
    fn asked<'k>(&self, keys: &'k [Key]) -> Result<&'k [Key], StoreError> {
        self.check()?;
        let partial = self
            .partial_batches
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        Ok(if partial && keys.len() > 1 {
            &keys[..1]
        } else {
            keys
        })
    }
}

#[async_trait]
impl Store for FaultyStore {
    fn name(&self) -> &'static str {
        "faulty"
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("SECRET connection detail".into()));
        }
        self.inner.get(key).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        let asked = self.asked(keys)?;
        let mut out = self.inner.batch_get(asked).await?;
        out.unprocessed.extend_from_slice(&keys[asked.len()..]);
        Ok(out)
    }

    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        let asked = self.asked(keys)?;
        let mut out = self.inner.batch_get_raw(asked).await?;
        out.unprocessed.extend_from_slice(&keys[asked.len()..]);
        Ok(out)
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.check()?;
        self.inner.query(query).await
    }

    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        self.check()?;
        self.inner.query_raw(query).await
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("SECRET connection detail".into()));
        }
        self.inner.get_consistent(key).await
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<gridgate::store::ScanOutput, StoreError> {
        self.inner.scan(start, limit).await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("SECRET connection detail".into()));
        }
        self.inner.transact_write(ops).await
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        self.inner.batch_put(items).await
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.inner.ensure_table().await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreError::Unavailable("SECRET".into()));
        }
        self.inner.ping().await
    }
}

async fn faulty_app(backend: Backend) -> (TestApp, Arc<FaultyStore>) {
    let test_store = TestStore::new(backend).await;
    gridgate::seed::demo(&test_store.store).await.expect("seed");
    let faulty = Arc::new(FaultyStore {
        inner: test_store.store.clone(),
        fail: AtomicBool::new(false),
        partial_batches: AtomicUsize::new(0),
    });
    let app = TestApp::serve_store(faulty.clone(), test_store, Limits::default()).await;
    (app, faulty)
}

const GRID: &str =
    r#"{ project(id: "project-35e9") { name issues(orderBy: {field: NAME}) { nodes { num } } } }"#;

async fn outages_are_store_unavailable(backend: Backend) {
    let (app, faulty) = faulty_app(backend).await;
    faulty.fail.store(true, Ordering::SeqCst);
    let body = app.post(GRID, json!({})).await;
    let text = body.to_string();
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "STORE_UNAVAILABLE",
        "{body:#}"
    );
    assert!(!text.contains("SECRET"), "internal text leaked: {text}");
    assert_eq!(body["data"]["project"], serde_json::Value::Null);
    // Alive, but not ready: a load balancer stops sending traffic, nothing restarts it.
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);

    faulty.fail.store(false, Ordering::SeqCst);
    let data = app.data(GRID, json!({})).await;
    assert_eq!(data["project"]["name"], "Forth Rail Bridge");
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
}

async fn unprocessed_keys_are_retried(backend: Backend) {
    let (app, faulty) = faulty_app(backend).await;
    let healthy = app.post(GRID, json!({})).await;
    assert_eq!(healthy["extensions"]["cost"]["dynamodbCalls"], 3);
    // The first BatchGetItem answers one of three issues; the other two are asked again.
    faulty.partial_batches.store(1, Ordering::SeqCst);
    let body = app.post(GRID, json!({})).await;
    assert!(body.get("errors").is_none(), "{body:#}");
    assert_eq!(
        body["data"]["project"]["issues"]["nodes"],
        json!([{"num": 2}, {"num": 3}, {"num": 1}])
    );
    assert_eq!(body["extensions"]["cost"]["dynamodbCalls"], 4);
}

async fn corrupt_items_are_internal_errors(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    // Overwrite an issue with a state no writer produces.
    let mut items = gridgate::seed::demo_items().unwrap();
    let issue = items
        .iter_mut()
        .find(|i| {
            i.get("PK") == Some(&AttributeValue::S("issue-020e".into()))
                && i.get("Type") == Some(&AttributeValue::S("Issue".into()))
        })
        .unwrap();
    issue.insert("State".into(), AttributeValue::S("exploded".into()));
    let broken: Item = issue.clone();
    app.store.bulk_put(vec![broken]).await.unwrap();
    let body = app
        .post(r#"{ issue(id: "issue-020e") { name } }"#, json!({}))
        .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "INTERNAL_SERVER_ERROR",
        "{body:#}"
    );
    assert_eq!(body["errors"][0]["message"], "internal error");
    assert!(!body.to_string().contains("exploded"));
}

crate::both_stores!(
    outages_are_store_unavailable,
    unprocessed_keys_are_retried,
    corrupt_items_are_internal_errors,
);

/// A DynamoDB endpoint where nothing listens: every call fails fast.
#[tokio::test]
async fn unreachable_dynamodb_is_store_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store =
        gridgate::store::dynamodb::DynamoStore::connect(gridgate::store::dynamodb::DynamoConfig {
            table: "nowhere".into(),
            endpoint: Some(format!("http://127.0.0.1:{port}")),
            local_credentials: true,
        })
        .await
        .unwrap();
    let test_store = TestStore::new(Backend::Embedded).await;
    let app = TestApp::serve_store(Arc::new(store), test_store, Limits::default()).await;
    let (code, message) = app.error(GRID, json!({})).await;
    assert_eq!(code, "STORE_UNAVAILABLE");
    assert!(!message.contains("127.0.0.1"), "{message}");
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
}
