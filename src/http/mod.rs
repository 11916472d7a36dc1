//! HTTP: the transport. Routes `/graphql` (POST, GET, GraphiQL), `/graphiql`, `/playground`,
//! `/assets/` (the browser pages, in `pages`), `/export` (CSV and NDJSON downloads, in
//! `export`), `/healthz` and `/readyz`; follows the
//! GraphQL-over-HTTP spec's content negotiation and status codes; authenticates the caller;
//! and bounds every request (size, headers, time, requests in flight), answering every
//! refusal as a JSON GraphQL error with a code and the request id.
//! The server loop ([`serve`]) adds header-read timeouts and a bounded graceful shutdown.
//! `/metrics` serves the application's Prometheus metrics (see `metrics`); every request runs
//! in a `request` span carrying its id, to which the GraphQL layer adds the operation.
//!
//! Each GraphQL request is run by [`Gateway::execute`], whose schema extension does the
//! per-request wiring; this module only decides who the caller is and what goes on the wire.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Version};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tower::util::MapRequestLayer;
use tower::ServiceBuilder;
use tower_http::cors::{Any, CorsLayer};
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::auth::{Access, Authenticator};
use crate::graphql::analysis::select_operation;
use crate::graphql::error::ErrorCode;
use crate::graphql::{CostGate, Gateway};
use crate::repo::writes::AppliedLog;
use crate::telemetry::{Metrics, OperationKind, RequestFacts};
use admission::{Admission, Caller, ExportSlots, Refusal, Shares};

pub mod admission;
mod body;
mod export;
mod metrics;
mod pages;
mod server;
mod wire;

pub use export::{
    ExportLimits, DEFAULT_EXPORTS, DEFAULT_EXPORTS_PER_CALLER, DEFAULT_EXPORT_TIME_LIMIT,
};
pub use server::serve;
use wire::{graphql_response, media_of, negotiate, refuse, refuse_with, Media};

/// The media type of GraphQL-over-HTTP responses.
pub const GRAPHQL_RESPONSE_JSON: &str = "application/graphql-response+json";
/// The legacy media type, for clients that accept nothing else.
pub const APPLICATION_JSON: &str = "application/json";
/// The request id header: honoured when a client (or a load balancer) sends one.
pub const REQUEST_ID: &str = "x-request-id";

/// Bounds on every HTTP request; the defaults are justified one by one.
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// Request bodies: DynamoDB stores items of at most 400 KB, so no legitimate mutation
    /// (96 long TEXT cells of one issue) needs more than that plus JSON overhead; a grid
    /// query with variables is a few KB.
    pub max_body_bytes: usize,
    /// The query document itself: grid queries are ~1 KB and hand-written exploration a few;
    /// past 32 KB a document is generated, and the token limit bounds the parser anyway.
    pub max_query_bytes: usize,
    /// Request targets (GET queries travel in the URL): browsers and proxies break beyond
    /// ~8–16 KB, so longer queries belong in a POST.
    pub max_uri_bytes: usize,
    /// All request headers together, and their number: a browser sends ~1 KB in ~20
    /// headers; a JWT adds ~1 KB.
    pub max_header_bytes: usize,
    pub max_headers: usize,
    /// One GraphQL request, from the first call to the last: a grid page takes milliseconds,
    /// the slowest legitimate request (a capped empty-cell search) well under a second.
    pub request_timeout: Duration,
    /// Reading the request headers, and the body: a slow or half-open client must not hold a
    /// connection (and its memory) for ever.
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    /// GraphQL requests in flight at once; beyond it requests get 503 at once rather than
    /// queueing (latency for everyone) or exhausting memory.
    pub max_in_flight: usize,
    /// Each caller's share: requests in flight and a token bucket of requests (see
    /// `admission`); past it the caller gets 429 while the others are served.
    pub shares: Shares,
    /// After SIGTERM, how long requests in flight may take before they are cancelled.
    pub shutdown_grace: Duration,
    /// The largest response body: a 100-row grid page with every cell is well under 1 MB; a
    /// response past 16 MB is refused (`LIMIT_EXCEEDED`) while it is written, so a query that
    /// selects huge cells many times cannot make the server buffer hundreds of megabytes.
    pub max_response_bytes: usize,
    /// `/export`'s own bounds: exports at once per caller and in all, and the time of one.
    pub exports: ExportLimits,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body_bytes: 512 * 1024,
            max_query_bytes: 32 * 1024,
            max_uri_bytes: 16 * 1024,
            max_header_bytes: 16 * 1024,
            max_headers: 64,
            request_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(10),
            max_in_flight: 256,
            shares: Shares::default(),
            shutdown_grace: Duration::from_secs(10),
            max_response_bytes: 16 * 1024 * 1024,
            exports: ExportLimits::default(),
        }
    }
}

/// What every handler shares.
pub struct Http {
    gateway: Arc<Gateway>,
    auth: Authenticator,
    pub limits: HttpLimits,
    admission: Arc<Admission>,
    /// The places of exports running.
    exports: ExportSlots,
    metrics: Option<Arc<Metrics>>,
}

impl Http {
    pub fn new(gateway: Arc<Gateway>, auth: Authenticator, limits: HttpLimits) -> Self {
        Http {
            gateway,
            auth,
            admission: Arc::new(Admission::new(limits.max_in_flight, limits.shares)),
            exports: ExportSlots::new(limits.exports.per_caller, limits.exports.total),
            limits,
            metrics: None,
        }
    }

    /// Counts requests in `metrics` and serves them at `/metrics` (404 without).
    pub fn with_metrics(mut self, metrics: Option<Arc<Metrics>>) -> Self {
        self.metrics = metrics;
        self
    }
}

pub type AppState = Arc<Http>;

/// A request's id, as [`SetRequestIdLayer`] leaves it in the request's extensions: the
/// client's `x-request-id` when it is sane (see [`drop_insane_request_id`]), else a new ULID.
pub use tower_http::request_id::RequestId;

/// The text of a request id, for response bodies. Every id is visible ASCII (minted, or kept
/// by [`drop_insane_request_id`] only when it is), so the fallback is never seen.
pub(crate) fn request_id_text(id: &RequestId) -> &str {
    id.header_value().to_str().unwrap_or("unknown")
}

/// The application's routes.
pub fn router(state: AppState) -> Router {
    let graphql = get(graphql_get)
        .post(graphql_post)
        .fallback(method_not_allowed);
    Router::new()
        .route("/", get(pages::grid).fallback(get_only))
        .route("/p/{project}", get(pages::grid).fallback(get_only))
        .route("/graphql", graphql)
        .route("/graphiql", get(pages::graphiql_page).fallback(get_only))
        .route("/playground", get(pages::playground).fallback(get_only))
        .route("/assets/{name}", get(pages::asset).fallback(get_only))
        .route("/export", get(export::export).fallback(get_only))
        .route("/healthz", get(healthz).fallback(get_only))
        .route("/readyz", get(readyz).fallback(get_only))
        .route("/metrics", get(metrics::scrape).fallback(get_only))
        .fallback(not_found)
        .layer(
            // From the outside in: every request gets its id, the response returns it, and the
            // rest runs in the request's span.
            ServiceBuilder::new()
                .layer(MapRequestLayer::new(drop_insane_request_id))
                .layer(SetRequestIdLayer::new(
                    HeaderName::from_static(REQUEST_ID),
                    MintUlid,
                ))
                .layer(PropagateRequestIdLayer::new(HeaderName::from_static(
                    REQUEST_ID,
                )))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(request_span)
                        .on_request(())
                        .on_response(request_finished)
                        // A refusal is an answer, not a failure of the server: 5xx answers
                        // carry their code in the span and the metrics, as before.
                        .on_failure(())
                        .on_eos(()),
                )
                .layer(middleware::from_fn_with_state(
                    state.clone(),
                    metrics::observe,
                ))
                .layer(cors())
                .layer(middleware::from_fn_with_state(state.clone(), bound_head)),
        )
        .with_state(state)
}

/// Browsers may call the API from any origin: it takes no cookies (credentials travel in the
/// `Authorization` header), so a permissive policy exposes nothing.
fn cors() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            header::ACCEPT,
            header::HeaderName::from_static(REQUEST_ID),
        ])
        .expose_headers([
            header::HeaderName::from_static(REQUEST_ID),
            header::CONTENT_DISPOSITION,
        ])
}

// ---------------------------------------------------------------------------------------------
// Middleware.

/// Removes a client's `x-request-id` that is empty, longer than 128 bytes or not visible
/// ASCII, so [`SetRequestIdLayer`] mints one instead.
// Why: `SetRequestIdLayer` keeps whatever id the client sent, and an id with spaces or
// control bytes could forge log lines, a long one bloat every line.
fn drop_insane_request_id(mut request: Request) -> Request {
    let sane = request.headers().get(REQUEST_ID).map(|v| {
        let bytes = v.as_bytes();
        !bytes.is_empty() && bytes.len() <= 128 && bytes.iter().all(u8::is_ascii_graphic)
    });
    if sane == Some(false) {
        request.headers_mut().remove(REQUEST_ID);
    }
    request
}

/// Mints request ids: a lower-case ULID (sortable by time, 26 characters).
#[derive(Clone, Copy)]
struct MintUlid;

impl MakeRequestId for MintUlid {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        let id = ulid::Ulid::new().to_string().to_ascii_lowercase();
        HeaderValue::from_str(&id).ok().map(RequestId::new)
    }
}

/// The request's span, its trace: it carries the request's id; the GraphQL layer records the
/// operation's type and name and the request's cost on it, [`request_finished`] the outcome
/// code, and every store call of the request is a `dynamodb` span below it.
fn request_span<B>(request: &axum::http::Request<B>) -> tracing::Span {
    let id = request
        .extensions()
        .get::<RequestId>()
        .map_or("unknown", request_id_text);
    tracing::info_span!(
        "request",
        request_id = %id,
        method = %request.method(),
        path = %request.uri().path(),
        operation_type = tracing::field::Empty,
        operation_name = tracing::field::Empty,
        code = tracing::field::Empty,
        dynamodb_calls = tracing::field::Empty,
        read_units = tracing::field::Empty,
        write_units = tracing::field::Empty,
    )
}

/// Records the answer's outcome code on the request's span and logs the request's end.
fn request_finished<B>(response: &Response<B>, latency: Duration, span: &tracing::Span) {
    if let Some(outcome) = response.extensions().get::<metrics::Outcome>() {
        span.record("code", outcome.code);
    }
    tracing::info!(
        parent: span,
        status = response.status().as_u16(),
        elapsed_ms = latency.as_millis() as u64,
        "request finished"
    );
}

/// Refuses requests whose target or headers are too large (414, 431) before anything reads
/// them further. (hyper's own, larger limits stay as a backstop for what never reaches here.)
async fn bound_head(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let limits = &state.limits;
    let id = request_id_of(&request);
    let uri_len = request
        .uri()
        .path_and_query()
        .map_or(0, |p| p.as_str().len());
    if uri_len > limits.max_uri_bytes {
        return refuse(
            StatusCode::URI_TOO_LONG,
            ErrorCode::BadRequest,
            &format!(
                "the request target is longer than {} bytes; send long queries with POST",
                limits.max_uri_bytes
            ),
            &id,
            media_of(request.headers()),
        );
    }
    let headers = request.headers();
    let header_bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if headers.len() > limits.max_headers || header_bytes > limits.max_header_bytes {
        return refuse(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            ErrorCode::BadRequest,
            &format!(
                "the request headers are too large (at most {} headers, {} bytes)",
                limits.max_headers, limits.max_header_bytes
            ),
            &id,
            media_of(headers),
        );
    }
    next.run(request).await
}

fn request_id_of(request: &Request) -> RequestId {
    request
        .extensions()
        .get::<RequestId>()
        .cloned()
        .unwrap_or_else(|| RequestId::new(HeaderValue::from_static("unknown")))
}

// ---------------------------------------------------------------------------------------------
// Refusals of routes and methods.

async fn method_not_allowed(request: Request) -> Response {
    wrong_method(
        &request,
        "use GET (queries) or POST (queries and mutations)",
        "GET, POST",
    )
}

/// The other routes answer GET (and HEAD) only.
async fn get_only(request: Request) -> Response {
    wrong_method(&request, "this route only answers GET", "GET, HEAD")
}

fn wrong_method(request: &Request, message: &str, allow: &'static str) -> Response {
    let id = request_id_of(request);
    let mut response = refuse(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::BadRequest,
        message,
        &id,
        media_of(request.headers()),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

async fn not_found(request: Request) -> Response {
    let id = request_id_of(&request);
    refuse(
        StatusCode::NOT_FOUND,
        ErrorCode::BadRequest,
        "no such route: the API is at /graphql",
        &id,
        media_of(request.headers()),
    )
}

// ---------------------------------------------------------------------------------------------
// GraphQL.

/// The parts of an HTTP request a GraphQL handler needs.
struct Call {
    id: RequestId,
    media: Media,
    access: Access,
    /// What the GraphQL layer learns of the request (its operation), on the request's span.
    facts: Arc<RequestFacts>,
    /// The request's place in flight, in its caller's share and the server's limit.
    _permit: admission::Permit,
    /// Whose share it is counted in (none: unrestricted access).
    caller: Option<Caller>,
}

/// Negotiates the response type, authenticates the caller and admits the request within the
/// caller's share, or refuses.
fn admit(state: &Http, id: RequestId, headers: &HeaderMap) -> Result<Call, Box<Response>> {
    let Some(media) = negotiate(headers) else {
        return Err(Box::new(refuse(
            StatusCode::NOT_ACCEPTABLE,
            ErrorCode::BadRequest,
            "responses are application/graphql-response+json or application/json; accept one",
            &id,
            Media::Json,
        )));
    };
    admit_as(state, id, media, headers)
}

/// Authenticates the caller and admits the request within the caller's share, or refuses in
/// `media` (for routes that answer something other than GraphQL, whose `Accept` is not
/// negotiated).
fn admit_as(
    state: &Http,
    id: RequestId,
    media: Media,
    headers: &HeaderMap,
) -> Result<Call, Box<Response>> {
    let mut authorizations = headers.get_all(header::AUTHORIZATION).iter();
    let authorization = authorizations.next();
    if authorizations.next().is_some() {
        // Two credentials: a proxy that checks (or adds) one of them and a server that reads
        // the other would disagree about who is calling.
        return Err(Box::new(refuse(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadRequest,
            "the request has more than one Authorization header: send one",
            &id,
            media,
        )));
    }
    let authorization = authorization.and_then(|v| v.to_str().ok());
    match state.auth.authenticate(authorization) {
        Ok(access) => {
            let caller = Caller::of(&access);
            match state.admission.admit(caller.as_ref()) {
                Ok(permit) => Ok(Call {
                    id,
                    media,
                    access,
                    facts: Arc::new(RequestFacts::new(tracing::Span::current())),
                    _permit: permit,
                    caller,
                }),
                Err(refusal) => Err(Box::new(not_admitted(
                    state,
                    caller.as_ref(),
                    refusal,
                    &id,
                    media,
                ))),
            }
        }
        Err(e) => {
            // Always 401, so a client whose token expired refreshes it rather than backing off
            // (a 429 here would let anyone who empties the bucket keep such clients out).
            // These requests never hold a place in flight; their bucket bounds what they cost
            // beyond their refusal, the log line: past it they are counted, not logged.
            match state.admission.spend_token(&Caller::Unauthenticated) {
                Ok(()) => tracing::info!(reason = %e, "unauthenticated request"),
                Err(refusal) => {
                    if let Some(metrics) = &state.metrics {
                        metrics.admission_refused(refusal.reason(), Caller::Unauthenticated.kind());
                    }
                }
            }
            let mut response = refuse(
                StatusCode::UNAUTHORIZED,
                ErrorCode::Unauthenticated,
                &e.to_string(),
                &id,
                media,
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            Err(Box::new(response))
        }
    }
}

/// A caller's bucket of query cost, charged by the gateway once it has priced the query.
struct CallerCost {
    admission: Arc<Admission>,
    metrics: Option<Arc<Metrics>>,
    caller: Caller,
}

impl CostGate for CallerCost {
    fn charge(&self, cost: u64) -> Result<(), Option<Duration>> {
        let refusal = match self.admission.charge_cost(&self.caller, cost) {
            Ok(()) => return Ok(()),
            Err(refusal) => refusal,
        };
        if let Some(metrics) = &self.metrics {
            metrics.admission_refused(refusal.reason(), self.caller.kind());
        }
        match refusal {
            Refusal::Cost { retry_after } => Err(retry_after),
            _ => Err(Some(Duration::from_secs(refusal.retry_after_secs()))),
        }
    }
}

/// The answer to a request that was not admitted: 429 `RATE_LIMITED` past the caller's share,
/// 503 `OVERLOADED` past the server's limit, both with `Retry-After`.
fn not_admitted(
    state: &Http,
    caller: Option<&Caller>,
    refusal: Refusal,
    id: &RequestId,
    media: Media,
) -> Response {
    if let Some(metrics) = &state.metrics {
        metrics.admission_refused(refusal.reason(), caller.map_or("operator", Caller::kind));
    }
    let (status, code, message) = match refusal {
        Refusal::Rate { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::RateLimited,
            "this caller sent more requests than its rate allows; retry after the time in \
             Retry-After",
        ),
        // The gateway charges query cost once it has priced the query (`CostGate`); a
        // transport refusal of it would say the same.
        Refusal::Cost { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::RateLimited,
            "this caller's queries cost more per second than its share allows; retry after \
             the time in Retry-After",
        ),
        Refusal::CallerInFlight => (
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::RateLimited,
            "this caller has its share of requests in flight; wait for one to finish",
        ),
        Refusal::ServerInFlight => (
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Overloaded,
            "the server is at its limit of requests in flight; retry shortly",
        ),
        Refusal::CallerExports => (
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::RateLimited,
            "this caller has its share of exports running; wait for one to finish",
        ),
        Refusal::ServerExports => (
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Overloaded,
            "the server is at its limit of exports running; retry shortly",
        ),
    };
    let mut response = refuse(status, code, message, id, media);
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(refusal.retry_after_secs()),
    );
    response
}

/// The refusal of a query document longer than the limit, before anything parses it. The refusal is
/// a GraphQL request error like the other limits on the document (tokens, cost), so its status
/// follows the media type: 400 for `application/graphql-response+json`, 200 for legacy
/// `application/json` clients.
fn check_query_length(state: &Http, call: &Call, query: &str) -> Option<Response> {
    if query.len() <= state.limits.max_query_bytes {
        return None;
    }
    let error = ErrorCode::LimitExceeded.error(format!(
        "the query document is longer than {} bytes",
        state.limits.max_query_bytes
    ));
    let response = async_graphql::Response::from_errors(vec![error]);
    Some(graphql_response(
        response,
        call.media,
        &call.id,
        state.limits.max_response_bytes,
    ))
}

/// Runs one GraphQL request within the request timeout; a request that runs out of time is
/// cancelled (its store calls are dropped) and answered `TIMEOUT`, with the mutations it had
/// committed by then (`extensions.applied`).
// Why not tower-http's `TimeoutLayer`: it answers an empty 408 and drops the request's
// `AppliedLog` with the future, where a client needs a coded 504 listing what was committed.
async fn run(state: &Http, call: Call, request: async_graphql::Request) -> Response {
    if let Some(refusal) = check_query_length(state, &call, &request.query) {
        return refusal;
    }
    let applied = AppliedLog::default();
    let mut request = request
        .data(call.access)
        .data(call.facts.clone())
        .data(applied.clone());
    if let Some(caller) = call.caller {
        let gate: Arc<dyn CostGate> = Arc::new(CallerCost {
            admission: state.admission.clone(),
            metrics: state.metrics.clone(),
            caller,
        });
        request = request.data(gate);
    }
    let execution = tokio::time::timeout(
        state.limits.request_timeout,
        state.gateway.execute_encoded(request),
    )
    .await;
    let mut response = match execution {
        Ok(response) => {
            call.facts.note_cost(&response);
            graphql_response(
                response,
                call.media,
                &call.id,
                state.limits.max_response_bytes,
            )
        }
        Err(_) => {
            tracing::warn!("request timed out");
            let mut message = format!(
                "the request took longer than {} ms and was cancelled",
                state.limits.request_timeout.as_millis()
            );
            if call.facts.operation() == OperationKind::Mutation {
                message.push_str(
                    "; `extensions.applied` lists the mutations it committed, and one cancelled \
                     while committing may have been applied too: retry it with the same \
                     `clientMutationId` to find out",
                );
            }
            let extensions = crate::graphql::applied_extension(&applied.entries())
                .map(|applied| serde_json::json!({ "applied": applied }));
            refuse_with(
                StatusCode::GATEWAY_TIMEOUT,
                ErrorCode::Timeout,
                &message,
                &call.id,
                call.media,
                extensions,
            )
        }
    };
    metrics::set_operation(&mut response, call.facts.operation());
    response
}

async fn graphql_post(State(state): State<AppState>, request: Request) -> Response {
    let id = request_id_of(&request);
    let (parts, body) = request.into_parts();
    let call = match admit(&state, id, &parts.headers) {
        Ok(call) => call,
        Err(refusal) => return *refusal,
    };
    let bad_request = |status: StatusCode, message: &str| {
        refuse(status, ErrorCode::BadRequest, message, &call.id, call.media)
    };
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    // Only JSON bodies: form and text bodies are what a browser sends cross-site without a
    // preflight, so accepting them would let any page make requests on a user's behalf.
    if content_type.as_deref() != Some(APPLICATION_JSON) {
        return bad_request(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send the request as Content-Type: application/json",
        );
    }
    let bytes = match body::read_body(&state.limits, &parts.headers, body).await {
        Ok(bytes) => bytes,
        Err((status, message)) => {
            let mut response = bad_request(status, &message);
            if parts.version < Version::HTTP_2 {
                // The rest of the body (too large, too slow, broken) is never read, so the
                // connection cannot carry another request: say so, or a pooled client sends
                // its next request into a socket the server is closing.
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            return response;
        }
    };
    let request = match body::parse_post(&bytes) {
        Ok(request) => request,
        Err((status, message)) => return bad_request(status, &message),
    };
    run(&state, call, request).await
}

/// GET with a `query` parameter runs a query (never a mutation); GET without one, from a
/// browser, shows GraphiQL. `variables` and `extensions` are JSON texts (objects, or `null`
/// like an absent parameter), as in a POST body.
async fn graphql_get(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
    request: Request,
) -> Response {
    let id = request_id_of(&request);
    let headers = request.headers();
    let params = match body::GetParams::parse(raw.as_deref()) {
        Ok(params) => params,
        Err((status, message)) => {
            return refuse(
                status,
                ErrorCode::BadRequest,
                &message,
                &id,
                media_of(headers),
            )
        }
    };
    let Some(query) = params.get("query") else {
        let wants_html = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
        if wants_html {
            return pages::graphiql();
        }
        return refuse(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadRequest,
            "a GET request needs a `query` parameter",
            &id,
            media_of(headers),
        );
    };
    let call = match admit(&state, id, headers) {
        Ok(call) => call,
        Err(refusal) => return *refusal,
    };
    // Before the mutation check below parses the document.
    if let Some(refusal) = check_query_length(&state, &call, query) {
        return refusal;
    }
    let mut graphql = async_graphql::Request::new(query);
    if let Some(name) = params.get("operationName").filter(|n| !n.is_empty()) {
        graphql = graphql.operation_name(name);
    }
    for name in ["variables", "extensions"] {
        match params.json_object(name) {
            Ok(None) => {}
            Ok(Some(value)) => {
                if name == "variables" {
                    graphql = graphql.variables(async_graphql::Variables::from_json(value));
                }
            }
            Err((status, message)) => {
                return refuse(
                    status,
                    ErrorCode::BadRequest,
                    &message,
                    &call.id,
                    call.media,
                )
            }
        }
    }
    if is_mutation(&mut graphql) {
        let mut response = refuse(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::BadRequest,
            "mutations must be sent with POST",
            &call.id,
            call.media,
        );
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
        metrics::set_operation(&mut response, OperationKind::Mutation);
        return response;
    }
    run(&state, call, graphql).await
}

/// Whether a GET request asks for a mutation (the operation it names, or its only one),
/// which GET must never run: a link or a prefetch would change data. The document is parsed
/// once, here, and kept in the request for execution; documents that do not parse are left to
/// the executor to report.
fn is_mutation(request: &mut async_graphql::Request) -> bool {
    use async_graphql::parser::types::OperationType;
    let name = request.operation_name.clone();
    request.parsed_query().is_ok_and(|doc| {
        select_operation(doc, name.as_deref()).is_ok_and(|op| op.ty == OperationType::Mutation)
    })
}

/// Liveness: 200 while the process serves HTTP at all (restarting it would not help a store
/// outage).
async fn healthz() -> Response {
    (
        StatusCode::OK,
        axum::Json(serde_json::json!({ "status": "ok" })),
    )
        .into_response()
}

/// How long a readiness probe waits for the store.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// Readiness: 200 when the store answers, else 503, so a load balancer sends traffic
/// elsewhere during an outage and back once the store recovers (no restart needed).
// Why not tower-http's `TimeoutLayer`: a probe that times out must say "not ready" (503 with
// a JSON body), where the layer answers an empty 408.
async fn readyz(State(state): State<AppState>) -> Response {
    let ping = tokio::time::timeout(READY_TIMEOUT, state.gateway.store().ping()).await;
    match ping {
        Ok(Ok(())) => (
            StatusCode::OK,
            axum::Json(serde_json::json!({ "status": "ready" })),
        )
            .into_response(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness check failed");
            not_ready()
        }
        Err(_) => {
            tracing::warn!("readiness check timed out");
            not_ready()
        }
    }
}

fn not_ready() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(serde_json::json!({ "status": "store unavailable" })),
    )
        .into_response()
}
