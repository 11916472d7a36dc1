//! HTTP: the axum router serving `/graphql` (POST, GET, GraphiQL), `/playground` and
//! `/healthz`, and the per-request wiring of cost metering and loaders.

use std::sync::Arc;

use async_graphql::http::{playground_source, GraphQLPlaygroundConfig, GraphiQLSource};
use async_graphql::{ServerError, Value};
use async_graphql_axum::{GraphQLRequest, GraphQLResponse};
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower_http::cors::{Any, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

use crate::graphql::{self, GridSchema, ResponseOrder};
use crate::paging::Limits;
use crate::repo::Repo;
use crate::store::{CostMeter, DynStore, Metered};

/// What every request handler shares: the schema and the process-wide store.
#[derive(Clone)]
pub struct AppState {
    pub schema: GridSchema,
    /// The schema's types, for putting response fields back in query order.
    pub order: Arc<ResponseOrder>,
    pub store: DynStore,
    pub limits: Limits,
}

impl AppState {
    pub fn new(store: DynStore, limits: Limits) -> Self {
        let schema = graphql::build_schema();
        AppState {
            order: Arc::new(ResponseOrder::from_sdl(&schema.sdl())),
            schema,
            store,
            limits,
        }
    }
}

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
        .with_state(Arc::new(state))
}

/// Browsers may call the API from any origin: it takes no cookies (credentials, when they
/// come, travel in the `Authorization` header), so a permissive policy exposes nothing.
fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([header::CONTENT_TYPE, header::AUTHORIZATION, header::ACCEPT])
}

/// Serves until the future `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

async fn graphql_post(
    State(state): State<Arc<AppState>>,
    request: GraphQLRequest<BadRequest>,
) -> GraphQLResponse {
    execute(&state, request.into_inner()).await
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
        graphql_error_response(status, message, "BAD_REQUEST")
    }
}

/// GET with a `query` parameter runs a query (never a mutation); GET without one, from a
/// browser, shows GraphiQL.
async fn graphql_get(
    State(state): State<Arc<AppState>>,
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
            "BAD_REQUEST",
        ),
        Ok(request) => execute(&state, request).await.into_response(),
        Err(e) => graphql_error_response(
            StatusCode::BAD_REQUEST,
            &format!("invalid GraphQL GET request: {e}"),
            "BAD_REQUEST",
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

fn graphql_error_response(status: StatusCode, message: &str, code: &str) -> Response {
    let body = serde_json::json!({
        "errors": [{ "message": message, "extensions": { "code": code } }]
    });
    (status, axum::Json(body)).into_response()
}

async fn playground() -> Html<String> {
    Html(playground_source(GraphQLPlaygroundConfig::new("/graphql")))
}

async fn healthz(State(state): State<Arc<AppState>>) -> Response {
    match state.store.ping().await {
        Ok(()) => (StatusCode::OK, "ok\n").into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "health check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable\n").into_response()
        }
    }
}

/// Runs one GraphQL request with its own metered store and loaders, then reports its cost in
/// `extensions.cost`.
async fn execute(state: &AppState, request: async_graphql::Request) -> GraphQLResponse {
    let meter = CostMeter::new();
    let store: DynStore = Arc::new(Metered::new(state.store.clone(), meter.clone()));
    let repo = Repo::new(store, state.limits);
    let query = request.query.clone();
    let operation_name = request.operation_name.clone();
    let mut response = state
        .schema
        .execute(graphql::request_data(request, repo))
        .await;
    state
        .order
        .restore(&mut response.data, &query, operation_name.as_deref());
    for error in &mut response.errors {
        ensure_code(error);
    }
    let cost = meter.report();
    let mut fields = async_graphql::indexmap::IndexMap::new();
    fields.insert(
        async_graphql::Name::new("dynamodbCalls"),
        Value::from(cost.dynamodb_calls),
    );
    fields.insert(
        async_graphql::Name::new("readCapacityUnits"),
        Value::from(cost.read_capacity_units),
    );
    response
        .extensions
        .insert("cost".into(), Value::Object(fields));
    response.into()
}

/// Every error leaves with an `extensions.code`. Resolver errors (those with a path) that
/// arrive without one did not pass through `ApiError`, so their text may be internal: it is
/// logged and replaced. Errors without a path come from parsing and validating the query.
fn ensure_code(error: &mut ServerError) {
    let has_code = error
        .extensions
        .as_ref()
        .is_some_and(|e| e.get("code").is_some());
    if has_code {
        return;
    }
    let code = if error.path.is_empty() {
        "GRAPHQL_VALIDATION_FAILED"
    } else if error.message.starts_with("Failed to parse \"") {
        // async-graphql's own coercion of an argument value (an Int out of range, say): the
        // message describes the client's input and is kept.
        "BAD_USER_INPUT"
    } else {
        tracing::error!(message = %error.message, path = ?error.path, "resolver error without a code");
        error.message = "internal error".into();
        "INTERNAL_SERVER_ERROR"
    };
    let mut extensions = error.extensions.take().unwrap_or_default();
    extensions.set("code", code);
    error.extensions = Some(extensions);
}
