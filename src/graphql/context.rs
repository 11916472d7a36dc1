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
use super::request::{FieldTypeCache, PlanLog};
use super::{schema_builder, GridSchema, ResponseOrder};
use crate::auth::{Access, Permission};
use crate::loaders::{Batches, Loaders, RequestLoader};
use crate::paging::{CursorKeys, Limits};
use crate::repo::sweep::SweepHandle;
use crate::repo::writes::{Applied, AppliedLog, RetryPolicy, WriteStats, Writes};
use crate::repo::Repo;
use crate::store::{CallBudget, CostMeter, DynStore};
use crate::telemetry::{Fallbacks, RequestFacts};

/// The serving schema and the process-wide resources requests are served from.
pub struct Gateway {
    schema: GridSchema,
    /// The same schema with async-graphql's validation rules left out, for documents whose
    /// validation is known to pass (see `graphql/documents.rs`).
    accepted: GridSchema,
    shared: Arc<Shared>,
}

/// Where a request's estimated cost is charged before it runs: its caller's bucket of query
/// cost (the transport's `http::admission`). The request carries it as `Arc<dyn CostGate>`;
/// a request without one (unrestricted access, library callers) is not charged.
pub trait CostGate: Send + Sync {
    /// Charges `cost`, or says how long until the caller can afford it (`None`: never, it
    /// costs more than the caller's bucket holds).
    fn charge(&self, cost: u64) -> Result<(), Option<std::time::Duration>>;
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
    /// Whether responses say how each filtered page was read (`extensions.plan`): the
    /// partitions and key conditions, and the rows read against the rows returned.
    pub explain_plans: bool,
    /// Where the request's fast paths count their fall-backs (the planned rows, the typed
    /// row decoders): the application's metrics, set by `app::build`; none without metrics.
    pub fallbacks: Option<Fallbacks>,
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
            explain_plans: false,
            fallbacks: None,
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
    /// The field types seen, for the read-ahead of filtered pages.
    field_types: Arc<FieldTypeCache>,
    /// Requests validated in full, and requests whose validation was known to pass.
    validated: AtomicU64,
    skipped: AtomicU64,
    /// Resolver errors that reached a response without a code (see [`ensure_code`]): a bug
    /// every time, which the tests assert never happens.
    uncoded: AtomicU64,
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
            field_types: Arc::default(),
            validated: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            uncoded: AtomicU64::new(0),
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

    /// How many resolver errors arrived without a code (and were answered
    /// `INTERNAL_SERVER_ERROR`, or `BAD_USER_INPUT` for async-graphql's own coercion): every
    /// one is a path that bypassed `ApiError` or the input checks, and the tests fail on it.
    pub fn uncoded_errors(&self) -> u64 {
        self.shared.uncoded.load(Ordering::Relaxed)
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
    /// The mutations the request committed (the transport's log, when it gave one).
    applied: AppliedLog,
    /// How the request's filtered pages were read, when plans are explained.
    plans: Option<PlanLog>,
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
            applied: AppliedLog::default(),
            plans: None,
        }
    }

    /// Prices and bounds the parsed document before it is validated or run, checks its input
    /// values against their types, and checks the caller may run its kind of operation.
    fn admit(
        &self,
        document: &Document,
        operation_name: Option<&str>,
        variables: &Variables,
        access: &Access,
        cost_gate: Option<&Arc<dyn CostGate>>,
    ) -> ServerResult<()> {
        let doc = document.tree();
        let types = &self.shared.types;
        let measured = analysis::analyze(
            doc,
            operation_name,
            variables,
            types,
            &self.shared.options.query_limits,
        )
        .map_err(|r| {
            let code = match r {
                Refusal::TooManyTokens { .. }
                | Refusal::TooDeeplyNested { .. }
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
            // Every input is checked against its type before anything runs: async-graphql
            // would find some mistakes only while resolving, after earlier mutations ran.
            let checked = match document.inputs(operation_name, |doc, operation| {
                analysis::check_operation(doc, operation, types)
            }) {
                Some(Ok(checked)) => checked,
                Some(Err(refusal)) => {
                    let error =
                        async_graphql::ServerError::new(refusal.message.clone(), refusal.pos);
                    return Err(ErrorCode::GraphqlValidationFailed.tag(error));
                }
                // The operation was selected above, so the document has it.
                None => &analysis::Checked::default(),
            };
            analysis::check_variables(operation, variables, types, checked)
                .map_err(|refusal| ErrorCode::BadUserInput.error(refusal.message))?;
            if !self.shared.options.introspection && introspects(doc, operation) {
                return Err(ErrorCode::Forbidden.error("introspection is disabled on this server"));
            }
        }
        if let Some(missing) = needed_scopes(doc, operation)
            .iter()
            .find(|p| !access.may(**p))
        {
            return Err(ErrorCode::Forbidden.error(format!(
                "this operation needs the `{}` scope",
                missing.scope()
            )));
        }
        // Last, once every check above has passed (async-graphql's validation may still
        // refuse it): a request is charged its estimated cost to its caller's bucket.
        if let Some(gate) = cost_gate {
            gate.charge(measured.cost).map_err(|wait| match wait {
                Some(wait) => {
                    let mut error = ErrorCode::RateLimited.error(format!(
                        "this query's estimated cost ({}) is more than this caller has left of \
                         its query cost per second; retry after the time in Retry-After",
                        measured.cost
                    ));
                    if let Some(extensions) = error.extensions.as_mut() {
                        extensions.set("retryAfter", wait.as_secs_f64().ceil().max(1.0) as u64);
                    }
                    error
                }
                // Waiting would not help: the query is too costly for this caller at all.
                None => ErrorCode::LimitExceeded.error(format!(
                    "this query's estimated cost ({}) is more than this caller's query cost \
                     allowance holds; ask for smaller pages or fewer fields",
                    measured.cost
                )),
            })?;
        }
        Ok(())
    }
}

/// Whether any root field of the operation (selected directly, or through fragments and
/// inline fragments, whatever their directives) satisfies `wanted`. Walked with an explicit
/// stack, each fragment once, so neither deep nesting nor repeated spreads cost more than the
/// document's size.
fn any_root_field(
    doc: &ExecutableDocument,
    operation: &OperationDefinition,
    wanted: impl Fn(&str) -> bool,
) -> bool {
    use async_graphql::parser::types::Selection;
    let mut stack = vec![&operation.selection_set.node];
    let mut seen = Vec::<&str>::new();
    while let Some(set) = stack.pop() {
        for item in &set.items {
            match &item.node {
                Selection::Field(field) if wanted(field.node.name.node.as_str()) => return true,
                Selection::Field(_) => {}
                Selection::InlineFragment(inline) => stack.push(&inline.node.selection_set.node),
                Selection::FragmentSpread(spread) => {
                    let name = spread.node.fragment_name.node.as_str();
                    if !seen.contains(&name) {
                        seen.push(name);
                        if let Some(fragment) = doc.fragments.get(name) {
                            stack.push(&fragment.node.selection_set.node);
                        }
                    }
                }
            }
        }
    }
    false
}

/// Whether the operation asks for `__schema` or `__type` at its root, which async-graphql
/// would answer with a silent `null` when introspection is off.
fn introspects(doc: &ExecutableDocument, operation: &OperationDefinition) -> bool {
    any_root_field(doc, operation, |name| matches!(name, "__schema" | "__type"))
}

/// The mutations that act beyond the caller's tenant and need `grid:admin`.
pub(super) const ADMIN_MUTATIONS: [&str; 1] = ["createTenant"];

/// The scopes an operation needs, decided from the document before anything runs, so a
/// missing one is always HTTP 403: `grid:read` for a query; `grid:read` and `grid:write` for a
/// mutation (its payload is a read, and can select the whole graph around what it wrote); and
/// `grid:admin` as well when it selects a mutation of [`ADMIN_MUTATIONS`].
fn needed_scopes(
    doc: &ExecutableDocument,
    operation: Option<&OperationDefinition>,
) -> &'static [Permission] {
    // Every request asks this: the answers are constants, so nothing is allocated.
    const QUERY: &[Permission] = &[Permission::Read];
    const MUTATION: &[Permission] = &[Permission::Read, Permission::Write];
    const ADMIN: &[Permission] = &[Permission::Read, Permission::Write, Permission::Admin];
    match operation {
        Some(op) if op.ty == OperationType::Mutation => {
            if any_root_field(doc, op, |name| ADMIN_MUTATIONS.contains(&name)) {
                ADMIN
            } else {
                MUTATION
            }
        }
        _ => QUERY,
    }
}

/// Whether a prepared request still needs async-graphql's validation rules.
enum Validation {
    /// Its document passed them before with variables of this shape.
    Known,
    /// It needs them; once it passes, its document keeps the shape (when it is small enough).
    Needed(Option<Variables>),
}

impl RequestContext {
    /// Attaches the request's own metered store, repo, writes and loaders (never shared
    /// between requests), after refusing what must not run.
    fn prepare(&mut self, request: Request) -> ServerResult<(Request, Validation)> {
        let shared = &self.shared;
        let options = &shared.options;
        // Hostile documents are refused by size before anything parses them.
        analysis::count_tokens(&request.query, options.query_limits.max_tokens)
            .and_then(|_| analysis::check_nesting(&request.query, analysis::MAX_NESTING))
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
        let cost_gate = request
            .data
            .get(&std::any::TypeId::of::<Arc<dyn CostGate>>())
            .and_then(|d| d.downcast_ref::<Arc<dyn CostGate>>())
            .cloned();
        // The transport keeps the log too, to say what was applied if it must answer in the
        // gateway's place (a request out of time).
        if let Some(log) = request
            .data
            .get(&std::any::TypeId::of::<AppliedLog>())
            .and_then(|d| d.downcast_ref::<AppliedLog>())
        {
            self.applied = log.clone();
        }
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
                    let asked = operation_name.as_deref();
                    if let Ok(operation) = analysis::select_operation(tree, asked) {
                        facts.note_operation(operation.ty, analysis::operation_name(tree, asked));
                    }
                }
                self.admit(
                    &doc,
                    operation_name.as_deref(),
                    &request.variables,
                    &access,
                    cost_gate.as_ref(),
                )?;
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
        )
        .with_fallbacks(options.fallbacks.clone());
        let writes = Writes::new(repo.clone(), shared.sweeps.clone())
            .with_retry(options.retry)
            .with_stats(shared.write_stats.clone())
            .with_applied(self.applied.clone());
        let loader: RequestLoader = Loaders::for_request(repo.clone(), &self.batches);
        let mut request = request
            .data(repo)
            .data(loader)
            .data(writes)
            .data(super::prefetch::Prefetched::default())
            .data(shared.field_types.clone());
        if options.explain_plans {
            let plans = PlanLog::default();
            self.plans = Some(plans.clone());
            request = request.data(plans);
        }
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
            if !ensure_code(error) {
                self.shared.uncoded.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Every answer says which mutations committed: one with errors may have lost their
        // data (a later mutation failed and its non-null payload nulled `data`, the budget
        // ran out, the response grew too large), and clients need not guess when.
        if let Some(applied) = applied_extension(&self.applied.entries()) {
            response.extensions.insert("applied".into(), applied);
        }
        if let Some(plans) = self.plans.as_ref().map(PlanLog::take) {
            if !plans.is_empty() {
                response
                    .extensions
                    .insert("plan".into(), Value::List(plans));
            }
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

/// `extensions.applied`: the mutations a request committed, in order, each as
/// `{mutation, id}` (the node written or deleted); `None` when it committed nothing.
pub fn applied_extension(applied: &[Applied]) -> Option<Value> {
    if applied.is_empty() {
        return None;
    }
    let entries = applied.iter().map(|a| {
        let mut entry = async_graphql::indexmap::IndexMap::new();
        entry.insert(
            async_graphql::Name::new("mutation"),
            Value::from(a.mutation),
        );
        entry.insert(async_graphql::Name::new("id"), Value::from(a.id.as_str()));
        Value::Object(entry)
    });
    Some(Value::List(entries.collect()))
}

/// Every error leaves with an `extensions.code`. Resolver errors (those with a path) that
/// arrive without one did not pass through `ApiError`, so their text may be internal: it is
/// logged and replaced. Errors without a path come from parsing and validating the query.
/// Returns whether the error was as it should be: coded already, or a request error.
fn ensure_code(error: &mut ServerError) -> bool {
    let has_code = error
        .extensions
        .as_ref()
        .is_some_and(|e| e.get("code").is_some());
    if has_code {
        return true;
    }
    let code = if error.path.is_empty() && error.message.starts_with("The recursion depth") {
        // async-graphql's own recursion-depth check (nested inline fragments), a limit.
        ErrorCode::LimitExceeded
    } else if error.path.is_empty() {
        ErrorCode::GraphqlValidationFailed
    } else if error.message.starts_with("Failed to parse \"") {
        // async-graphql's own coercion of an argument value: the message describes the
        // client's input and is kept, but the input checks should have refused it first.
        tracing::error!(message = %error.message, path = ?error.path, "input the checks let through");
        ErrorCode::BadUserInput.set_on(error);
        return false;
    } else {
        tracing::error!(message = %error.message, path = ?error.path, "resolver error without a code");
        error.message = "internal error".into();
        ErrorCode::InternalServerError.set_on(error);
        return false;
    };
    code.set_on(error);
    true
}
