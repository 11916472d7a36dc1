//! HTTP: the axum router serving `/graphql` (POST, GET, GraphiQL), `/playground` and
//! `/healthz`. Transport only: each request is run by [`Gateway::execute`], whose schema
//! extension does the per-request wiring.

use std::sync::Arc;

use async_graphql::http::{playground_source, GraphQLPlaygroundConfig, GraphiQLSource};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower_http::cors::{Any, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

use crate::graphql::error::ErrorCode;
use crate::graphql::Gateway;

/// What every request handler shares: the gateway that runs requests.
pub type AppState = Arc<Gateway>;

/// The largest request body accepted: a grid query with variables is a few kilobytes.
pub const MAX_BODY_BYTES: usize = 256 * 1024;

/// The application's routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/graphql", get(graphql_get).post(graphql_post))
        .route("/playground", get(playground))
        .route("/healthz", get(healthz))
        .layer(RequestBodyLimitLayer::new(MAX_BODY_BYTES))
        .layer(TraceLayer::new_for_http())
        .layer(cors())
        .with_state(state)
}

/// Browsers may call the API from any origin: it takes no cookies (credentials, when they
/// come, travel in the `Authorization` header), so a permissive policy exposes nothing.
fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION, header::ACCEPT])
}

async fn graphql_post(
    State(state): State<AppState>,
    request: GraphQLRequest<BadRequest>,
) -> GraphQLResponse {
    state.execute(request.into_inner()).await.into()
}

/// A request body that is not one GraphQL request: answered as a GraphQL error response with a
/// code, like every other failure, instead of the extractor's plain-text default.
struct BadRequest(async_graphql::ParseRequestError);

impl From<async_graphql::ParseRequestError> for BadRequest {
    fn from(e: async_graphql::ParseRequestError) -> Self {
        BadRequest(e)
    }
}

impl IntoResponse for BadRequest {
    fn into_response(self) -> Response {
        use async_graphql::ParseRequestError as E;
        let (status, message): (StatusCode, &str) = match &self.0 {
            // The parser's own message names its internal types; say what is expected instead.
            E::InvalidRequest(_) => (
                StatusCode::BAD_REQUEST,
                "the body is not a GraphQL request: send a JSON object with `query` (a string) \
                 and optionally `variables` (an object) and `operationName` (a string)",
            ),
            E::UnsupportedBatch => (
                StatusCode::BAD_REQUEST,
                "batched requests are not supported: send one operation per request",
            ),
            E::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is too large",
            ),
            E::Io(_) => (
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            ),
            _ => (StatusCode::BAD_REQUEST, "file uploads are not supported"),
        };
        graphql_error_response(status, message, ErrorCode::BadRequest)
    }
}

/// GET with a `query` parameter runs a query (never a mutation); GET without one, from a
/// browser, shows GraphiQL.
async fn graphql_get(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let has_query = raw
        .as_deref()
        .is_some_and(|q| q.split('&').any(|p| p.starts_with("query=")));
    if !has_query {
        let wants_html = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|v| v.contains("text/html") || v.contains("*/*"));
        if wants_html {
            return Html(GraphiQLSource::build().endpoint("/graphql").finish()).into_response();
        }
    }
    match async_graphql::http::parse_query_string(raw.as_deref().unwrap_or("")) {
        Ok(request) if is_mutation(&request) => graphql_error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "mutations must be sent with POST",
            ErrorCode::BadRequest,
        ),
        Ok(request) => GraphQLResponse::from(state.execute(request).await).into_response(),
        Err(e) => graphql_error_response(
            StatusCode::BAD_REQUEST,
            &format!("invalid GraphQL GET request: {e}"),
            ErrorCode::BadRequest,
        ),
    }
}

/// Whether a GET request asks for a mutation, which GET must never run (a link or a prefetch
/// would change data). Unparsable queries are left to the executor to report.
fn is_mutation(request: &async_graphql::Request) -> bool {
    use async_graphql::parser::types::OperationType;
    async_graphql::parser::parse_query(&request.query).is_ok_and(|doc| {
        doc.operations
            .iter()
            .any(|(_, op)| op.node.ty == OperationType::Mutation)
    })
}

fn graphql_error_response(status: StatusCode, message: &str, code: ErrorCode) -> Response {
    let body = serde_json::json!({
        "errors": [{ "message": message, "extensions": { "code": code.as_str() } }]
    });
    (status, axum::Json(body)).into_response()
}

async fn playground() -> Html<String> {
    Html(playground_source(GraphQLPlaygroundConfig::new("/graphql")))
}

async fn healthz(State(state): State<AppState>) -> Response {
    match state.store().ping().await {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "health check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response()
        }
    }
}
