//! The API's error type: what a client sees when a field fails, with a stable
//! `extensions.code` per variant and a message that never carries internal detail.

use std::sync::Arc;

use async_graphql::ErrorExtensions;

use crate::ids::IdError;
use crate::paging::PagingError;
use crate::repo::writes::WriteError;
use crate::repo::RepoError;

/// Every `extensions.code` a client can see, spelled once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// The request's arguments or input are wrong.
    BadUserInput,
    /// The node to change does not exist.
    NotFound,
    /// The data changed under a write (stale `expectedVersion`, or contention).
    Conflict,
    /// The store could not answer.
    StoreUnavailable,
    /// The query does not parse or validate against the schema.
    GraphqlValidationFailed,
    /// The HTTP request is not a GraphQL request (bad body, mutation over GET).
    BadRequest,
    /// A bug or corrupt data.
    InternalServerError,
    /// The store throttled the request and retries gave up; retrying later may succeed.
    Throttled,
    /// The request carries no valid credentials (HTTP 401).
    Unauthenticated,
    /// The credentials are valid but lack the scope the operation needs.
    Forbidden,
    /// The query text is not a GraphQL document.
    GraphqlParseFailed,
    /// The request is over a limit (cost, depth, aliases, size, DynamoDB budget, ...).
    LimitExceeded,
    /// The request took longer than the per-request timeout.
    Timeout,
    /// The server is at its limit of requests in flight (HTTP 503); retry later.
    Overloaded,
    /// The caller is past its share of the server: its rate or its requests in flight
    /// (HTTP 429, with `Retry-After`).
    RateLimited,
    /// A saved view's index is still being built: retry later (`extensions.progress` says how
    /// far the build got).
    ViewBuilding,
}

impl ErrorCode {
    /// Every code (the metrics' `code` label takes no other value but `ok`).
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::BadUserInput,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::StoreUnavailable,
        ErrorCode::GraphqlValidationFailed,
        ErrorCode::BadRequest,
        ErrorCode::InternalServerError,
        ErrorCode::Throttled,
        ErrorCode::Unauthenticated,
        ErrorCode::Forbidden,
        ErrorCode::GraphqlParseFailed,
        ErrorCode::LimitExceeded,
        ErrorCode::Timeout,
        ErrorCode::Overloaded,
        ErrorCode::RateLimited,
        ErrorCode::ViewBuilding,
    ];

    /// The code spelled `text`, if it is one.
    pub fn parse(text: &str) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
    }

    /// A request-level error (no path) with this code.
    pub fn error(self, message: impl Into<String>) -> async_graphql::ServerError {
        self.tag(async_graphql::ServerError::new(message, None))
    }

    /// `error` with this code in `extensions.code`.
    pub fn tag(self, mut error: async_graphql::ServerError) -> async_graphql::ServerError {
        self.set_on(&mut error);
        error
    }

    /// Puts this code in `error`'s `extensions.code`.
    pub fn set_on(self, error: &mut async_graphql::ServerError) {
        let mut extensions = error.extensions.take().unwrap_or_default();
        extensions.set("code", self.as_str());
        error.extensions = Some(extensions);
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadUserInput => "BAD_USER_INPUT",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::StoreUnavailable => "STORE_UNAVAILABLE",
            ErrorCode::GraphqlValidationFailed => "GRAPHQL_VALIDATION_FAILED",
            ErrorCode::BadRequest => "BAD_REQUEST",
            ErrorCode::InternalServerError => "INTERNAL_SERVER_ERROR",
            ErrorCode::Throttled => "THROTTLED",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::Forbidden => "FORBIDDEN",
            ErrorCode::GraphqlParseFailed => "GRAPHQL_PARSE_FAILED",
            ErrorCode::LimitExceeded => "LIMIT_EXCEEDED",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::Overloaded => "OVERLOADED",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::ViewBuilding => "VIEW_BUILDING",
        }
    }
}

/// An error as clients see it. Causes from lower layers are logged where they are converted
/// (see the `From` impls), and only a safe message goes out.
///
/// It deliberately has no `Display`: async-graphql turns any `Display` error into a GraphQL
/// error carrying its text, and this type must only ever become one through
/// `From<ApiError> for async_graphql::Error`, which adds the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The request's arguments are wrong; the message says how to fix them.
    BadUserInput(String),
    /// The node a mutation names does not exist.
    NotFound(String),
    /// The write lost to another: `retryable` when retrying as is may succeed (contention),
    /// not when the client must read again first (a stale `expectedVersion`).
    Conflict { message: String, retryable: bool },
    /// The store could not answer; retrying later may succeed.
    StoreUnavailable,
    /// The store throttled the request and its retries gave up; retrying later may succeed.
    Throttled,
    /// The caller lacks the scope the operation needs.
    Forbidden(String),
    /// The request spent its budget (of store calls, say).
    LimitExceeded(String),
    /// A saved view has no index to read yet: its first one is being built. `scanned` of
    /// `total` issues were read so far.
    ViewBuilding {
        message: String,
        scanned: u64,
        total: u64,
    },
    /// A bug or corrupt data; details are in the server log.
    Internal,
}

impl ApiError {
    /// The message clients see.
    pub fn message(&self) -> &str {
        match self {
            ApiError::BadUserInput(m)
            | ApiError::NotFound(m)
            | ApiError::Forbidden(m)
            | ApiError::LimitExceeded(m) => m,
            ApiError::ViewBuilding { message, .. } => message,
            ApiError::Throttled => "the data store is busy, please retry later",
            ApiError::Conflict { message, .. } => message,
            ApiError::StoreUnavailable => "the data store is unavailable, please retry later",
            ApiError::Internal => "internal error",
        }
    }

    /// The stable code clients match on, in `extensions.code`.
    pub fn code(&self) -> ErrorCode {
        match self {
            ApiError::BadUserInput(_) => ErrorCode::BadUserInput,
            ApiError::NotFound(_) => ErrorCode::NotFound,
            ApiError::Conflict { .. } => ErrorCode::Conflict,
            ApiError::StoreUnavailable => ErrorCode::StoreUnavailable,
            ApiError::Throttled => ErrorCode::Throttled,
            ApiError::Forbidden(_) => ErrorCode::Forbidden,
            ApiError::LimitExceeded(_) => ErrorCode::LimitExceeded,
            ApiError::ViewBuilding { .. } => ErrorCode::ViewBuilding,
            ApiError::Internal => ErrorCode::InternalServerError,
        }
    }
}

impl ErrorExtensions for ApiError {
    fn extend(&self) -> async_graphql::Error {
        async_graphql::Error::new(self.message()).extend_with(|_, e| {
            e.set("code", self.code().as_str());
            match self {
                ApiError::Conflict { retryable, .. } => e.set("retryable", *retryable),
                ApiError::Throttled | ApiError::StoreUnavailable => e.set("retryable", true),
                ApiError::ViewBuilding { scanned, total, .. } => {
                    e.set("retryable", true);
                    let mut progress = async_graphql::indexmap::IndexMap::new();
                    progress.insert(
                        async_graphql::Name::new("scanned"),
                        async_graphql::Value::from(*scanned),
                    );
                    progress.insert(
                        async_graphql::Name::new("total"),
                        async_graphql::Value::from(*total),
                    );
                    e.set("progress", async_graphql::Value::Object(progress));
                }
                _ => {}
            }
        })
    }
}

impl From<WriteError> for ApiError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Repo(e) => ApiError::from(&e),
            WriteError::Invalid { field, message } => {
                ApiError::BadUserInput(format!("input.{field}: {message}"))
            }
            WriteError::NotFound(message) => ApiError::NotFound(message),
            WriteError::Conflict { message, retryable } => {
                ApiError::Conflict { message, retryable }
            }
        }
    }
}

impl From<ApiError> for async_graphql::Error {
    fn from(e: ApiError) -> Self {
        e.extend()
    }
}

impl From<&RepoError> for ApiError {
    fn from(e: &RepoError) -> Self {
        if let RepoError::Paging(e) = e {
            return ApiError::BadUserInput(e.to_string());
        }
        if e.is_budget_exceeded() {
            return ApiError::LimitExceeded(
                "the request spent its budget of DynamoDB calls".into(),
            );
        }
        if e.is_throttled() {
            tracing::warn!(error = %e, "store throttled");
            return ApiError::Throttled;
        }
        if e.is_unavailable() {
            tracing::warn!(error = %e, "store call failed");
            ApiError::StoreUnavailable
        } else {
            tracing::error!(error = %e, "request failed");
            ApiError::Internal
        }
    }
}

impl From<RepoError> for ApiError {
    fn from(e: RepoError) -> Self {
        ApiError::from(&e)
    }
}

impl From<Arc<RepoError>> for ApiError {
    fn from(e: Arc<RepoError>) -> Self {
        ApiError::from(e.as_ref())
    }
}

impl From<PagingError> for ApiError {
    fn from(e: PagingError) -> Self {
        ApiError::BadUserInput(e.to_string())
    }
}

impl From<IdError> for ApiError {
    fn from(e: IdError) -> Self {
        ApiError::BadUserInput(e.to_string())
    }
}

/// Resolver results: `?` on an [`ApiError`] gives a GraphQL error with its code. Lower-layer
/// errors must pass through `ApiError::from` first (the HTTP layer replaces any resolver error
/// that arrives without a code, so a slip cannot leak internal text).
pub type ApiResult<T> = async_graphql::Result<T>;
