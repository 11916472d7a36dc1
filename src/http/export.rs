//! `GET /export`: a project's issues as a CSV or NDJSON download, streamed a page at a time
//! (the `export` module reads and writes them), authenticated, admitted, priced and bounded
//! like `/graphql`, with exports' own bounds: a few per caller and per server at once, and a
//! time limit.
//!
//! Parameters (each at most once; any other is refused): `project` (required), then either
//! `view` or `orderBy` and/or `filter` (the JSON of `Project.issues`'s arguments), and `format`
//! (`csv`, the default, or `ndjson`). Everything that can be known before the first byte is a
//! coded JSON refusal in `/graphql`'s shape (`{"errors": [{"message", "extensions": {"code",
//! "requestId"}}]}`): the arguments (400 `BAD_USER_INPUT`), the caller (401, 403), its share
//! (429 `RATE_LIMITED`, 503 `OVERLOADED`, both with `Retry-After`), the project or view (404
//! `NOT_FOUND`, as for a project of another tenant), a view still building its first index
//! (409 `VIEW_BUILDING`, `Retry-After`), the time (504 `TIMEOUT`). The first page is read
//! before the headers go out; the rest stream from a task of their own through a channel of
//! one page, so the server holds at most a page or two of an export whatever the project's
//! size, and a client that stops reading holds its export's places only until the time limit.
//!
//! An export stopped after its headers went out (its time, its caller's query cost, the store)
//! ends NDJSON with an error line in the same shape, then ends the body cleanly; CSV has no
//! way to say it, so its body is aborted (HTTP/1.1: the connection closes before the last
//! chunk; HTTP/2: the stream is reset), and the client sees an incomplete transfer rather than
//! a file silently cut short.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{RawQuery, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

use super::admission::{ExportPermit, Permit};
use super::wire::{media_of, refuse, refuse_extended, Media};
use super::RequestId;
use super::{admit_as, body, not_admitted, request_id_of, request_id_text, AppState, CallerCost};
use crate::export::{
    Export, ExportError, ExportList, ExportOptions, ExportRequest, Format, Reader,
};
use crate::graphql::error::ErrorCode;
use crate::graphql::CostGate;
use crate::paging::MAX_PAGE_SIZE;

/// The bounds of exports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportLimits {
    /// Exports one caller (a tenant) may run at once: an export streams for as long as the
    /// project takes to read, so a caller's few keep its many requests' room for its grids.
    pub per_caller: usize,
    /// Exports the server runs at once, whoever asks (also under `--auth none`).
    pub total: usize,
    /// How long one export may take, from its first page to its last byte taken by the
    /// client.
    pub time_limit: Duration,
    /// Rows per page: the API's largest page (`paging::MAX_PAGE_SIZE`); smaller only in tests
    /// that page small projects.
    pub page_size: usize,
}

/// Default of [`ExportLimits::per_caller`]: a person exports one grid at a time; two leave
/// room for a second tab.
pub const DEFAULT_EXPORTS_PER_CALLER: usize = 2;
/// Default of [`ExportLimits::total`]: each export holds a request's place for its whole run,
/// so a few, well under the server's in-flight limit (256).
pub const DEFAULT_EXPORTS: usize = 8;
/// Default of [`ExportLimits::time_limit`]: a 100-row page takes a few milliseconds to tens of
/// them on DynamoDB, so five minutes export a million issues; past that, an export is better
/// run with `gridgate export` next to the table.
pub const DEFAULT_EXPORT_TIME_LIMIT: Duration = Duration::from_secs(300);

impl Default for ExportLimits {
    fn default() -> Self {
        ExportLimits {
            per_caller: DEFAULT_EXPORTS_PER_CALLER,
            total: DEFAULT_EXPORTS,
            time_limit: DEFAULT_EXPORT_TIME_LIMIT,
            page_size: MAX_PAGE_SIZE,
        }
    }
}

/// The parameters `/export` takes.
const PARAMETERS: [&str; 5] = ["project", "view", "orderBy", "filter", "format"];

/// `GET /export`.
pub(super) async fn export(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
    request: Request,
) -> Response {
    let id = request_id_of(&request);
    let headers = request.headers();
    let media = media_of(headers);
    let params = match body::GetParams::parse(raw.as_deref()) {
        Ok(params) => params,
        Err((status, message)) => {
            return refuse(status, ErrorCode::BadRequest, &message, &id, media);
        }
    };
    let call = match admit_as(&state, id, media, headers) {
        Ok(call) => call,
        Err(refusal) => return *refusal,
    };
    let wanted = match export_request(&params) {
        Ok(wanted) => wanted,
        Err(error) => return refusal(&error, &call.id, call.media),
    };
    let slot = match state.exports.take(call.caller.as_ref()) {
        Ok(slot) => slot,
        Err(refusal) => {
            return not_admitted(&state, call.caller.as_ref(), refusal, &call.id, call.media)
        }
    };
    let cost_gate = call.caller.clone().map(|caller| {
        Arc::new(CallerCost {
            admission: state.admission.clone(),
            metrics: state.metrics.clone(),
            caller,
        }) as Arc<dyn CostGate>
    });
    let reader = Reader {
        gateway: state.gateway.clone(),
        access: call.access.clone(),
        cost_gate,
    };
    let limits = &state.limits.exports;
    let options = ExportOptions {
        page_size: limits.page_size,
        time_limit: Some(limits.time_limit),
        page_timeout: Some(state.limits.request_timeout),
        ..ExportOptions::default()
    };
    let deadline = tokio::time::Instant::now() + limits.time_limit;
    let export = match Export::start(reader, wanted, options).await {
        Ok(export) => export,
        Err(error) => return refusal(&error, &call.id, call.media),
    };
    let response = headers_of(&export);
    let places = Places {
        _permit: call._permit,
        _slot: slot,
    };
    streaming(response, export, places, deadline, call.id)
}

/// The export's places, held by its task until it ends.
struct Places {
    _permit: Permit,
    _slot: ExportPermit,
}

/// The export asked for by the URL's parameters.
fn export_request(params: &body::GetParams) -> Result<ExportRequest, ExportError> {
    if let Some(unknown) = params.names().find(|name| !PARAMETERS.contains(name)) {
        return Err(ExportError::BadInput(format!(
            "`{unknown}` is not a parameter of /export: it takes {}",
            PARAMETERS.map(|p| format!("`{p}`")).join(", ")
        )));
    }
    let project = params
        .get("project")
        .filter(|p| !p.is_empty())
        .ok_or_else(|| ExportError::BadInput("`project` is required: a project's id".into()))?;
    let json = |name: &str| -> Result<Option<serde_json::Value>, ExportError> {
        let Some(text) = params.get(name).filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        // Syntax first, with serde's own words; then no key twice, as everywhere.
        serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| ExportError::BadInput(format!("`{name}` is not JSON: {e}")))?;
        body::strict_json(text.as_bytes())
            .map(Some)
            .map_err(|message| ExportError::BadInput(format!("`{name}`: {message}")))
    };
    let list = ExportList::new(
        params
            .get("view")
            .filter(|v| !v.is_empty())
            .map(str::to_owned),
        json("orderBy")?,
        json("filter")?,
    )?;
    let format = match params.get("format").filter(|f| !f.is_empty()) {
        None => Format::default(),
        Some(text) => Format::parse(text).ok_or_else(|| {
            ExportError::BadInput(format!("`format` must be `csv` or `ndjson`, not `{text}`"))
        })?,
    };
    Ok(ExportRequest {
        project: project.to_owned(),
        list,
        format,
    })
}

/// The refusal of an export that cannot start, in `/graphql`'s shape, with the status its
/// code calls for.
fn refusal(error: &ExportError, id: &RequestId, media: Media) -> Response {
    let code = error.code();
    let status = match code {
        ErrorCode::BadUserInput
        | ErrorCode::BadRequest
        | ErrorCode::GraphqlValidationFailed
        | ErrorCode::GraphqlParseFailed
        | ErrorCode::LimitExceeded => StatusCode::BAD_REQUEST,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorCode::Forbidden => StatusCode::FORBIDDEN,
        ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::ViewBuilding | ErrorCode::Conflict => StatusCode::CONFLICT,
        ErrorCode::Timeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorCode::Overloaded | ErrorCode::StoreUnavailable | ErrorCode::Throttled => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        ErrorCode::InternalServerError => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let extensions = match error {
        ExportError::Api { extensions, .. } => extensions.clone(),
        _ => serde_json::Map::new(),
    };
    let mut response = refuse_extended(status, code, &error.to_string(), extensions, id, media);
    let retry_after = match code {
        ErrorCode::RateLimited => Some(error.retry_after().unwrap_or(1)),
        ErrorCode::ViewBuilding => Some(1),
        _ => None,
    };
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

/// The response's headers: the format's type, a download named after the project, no caching
/// (the rows are the caller's and change).
fn headers_of(export: &Export) -> Response {
    let format = export.format();
    let mut response = Response::new(Body::empty());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let disposition = content_disposition(export.project_name(), export.project_id(), format);
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

/// `attachment` named after the project (RFC 6266): `filename` an ASCII stand-in (characters
/// outside a safe set become `_`; the project's id when nothing is left), `filename*` the name
/// itself, percent-encoded UTF-8.
pub(super) fn content_disposition(name: &str, id: &str, format: Format) -> String {
    let extension = format.extension();
    let ascii: String = name
        .chars()
        .take(100)
        .map(|c| {
            if c.is_ascii_alphanumeric() || " -_.,()".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let ascii = ascii.trim();
    let ascii = if ascii.chars().all(|c| c == '_' || c == '.') {
        id
    } else {
        ascii
    };
    let mut encoded = String::new();
    for byte in name.bytes() {
        // RFC 5987's attr-char.
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{ascii}.{extension}\"; filename*=UTF-8''{encoded}.{extension}")
}

/// How an export's task ended, for the body to say after its last chunk.
type Outcome = Result<(), ExportError>;

/// The response with its body: the export's chunks, sent by a task of their own through a
/// channel of one chunk (a page), then its outcome: nothing more when it finished, an error
/// line (NDJSON) or an aborted body (CSV) when it stopped.
fn streaming(
    mut response: Response,
    mut export: Export,
    places: Places,
    deadline: tokio::time::Instant,
    id: RequestId,
) -> Response {
    let format = export.format();
    let request_id = request_id_text(&id).to_owned();
    let (chunks, received) = mpsc::channel::<Bytes>(1);
    let (outcome_sender, outcome) = oneshot::channel::<Outcome>();
    let task = async move {
        let outcome = loop {
            let chunk = match export.next().await {
                None => break Ok(()),
                Some(Err(error)) => break Err(error),
                Some(Ok(chunk)) => chunk,
            };
            // A client that stops reading holds the export only until its time is up.
            match tokio::time::timeout_at(deadline, chunks.send(chunk)).await {
                Ok(Ok(())) => {}
                // The client went away: nobody to tell.
                Ok(Err(_)) => return,
                Err(_) => {
                    break Err(ExportError::Timeout(
                        "the export took longer than its time limit and was stopped".into(),
                    ))
                }
            }
        };
        // The places go back before the body ends, so a client that saw its export end can
        // start the next at once.
        drop(chunks);
        drop(places);
        let _ = outcome_sender.send(outcome);
    };
    tokio::spawn(task.instrument(tracing::Span::current()));
    enum Stage {
        Chunks(mpsc::Receiver<Bytes>, oneshot::Receiver<Outcome>),
        Done,
    }
    let body = futures::stream::unfold(Stage::Chunks(received, outcome), move |stage| {
        let request_id = request_id.clone();
        async move {
            let Stage::Chunks(mut received, outcome) = stage else {
                return None;
            };
            if let Some(chunk) = received.recv().await {
                return Some((Ok(chunk), Stage::Chunks(received, outcome)));
            }
            let error = match outcome.await {
                Ok(Ok(())) => return None,
                Ok(Err(error)) => error,
                Err(_) => ExportError::internal(),
            };
            let item = match format.error_line(&error, Some(&request_id)) {
                Some(line) => Ok(line),
                None => Err(std::io::Error::other(format!(
                    "the export stopped: {} ({})",
                    error,
                    error.code().as_str()
                ))),
            };
            Some((item, Stage::Done))
        }
    });
    *response.body_mut() = Body::from_stream(body);
    response
}
