//! Per-request cost accounting: a [`Store`] wrapper that counts calls and consumed capacity.
//!
//! The shared store lives for the whole process; each GraphQL request wraps it in a
//! [`Metered`] with a fresh [`CostMeter`], so `extensions.cost` reports exactly that request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{
    BatchGetOutput, Capacity, DynStore, GetOutput, Item, Key, Query, QueryOutput, RawItem,
    ScanOutput, Store, StoreError, WriteOp, WriteOutput,
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

    /// Adds what a probe read cost (see `Repo::probe`) once its result may be reported.
    pub fn charge(&self, cost: CostReport) {
        self.calls.fetch_add(cost.dynamodb_calls, Ordering::Relaxed);
        let mut total = self.capacity.lock().unwrap_or_else(|e| e.into_inner());
        total.read_units += cost.read_capacity_units;
        total.write_units += cost.write_capacity_units;
    }

    /// Sets the meter back to an earlier snapshot plus `extra`: a mutation that ends in
    /// `NOT_FOUND` is reported at one fixed price, whatever it had to read to find out, so the
    /// cost cannot tell "another tenant's" from "nobody's".
    pub fn rewind(&self, snapshot: CostReport, extra: CostReport) {
        let mut total = self.capacity.lock().unwrap_or_else(|e| e.into_inner());
        self.calls.store(
            snapshot.dynamodb_calls + extra.dynamodb_calls,
            Ordering::Relaxed,
        );
        total.read_units = snapshot.read_capacity_units + extra.read_capacity_units;
        total.write_units = snapshot.write_capacity_units + extra.write_capacity_units;
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

/// A request's ceiling on DynamoDB calls and read capacity, shared by every metered view of
/// the store the request uses (its own and its probes'). Once spent, further calls fail at
/// once with [`StoreError::BudgetExceeded`] instead of reaching the store.
#[derive(Debug)]
pub struct CallBudget {
    max_calls: u64,
    max_read_units: f64,
    calls: AtomicU64,
    read_units: Mutex<f64>,
    exceeded: std::sync::atomic::AtomicBool,
}

impl CallBudget {
    pub fn new(max_calls: u64, max_read_units: f64) -> Arc<Self> {
        Arc::new(CallBudget {
            max_calls,
            max_read_units,
            calls: AtomicU64::new(0),
            read_units: Mutex::new(0.0),
            exceeded: Default::default(),
        })
    }

    /// A fresh budget with the same ceilings.
    pub fn clone_limits(&self) -> Arc<Self> {
        CallBudget::new(self.max_calls, self.max_read_units)
    }

    /// No ceiling (tools, tests of other things).
    pub fn unlimited() -> Arc<Self> {
        CallBudget::new(u64::MAX, f64::INFINITY)
    }

    /// What has been spent: calls and read units.
    pub fn spent(&self) -> (u64, f64) {
        let reads = *self.read_units.lock().unwrap_or_else(|e| e.into_inner());
        (self.calls.load(Ordering::Relaxed), reads)
    }

    /// Sets the spending back to `spent` plus `extra` (see [`CostMeter::rewind`]: a mutation
    /// that ends in `NOT_FOUND` spends its fixed price, whatever it read).
    pub fn rewind(&self, spent: (u64, f64), extra: CostReport) {
        let mut reads = self.read_units.lock().unwrap_or_else(|e| e.into_inner());
        self.calls
            .store(spent.0 + extra.dynamodb_calls, Ordering::Relaxed);
        *reads = spent.1 + extra.read_capacity_units;
    }

    /// Whether a call was refused for want of budget.
    pub fn exceeded(&self) -> bool {
        self.exceeded.load(Ordering::Relaxed)
    }

    fn admit(&self) -> Result<(), StoreError> {
        let spent_reads = *self.read_units.lock().unwrap_or_else(|e| e.into_inner());
        let calls = self.calls.fetch_add(1, Ordering::Relaxed);
        if calls >= self.max_calls || spent_reads >= self.max_read_units {
            self.exceeded.store(true, Ordering::Relaxed);
            return Err(StoreError::BudgetExceeded);
        }
        Ok(())
    }

    /// Counts what a call read. Calls run concurrently are admitted before any of them is
    /// counted, so the total can pass the ceiling; when it does, the request has exceeded
    /// its budget all the same (and is answered `LIMIT_EXCEEDED`), however its calls overlapped.
    pub fn spend(&self, read_units: f64) {
        let mut total = self.read_units.lock().unwrap_or_else(|e| e.into_inner());
        *total += read_units;
        if *total > self.max_read_units {
            self.exceeded.store(true, Ordering::Relaxed);
        }
    }
}

/// A store that records every call it forwards in a [`CostMeter`], within a [`CallBudget`].
#[derive(Clone)]
pub struct Metered {
    inner: DynStore,
    meter: Arc<CostMeter>,
    budget: Arc<CallBudget>,
    /// Whether the reads of calls count against the budget as they happen; a probe's count
    /// only once charged (see `Repo::charge`), at the figure the client is shown.
    spend_reads: bool,
}

impl Metered {
    pub fn new(inner: DynStore, meter: Arc<CostMeter>) -> Self {
        Metered::with_budget(inner, meter, CallBudget::unlimited())
    }

    pub fn with_budget(inner: DynStore, meter: Arc<CostMeter>, budget: Arc<CallBudget>) -> Self {
        Metered {
            inner,
            meter,
            budget,
            spend_reads: true,
        }
    }

    /// A probe's view: calls are admitted within `budget`, reads are left for the charge.
    pub fn for_probe(inner: DynStore, meter: Arc<CostMeter>, budget: Arc<CallBudget>) -> Self {
        Metered {
            spend_reads: false,
            ..Metered::with_budget(inner, meter, budget)
        }
    }

    /// Runs one call within the budget and records it.
    async fn call<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, StoreError>>,
        consumed: impl FnOnce(&T) -> Capacity,
    ) -> Result<T, StoreError> {
        self.budget.admit()?;
        let result = call.await;
        match &result {
            Ok(out) => {
                let consumed = consumed(out);
                if self.spend_reads {
                    self.budget.spend(consumed.read_units);
                }
                self.meter.record(consumed);
            }
            // A failed call still costs a round trip.
            Err(_) => self.meter.record_call(),
        }
        result
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

    fn table_name(&self) -> &str {
        self.inner.table_name()
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.call(self.inner.get(key), |out| out.consumed).await
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.call(self.inner.get_consistent(key), |out| out.consumed)
            .await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        self.call(self.inner.batch_get(keys), |out| out.consumed)
            .await
    }

    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        self.call(self.inner.batch_get_raw(keys), |out| out.consumed)
            .await
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.call(self.inner.query(query), |out| out.consumed).await
    }

    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        self.call(self.inner.query_raw(query), |out| out.consumed)
            .await
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        self.call(self.inner.scan(start, limit), |out| out.consumed)
            .await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        self.call(self.inner.transact_write(ops), |out| out.consumed)
            .await
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        self.budget.admit()?;
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
