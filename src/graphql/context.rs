//! The per-request context, as an async-graphql extension: everything one GraphQL request gets
//! of its own — a metered view of the store, a repo and write layer over it, fresh loaders —
//! and everything every response gets on the way out: fields in selection order, failed fields
//! nulled, a code on every error, and `extensions.cost`.
//!
//! Because it is a schema extension, every way of running the schema gets all of this: the
//! HTTP routes today, a WebSocket route or a JWT-carrying transport later. [`Gateway`] is the
//! schema built with it, plus the process-wide resources requests are served from.

use std::sync::{Arc, Mutex};

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextPrepareRequest, NextRequest,
};
use async_graphql::{Request, Response, ServerError, ServerResult, Value};

use super::error::ErrorCode;
use super::{schema_builder, GridSchema, ResponseOrder};
use crate::loaders::{Loaders, RequestLoader};
use crate::paging::Limits;
use crate::repo::sweep::SweepHandle;
use crate::repo::writes::{RetryPolicy, WriteStats, Writes};
use crate::repo::Repo;
use crate::store::{CostMeter, DynStore, Metered};

/// The serving schema and the process-wide resources requests are served from.
pub struct Gateway {
    schema: GridSchema,
    shared: Arc<Shared>,
}

/// What every request's context is built from.
struct Shared {
    store: DynStore,
    limits: Limits,
    retry: RetryPolicy,
    sweeps: Option<SweepHandle>,
    write_stats: Arc<WriteStats>,
    /// The schema's types, for shaping responses.
    order: ResponseOrder,
}

impl Gateway {
    pub fn new(
        store: DynStore,
        limits: Limits,
        retry: RetryPolicy,
        sweeps: Option<SweepHandle>,
    ) -> Self {
        let shared = Arc::new(Shared {
            store,
            limits,
            retry,
            sweeps,
            write_stats: Arc::default(),
            order: ResponseOrder::from_sdl(&super::sdl()),
        });
        let schema = schema_builder()
            .extension(RequestContextFactory(shared.clone()))
            .finish();
        Gateway { schema, shared }
    }

    /// Write contention counters of every request this gateway ran.
    pub fn write_stats(&self) -> &WriteStats {
        &self.shared.write_stats
    }

    /// The shared (unmetered) store, for health checks.
    pub fn store(&self) -> &DynStore {
        &self.shared.store
    }

    /// The serving schema (for transports that need more than [`Gateway::execute`]).
    pub fn schema(&self) -> &GridSchema {
        &self.schema
    }

    /// Runs one request.
    pub async fn execute(&self, request: Request) -> Response {
        self.schema.execute(request).await
    }
}

/// Creates one [`RequestContext`] per request.
struct RequestContextFactory(Arc<Shared>);

impl ExtensionFactory for RequestContextFactory {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(RequestContext {
            shared: self.0.clone(),
            meter: CostMeter::new(),
            query: Mutex::new(None),
        })
    }
}

/// One request's context: its cost meter, and the query text for shaping its response.
struct RequestContext {
    shared: Arc<Shared>,
    meter: Arc<CostMeter>,
    /// The query and operation name, kept from `prepare_request` for `request`.
    query: Mutex<Option<(String, Option<String>)>>,
}

#[async_trait::async_trait]
impl Extension for RequestContext {
    /// Attaches the request's own metered store, repo, writes and loaders (never shared
    /// between requests).
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        request: Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<Request> {
        let shared = &self.shared;
        let store: DynStore = Arc::new(Metered::new(shared.store.clone(), self.meter.clone()));
        let repo = Repo::new(store, shared.limits);
        let writes = Writes::new(repo.clone(), shared.sweeps.clone())
            .with_retry(shared.retry)
            .with_stats(shared.write_stats.clone());
        let loader: RequestLoader = Loaders::for_request(repo.clone());
        *self.query.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((request.query.clone(), request.operation_name.clone()));
        next.run(ctx, request.data(repo).data(loader).data(writes))
            .await
    }

    /// Shapes the response (selection order, failed fields nulled), makes sure every error
    /// has a code, and reports the request's cost.
    async fn request(&self, ctx: &ExtensionContext<'_>, next: NextRequest<'_>) -> Response {
        let mut response = next.run(ctx).await;
        let query = self.query.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((query, operation_name)) = query {
            self.shared.order.shape(
                &mut response.data,
                &response.errors,
                &query,
                operation_name.as_deref(),
            );
        }
        for error in &mut response.errors {
            ensure_code(error);
        }
        let cost = self.meter.report();
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
