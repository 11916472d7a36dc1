//! The transport's side of the metrics: counting `/graphql` requests by operation type and
//! outcome code (HTTP refusals included), their latency and how many are in flight; and
//! serving the Prometheus exposition at `/metrics`.
//!
//! Every `/graphql` answer carries its [`Outcome`] in the response's extensions (written by
//! `wire` for GraphQL responses and refusals alike), so the outcome is counted where it is
//! decided and never re-parsed from the body.
//!
//! `/metrics` is an operator endpoint on the main port, without authentication: it shows
//! aggregate counts only (no ids, no tenant, no client-chosen names). Keep it off the public
//! path at the load balancer, or turn it off with `--metrics false` (it then answers 404).

use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::telemetry::OperationKind;

/// How a `/graphql` request was answered: the operation's type (when known) and `ok` or the
/// code of the first error.
#[derive(Clone, Copy, Debug)]
pub(super) struct Outcome {
    pub operation: OperationKind,
    pub code: &'static str,
}

/// The code label of a response without errors.
pub(super) const OK: &str = "ok";

/// Sets the operation type of an answer's outcome (known once the document was parsed).
pub(super) fn set_operation(response: &mut Response, operation: OperationKind) {
    if let Some(outcome) = response.extensions_mut().get_mut::<Outcome>() {
        outcome.operation = operation;
    }
}

/// Counts `/graphql` requests: in flight while they run (a dropped request too), then by
/// outcome with their latency. Other routes (pages, probes, `/metrics`) are not API requests.
pub(super) async fn observe(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(metrics) = state.metrics.as_ref() else {
        return next.run(request).await;
    };
    if request.uri().path() != "/graphql" {
        return next.run(request).await;
    }
    let _in_flight = metrics.in_flight();
    let started = Instant::now();
    let response = next.run(request).await;
    // Without an outcome it was no GraphQL answer: GraphiQL's page, a CORS preflight.
    if let Some(outcome) = response.extensions().get::<Outcome>() {
        metrics.request_answered(outcome.operation, outcome.code, started.elapsed());
    }
    response
}

/// `GET /metrics`: the Prometheus text exposition, or 404 when metrics are off.
pub(super) async fn scrape(State(state): State<AppState>, request: Request) -> Response {
    let Some(metrics) = state.metrics.as_ref() else {
        return super::not_found(request).await;
    };
    match metrics.render() {
        Ok(text) => {
            let mut response = text.into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            response
        }
        Err(e) => {
            tracing::error!(error = %e, "rendering the metrics failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
