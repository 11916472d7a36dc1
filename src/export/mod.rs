//! Export: a project's issues (an order and a filter, or a saved view) as CSV or NDJSON, read
//! page by page through the gateway with bounded memory, for `GET /export` (`http::export`)
//! and `gridgate export` (`cli`) alike, so both write the same bytes.
//!
//! An export is a client of the API, not a second reader of the table: each page is a
//! `Project.issues` (or `View.issues`) request run by [`Gateway::execute`] as the caller,
//! with the list's `IssuesArgs` (its `orderBy` and `filter` as `IssueOrder` and `IssueFilter`)
//! and the last page's end cursor. So the planner, the keyset paging, the cursors, tenancy (a
//! project of another tenant reads as none: `NOT_FOUND`), the scopes (`grid:read`), the
//! per-request call and read budgets, the values' canonical text, and the price of every page
//! (`graphql::analysis`, charged to the caller's bucket of query cost through the request's
//! `CostGate`) are the API's, and the rows are exactly the pages a client would read.
//!
//! Memory is one page: [`Export::next`] reads a page only when the previous one was taken, and
//! writes it (`format`) before the next is asked for. The first page is read by
//! [`Export::start`], before anything is sent, so every refusal that can be known up front
//! (bad arguments, an unknown project or view, a view still building, no scope, no budget) is a
//! coded refusal rather than a broken file. A page refused for the caller's query cost waits
//! out the bucket (up to [`ExportOptions::max_pacing`] a time, within the export's deadline),
//! so a long export proceeds at its caller's rate; past that, or on any other error, the export
//! stops with that error (see [`Format::error_line`] for how each format shows it).
//!
//! Columns and SELECT labels are those the first page read: a field added while an export runs
//! is not in it, and a label renamed meanwhile keeps its old text.

mod format;
pub mod page;

use std::sync::Arc;
use std::time::Duration;

use async_graphql::InputType;
use bytes::Bytes;
use tokio::time::Instant;

pub use format::Format;
pub use page::{Column, Which};

use crate::auth::Access;
use crate::graphql::error::ErrorCode;
use crate::graphql::types::{IssueFilter, IssueOrder};
use crate::graphql::{CostGate, Gateway};
use crate::paging::MAX_PAGE_SIZE;

/// Which issues an export lists, in which order: the arguments of `Project.issues`, or a
/// saved view (its own order and filter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportList {
    Issues {
        order_by: Option<IssueOrder>,
        filter: Option<Box<IssueFilter>>,
    },
    /// A saved view's id (`xview-…`).
    View(String),
}

impl ExportList {
    /// The list from what a client gave: a view's id, or the JSON of an `orderBy` and a
    /// `filter` exactly as the GraphQL variables of `Project.issues` would be (each absent or
    /// `null` for none). Both a view and an order or filter is `BAD_USER_INPUT`, and so is
    /// JSON that is not of the argument's type; the filter's limits and its columns are
    /// checked by the API on the first page.
    pub fn new(
        view: Option<String>,
        order_by: Option<serde_json::Value>,
        filter: Option<serde_json::Value>,
    ) -> Result<ExportList, ExportError> {
        let order_by = order_by.filter(|v| !v.is_null());
        let filter = filter.filter(|v| !v.is_null());
        match view {
            Some(_) if order_by.is_some() || filter.is_some() => Err(ExportError::BadInput(
                "give either a view or an orderBy and filter, not both: a view has its own \
                 order and filter"
                    .into(),
            )),
            Some(view) => Ok(ExportList::View(view)),
            None => Ok(ExportList::Issues {
                order_by: order_by.map(|v| parse("orderBy", v)).transpose()?,
                filter: filter
                    .map(|v| parse("filter", v).map(Box::new))
                    .transpose()?,
            }),
        }
    }
}

/// An argument's JSON read as its GraphQL input type, as async-graphql reads a variable.
fn parse<T: InputType>(name: &str, json: serde_json::Value) -> Result<T, ExportError> {
    T::parse(Some(async_graphql::Value::from_json(json).map_err(
        |e| ExportError::BadInput(format!("{name}: not a GraphQL value: {e}")),
    )?))
    .map_err(|e| {
        let message = e.into_server_error(Default::default()).message;
        ExportError::BadInput(format!("{name}: {message}"))
    })
}

/// What to export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportRequest {
    /// The project's global id (`project-…`).
    pub project: String,
    pub list: ExportList,
    pub format: Format,
}

/// How an export is read.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// Rows per page: at most the API's largest page (`paging::MAX_PAGE_SIZE`, 100).
    pub page_size: usize,
    /// How long the whole export may take, from [`Export::start`]; `None`: no limit.
    pub time_limit: Option<Duration>,
    /// How long one page may take (the transport's request timeout); `None`: no limit.
    pub page_timeout: Option<Duration>,
    /// The longest a page refused for its caller's query cost waits for the bucket before it
    /// is asked again; a longer wait stops the export with `RATE_LIMITED`.
    pub max_pacing: Duration,
}

/// Default of [`ExportOptions::max_pacing`]: a bucket that needs longer than this to pay for
/// one page is one the caller keeps emptying elsewhere.
pub const DEFAULT_MAX_PACING: Duration = Duration::from_secs(5);

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            page_size: MAX_PAGE_SIZE,
            time_limit: None,
            page_timeout: None,
            max_pacing: DEFAULT_MAX_PACING,
        }
    }
}

/// Who reads the pages: the gateway, as the caller, charged to the caller's bucket of query
/// cost (none for unrestricted access).
#[derive(Clone)]
pub struct Reader {
    pub gateway: Arc<Gateway>,
    pub access: Access,
    pub cost_gate: Option<Arc<dyn CostGate>>,
}

/// Why an export was refused or stopped, with the code clients see (`extensions.code`).
#[derive(Clone, Debug, thiserror::Error)]
pub enum ExportError {
    /// The export's own arguments are wrong.
    #[error("{0}")]
    BadInput(String),
    /// The project, or the view, does not exist or is another tenant's.
    #[error("{0}")]
    NotFound(String),
    /// A page failed as the API answers it: its first error's code, message and other
    /// extensions (`retryable`, `retryAfter`, `progress`).
    #[error("{message}")]
    Api {
        code: ErrorCode,
        message: String,
        extensions: serde_json::Map<String, serde_json::Value>,
    },
    /// The export, or one of its pages, ran out of time.
    #[error("{0}")]
    Timeout(String),
}

impl ExportError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ExportError::BadInput(_) => ErrorCode::BadUserInput,
            ExportError::NotFound(_) => ErrorCode::NotFound,
            ExportError::Api { code, .. } => *code,
            ExportError::Timeout(_) => ErrorCode::Timeout,
        }
    }

    /// Whole seconds until a retry may succeed, when the API said (`extensions.retryAfter`).
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            ExportError::Api { extensions, .. } => extensions.get("retryAfter")?.as_u64(),
            _ => None,
        }
    }

    /// The error as `/graphql` answers errors: `{"errors": [{"message", "extensions": {"code",
    /// …, "requestId"}}]}`.
    pub fn to_json(&self, request_id: Option<&str>) -> serde_json::Value {
        let mut extensions = match self {
            ExportError::Api { extensions, .. } => extensions.clone(),
            _ => serde_json::Map::new(),
        };
        extensions.insert("code".into(), self.code().as_str().into());
        if let Some(id) = request_id {
            extensions.insert("requestId".into(), id.into());
        }
        serde_json::json!({
            "errors": [{ "message": self.to_string(), "extensions": extensions }]
        })
    }

    /// A failure that is a bug (its cause logged where it happened).
    pub(crate) fn internal() -> ExportError {
        ExportError::Api {
            code: ErrorCode::InternalServerError,
            message: "the export failed; the log says why".into(),
            extensions: serde_json::Map::new(),
        }
    }

    /// A page's error as the gateway answered it (every one carries a code).
    fn from_server_error(error: async_graphql::ServerError) -> ExportError {
        let mut extensions = match error
            .extensions
            .as_ref()
            .and_then(|e| serde_json::to_value(e).ok())
        {
            Some(serde_json::Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        let code = extensions
            .remove("code")
            .and_then(|c| c.as_str().and_then(ErrorCode::parse))
            .unwrap_or(ErrorCode::InternalServerError);
        extensions.remove("requestId");
        ExportError::Api {
            code,
            message: error.message,
            extensions,
        }
    }
}

/// An export under way: its first page read, the rest read as they are taken.
pub struct Export {
    reader: Reader,
    request: ExportRequest,
    options: ExportOptions,
    deadline: Option<Instant>,
    started: Instant,
    project_name: String,
    columns: Vec<Column>,
    /// Bytes written and not taken yet: the header and the first page.
    pending: Option<Bytes>,
    /// Where the next page starts; `None` once the last was read (or the export failed).
    next: Option<String>,
    rows: u64,
    pages: u64,
}

impl Export {
    /// Reads the first page (with the project's name and columns), or says why the export
    /// cannot be made.
    pub async fn start(
        reader: Reader,
        request: ExportRequest,
        mut options: ExportOptions,
    ) -> Result<Export, ExportError> {
        options.page_size = options.page_size.clamp(1, MAX_PAGE_SIZE);
        let started = Instant::now();
        let mut export = Export {
            deadline: options.time_limit.map(|limit| started + limit),
            reader,
            request,
            options,
            started,
            project_name: String::new(),
            columns: Vec::new(),
            pending: None,
            next: None,
            rows: 0,
            pages: 0,
        };
        let page::Read { head, page } = export.read(Which::Head, None).await?;
        let head = head.ok_or_else(ExportError::internal)?;
        export.project_name = head.project_name;
        export.columns = head.columns;
        let mut bytes = export.request.format.header(&export.columns)?;
        export.write(&page.rows, &mut bytes)?;
        export.next = page.next;
        export.pending = Some(Bytes::from(bytes));
        Ok(export)
    }

    /// The project's name, as the first page read it.
    pub fn project_name(&self) -> &str {
        &self.project_name
    }

    /// The project's global id, as asked for.
    pub fn project_id(&self) -> &str {
        &self.request.project
    }

    pub fn format(&self) -> Format {
        self.request.format
    }

    /// The columns after num, name and state.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The next bytes of the export (the header and the first page, then a page at a time);
    /// `None` once the last page was taken, or after an error (which ends the export).
    pub async fn next(&mut self) -> Option<Result<Bytes, ExportError>> {
        if let Some(bytes) = self.pending.take() {
            return Some(Ok(bytes));
        }
        // A filtered page may come back empty (its reads were capped before it found a row):
        // read on rather than hand out nothing.
        while let Some(cursor) = self.next.take() {
            let result = self.read(Which::Next, Some(cursor)).await.and_then(|read| {
                let page = read.page;
                let mut bytes = Vec::new();
                self.write(&page.rows, &mut bytes)?;
                self.next = page.next;
                Ok(bytes)
            });
            match result {
                Ok(bytes) if bytes.is_empty() => continue,
                Ok(bytes) => return Some(Ok(Bytes::from(bytes))),
                Err(error) => {
                    self.next = None;
                    tracing::info!(
                        code = error.code().as_str(),
                        rows = self.rows,
                        pages = self.pages,
                        "export stopped"
                    );
                    return Some(Err(error));
                }
            }
        }
        None
    }

    fn write(&mut self, rows: &[page::Row], out: &mut Vec<u8>) -> Result<(), ExportError> {
        self.request.format.rows(&self.columns, rows, out)?;
        self.rows += rows.len() as u64;
        self.pages += 1;
        Ok(())
    }

    /// Reads one page through the gateway, as the caller, within the export's time; a page
    /// refused for the caller's query cost is asked again once the bucket can pay for it, if
    /// that is soon enough.
    async fn read(&self, which: Which, after: Option<String>) -> Result<page::Read, ExportError> {
        let args = page::arguments(&self.request.list, self.options.page_size, after);
        let project = &self.request.project;
        let list = &self.request.list;
        let variables = page::variables(project, list, &args);
        let document = page::document(list, which);
        loop {
            let mut request = async_graphql::Request::new(document)
                .variables(variables.clone())
                .data(self.reader.access.clone());
            if let Some(gate) = &self.reader.cost_gate {
                request = request.data(gate.clone());
            }
            let response = self.in_time(self.reader.gateway.execute(request)).await?;
            match page::decode(response, project, list, which) {
                // The first page's refusal is the export's: the client retries it as a whole.
                Err(error) if which == Which::Next => match self.pacing(&error) {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => return Err(error),
                },
                Ok(read) => {
                    if read.page.next.is_none() {
                        tracing::info!(
                            rows = self.rows + read.page.rows.len() as u64,
                            pages = self.pages + 1,
                            elapsed_ms = self.started.elapsed().as_millis() as u64,
                            "export read its last page"
                        );
                    }
                    return Ok(read);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// How long to wait before asking again for a page refused with `error`: only a refusal
    /// for the caller's query cost that the bucket will pay within `max_pacing` and before the
    /// deadline.
    fn pacing(&self, error: &ExportError) -> Option<Duration> {
        if error.code() != ErrorCode::RateLimited {
            return None;
        }
        let wait = Duration::from_secs(error.retry_after()?);
        let in_time = self
            .deadline
            .is_none_or(|deadline| Instant::now() + wait < deadline);
        (wait <= self.options.max_pacing && in_time).then_some(wait)
    }

    /// Runs a page's request within the page's timeout and the export's deadline.
    async fn in_time<T>(
        &self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, ExportError> {
        let page_deadline = self.options.page_timeout.map(|t| Instant::now() + t);
        let deadline = match (self.deadline, page_deadline) {
            (None, None) => return Ok(work.await),
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
        };
        match tokio::time::timeout_at(deadline, work).await {
            Ok(value) => Ok(value),
            Err(_) if Some(deadline) == self.deadline => Err(ExportError::Timeout(format!(
                "the export took longer than its time limit ({} s) and was stopped",
                self.options.time_limit.map_or(0, |t| t.as_secs())
            ))),
            Err(_) => Err(ExportError::Timeout(format!(
                "a page of the export took longer than {} ms and was cancelled",
                self.options.page_timeout.map_or(0, |t| t.as_millis())
            ))),
        }
    }
}
