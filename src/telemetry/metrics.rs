//! Every Prometheus metric gridgate exports, defined once, in one registry per application.
//!
//! A registry per [`Metrics`] (rather than the `prometheus` crate's process-wide default
//! registry) keeps applications apart: the tests run many in one process and assert exact
//! counts on each. Labels are bounded sets only — operation types, error codes, DynamoDB
//! operations, error kinds, the caller of the store — never ids or names clients choose.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `gridgate_requests_total` | counter | `type` (query, mutation, subscription, none), `code` (`ok` or the first error's code) |
//! | `gridgate_request_duration_seconds` | histogram | `type` |
//! | `gridgate_requests_in_flight` | gauge | |
//! | `gridgate_admission_refusals_total` | counter | `reason` (rate, cost, caller_in_flight, server_in_flight, caller_exports, server_exports), `caller` (tenant, unauthenticated, operator: `--auth none`) |
//! | `gridgate_dynamodb_calls_total` | counter | `operation`, `source` (api, sweep) |
//! | `gridgate_dynamodb_read_capacity_units_total` | counter | `operation`, `source` |
//! | `gridgate_dynamodb_write_capacity_units_total` | counter | `operation`, `source` |
//! | `gridgate_dynamodb_call_duration_seconds` | histogram | `operation`, `source` |
//! | `gridgate_dynamodb_errors_total` | counter | `operation`, `source`, `error` |
//! | `gridgate_dynamodb_retries_total` | counter | `operation`, `source` |
//! | `gridgate_dynamodb_throttles_total` | counter | `operation`, `source` |
//! | `gridgate_dynamodb_unprocessed_retries_total` | counter | `operation`, `source` |
//! | `gridgate_fast_path_fallbacks_total` | counter | `path`, `reason` (see [`Fallback`]) |
//!
//! The hot path does no label look-up: the store metrics of each operation are resolved
//! once, per source, into handles (atomics) by [`Metrics::store`].

use std::sync::Arc;
use std::time::Duration;

use prometheus::{
    Counter, CounterVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, Opts, Registry, TextEncoder,
};

use super::{OperationKind, TelemetryError};

/// Request latency buckets, in seconds: a grid page takes about a millisecond on the embedded
/// store and a few on DynamoDB; the top bucket is the default request timeout (10 s).
const REQUEST_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Store call latency buckets, in seconds: from the embedded store's tens of microseconds to
/// the DynamoDB client's operation timeout (5 s).
const CALL_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// The DynamoDB operations the stores make, as the `operation` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamoOp {
    GetItem,
    BatchGetItem,
    Query,
    Scan,
    TransactWriteItems,
    BatchWriteItem,
}

impl DynamoOp {
    pub const ALL: [DynamoOp; 6] = [
        DynamoOp::GetItem,
        DynamoOp::BatchGetItem,
        DynamoOp::Query,
        DynamoOp::Scan,
        DynamoOp::TransactWriteItems,
        DynamoOp::BatchWriteItem,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DynamoOp::GetItem => "GetItem",
            DynamoOp::BatchGetItem => "BatchGetItem",
            DynamoOp::Query => "Query",
            DynamoOp::Scan => "Scan",
            DynamoOp::TransactWriteItems => "TransactWriteItems",
            DynamoOp::BatchWriteItem => "BatchWriteItem",
        }
    }
}

/// A fast path that fell back to its general twin, and why: the `path` and `reason` labels
/// of `gridgate_fast_path_fallbacks_total`. Each path has its own closed set of reasons, so
/// the labels are a fixed, small set (never text from a request or a row).
///
/// A fall-back answers exactly as the fast path would have (each path's tests hold the two
/// together), only slower; outside odd data and odd queries the counter stays at zero, and a
/// test asserts that the README's grid queries never fall back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// `graphql/rows`: a grid list (rows, edges, cells, a project's fields) was resolved by
    /// async-graphql's executor instead of by plan.
    Plan(PlanMiss),
    /// `items::decode_issue_list_row` / `decode_issue_raw`: an issue-list row's stored text
    /// was decoded through an attribute map instead of in one typed pass.
    IssueText(TextMiss),
    /// `items::decode_partition_row`: a project partition row's stored text was decoded
    /// through an attribute map instead of in one typed pass.
    PartitionText(TextMiss),
    /// `store::dynamodb::lift`: a read's items were deserialized by the SDK instead of lifted
    /// out of the response body.
    Lift(LiftMiss),
}

/// Why a selection set took no plan (`graphql/rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanMiss {
    /// A directive other than `@skip`/`@include` (which are gone by then).
    Directive,
    /// A fragment on another type (an interface), one nested too deep, or one not defined.
    Fragment,
    /// A field with arguments.
    Argument,
    /// A field the plan leaves to the executor (one that loads something else).
    Field,
    /// Two selections under one response key, which GraphQL merges.
    MergedKey,
    /// More fields in one selection set than a plan takes.
    Size,
    /// The row's project could not be loaded for its cells, so the executor reports it.
    Project,
}

/// Why a stored row took the attribute-map way (`items::raw`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextMiss {
    /// An attribute the row's entity does not declare.
    UnknownAttribute,
    /// An attribute given twice (an attribute map keeps the last).
    RepeatedAttribute,
    /// A value of another type than its attribute's, or one the pass does not read as is
    /// (a number written unusually, a cell that is neither a string nor a number).
    OddValue,
    /// An attribute the entity requires is missing, or the row has no `Type`.
    MissingAttribute,
    /// A key that is not the id it should be, or a row of another entity than the one asked
    /// for (an index row where an issue was expected).
    BadKey,
    /// The row cannot be read (the general way reports the error).
    Unreadable,
}

/// Why a read's items were left to the SDK (`store::dynamodb::lift`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiftMiss {
    /// The response body is not UTF-8.
    NotUtf8,
    /// The body is not the envelope expected, or `ddbjson` refused an item.
    Unexpected,
    /// The interceptor never saw the response body.
    Unseen,
}

impl PlanMiss {
    pub const ALL: [PlanMiss; 7] = [
        PlanMiss::Directive,
        PlanMiss::Fragment,
        PlanMiss::Argument,
        PlanMiss::Field,
        PlanMiss::MergedKey,
        PlanMiss::Size,
        PlanMiss::Project,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PlanMiss::Directive => "directive",
            PlanMiss::Fragment => "fragment",
            PlanMiss::Argument => "argument",
            PlanMiss::Field => "field",
            PlanMiss::MergedKey => "merged_key",
            PlanMiss::Size => "size",
            PlanMiss::Project => "project",
        }
    }
}

impl TextMiss {
    pub const ALL: [TextMiss; 6] = [
        TextMiss::UnknownAttribute,
        TextMiss::RepeatedAttribute,
        TextMiss::OddValue,
        TextMiss::MissingAttribute,
        TextMiss::BadKey,
        TextMiss::Unreadable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TextMiss::UnknownAttribute => "unknown_attribute",
            TextMiss::RepeatedAttribute => "repeated_attribute",
            TextMiss::OddValue => "odd_value",
            TextMiss::MissingAttribute => "missing_attribute",
            TextMiss::BadKey => "bad_key",
            TextMiss::Unreadable => "unreadable",
        }
    }
}

impl LiftMiss {
    pub const ALL: [LiftMiss; 3] = [LiftMiss::NotUtf8, LiftMiss::Unexpected, LiftMiss::Unseen];

    pub fn as_str(self) -> &'static str {
        match self {
            LiftMiss::NotUtf8 => "not_utf8",
            LiftMiss::Unexpected => "unexpected",
            LiftMiss::Unseen => "unseen",
        }
    }
}

/// How many (path, reason) series there are: the length of [`Fallback::all`].
const FALLBACKS: usize = PlanMiss::ALL.len() + 2 * TextMiss::ALL.len() + LiftMiss::ALL.len();

impl Fallback {
    /// The `path` label.
    pub fn path(self) -> &'static str {
        match self {
            Fallback::Plan(_) => "graphql_rows",
            Fallback::IssueText(_) => "issue_text",
            Fallback::PartitionText(_) => "partition_text",
            Fallback::Lift(_) => "dynamodb_items",
        }
    }

    /// The `reason` label.
    pub fn reason(self) -> &'static str {
        match self {
            Fallback::Plan(miss) => miss.as_str(),
            Fallback::IssueText(miss) | Fallback::PartitionText(miss) => miss.as_str(),
            Fallback::Lift(miss) => miss.as_str(),
        }
    }

    /// Every path and reason, in the order of [`Fallback::index`].
    pub fn all() -> impl Iterator<Item = Fallback> {
        let plans = PlanMiss::ALL.into_iter().map(Fallback::Plan);
        let issues = TextMiss::ALL.into_iter().map(Fallback::IssueText);
        let partitions = TextMiss::ALL.into_iter().map(Fallback::PartitionText);
        let lifts = LiftMiss::ALL.into_iter().map(Fallback::Lift);
        plans.chain(issues).chain(partitions).chain(lifts)
    }

    /// This fall-back's place in [`Fallback::all`]: the reasons' declaration order, each
    /// path after the ones before it.
    fn index(self) -> usize {
        let plans = PlanMiss::ALL.len();
        let texts = TextMiss::ALL.len();
        match self {
            Fallback::Plan(miss) => miss as usize,
            Fallback::IssueText(miss) => plans + miss as usize,
            Fallback::PartitionText(miss) => plans + texts + miss as usize,
            Fallback::Lift(miss) => plans + 2 * texts + miss as usize,
        }
    }
}

/// The fall-back counters of one application, every series resolved up front: counting one
/// is an index and an atomic increment, and only the fall-back branches count (the fast
/// paths do not touch this). Cloning shares the counters.
#[derive(Clone)]
pub struct Fallbacks(Arc<[IntCounter; FALLBACKS]>);

impl Fallbacks {
    /// Counts one fall-back.
    pub fn count(&self, fallback: Fallback) {
        self.0[fallback.index()].inc();
    }
}

/// Counts a fall-back when there are counters to count it in (metrics may be off).
pub fn count_fallback(fallbacks: Option<&Fallbacks>, fallback: Fallback) {
    if let Some(fallbacks) = fallbacks {
        fallbacks.count(fallback);
    }
}

impl std::fmt::Debug for Fallbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fallbacks").finish_non_exhaustive()
    }
}

/// The metrics of one application, and the registry they are rendered from.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    /// Indexed by `OperationKind as usize`.
    durations: [Histogram; 4],
    in_flight: IntGauge,
    refusals: IntCounterVec,
    store: StoreFamilies,
    fallbacks: Fallbacks,
}

/// The store metric families, before their labels are resolved.
#[derive(Clone)]
struct StoreFamilies {
    calls: IntCounterVec,
    read_units: CounterVec,
    write_units: CounterVec,
    duration: HistogramVec,
    errors: IntCounterVec,
    retries: IntCounterVec,
    throttles: IntCounterVec,
    unprocessed_retries: IntCounterVec,
}

impl Metrics {
    /// Defines every metric in a new registry. Fails only on a bad name or label (a bug,
    /// caught by the tests).
    pub fn new() -> Result<Metrics, TelemetryError> {
        let registry = Registry::new();
        let requests = register(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "gridgate_requests_total",
                    "GraphQL requests answered, by operation type and outcome: `ok`, or the \
                     code of the response's first error (HTTP refusals included)",
                ),
                &["type", "code"],
            )?,
        )?;
        let duration = register(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "gridgate_request_duration_seconds",
                    "Time to answer a GraphQL request, from its arrival to its response",
                )
                .buckets(REQUEST_BUCKETS.to_vec()),
                &["type"],
            )?,
        )?;
        let durations = OperationKind::ALL.map(|kind| duration.with_label_values(&[kind.as_str()]));
        // Every type's `ok` series exists from the start, so rates are defined before the
        // first request of each kind.
        for kind in OperationKind::ALL {
            requests.with_label_values(&[kind.as_str(), "ok"]);
        }
        let in_flight = register(
            &registry,
            IntGauge::new(
                "gridgate_requests_in_flight",
                "GraphQL requests being answered",
            )?,
        )?;
        let refusals = register(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "gridgate_admission_refusals_total",
                    "GraphQL requests not admitted: past their caller's rate, query cost or \
                     share of requests in flight (429), or past the server's in-flight limit \
                     (503); failed credentials past their bucket (answered 401, not logged)",
                ),
                &["reason", "caller"],
            )?,
        )?;
        let store_labels = &["operation", "source"];
        let store = StoreFamilies {
            calls: register(
                &registry,
                IntCounterVec::new(
                    Opts::new(
                        "gridgate_dynamodb_calls_total",
                        "DynamoDB calls made (each call once, whatever its SDK retries)",
                    ),
                    store_labels,
                )?,
            )?,
            read_units: register(
                &registry,
                CounterVec::new(
                    Opts::new(
                        "gridgate_dynamodb_read_capacity_units_total",
                        "Read capacity units consumed (as DynamoDB reports them, or as the \
                         embedded store computes them by the same rules)",
                    ),
                    store_labels,
                )?,
            )?,
            write_units: register(
                &registry,
                CounterVec::new(
                    Opts::new(
                        "gridgate_dynamodb_write_capacity_units_total",
                        "Write capacity units consumed",
                    ),
                    store_labels,
                )?,
            )?,
            duration: register(
                &registry,
                HistogramVec::new(
                    HistogramOpts::new(
                        "gridgate_dynamodb_call_duration_seconds",
                        "Time of one store call, SDK retries and backoffs included",
                    )
                    .buckets(CALL_BUCKETS.to_vec()),
                    store_labels,
                )?,
            )?,
            errors: register(
                &registry,
                IntCounterVec::new(
                    Opts::new(
                        "gridgate_dynamodb_errors_total",
                        "Store calls that failed, by kind of error",
                    ),
                    &["operation", "source", "error"],
                )?,
            )?,
            retries: register(
                &registry,
                IntCounterVec::new(
                    Opts::new(
                        "gridgate_dynamodb_retries_total",
                        "Attempts the DynamoDB client made beyond the first of each call",
                    ),
                    store_labels,
                )?,
            )?,
            throttles: register(
                &registry,
                IntCounterVec::new(
                    Opts::new(
                        "gridgate_dynamodb_throttles_total",
                        "Attempts DynamoDB refused for capacity (ThrottlingException, \
                         ProvisionedThroughputExceededException, RequestLimitExceeded, \
                         throttled transactions)",
                    ),
                    store_labels,
                )?,
            )?,
            unprocessed_retries: register(
                &registry,
                IntCounterVec::new(
                    Opts::new(
                        "gridgate_dynamodb_unprocessed_retries_total",
                        "Calls that asked again for the unprocessed keys or items of an \
                         earlier batch call",
                    ),
                    store_labels,
                )?,
            )?,
        };
        let fallbacks = register(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "gridgate_fast_path_fallbacks_total",
                    "Fast paths that fell back to their general twin (same answer, slower), by \
                     path and reason",
                ),
                &["path", "reason"],
            )?,
        )?;
        // Every series exists (at zero) from the start, so an alert on any increase works
        // from the first scrape, and the hot path never looks a label up.
        let counters: Vec<IntCounter> = Fallback::all()
            .map(|fallback| fallbacks.with_label_values(&[fallback.path(), fallback.reason()]))
            .collect();
        let fallbacks = Fallbacks(Arc::new(counters.try_into().map_err(|_| {
            TelemetryError::Metrics(prometheus::Error::Msg(
                "fall-back series do not match their reasons".into(),
            ))
        })?));
        Ok(Metrics {
            registry,
            requests,
            durations,
            in_flight,
            refusals,
            store,
            fallbacks,
        })
    }

    /// The fall-back counters (`gridgate_fast_path_fallbacks_total`), for the layers whose
    /// fast paths fall back: handed down to them, never looked up.
    pub fn fallbacks(&self) -> Fallbacks {
        self.fallbacks.clone()
    }

    /// The store metrics of the calls made by `source` (`api`, `sweep`), every operation's
    /// series resolved (and so exported, at zero) now.
    pub fn store(&self, source: &'static str) -> StoreMetrics {
        let f = &self.store;
        StoreMetrics {
            source,
            errors: f.errors.clone(),
            fallbacks: self.fallbacks.clone(),
            ops: DynamoOp::ALL.map(|op| {
                let labels = [op.as_str(), source];
                OpMetrics {
                    calls: f.calls.with_label_values(&labels),
                    read_units: f.read_units.with_label_values(&labels),
                    write_units: f.write_units.with_label_values(&labels),
                    duration: f.duration.with_label_values(&labels),
                    retries: f.retries.with_label_values(&labels),
                    throttles: f.throttles.with_label_values(&labels),
                    unprocessed_retries: f.unprocessed_retries.with_label_values(&labels),
                }
            }),
        }
    }

    /// Counts a GraphQL request in flight until the guard is dropped (also when the request
    /// is cancelled, by a client that hangs up or by shutdown).
    pub fn in_flight(&self) -> InFlight {
        self.in_flight.inc();
        InFlight(self.in_flight.clone())
    }

    /// Counts an answered GraphQL request. `code` is `ok` or an `ErrorCode`'s text: a bounded
    /// set by construction.
    pub fn request_answered(&self, kind: OperationKind, code: &'static str, took: Duration) {
        self.requests
            .with_label_values(&[kind.as_str(), code])
            .inc();
        self.durations[kind as usize].observe(took.as_secs_f64());
    }

    /// Counts a request that was not admitted. `reason` and `caller` are bounded sets by
    /// construction (`http::admission`'s labels), never a tenant's id.
    pub fn admission_refused(&self, reason: &'static str, caller: &'static str) {
        self.refusals.with_label_values(&[reason, caller]).inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> Result<String, TelemetryError> {
        Ok(TextEncoder::new().encode_to_string(&self.registry.gather())?)
    }
}

fn register<C>(registry: &Registry, collector: C) -> Result<C, prometheus::Error>
where
    C: prometheus::core::Collector + Clone + 'static,
{
    registry.register(Box::new(collector.clone()))?;
    Ok(collector)
}

/// Decrements the in-flight gauge when dropped.
#[must_use]
pub struct InFlight(IntGauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The store metrics of one source (the API's calls or the sweeper's), by operation.
#[derive(Clone)]
pub struct StoreMetrics {
    source: &'static str,
    errors: IntCounterVec,
    /// Where a call whose items the SDK read (`CallRecord::lift_fallback`) is counted.
    fallbacks: Fallbacks,
    /// Indexed like [`DynamoOp::ALL`].
    ops: [OpMetrics; 6],
}

#[derive(Clone)]
struct OpMetrics {
    calls: IntCounter,
    read_units: Counter,
    write_units: Counter,
    duration: Histogram,
    retries: IntCounter,
    throttles: IntCounter,
    unprocessed_retries: IntCounter,
}

/// What one store call did, for [`StoreMetrics::record`].
#[derive(Clone, Copy, Debug, Default)]
pub struct CallRecord {
    pub took: Duration,
    pub read_units: f64,
    pub write_units: f64,
    /// SDK attempts beyond the first.
    pub retries: u32,
    /// Attempts refused for capacity.
    pub throttles: u32,
    /// Whether the call re-asked for an earlier batch call's unprocessed keys or items.
    pub unprocessed_retry: bool,
    /// The kind of error the call failed with (`StoreError::kind`).
    pub error: Option<&'static str>,
    /// Why the call's items were read by the SDK rather than lifted out of the response
    /// (`store::dynamodb::lift`), when they were.
    pub lift_fallback: Option<LiftMiss>,
}

impl StoreMetrics {
    /// Which caller's calls these are.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// Records one call of `op`.
    pub fn record(&self, op: DynamoOp, call: CallRecord) {
        let m = &self.ops[op as usize];
        m.calls.inc();
        if call.read_units > 0.0 {
            m.read_units.inc_by(call.read_units);
        }
        if call.write_units > 0.0 {
            m.write_units.inc_by(call.write_units);
        }
        m.duration.observe(call.took.as_secs_f64());
        if call.retries > 0 {
            m.retries.inc_by(u64::from(call.retries));
        }
        if call.throttles > 0 {
            m.throttles.inc_by(u64::from(call.throttles));
        }
        if call.unprocessed_retry {
            m.unprocessed_retries.inc();
        }
        if let Some(miss) = call.lift_fallback {
            self.fallbacks.count(Fallback::Lift(miss));
        }
        if let Some(error) = call.error {
            // Errors are rare: their series are resolved when they happen.
            self.errors
                .with_label_values(&[op.as_str(), self.source, error])
                .inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_is_defined_and_rendered() {
        let metrics = Metrics::new().expect("metrics");
        let store = metrics.store("api");
        store.record(
            DynamoOp::Query,
            CallRecord {
                took: Duration::from_millis(3),
                read_units: 1.5,
                retries: 2,
                throttles: 1,
                lift_fallback: Some(LiftMiss::Unexpected),
                ..CallRecord::default()
            },
        );
        store.record(
            DynamoOp::TransactWriteItems,
            CallRecord {
                error: Some("condition_failed"),
                ..CallRecord::default()
            },
        );
        metrics.request_answered(OperationKind::Query, "ok", Duration::from_millis(4));
        metrics.admission_refused("rate", "tenant");
        {
            let _guard = metrics.in_flight();
            assert!(metrics
                .render()
                .unwrap()
                .contains("gridgate_requests_in_flight 1\n"));
        }
        let text = metrics.render().unwrap();
        for line in [
            "gridgate_requests_total{code=\"ok\",type=\"query\"} 1",
            "gridgate_requests_total{code=\"ok\",type=\"mutation\"} 0",
            "gridgate_requests_in_flight 0",
            "gridgate_request_duration_seconds_bucket{type=\"query\",le=\"0.005\"} 1",
            "gridgate_dynamodb_calls_total{operation=\"Query\",source=\"api\"} 1",
            "gridgate_dynamodb_calls_total{operation=\"GetItem\",source=\"api\"} 0",
            "gridgate_dynamodb_read_capacity_units_total{operation=\"Query\",source=\"api\"} 1.5",
            "gridgate_dynamodb_retries_total{operation=\"Query\",source=\"api\"} 2",
            "gridgate_dynamodb_throttles_total{operation=\"Query\",source=\"api\"} 1",
            "gridgate_dynamodb_errors_total{error=\"condition_failed\",operation=\"TransactWriteItems\",source=\"api\"} 1",
            "gridgate_admission_refusals_total{caller=\"tenant\",reason=\"rate\"} 1",
            "gridgate_fast_path_fallbacks_total{path=\"dynamodb_items\",reason=\"unexpected\"} 1",
            "gridgate_fast_path_fallbacks_total{path=\"graphql_rows\",reason=\"field\"} 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }

    #[test]
    fn every_fallback_has_its_own_series() {
        let metrics = Metrics::new().unwrap();
        let all: Vec<Fallback> = Fallback::all().collect();
        assert_eq!(all.len(), FALLBACKS);
        for (i, fallback) in all.iter().enumerate() {
            assert_eq!(fallback.index(), i, "{fallback:?}");
        }
        metrics
            .fallbacks()
            .count(Fallback::IssueText(TextMiss::UnknownAttribute));
        let text = metrics.render().unwrap();
        for fallback in all {
            let n = u8::from(fallback == Fallback::IssueText(TextMiss::UnknownAttribute));
            let line = format!(
                "gridgate_fast_path_fallbacks_total{{path=\"{}\",reason=\"{}\"}} {n}",
                fallback.path(),
                fallback.reason()
            );
            assert!(text.lines().any(|l| l == line), "missing {line:?}");
        }
    }

    #[test]
    fn applications_do_not_share_metrics() {
        let a = Metrics::new().unwrap();
        let b = Metrics::new().unwrap();
        a.request_answered(OperationKind::Mutation, "CONFLICT", Duration::ZERO);
        assert!(a.render().unwrap().contains("code=\"CONFLICT\""));
        assert!(!b.render().unwrap().contains("code=\"CONFLICT\""));
    }
}
