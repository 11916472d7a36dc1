//! Operations: what the process tells its operators. The tracing subscriber (logs on stderr,
//! and spans over OTLP with the `otlp` feature), the Prometheus [`Metrics`] of one
//! application, and [`RequestFacts`], what the GraphQL layer learns about a request that the
//! transport reports (its operation's kind and name, on the request span and in the metrics).
//!
//! Spans: `request` (opened by `http` for every request: its id, method and path, then the
//! operation's type and name, its `extensions.cost` and its outcome code) and, below it,
//! `dynamodb` (one per store call, opened by `store::instrumented` at DEBUG level). Metric
//! names and labels are listed in [`metrics`].

pub mod metrics;
#[cfg(feature = "otlp")]
mod otlp;

use std::sync::atomic::{AtomicU8, Ordering};

use async_graphql::parser::types::OperationType;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

pub use metrics::{
    count_fallback, DynamoOp, Fallback, Fallbacks, LiftMiss, Metrics, PlanMiss, StoreMetrics,
    TextMiss,
};

/// Errors of setting up telemetry; they stop the process before it serves.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A metric could not be defined (a bug: names and labels are constants).
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// `--otlp-endpoint` was given to a build without the `otlp` feature.
    #[error(
        "--otlp-endpoint (GRIDGATE_OTLP_ENDPOINT) needs a gridgate built with \
         `cargo build --features otlp`; this build exports no traces"
    )]
    OtlpNotBuilt,
    /// The OTLP exporter could not be built (a malformed endpoint, say).
    #[error("OTLP exporter: {0}")]
    Otlp(String),
    /// A global tracing subscriber was already installed.
    #[error("tracing: {0}")]
    Subscriber(#[from] tracing_subscriber::util::TryInitError),
}

/// How an application reports itself; part of `app::Settings`.
#[derive(Clone, Copy, Debug)]
pub struct TelemetryOptions {
    /// Record Prometheus metrics and serve them at `/metrics` (on by default; `--metrics false`
    /// turns both off: the route answers 404 and nothing is recorded).
    pub metrics: bool,
}

impl Default for TelemetryOptions {
    fn default() -> Self {
        TelemetryOptions { metrics: true }
    }
}

/// The log filter when `RUST_LOG` is not set: requests and warnings, not the AWS SDK's chatter.
const DEFAULT_FILTER: &str = "info,aws=warn";
/// The same with OTLP export on, plus the per-call `dynamodb` spans (DEBUG level): they become
/// children of the request span in the exported trace, and add no log lines (the log shows
/// spans only as the context of events).
#[cfg(feature = "otlp")]
const DEFAULT_OTLP_FILTER: &str = "info,aws=warn,gridgate::store::instrumented=debug";

/// Flushes exported spans when dropped (or [`TracingGuard::shutdown`]); keep it until exit.
#[derive(Default)]
#[must_use = "dropping the guard stops span export"]
pub struct TracingGuard {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl TracingGuard {
    /// Exports the spans still buffered and stops the exporter. Blocks: call it outside the
    /// async runtime, as the process exits.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for TracingGuard {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.provider.take() {
            if let Err(e) = provider.shutdown() {
                eprintln!("gridgate: flushing traces failed: {e}");
            }
        }
    }
}

/// Installs the process's tracing subscriber: logs on stderr filtered by `RUST_LOG` (default
/// `info,aws=warn`), and with `otlp_endpoint` the spans exported over OTLP/HTTP as well.
///
/// Call it before the async runtime starts: the OTLP exporter's HTTP client is a blocking one
/// (the span batcher runs on its own thread), which must not be built inside the runtime.
pub fn init_tracing(otlp_endpoint: Option<&str>) -> Result<TracingGuard, TelemetryError> {
    let filter = |default: &str| {
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default))
    };
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let Some(endpoint) = otlp_endpoint else {
        tracing_subscriber::registry()
            .with(filter(DEFAULT_FILTER))
            .with(logs)
            .try_init()?;
        return Ok(TracingGuard::default());
    };
    #[cfg(feature = "otlp")]
    {
        let (layer, provider) = otlp::layer(endpoint)?;
        tracing_subscriber::registry()
            .with(filter(DEFAULT_OTLP_FILTER))
            .with(logs)
            .with(layer)
            .try_init()?;
        Ok(TracingGuard {
            provider: Some(provider),
        })
    }
    #[cfg(not(feature = "otlp"))]
    {
        let _ = (endpoint, logs);
        Err(TelemetryError::OtlpNotBuilt)
    }
}

/// The kind of operation a request runs, as the `type` label of the request metrics: a
/// bounded set, unlike operation names (which clients choose).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OperationKind {
    /// No operation ran or was chosen: refused before parsing, or not a GraphQL document.
    #[default]
    None,
    Query,
    Mutation,
    Subscription,
}

impl OperationKind {
    pub const ALL: [OperationKind; 4] = [
        OperationKind::None,
        OperationKind::Query,
        OperationKind::Mutation,
        OperationKind::Subscription,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OperationKind::None => "none",
            OperationKind::Query => "query",
            OperationKind::Mutation => "mutation",
            OperationKind::Subscription => "subscription",
        }
    }

    fn from_u8(value: u8) -> OperationKind {
        OperationKind::ALL
            .get(usize::from(value))
            .copied()
            .unwrap_or_default()
    }
}

impl From<OperationType> for OperationKind {
    fn from(ty: OperationType) -> Self {
        match ty {
            OperationType::Query => OperationKind::Query,
            OperationType::Mutation => OperationKind::Mutation,
            OperationType::Subscription => OperationKind::Subscription,
        }
    }
}

/// What the GraphQL layer learns about one request for the transport to report: created by
/// `http` around the request's span, handed to the schema as request data, filled in by the
/// request context once the document is parsed.
#[derive(Debug)]
pub struct RequestFacts {
    kind: AtomicU8,
    span: tracing::Span,
}

impl RequestFacts {
    /// Facts recorded on `span` (the request's).
    pub fn new(span: tracing::Span) -> Self {
        RequestFacts {
            kind: AtomicU8::new(OperationKind::None as u8),
            span,
        }
    }

    /// Notes the operation the request runs (the GraphQL layer chooses it, as execution
    /// will): its kind for the metrics, its kind and name on the request span. Until then the
    /// kind is `none`.
    pub fn note_operation(&self, ty: OperationType, name: Option<&str>) {
        let kind = OperationKind::from(ty);
        self.kind.store(kind as u8, Ordering::Relaxed);
        self.span.record("operation_type", kind.as_str());
        // A name from the document (a GraphQL name, bounded by the document's size limit).
        if let Some(name) = name {
            self.span.record("operation_name", name);
        }
    }

    /// The operation's kind, `none` until noted.
    pub fn operation(&self) -> OperationKind {
        OperationKind::from_u8(self.kind.load(Ordering::Relaxed))
    }

    /// Records a response's `extensions.cost` on the request span.
    pub fn note_cost(&self, response: &async_graphql::Response) {
        let Some(async_graphql::Value::Object(cost)) = response.extensions.get("cost") else {
            return;
        };
        let number = |name: &str| match cost.get(name) {
            Some(async_graphql::Value::Number(n)) => n.as_f64(),
            _ => None,
        };
        if let Some(calls) = number("dynamodbCalls") {
            self.span.record("dynamodb_calls", calls as u64);
        }
        if let Some(units) = number("readCapacityUnits") {
            self.span.record("read_units", units);
        }
        if let Some(units) = number("writeCapacityUnits") {
            self.span.record("write_units", units);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_kinds_round_trip() {
        for kind in OperationKind::ALL {
            assert_eq!(OperationKind::from_u8(kind as u8), kind);
        }
        assert_eq!(OperationKind::from_u8(200), OperationKind::None);
    }

    #[test]
    fn the_noted_operation_is_the_requests_kind() {
        let facts = RequestFacts::new(tracing::Span::none());
        assert_eq!(facts.operation(), OperationKind::None);
        facts.note_operation(OperationType::Mutation, Some("M"));
        assert_eq!(facts.operation(), OperationKind::Mutation);
    }
}
