//! The per-request context: everything one GraphQL request gets of its own — a metered view of
//! the store, a repo and write layer over it, fresh loaders — and everything every response
//! gets on the way out: fields in selection order, failed fields nulled, a code on every
//! error, and `extensions.cost`.
//!
//! [`Gateway::execute`] wraps the schema's execution in it, so every transport that runs the
//! schema through the gateway gets all of this. It is not an async-graphql extension on
//! purpose: with any extension registered, async-graphql routes every field of every object
//! through the extension chain (a type lookup, a field lookup and a boxed future per field),
//! which cost a grid page more than everything it does itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_graphql::parser::types::{ExecutableDocument, OperationDefinition, OperationType};
use async_graphql::{Request, Response, ServerError, ServerResult, Value, Variables};

use super::analysis::{self, QueryLimits, Refusal, TypeMap};
use super::documents::{Document, Documents};
use super::error::ErrorCode;
use super::{schema_builder, GridSchema, ResponseOrder};
use crate::auth::{Access, Permission};
use crate::loaders::{Batches, Loaders, RequestLoader};
use crate::paging::{CursorKeys, Limits};
use crate::repo::sweep::SweepHandle;
use crate::repo::writes::{RetryPolicy, WriteStats, Writes};
use crate::repo::Repo;
use crate::store::{CallBudget, CostMeter, DynStore};
use crate::telemetry::RequestFacts;

/// The serving schema and the process-wide resources requests are served from.
pub struct Gateway {
    schema: GridSchema,
    /// The same schema with async-graphql's validation rules left out, for documents whose
    /// validation is known to pass (see `graphql/documents.rs`).
    accepted: GridSchema,
    shared: Arc<Shared>,
}

/// How requests are served and bounded.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    pub limits: Limits,
    pub retry: RetryPolicy,
    /// Signs and checks cursors; share one key between instances behind a load balancer.
    pub cursor_keys: Arc<CursorKeys>,
    /// Refusals before execution: cost, depth, aliases, root fields, directives, tokens.
    pub query_limits: QueryLimits,
    /// The most DynamoDB calls one request may make.
    pub max_calls: u64,
    /// The most read capacity one request may consume.
    pub max_read_units: f64,
    /// Whether `__schema` / `__type` are answered.
    pub introspection: bool,
}

/// Default of [`GatewayOptions::max_calls`]: a grid page takes 2 or 3 calls and the
/// heaviest legitimate request (`nodes` of 100 custom fields of 100 projects) about 101;
/// a request past 200 is an attack or a bug.
pub const DEFAULT_MAX_CALLS: u64 = 200;
/// Default of [`GatewayOptions::max_read_units`]: a 100-row page reads ~50–100 RCU; 2,000
/// leaves room for the custom-field sort's filtered reads (1,000 items) and wide rows.
pub const DEFAULT_MAX_READ_UNITS: f64 = 2000.0;

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            limits: Limits::default(),
            retry: RetryPolicy::default(),
            cursor_keys: Arc::new(CursorKeys::random()),
            query_limits: QueryLimits::default(),
            max_calls: DEFAULT_MAX_CALLS,
            max_read_units: DEFAULT_MAX_READ_UNITS,
            introspection: true,
        }
    }
}

/// What every request's context is built from.
struct Shared {
    store: DynStore,
    options: GatewayOptions,
    sweeps: Option<SweepHandle>,
    write_stats: Arc<WriteStats>,
    /// The schema's types, for shaping responses.
    order: ResponseOrder,
    /// The schema's types, for pricing queries before they run.
    types: TypeMap,
    /// Documents parsed before, by query text.
    documents: Documents,
    /// Requests validated in full, and requests whose validation was known to pass.
    validated: AtomicU64,
    skipped: AtomicU64,
}

/// How many requests that reached validation ran async-graphql's rules, and how many skipped
/// them because their document had passed with variables of the same shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ValidationCounts {
    pub validated: u64,
    pub skipped: u64,
}

impl Gateway {
    pub fn new(store: DynStore, options: GatewayOptions, sweeps: Option<SweepHandle>) -> Self {
        let sdl = super::sdl();
        let introspection = options.introspection;
        let shared = Arc::new(Shared {
            store,
            options,
            sweeps,
            write_stats: Arc::default(),
            order: ResponseOrder::from_sdl(&sdl),
            types: TypeMap::from_sdl(&sdl),
            documents: Documents::default(),
            validated: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        });
        // Suggestions ("did you mean ...") would let a client enumerate the schema even with
        // introspection off, and cost time on every misspelt field.
        let builder = || {
            let builder = schema_builder().disable_suggestions();
            if introspection {
                builder
            } else {
                builder.disable_introspection()
            }
        };
        Gateway {
            schema: builder().finish(),
            accepted: builder()
                .validation_mode(async_graphql::ValidationMode::Fast)
                .finish(),
            shared,
        }
    }

    /// Write contention counters of every request this gateway ran.
    pub fn write_stats(&self) -> &WriteStats {
        &self.shared.write_stats
    }

    /// How many requests were validated in full and how many skipped validation.
    pub fn validation_counts(&self) -> ValidationCounts {
        ValidationCounts {
            validated: self.shared.validated.load(Ordering::Relaxed),
            skipped: self.shared.skipped.load(Ordering::Relaxed),
        }
    }

    /// The shared (unmetered) store, for health checks.
    pub fn store(&self) -> &DynStore {
        &self.shared.store
    }

    /// The serving schema (for transports that need more than [`Gateway::execute`]).
    pub fn schema(&self) -> &GridSchema {
        &self.schema
    }

    /// Runs one request: prepares its context, executes it with its loader batches beside it,
    /// and finishes its response, whose values are all plain.
    pub async fn execute(&self, request: Request) -> Response {
        let mut response = self.execute_encoded(request).await;
        super::rows::decode_encoded(&mut response.data);
        response
    }

    /// [`Self::execute`], leaving the grid rows resolved by plan as the JSON text they were
    /// written as (`Value::Binary`, see `graphql/rows.rs`): for `http::wire`, which writes
    /// them into the body as they are.
    pub async fn execute_encoded(&self, request: Request) -> Response {
        let mut context = RequestContext::new(&self.shared);
        let mut response = match context.prepare(request) {
            Ok((request, Validation::Known)) => {
                self.shared.skipped.fetch_add(1, Ordering::Relaxed);
                context.batches.drive(self.accepted.execute(request)).await
            }
            Ok((request, Validation::Needed(shape))) => {
                self.shared.validated.fetch_add(1, Ordering::Relaxed);
                let response = context.batches.drive(self.schema.execute(request)).await;
                // Validation failures have no path; errors of a request that ran all have one.
                if let (Some(shape), Some((doc, operation))) = (shape, &context.document) {
                    if response.errors.iter().all(|e| !e.path.is_empty()) {
                        doc.accept(operation.as_deref(), shape);
                    }
                }
                response
            }
            Err(error) => Response::from_errors(vec![error]),
        };
        context.finish(&mut response);
        response
    }
}

/// One request's context: its cost meter and call budget, who it runs as, and its parsed
/// document for shaping its response.
struct RequestContext {
    shared: Arc<Shared>,
    meter: Arc<CostMeter>,
    budget: Arc<CallBudget>,
    /// The parsed document and operation name, kept for shaping the response (the cached
    /// tree that async-graphql executes a copy of, not a second parse).
    document: Option<(Arc<Document>, Option<String>)>,
    /// Where the request's loader batches run (see [`Batches`]).
    batches: Batches,
}

impl RequestContext {
    fn new(shared: &Arc<Shared>) -> Self {
        let options = &shared.options;
        RequestContext {
            shared: shared.clone(),
            meter: CostMeter::new(),
            budget: CallBudget::new(options.max_calls, options.max_read_units),
            document: None,
            batches: Batches::default(),
        }
    }

    /// Prices and bounds the parsed document before it is validated or run, and checks the
    /// caller may run its kind of operation.
    fn admit(
        &self,
        doc: &ExecutableDocument,
        operation_name: Option<&str>,
        variables: &Variables,
        access: &Access,
    ) -> ServerResult<()> {
        analysis::analyze(
            doc,
            operation_name,
            variables,
            &self.shared.types,
            &self.shared.options.query_limits,
        )
        .map_err(|r| {
            let code = match r {
                Refusal::TooManyTokens { .. }
                | Refusal::TooCostly { .. }
                | Refusal::TooDeep { .. }
                | Refusal::TooManyAliases { .. }
                | Refusal::TooManyRootFields { .. }
                | Refusal::TooManyDirectives { .. } => ErrorCode::LimitExceeded,
                _ => ErrorCode::GraphqlValidationFailed,
            };
            code.error(r.to_string())
        })?;
        let operation = analysis::select_operation(doc, operation_name).ok();
        if let Some(operation) = operation {
            check_variables(operation, variables)?;
            if !self.shared.options.introspection && introspects(doc, operation) {
                return Err(ErrorCode::Forbidden.error("introspection is disabled on this server"));
            }
        }
        // A mutation's payload is a read (it can select the whole graph around what it wrote),
        // so mutations need `grid:read` as well as `grid:write`.
        let needed: &[Permission] = match operation.map(|op| op.ty) {
            Some(OperationType::Mutation) => &[Permission::Read, Permission::Write],
            _ => &[Permission::Read],
        };
        if let Some(missing) = needed.iter().find(|p| !access.may(**p)) {
            return Err(ErrorCode::Forbidden.error(format!(
                "this operation needs the `{}` scope",
                missing.scope()
            )));
        }
        Ok(())
    }
}

/// Whether the operation asks for `__schema` or `__type` at its root (directly or through
/// fragments), which async-graphql would answer with a silent `null` when introspection is off.
fn introspects(doc: &ExecutableDocument, operation: &OperationDefinition) -> bool {
    use async_graphql::parser::types::{Selection, SelectionSet};
    fn walk<'d>(
        doc: &'d ExecutableDocument,
        set: &'d SelectionSet,
        seen: &mut Vec<&'d str>,
    ) -> bool {
        set.items.iter().any(|item| match &item.node {
            Selection::Field(field) => {
                matches!(field.node.name.node.as_str(), "__schema" | "__type")
            }
            Selection::InlineFragment(inline) => walk(doc, &inline.node.selection_set.node, seen),
            Selection::FragmentSpread(spread) => {
                let name = spread.node.fragment_name.node.as_str();
                // Each fragment once: cycles and repeated spreads cost nothing extra.
                if seen.contains(&name) {
                    return false;
                }
                seen.push(name);
                doc.fragments
                    .get(name)
                    .is_some_and(|f| walk(doc, &f.node.selection_set.node, seen))
            }
        })
    }
    walk(doc, &operation.selection_set.node, &mut Vec::new())
}

/// Whether a prepared request still needs async-graphql's validation rules.
enum Validation {
    /// Its document passed them before with variables of this shape.
    Known,
    /// It needs them; once it passes, its document keeps the shape (when it is small enough).
    Needed(Option<Variables>),
}

/// A required variable (non-null, no default) that the request leaves out or sets to null is
/// the client's mistake, reported before execution as `BAD_USER_INPUT` (async-graphql would
/// only notice while resolving, as an error without a code). Values of the wrong type are
/// reported by validation (`GRAPHQL_VALIDATION_FAILED`).
fn check_variables(operation: &OperationDefinition, variables: &Variables) -> ServerResult<()> {
    for definition in &operation.variable_definitions {
        let definition = &definition.node;
        let ty = &definition.var_type.node;
        let required = !ty.nullable && definition.default_value.is_none();
        let given = variables
            .get(definition.name.node.as_str())
            .is_some_and(|v| *v != Value::Null);
        if required && !given {
            return Err(ErrorCode::BadUserInput.error(format!(
                "variable `${}` of type `{}` is required but was not provided",
                definition.name.node, ty
            )));
        }
    }
    Ok(())
}

impl RequestContext {
    /// Attaches the request's own metered store, repo, writes and loaders (never shared
    /// between requests), after refusing what must not run.
    fn prepare(&mut self, request: Request) -> ServerResult<(Request, Validation)> {
        let shared = &self.shared;
        let options = &shared.options;
        // Hostile documents are refused by size before anything parses them.
        analysis::count_tokens(&request.query, options.query_limits.max_tokens)
            .map_err(|r| ErrorCode::LimitExceeded.error(r.to_string()))?;
        let access = request
            .data
            .get(&std::any::TypeId::of::<Access>())
            .and_then(|d| d.downcast_ref::<Access>())
            .cloned()
            .unwrap_or(Access::Unrestricted);
        // The transport's record of the request (operation type and name, for its metrics
        // and span), filled in as soon as the document is parsed, refused or not.
        let facts = request
            .data
            .get(&std::any::TypeId::of::<Arc<RequestFacts>>())
            .and_then(|d| d.downcast_ref::<Arc<RequestFacts>>())
            .cloned();
        // Parse and price the document here, before async-graphql's own checks walk it:
        // its recursion-depth check follows every fragment spread without memoizing, so a
        // spread-doubling bomb 31 levels deep (2^31 visits) would pin a worker thread for
        // minutes before async-graphql ever saw the document. The parsed document is set in
        // the request, so async-graphql does not parse it again.
        let mut request = request;
        let operation_name = request.operation_name.clone();
        let validation = match shared.documents.get_or_parse(&request.query) {
            Ok(doc) => {
                let tree = doc.tree();
                if let Some(facts) = &facts {
                    facts.note_operation(tree, operation_name.as_deref());
                }
                self.admit(tree, operation_name.as_deref(), &request.variables, &access)?;
                request.set_parsed_query(ExecutableDocument::clone(tree));
                let validation = if doc.is_accepted(operation_name.as_deref(), &request.variables) {
                    Validation::Known
                } else {
                    Validation::Needed(doc.shape(&request.variables))
                };
                self.document = Some((doc, operation_name));
                validation
            }
            Err(e) => return Err(ErrorCode::GraphqlParseFailed.tag(e)),
        };
        let repo = Repo::for_request(
            shared.store.clone(),
            self.meter.clone(),
            self.budget.clone(),
            options.limits,
            access,
            options.cursor_keys.clone(),
        );
        let writes = Writes::new(repo.clone(), shared.sweeps.clone())
            .with_retry(options.retry)
            .with_stats(shared.write_stats.clone());
        let loader: RequestLoader = Loaders::for_request(repo.clone(), &self.batches);
        let request = request
            .data(repo)
            .data(loader)
            .data(writes)
            .data(super::prefetch::Prefetched::default());
        Ok((request, validation))
    }

    /// Shapes the response (selection order, failed fields nulled), makes sure every error
    /// has a code, and reports the request's cost.
    fn finish(&mut self, response: &mut Response) {
        if self.budget.exceeded() {
            // The request stops as a whole: a partial answer would bill the caller for work
            // it did not get and invite retrying the same expensive request.
            response.data = Value::Null;
            response.errors = vec![ErrorCode::LimitExceeded.error(format!(
                "the request needs more than {} DynamoDB calls or {} read capacity units; \
                     ask for fewer or smaller pages",
                self.shared.options.max_calls, self.shared.options.max_read_units
            ))];
        }
        if let Some((doc, operation_name)) = self.document.take() {
            self.shared.order.shape(
                &mut response.data,
                &response.errors,
                doc.tree(),
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
    let code = if error.path.is_empty() && error.message.starts_with("The recursion depth") {
        // async-graphql's own recursion-depth check (nested inline fragments), a limit.
        ErrorCode::LimitExceeded
    } else if error.path.is_empty() {
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
    code.set_on(error);
}
