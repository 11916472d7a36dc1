//! A [`Store`] wrapper that reports every call it forwards: a `dynamodb` tracing span per
//! call, and the Prometheus metrics of calls, capacity, latency, retries, throttles and errors
//! by operation. It is store-agnostic, so both stores report identically; the only thing a
//! store adds is the DynamoDB client's attempts (the SDK retries inside one call), which the
//! DynamoDB store notes through `note_attempt`.
//!
//! `app::build` wraps the shared store once for the API's requests and once for the sweeper
//! (the `source` label), under the per-request meters: a call refused by a request's budget
//! never reaches the store and is not counted here.
//!
//! Cost on the hot path: the span is DEBUG, so with the default filter it is a disabled
//! callsite (no allocation, its field values never evaluated); the metrics are handles
//! resolved once (a few atomic additions); the attempt counter is a task-local cell. With
//! metrics off and the span disabled the call is forwarded as is.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tracing::field::Empty;
use tracing::Instrument;

use super::{
    BatchGetOutput, BulkLoad, Capacity, DynStore, GetOutput, Index, Item, Key, Query, QueryOutput,
    RawItem, ScanOutput, Store, StoreError, WriteOp, WriteOutput,
};
use crate::telemetry::metrics::CallRecord;
use crate::telemetry::{DynamoOp, LiftMiss, StoreMetrics};

/// Attempts of the call in progress, as the DynamoDB client makes them, and whether its
/// items fell back to the SDK's deserializer.
#[derive(Clone, Copy, Debug, Default)]
struct Attempts {
    attempts: u32,
    throttles: u32,
    lift_fallback: Option<LiftMiss>,
}

tokio::task_local! {
    /// The attempts of the call being made in this task (each call has its own scope, so
    /// concurrent calls joined in one task are counted apart).
    static CALL: Cell<Attempts>;
    /// Whether the call being made re-asks for an earlier call's unprocessed keys or items.
    static UNPROCESSED_RETRY: bool;
}

/// Notes one attempt of the call in progress, and whether DynamoDB refused it for capacity.
/// Called by the DynamoDB store's SDK interceptor after every attempt; outside an
/// instrumented call (the offline tools' stores) it does nothing.
pub(crate) fn note_attempt(throttled: bool) {
    let _ = CALL.try_with(|cell| {
        let mut attempts = cell.get();
        attempts.attempts += 1;
        attempts.throttles += u32::from(throttled);
        cell.set(attempts);
    });
}

/// Notes that the call in progress read its items the SDK's way rather than lifted out of
/// the response (`store::dynamodb::lift`), and why; counted with the call's metrics. Outside
/// an instrumented call it does nothing.
pub(crate) fn note_lift_fallback(miss: LiftMiss) {
    let _ = CALL.try_with(|cell| {
        let mut attempts = cell.get();
        attempts.lift_fallback = Some(miss);
        cell.set(attempts);
    });
}

/// Runs one store call, marked as a retry of unprocessed keys or items when `retry` (see
/// `store::retry`).
pub(crate) async fn unprocessed_retry<F: Future>(retry: bool, call: F) -> F::Output {
    UNPROCESSED_RETRY.scope(retry, call).await
}

/// A store whose calls are traced and counted (see the module docs).
#[derive(Clone)]
pub struct Instrumented {
    inner: DynStore,
    /// Who makes the calls (`api`, `sweep`): a span field and the metrics' `source` label.
    source: &'static str,
    metrics: Option<StoreMetrics>,
}

impl Instrumented {
    /// Wraps `inner`; without `metrics` the calls are only traced.
    pub fn new(inner: DynStore, source: &'static str, metrics: Option<StoreMetrics>) -> Self {
        Instrumented {
            inner,
            source,
            metrics,
        }
    }

    /// Runs one call of `op` in its span, then records what it did: `summary` gives the
    /// items it returned (or wrote), those it left unprocessed and what it consumed.
    async fn call<T>(
        &self,
        op: DynamoOp,
        index: Option<Index>,
        call: impl Future<Output = Result<T, StoreError>>,
        summary: impl FnOnce(&T) -> (usize, usize, Capacity),
    ) -> Result<T, StoreError> {
        let span = tracing::debug_span!(
            "dynamodb",
            operation = op.as_str(),
            source = self.source,
            table = self.inner.table_name(),
            index = index.map(index_name),
            items = Empty,
            unprocessed = Empty,
            read_units = Empty,
            write_units = Empty,
            retries = Empty,
            throttles = Empty,
            error = Empty,
        );
        // Nothing to report to: not even a clock read.
        if self.metrics.is_none() && span.is_disabled() {
            return call.await;
        }
        let unprocessed_retry = UNPROCESSED_RETRY.try_with(|retry| *retry).unwrap_or(false);
        let started = Instant::now();
        let (result, attempts) = CALL
            .scope(Cell::new(Attempts::default()), async {
                let result = call.await;
                (result, CALL.with(Cell::get))
            })
            .instrument(span.clone())
            .await;
        let took = started.elapsed();
        // The embedded store makes no attempts to count: one call, one attempt.
        let retries = attempts.attempts.saturating_sub(1);
        let mut record = CallRecord {
            took,
            retries,
            throttles: attempts.throttles,
            unprocessed_retry,
            lift_fallback: attempts.lift_fallback,
            ..CallRecord::default()
        };
        match &result {
            Ok(out) => {
                let (items, unprocessed, consumed) = summary(out);
                record.read_units = consumed.read_units;
                record.write_units = consumed.write_units;
                span.record("items", items);
                if unprocessed > 0 {
                    span.record("unprocessed", unprocessed);
                }
                span.record("read_units", consumed.read_units);
                span.record("write_units", consumed.write_units);
            }
            Err(e) => {
                record.error = Some(e.kind());
                span.record("error", e.kind());
            }
        }
        span.record("retries", retries);
        span.record("throttles", attempts.throttles);
        if let Some(metrics) = &self.metrics {
            metrics.record(op, record);
        }
        result
    }
}

fn index_name(index: Index) -> &'static str {
    match index {
        Index::Table => "table",
        Index::Gsi1 => super::table::GSI1,
    }
}

#[async_trait]
impl Store for Instrumented {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn table_name(&self) -> &str {
        self.inner.table_name()
    }

    async fn get(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.call(DynamoOp::GetItem, None, self.inner.get(key), |out| {
            (usize::from(out.item.is_some()), 0, out.consumed)
        })
        .await
    }

    async fn get_consistent(&self, key: &Key) -> Result<GetOutput, StoreError> {
        self.call(
            DynamoOp::GetItem,
            None,
            self.inner.get_consistent(key),
            |out| (usize::from(out.item.is_some()), 0, out.consumed),
        )
        .await
    }

    async fn batch_get(&self, keys: &[Key]) -> Result<BatchGetOutput, StoreError> {
        self.call(
            DynamoOp::BatchGetItem,
            None,
            self.inner.batch_get(keys),
            |out| (out.items.len(), out.unprocessed.len(), out.consumed),
        )
        .await
    }

    async fn batch_get_raw(&self, keys: &[Key]) -> Result<BatchGetOutput<RawItem>, StoreError> {
        self.call(
            DynamoOp::BatchGetItem,
            None,
            self.inner.batch_get_raw(keys),
            |out| (out.items.len(), out.unprocessed.len(), out.consumed),
        )
        .await
    }

    async fn query(&self, query: &Query) -> Result<QueryOutput, StoreError> {
        self.call(
            DynamoOp::Query,
            Some(query.index),
            self.inner.query(query),
            |out| (out.items.len(), 0, out.consumed),
        )
        .await
    }

    async fn query_raw(&self, query: &Query) -> Result<QueryOutput<RawItem>, StoreError> {
        self.call(
            DynamoOp::Query,
            Some(query.index),
            self.inner.query_raw(query),
            |out| (out.items.len(), 0, out.consumed),
        )
        .await
    }

    async fn scan(
        &self,
        start: Option<&Key>,
        limit: Option<u32>,
    ) -> Result<ScanOutput, StoreError> {
        self.call(DynamoOp::Scan, None, self.inner.scan(start, limit), |out| {
            (out.items.len(), 0, out.consumed)
        })
        .await
    }

    async fn transact_write(&self, ops: Vec<WriteOp>) -> Result<WriteOutput, StoreError> {
        let count = ops.len();
        self.call(
            DynamoOp::TransactWriteItems,
            None,
            self.inner.transact_write(ops),
            |out| (count, 0, out.consumed),
        )
        .await
    }

    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, StoreError> {
        let count = items.len();
        // BatchWriteItem is only used for bulk loads, which do not ask for consumed capacity.
        self.call(
            DynamoOp::BatchWriteItem,
            None,
            self.inner.batch_put(items),
            |unprocessed| {
                (
                    count.saturating_sub(unprocessed.len()),
                    unprocessed.len(),
                    Capacity::default(),
                )
            },
        )
        .await
    }

    /// Bulk loads (seeding, offline) keep the inner store's own path (one redb transaction for
    /// the embedded store) and are not reported call by call.
    async fn bulk_put(&self, items: Vec<Item>) -> Result<(), StoreError> {
        self.inner.bulk_put(items).await
    }

    async fn bulk_load(self: Arc<Self>) -> Result<Box<dyn BulkLoad>, StoreError> {
        Arc::clone(&self.inner).bulk_load().await
    }

    async fn ensure_table(&self) -> Result<(), StoreError> {
        self.inner.ensure_table().await
    }

    /// Health checks (on DynamoDB, a GetItem of a key no item has) are not the data calls the
    /// metrics count: probes every few seconds would drown a quiet instance's figures.
    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::embedded::EmbeddedStore;
    use crate::telemetry::Metrics;

    fn counter(text: &str, line_start: &str) -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(line_start))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {line_start} in\n{text}"))
    }

    #[tokio::test]
    async fn calls_are_counted_by_operation_and_source() {
        let dir = tempfile::tempdir().unwrap();
        let raw = EmbeddedStore::open(dir.path(), "t").unwrap();
        raw.ensure_table().await.unwrap();
        let metrics = Metrics::new().unwrap();
        let store = Instrumented::new(Arc::new(raw), "api", Some(metrics.store("api")));
        assert_eq!(store.table_name(), "t");
        store.get(&Key::new("a", "b")).await.unwrap();
        store
            .batch_get(&[Key::new("a", "b"), Key::new("c", "d")])
            .await
            .unwrap();
        unprocessed_retry(true, store.batch_get(&[Key::new("a", "b")]))
            .await
            .unwrap();
        let text = metrics.render().unwrap();
        let calls = |op: &str| {
            counter(
                &text,
                &format!("gridgate_dynamodb_calls_total{{operation=\"{op}\",source=\"api\"}}"),
            )
        };
        assert_eq!(calls("GetItem"), 1.0);
        assert_eq!(calls("BatchGetItem"), 2.0);
        assert_eq!(calls("Query"), 0.0);
        // Misses cost the minimum read, 0.5 RCU per key.
        assert_eq!(
            counter(
                &text,
                "gridgate_dynamodb_read_capacity_units_total{operation=\"BatchGetItem\",source=\"api\"}"
            ),
            1.5
        );
        assert_eq!(
            counter(
                &text,
                "gridgate_dynamodb_unprocessed_retries_total{operation=\"BatchGetItem\",source=\"api\"}"
            ),
            1.0
        );
        assert_eq!(
            counter(
                &text,
                "gridgate_dynamodb_retries_total{operation=\"GetItem\",source=\"api\"}"
            ),
            0.0
        );
    }

    #[tokio::test]
    async fn attempts_are_counted_per_call() {
        let attempts = CALL
            .scope(Cell::new(Attempts::default()), async {
                note_attempt(true);
                note_attempt(false);
                CALL.with(Cell::get)
            })
            .await;
        assert_eq!((attempts.attempts, attempts.throttles), (2, 1));
        // Outside a call there is nothing to count, and nothing fails.
        note_attempt(true);
    }

    /// A DynamoDB read whose items the SDK deserialized (noted by the store inside the call)
    /// is counted as a fall-back of the lift, with its reason, in the application's metrics.
    #[tokio::test]
    async fn lift_fallbacks_are_counted_with_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let raw = EmbeddedStore::open(dir.path(), "t").unwrap();
        let metrics = Metrics::new().unwrap();
        let store = Instrumented::new(Arc::new(raw), "api", Some(metrics.store("api")));
        let line =
            "gridgate_fast_path_fallbacks_total{path=\"dynamodb_items\",reason=\"unexpected\"}";
        for fell_back in [false, true] {
            let call = async {
                if fell_back {
                    note_lift_fallback(LiftMiss::Unexpected);
                }
                Ok::<(), StoreError>(())
            };
            store
                .call(DynamoOp::Query, None, call, |_| (0, 0, Capacity::default()))
                .await
                .unwrap();
            let text = metrics.render().unwrap();
            assert_eq!(counter(&text, line), f64::from(u8::from(fell_back)));
        }
        // Outside an instrumented call there is nothing to count in, and nothing fails.
        note_lift_fallback(LiftMiss::Unseen);
    }
}
