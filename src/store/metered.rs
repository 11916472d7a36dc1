//! Per-request cost accounting: a [`Store`] wrapper that counts calls and consumed capacity.
//!
//! The shared store lives for the whole process; each GraphQL request wraps it in a
//! [`Metered`] with a fresh [`CostMeter`], so `extensions.cost` reports exactly that request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{
    BatchGetOutput, Capacity, DynStore, GetOutput, Item, Key, Query, QueryOutput, ScanOutput,
    Store, StoreError, WriteOp, WriteOutput,
};

/// Counts DynamoDB calls and read and write capacity. Cheap to share between the tasks of one request.
#[derive(Debug, Default)]
pub struct CostMeter {
    calls: AtomicU64,
    capacity: Mutex<Capacity>,
}

/// A snapshot of a [`CostMeter`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CostReport {
    pub dynamodb_calls: u64,
    pub read_capacity_units: f64,
    pub write_capacity_units: f64,
}

impl CostMeter {
    pub fn new() -> Arc<Self> {
        Arc::new(CostMeter::default())
    }

    fn record(&self, consumed: Capacity) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        // A poisoned lock only means another task panicked mid-addition; the sum is still a
        // number, so keep counting rather than lose the report.
        let mut total = self.capacity.lock().unwrap_or_else(|e| e.into_inner());
        *total += consumed;
    }

    fn record_call(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one read call: its consumed capacity when it answered, the call alone when it
    /// failed (a failed call still costs a round trip).
    fn observe<T>(
        &self,
        result: Result<T, StoreError>,
        consumed: impl FnOnce(&T) -> Capacity,
    ) -> Result<T, StoreError> {
        match &result {
            Ok(out) => self.record(consumed(out)),
            Err(_) => self.record_call(),
        }
        result
    }

    pub fn report(&self) -> CostReport {
        let capacity = *self.capacity.lock().unwrap_or_else(|e| e.into_inner());
        CostReport {
            dynamodb_calls: self.calls.load(Ordering::Relaxed),
            read_capacity_units: capacity.read_units,
            write_capacity_units: capacity.write_units,
        }
    }
}

/// A store that records every call it forwards in a [`CostMeter`].
#[derive(Clone)]
pub struct Metered {
    inner: DynStore,
    meter: Arc<CostMeter>,
}

impl Metered {
    pub fn new(inner: DynStore, meter: Arc<CostMeter>) -> Self {
        Metered { inner, meter }
    }

    pub fn meter(&self) -> &Arc<CostMeter> {
        &self.meter
    }
}

#[async_trait]
impl Store for Metered {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.meter
            .observe(self.inner.get(key).await, |out| out.consumed)
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.meter
            .observe(self.inner.get_consistent(key).await, |out| out.consumed)
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        self.meter
            .observe(self.inner.batch_get(keys).await, |out| out.consumed)
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.meter
            .observe(self.inner.query(query).await, |out| out.consumed)
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        self.meter
            .observe(self.inner.scan(start, limit).await, |out| out.consumed)
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        self.meter
            .observe(self.inner.transact_write(ops).await, |out| out.consumed)
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        self.meter.record_call();
        self.inner.batch_put(items).await
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.inner.ensure_table().await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
}
