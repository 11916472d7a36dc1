//! OTLP export of tracing spans (the `otlp` feature): a `tracing-opentelemetry` layer over a
//! batching span processor that posts protobuf over HTTP to a collector.
//!
//! HTTP/protobuf rather than gRPC: a collector (or an agent beside the gateway) accepts both,
//! and HTTP needs no gRPC stack. Plain HTTP only: point it at a local collector, which does
//! the TLS to a backend. The batcher runs on its own thread with a blocking client, so export
//! never runs on (or waits for) the async runtime.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetryLayer;
use tracing_subscriber::registry::LookupSpan;

use super::TelemetryError;

/// The OTLP/HTTP path of traces under a collector's base URL.
const TRACES_PATH: &str = "/v1/traces";

/// The layer exporting spans to the collector at `endpoint` (its base URL, as
/// `OTEL_EXPORTER_OTLP_ENDPOINT` would be: `/v1/traces` is added), and the provider to shut
/// down at exit.
pub(super) fn layer<S>(
    endpoint: &str,
) -> Result<(OpenTelemetryLayer<S, SdkTracer>, SdkTracerProvider), TelemetryError>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    if !endpoint.starts_with("http://") {
        return Err(TelemetryError::Otlp(format!(
            "--otlp-endpoint must be an http:// URL of a collector (got {endpoint:?}); \
             TLS is left to the collector"
        )));
    }
    let base = endpoint.trim_end_matches('/');
    let url = if base.ends_with(TRACES_PATH) {
        base.to_string()
    } else {
        format!("{base}{TRACES_PATH}")
    };
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()
        .map_err(|e| TelemetryError::Otlp(e.to_string()))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name("gridgate").build())
        .build();
    let tracer = provider.tracer("gridgate");
    Ok((tracing_opentelemetry::layer().with_tracer(tracer), provider))
}
