//! Pre-execution query analysis: the token count, expanded size and estimated cost of a GraphQL
//! document, checked against [`QueryLimits`] so hostile documents are refused in microseconds,
//! before validation or execution walks them.
//!
//! Two pure functions do the work. [`count_tokens`] runs on the raw query text before it is
//! parsed and stops as soon as the limit is passed, so a huge document costs the parser
//! nothing. [`analyze`] runs on the parsed document, the operation name and the variables, with
//! a [`TypeMap`] built once at start-up from the schema's SDL, and measures the operation as it
//! would execute: every fragment spread expanded.
//!
//! # Counting the expanded query without expanding it
//!
//! Fragment spreads can double a query at every level (`fragment F1 on Project { ...F0 ...F0 }`
//! up to `F60` expands to 2^60 fields), so the analysis never re-walks a spread. It orders the
//! fragments the operation reaches depth first, refusing cycles and unknown fragments (those it
//! never reaches are left to validation, which refuses unused fragments), then measures each
//! fragment definition exactly once and reuses that summary at every spread. A
//! fragment's type condition fixes the type its fields are resolved on, so one summary serves
//! every spread whatever the enclosing type. All counts use saturating `u64` arithmetic: a bomb
//! prices as astronomically expensive instead of wrapping round to cheap. The walks use explicit
//! stacks, never recursion over fragments, so a 2,000-fragment spread chain needs no more
//! native stack than a one-fragment query.
//!
//! # The cost model
//!
//! The cost approximates the store work and the response size of the operation:
//!
//! - every field costs 1, `__typename` included: the executor answers it without the store,
//!   but it still resolves (and the response still carries) every copy, once per object of
//!   every list it sits in;
//! - a field with a selection set adds its children's cost times a list multiplier:
//!   - a connection (its type's name ends in `Connection`, like `Project.issues` or
//!     `Tenant.projects`) multiplies by its page size: `first` or `last` (the larger if both
//!     are given), as a literal or a variable; [`DEFAULT_PAGE_SIZE`] when neither is given;
//!     [`MAX_PAGE_SIZE`] when the value is not a number from 1 to [`MAX_PAGE_SIZE`], because
//!     the resolver refuses it anyway and the analysis must not be cheaper than the largest
//!     page it serves;
//!   - a list field with an `ids` argument (`Query.nodes`) multiplies by the number of ids, as
//!     a literal list or a variable; a single value counts 1 (GraphQL coerces it to a list of
//!     one), and an unknown length counts [`MAX_NODES`];
//!   - the `edges` and `nodes` lists of a connection multiply by 1, since the connection
//!     field already multiplied by the page size;
//!   - any other list (`Project.customFields`, `Issue.fieldValues`) multiplies by
//!     [`NOMINAL_LIST_SIZE`];
//!   - a connection with a `filter` that is not null costs [`FILTERED_LIST_COST`] more itself
//!     (per execution, like its base cost): its page reads on past the rows it returns;
//!   - fields the [`TypeMap`] does not know cost 1 and multiply by 1: validation refuses them
//!     later, and refusing them here would duplicate its work with worse messages;
//! - the query costs at least its number of fields (expanded, `__typename` included): the
//!   executor and the validator walk every one of them even when the store is never asked, so
//!   a spread bomb of `__typename` is as costly as its size, not free.
//!
//! Field types are resolved from the enclosing type, so `Query.nodes` (an `ids` lookup) and
//! `IssueConnection.nodes` (a connection's page) are told apart, and an inline fragment or a
//! fragment with a type condition resolves its fields on that type (`... on Issue` inside a
//! `Node` selection uses `Issue`'s fields). `@skip` and `@include` are treated as included: the
//! analysis prices the most the operation can do.
//!
//! The 100-row grid page (a project, its custom fields and a page of 100 issues with their
//! cells) costs 4,245 and nests 7 levels deep.
//!
//! The code: [`count_tokens`] in `tokens.rs`, the schema's [`TypeMap`] in `types.rs`, the walk
//! of the expanded operation in `walk.rs`, the reading of argument values in `shape.rs`, and
//! the checks of input values against their types ([`check_operation`], [`check_variables`]) in
//! `inputs.rs`.
//!
//! [`DEFAULT_PAGE_SIZE`]: crate::paging::DEFAULT_PAGE_SIZE
//! [`MAX_PAGE_SIZE`]: crate::paging::MAX_PAGE_SIZE
//! [`MAX_NODES`]: crate::graphql::MAX_NODES

use async_graphql::parser::types::{ExecutableDocument, OperationDefinition};
use async_graphql::Variables;

mod inputs;
mod shape;
mod tokens;
mod types;
mod walk;

pub use inputs::{check_operation, check_variables, Checked, InputRefusal};
pub use tokens::{check_nesting, count_tokens, MAX_NESTING};
pub use types::{FieldInfo, InputInfo, InputKind, TypeMap};
pub use walk::{FILTERED_LIST_COST, FILTER_ARGUMENT, PAGE_SIZE_ARGUMENTS};

/// The multiplier of a list field that is neither a connection, nor a connection's page, nor
/// an `ids` lookup: `Project.customFields` and `Issue.fieldValues`. Their length is bounded by
/// the data (at most 200 custom fields per project) and they are loaded with their parent, so
/// they cost no extra reads; 10 stands for a typical grid's columns, so that asking for them in
/// every row of a page still weighs more than asking for them once.
pub const NOMINAL_LIST_SIZE: u64 = 10;

/// The most a request may ask for, checked before the operation is validated or executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    /// The largest estimated cost (see the module's cost model).
    pub max_cost: u64,
    /// The deepest field nesting; root fields are at depth 1.
    pub max_depth: usize,
    /// The most fields with an alias, counted in the expanded query.
    pub max_aliases: usize,
    /// The most fields selected at the root, counted in the expanded query.
    pub max_root_fields: usize,
    /// The most directive uses, counted in the expanded query.
    pub max_directives: usize,
    /// The most lexical tokens in the query text, checked before parsing.
    pub max_tokens: usize,
}

impl Default for QueryLimits {
    /// Limits sized to the grid screen, the heaviest honest client of this API:
    ///
    /// - `max_cost` 10,000: the 100-row grid page costs 4,245, so two of them fit in one
    ///   request, while nesting one 100-row page inside another (each issue's project's 100
    ///   issues) costs over 20,000 and is refused.
    /// - `max_depth` 15: the grid page nests 7 levels; the deepest useful path (tenant →
    ///   projects → edges → node → issues → edges → node → fieldValues → field → id) nests 10;
    ///   the introspection queries GraphiQL 3 and GraphQL Playground send when they load nest
    ///   15 and 13 (type references unwrapped seven times), and the explorers need them. Depth
    ///   costs little by itself here, since the cost limit prices every level's fan-out. The
    ///   schema's own depth limit (16) stays as a backstop behind this one.
    /// - `max_aliases` 30: a grid aliases one `fieldValue(fieldId:)` per visible column, and 30
    ///   columns fill a wide screen; more aliases only serve fanning one expensive field out
    ///   (1,000 copies of a project's page of issues).
    /// - `max_root_fields` 20: root fields fetch single objects; fetching many goes through one
    ///   `nodes(ids:)` call (up to 100 ids, batched), so 20 covers a dashboard of lookups.
    /// - `max_directives` 50: enough for an `@include` on every column of a wide grid, while
    ///   directive floods (thousands of `@skip` on one field) are refused before every one of
    ///   them is validated and evaluated.
    /// - `max_tokens` 5,000: the grid page is 59 tokens and a `nodes` call with 100 literal ids
    ///   about 110; the limit bounds the parser's work and the document's size (and so the
    ///   analysis's) before anything else runs.
    fn default() -> Self {
        QueryLimits {
            max_cost: 10_000,
            max_depth: 15,
            max_aliases: 30,
            max_root_fields: 20,
            max_directives: 50,
            max_tokens: 5_000,
        }
    }
}

impl QueryLimits {
    /// Refuses an analysed operation that is over any limit. The structural limits are checked
    /// before the cost, since they name the exact thing to change.
    pub fn check(&self, analysis: &Analysis) -> Result<(), Refusal> {
        if analysis.depth > self.max_depth {
            return Err(Refusal::TooDeep {
                depth: analysis.depth,
                max: self.max_depth,
            });
        }
        if analysis.aliases > self.max_aliases {
            return Err(Refusal::TooManyAliases {
                count: analysis.aliases,
                max: self.max_aliases,
            });
        }
        if analysis.root_fields > self.max_root_fields {
            return Err(Refusal::TooManyRootFields {
                count: analysis.root_fields,
                max: self.max_root_fields,
            });
        }
        if analysis.directives > self.max_directives {
            return Err(Refusal::TooManyDirectives {
                count: analysis.directives,
                max: self.max_directives,
            });
        }
        if analysis.cost > self.max_cost {
            return Err(Refusal::TooCostly {
                cost: analysis.cost,
                max: self.max_cost,
            });
        }
        Ok(())
    }
}

/// What the analysis measured of the operation, every count taken in the expanded query
/// (fragments spread, inline fragments flattened). Counts too large for their type saturate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The estimated cost (see the module's cost model).
    pub cost: u64,
    /// The deepest field nesting; root fields are at depth 1, fragments add no depth.
    pub depth: usize,
    /// Fields selected, `__typename` included: the floor of the cost.
    pub fields: usize,
    /// Fields with an alias.
    pub aliases: usize,
    /// Fields selected at the root.
    pub root_fields: usize,
    /// Directive uses: on the operation, its variables, fields, spreads and fragments.
    pub directives: usize,
}

/// Why a request was refused before execution. The messages go to clients as they are: they
/// say what is wrong and what to change, and carry nothing of the server's internals.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the query is longer than {max} tokens; split it into several requests")]
    TooManyTokens { max: usize },
    #[error("the query nests brackets more than {max} deep")]
    TooDeeplyNested { max: usize },
    #[error(
        "the query's estimated cost is {cost}, over the limit of {max}; ask for smaller pages \
         (`first`/`last`), fewer `ids`, or fewer nested lists"
    )]
    TooCostly { cost: u64, max: u64 },
    #[error("the query nests fields {depth} levels deep, over the limit of {max}")]
    TooDeep { depth: usize, max: usize },
    #[error(
        "the query uses {count} aliases once its fragments are expanded, over the limit of {max}"
    )]
    TooManyAliases { count: usize, max: usize },
    #[error(
        "the query selects {count} root fields once its fragments are expanded, over the limit \
         of {max}; fetch many objects with one `nodes(ids:)` call"
    )]
    TooManyRootFields { count: usize, max: usize },
    #[error(
        "the query uses {count} directives once its fragments are expanded, over the limit of \
         {max}"
    )]
    TooManyDirectives { count: usize, max: usize },
    #[error("fragment `{name}` spreads itself, directly or through other fragments")]
    FragmentCycle { name: String },
    #[error("fragment `{name}` is spread but not defined in the document")]
    UnknownFragment { name: String },
    #[error("the document has no operation named `{name}`")]
    UnknownOperation { name: String },
    #[error("the document has several operations; name the one to run in `operationName`")]
    AmbiguousOperation,
    #[error("the document has no operation to run")]
    NoOperation,
}

/// Measures the operation `operation_name` of `doc` (or its only operation) as it would execute,
/// with `variables` for the page sizes and id lists, and refuses it if it is over `limits`.
/// Pure and bounded: the work is linear in the document's size, whatever its fragments expand to.
pub fn analyze(
    doc: &ExecutableDocument,
    operation_name: Option<&str>,
    variables: &Variables,
    types: &TypeMap,
    limits: &QueryLimits,
) -> Result<Analysis, Refusal> {
    let operation = select_operation(doc, operation_name)?;
    let analysis = walk::Analyzer::new(doc, operation, variables, types).run()?;
    limits.check(&analysis)?;
    Ok(analysis)
}

/// The name of the operation a request runs: the one asked for, or else the document's only
/// operation's, if it has one (for the request's span).
pub fn operation_name<'a>(doc: &'a ExecutableDocument, asked: Option<&'a str>) -> Option<&'a str> {
    use async_graphql::parser::types::DocumentOperations;
    asked.or_else(|| match &doc.operations {
        DocumentOperations::Multiple(operations) => operations.keys().next().map(|n| n.as_str()),
        DocumentOperations::Single(_) => None,
    })
}

/// The operation a request runs, chosen the way async-graphql chooses it, so the analysis
/// measures (and the scope check and GET's mutation check judge) the operation that will
/// execute.
pub fn select_operation<'a>(
    doc: &'a ExecutableDocument,
    operation_name: Option<&str>,
) -> Result<&'a OperationDefinition, Refusal> {
    use async_graphql::parser::types::DocumentOperations;
    match (&doc.operations, operation_name) {
        (DocumentOperations::Single(operation), None) => Ok(&operation.node),
        (DocumentOperations::Single(_), Some(name)) => Err(Refusal::UnknownOperation {
            name: name.to_owned(),
        }),
        (DocumentOperations::Multiple(operations), Some(name)) => operations
            .get(name)
            .map(|operation| &operation.node)
            .ok_or_else(|| Refusal::UnknownOperation {
                name: name.to_owned(),
            }),
        (DocumentOperations::Multiple(operations), None) => {
            let mut all = operations.values();
            match (all.next(), all.next()) {
                (Some(operation), None) => Ok(&operation.node),
                (Some(_), Some(_)) => Err(Refusal::AmbiguousOperation),
                (None, _) => Err(Refusal::NoOperation),
            }
        }
    }
}

mod tests;
