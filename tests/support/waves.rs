//! A store wrapper that records how a request's DynamoDB calls depend on each other: each
//! call is put in a *wave*, one more than the latest wave among the calls that had finished
//! when it started. Calls that run concurrently share a wave; a call that waited for another
//! comes a wave later. So the number of waves is the length of the request's chain of calls,
//! whatever the latency of each: what the grid page's budget of waves is about.

#![allow(dead_code)]

use std::future::Future;
use std::sync::{Arc, Mutex};

use super::app::{Backend, TestApp, TestStore};

use async_trait::async_trait;
use gridgate::app::Settings;
use gridgate::store::{
    BatchGetOutput, DynStore, GetOutput, Item, Key, Query, QueryOutput, RawItem, ScanOutput, Store,
    StoreError, WriteOp, WriteOutput,
};

/// One recorded call: its operation and its wave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub op: &'static str,
    pub wave: usize,
}

#[derive(Default)]
struct State {
    /// The latest wave among the calls that have finished.
    finished: usize,
    calls: Vec<Call>,
}

pub struct WaveRecorder {
    inner: DynStore,
    state: Mutex<State>,
}

impl WaveRecorder {
    pub fn new(inner: DynStore) -> Arc<WaveRecorder> {
        Arc::new(WaveRecorder {
            inner,
            state: Mutex::new(State::default()),
        })
    }

    /// The calls recorded since the last `take`, in the order they finished, and a fresh start
    /// for the next request.
    pub fn take(&self) -> Vec<Call> {
        let mut state = self.state.lock().unwrap();
        state.finished = 0;
        std::mem::take(&mut state.calls)
    }

    async fn record<T>(&self, op: &'static str, call: impl Future<Output = T>) -> T {
        let wave = self.state.lock().unwrap().finished + 1;
        // Lets every call that is ready to start alongside this one start before this one
        // can finish: a store that answers without waiting (the embedded one) would otherwise
        // finish each call before its siblings were polled, and make them look dependent.
        tokio::task::yield_now().await;
        let out = call.await;
        let mut state = self.state.lock().unwrap();
        state.finished = state.finished.max(wave);
        state.calls.push(Call { op, wave });
        out
    }
}

/// A served store of `backend` whose calls are recorded. No background work calls the store
/// while tests run: the start-up sweep round is over when this returns, and the periodic
/// rounds are a day apart.
pub async fn spawn_recorded(backend: Backend) -> (TestApp, Arc<WaveRecorder>) {
    let test_store = TestStore::new(backend).await;
    let recorder = WaveRecorder::new(test_store.store.clone());
    let mut settings = Settings::default();
    settings.sweep.lease = std::time::Duration::from_secs(24 * 3600);
    settings.http.request_timeout = std::time::Duration::from_secs(120);
    let app = TestApp::serve_with_settings(recorder.clone(), test_store, settings).await;
    app.sweeps_idle().await;
    recorder.take();
    (app, recorder)
}

/// The number of waves of a request's calls.
pub fn waves(calls: &[Call]) -> usize {
    calls.iter().map(|c| c.wave).max().unwrap_or(0)
}

#[async_trait]
impl Store for WaveRecorder {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.record("GetItem", self.inner.get(key)).await
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.record("GetItem", self.inner.get_consistent(key)).await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        self.record("BatchGetItem", self.inner.batch_get(keys))
            .await
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.record("Query", self.inner.query(query)).await
    }

    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        self.record("Query", self.inner.query_raw(query)).await
    }

    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        self.record("BatchGetItem", self.inner.batch_get_raw(keys))
            .await
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        self.record("Scan", self.inner.scan(start, limit)).await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        self.record("TransactWriteItems", self.inner.transact_write(ops))
            .await
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        self.record("BatchWriteItem", self.inner.batch_put(items))
            .await
    }

    async fn bulk_put(&self, items: Vec<Item>) -> Result<(), StoreError> {
        self.inner.bulk_put(items).await
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.inner.ensure_table().await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
}
