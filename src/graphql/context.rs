//! The per-request context: everything one GraphQL request gets of its own — a metered view
//! of the store, a repo and write layer over it, fresh loaders — and everything every response
//! gets on the way out: `extensions.cost`, a code on every error, fields in selection order.
//!
//! Transports (the HTTP routes today, a WebSocket route later) hand a request to
//! [`Gateway::execute`] and get all of this for free.

use std::sync::Arc;

use async_graphql::{ServerError, Value};

use super::error::ErrorCode;
use super::{build_schema, GridSchema, ResponseOrder};
use crate::loaders::{Loaders, RequestLoader};
use crate::paging::Limits;
use crate::repo::sweep::SweepHandle;
use crate::repo::writes::{RetryPolicy, WriteStats, Writes};
use crate::repo::Repo;
use crate::store::{CostMeter, DynStore, Metered};

/// The schema and the process-wide resources requests are served from.
pub struct Gateway {
    schema: GridSchema,
    /// The schema's types, for putting response fields back in query order.
    order: ResponseOrder,
    store: DynStore,
    limits: Limits,
    retry: RetryPolicy,
    sweeps: Option<SweepHandle>,
    write_stats: Arc<WriteStats>,
}

impl Gateway {
    pub fn new(
        store: DynStore,
        limits: Limits,
        retry: RetryPolicy,
        sweeps: Option<SweepHandle>,
    ) -> Self {
        let schema = build_schema();
        Gateway {
            order: ResponseOrder::from_sdl(&schema.sdl()),
            schema,
            store,
            limits,
            retry,
            sweeps,
            write_stats: Arc::default(),
        }
    }

    /// Write contention counters of every request this gateway ran.
    pub fn write_stats(&self) -> &WriteStats {
        &self.write_stats
    }

    /// The shared (unmetered) store, for health checks.
    pub fn store(&self) -> &DynStore {
        &self.store
    }

    /// Runs one request with its own metered store, repo, writes and loaders, then reports
    /// its cost in `extensions.cost` and makes sure every error carries a code.
    pub async fn execute(&self, request: async_graphql::Request) -> async_graphql::Response {
        let meter = CostMeter::new();
        let store: DynStore = Arc::new(Metered::new(self.store.clone(), meter.clone()));
        let repo = Repo::new(store, self.limits);
        let writes = Writes::new(repo.clone(), self.sweeps.clone())
            .with_retry(self.retry)
            .with_stats(self.write_stats.clone());
        let loader: RequestLoader = Loaders::for_request(repo.clone());
        let query = request.query.clone();
        let operation_name = request.operation_name.clone();
        let request = request.data(repo).data(loader).data(writes);
        let mut response = self.schema.execute(request).await;
        self.order
            .restore(&mut response.data, &query, operation_name.as_deref());
        self.order.null_failed_fields(
            &mut response.data,
            &response.errors,
            &query,
            operation_name.as_deref(),
        );
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
        fields.insert(
            async_graphql::Name::new("writeCapacityUnits"),
            Value::from(cost.write_capacity_units),
        );
        response
            .extensions
            .insert("cost".into(), Value::Object(fields));
        response
    }
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
        ErrorCode::GraphqlValidationFailed
    } else if error.message.starts_with("Failed to parse \"") {
        // async-graphql's own coercion of an argument value (an Int out of range, say): the
        // message describes the client's input and is kept.
        ErrorCode::BadUserInput
    } else {
        tracing::error!(message = %error.message, path = ?error.path, "resolver error without a code");
        error.message = "internal error".into();
        ErrorCode::InternalServerError
    };
    let mut extensions = error.extensions.take().unwrap_or_default();
    extensions.set("code", code.as_str());
    error.extensions = Some(extensions);
}
