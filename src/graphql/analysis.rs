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

use std::collections::HashMap;

use async_graphql::parser::types::{
    BaseType, ExecutableDocument, Field, FieldDefinition, FragmentDefinition, OperationDefinition,
    OperationType, Selection, SelectionSet, Type, TypeKind, TypeSystemDefinition,
};
use async_graphql::parser::Positioned;
// The request's variables are constant values, which async-graphql exports as `Value`.
use async_graphql::{Value as ConstValue, Variables};
use serde::ser::{Impossible, Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::graphql::MAX_NODES;
use crate::paging::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};

/// The multiplier of a list field that is neither a connection, nor a connection's page, nor
/// an `ids` lookup: `Project.customFields` and `Issue.fieldValues`. Their length is bounded by
/// the data (at most 200 custom fields per project) and they are loaded with their parent, so
/// they cost no extra reads; 10 stands for a typical grid's columns, so that asking for them in
/// every row of a page still weighs more than asking for them once.
pub const NOMINAL_LIST_SIZE: u64 = 10;

/// The suffix of the connection types, whose fields page with `first` and `last`.
const CONNECTION_SUFFIX: &str = "Connection";

/// The argument that makes a list field a lookup by id (`Query.nodes(ids:)`).
const IDS_ARGUMENT: &str = "ids";

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

/// What the analysis needs to know of one field of an object or interface type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInfo {
    /// The named type the field returns, list and non-null wrappers removed.
    pub type_name: String,
    /// Whether the field returns a list (at its outermost level).
    pub is_list: bool,
    /// The names of the field's arguments.
    pub arguments: Vec<String>,
}

/// The fields of every object and interface type of a schema, and its root types: what the
/// cost model needs to resolve a field's type and multiplier. Built once at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMap {
    types: HashMap<String, HashMap<String, FieldInfo>>,
    query: String,
    mutation: String,
    subscription: String,
}

impl TypeMap {
    /// Reads a schema's SDL: for this service [`crate::graphql::sdl`], which async-graphql
    /// generates and which therefore always parses (a unit test pins that it does).
    ///
    /// SDL that does not parse gives [`TypeMap::default`], a map without types, like
    /// [`super::ResponseOrder`] does: every field then costs 1 and no list multiplies, so the
    /// depth, alias, root-field and directive limits still hold but the cost no longer sees
    /// pages. That is logged as an error; [`TypeMap::try_from_sdl`] returns it instead.
    pub fn from_sdl(sdl: &str) -> TypeMap {
        TypeMap::try_from_sdl(sdl).unwrap_or_else(|error| {
            tracing::error!(%error, "the schema SDL does not parse; queries are priced without types");
            TypeMap::default()
        })
    }

    /// Reads a schema's SDL, or says why it does not parse. Type extensions add their fields to
    /// the type; root types default to `Query`, `Mutation` and `Subscription` unless a `schema`
    /// definition names others.
    pub fn try_from_sdl(sdl: &str) -> Result<TypeMap, async_graphql::parser::Error> {
        let document = async_graphql::parser::parse_schema(sdl)?;
        let mut map = TypeMap::default();
        for definition in &document.definitions {
            match definition {
                TypeSystemDefinition::Schema(schema) => {
                    let schema = &schema.node;
                    if let Some(name) = &schema.query {
                        map.query = name.node.to_string();
                    }
                    if let Some(name) = &schema.mutation {
                        map.mutation = name.node.to_string();
                    }
                    if let Some(name) = &schema.subscription {
                        map.subscription = name.node.to_string();
                    }
                }
                TypeSystemDefinition::Type(definition) => {
                    let definition = &definition.node;
                    let fields = match &definition.kind {
                        TypeKind::Object(object) => &object.fields,
                        TypeKind::Interface(interface) => &interface.fields,
                        _ => continue,
                    };
                    let entry = map
                        .types
                        .entry(definition.name.node.to_string())
                        .or_default();
                    for field in fields {
                        entry.insert(field.node.name.node.to_string(), FieldInfo::of(&field.node));
                    }
                }
                TypeSystemDefinition::Directive(_) => {}
            }
        }
        Ok(map)
    }

    /// The field `field` of the object or interface type `type_name`, if the schema has it.
    pub fn field(&self, type_name: &str, field: &str) -> Option<&FieldInfo> {
        self.types.get(type_name)?.get(field)
    }

    /// The name of the root type of an operation type.
    pub fn root_type(&self, operation: OperationType) -> &str {
        match operation {
            OperationType::Query => &self.query,
            OperationType::Mutation => &self.mutation,
            OperationType::Subscription => &self.subscription,
        }
    }
}

impl Default for TypeMap {
    /// A map without types, with the default root type names.
    fn default() -> Self {
        TypeMap {
            types: HashMap::new(),
            query: "Query".to_owned(),
            mutation: "Mutation".to_owned(),
            subscription: "Subscription".to_owned(),
        }
    }
}

impl FieldInfo {
    fn of(field: &FieldDefinition) -> FieldInfo {
        let ty = &field.ty.node;
        FieldInfo {
            type_name: named_type(ty).to_owned(),
            is_list: matches!(ty.base, BaseType::List(_)),
            arguments: field
                .arguments
                .iter()
                .map(|argument| argument.node.name.node.to_string())
                .collect(),
        }
    }
}

/// The named type inside any list wrappers. A loop rather than recursion, though SDL nesting is
/// shallow, so no input shape can grow the stack.
fn named_type(mut ty: &Type) -> &str {
    loop {
        match &ty.base {
            BaseType::Named(name) => return name.as_str(),
            BaseType::List(inner) => ty = inner,
        }
    }
}

/// Counts the GraphQL lexical tokens of `query`, refusing it as soon as there are more than
/// `max`: the scan stops at the first token past the limit, however many follow it.
///
/// Tokens are the punctuators (`! $ & ( ) ... : = @ [ ] { | }`), names, numbers and strings
/// (block strings included); whitespace, commas, comments and the byte order mark are skipped.
/// The text has not been parsed yet, so anything goes: a character no token starts with counts
/// as a token of its own (the parser refuses it later), and an unterminated string counts as one
/// token that ends the scan.
pub fn count_tokens(query: &str, max: usize) -> Result<usize, Refusal> {
    let bytes = query.as_bytes();
    let mut pos = 0;
    let mut count = 0usize;
    while let Some(&byte) = bytes.get(pos) {
        match byte {
            b' ' | b'\t' | b'\n' | b'\r' | b',' => {
                pos += 1;
                continue;
            }
            b'#' => {
                pos = scan_while(bytes, pos + 1, |b| b != b'\n' && b != b'\r');
                continue;
            }
            0xEF if bytes.get(pos + 1..pos + 3) == Some(&[0xBB, 0xBF][..]) => {
                pos += 3;
                continue;
            }
            _ => {}
        }
        count += 1;
        if count > max {
            return Err(Refusal::TooManyTokens { max });
        }
        match token_end(bytes, pos) {
            Some(end) => pos = end,
            None => break,
        }
    }
    Ok(count)
}

/// Where the token starting at `start` ends, or `None` when it is a string that never does.
fn token_end(bytes: &[u8], start: usize) -> Option<usize> {
    let at = |i: usize| bytes.get(i).copied();
    let end = match at(start)? {
        b'"' => return string_end(bytes, start),
        b'.' if at(start + 1) == Some(b'.') && at(start + 2) == Some(b'.') => start + 3,
        b'_' | b'A'..=b'Z' | b'a'..=b'z' => scan_while(bytes, start + 1, is_name_byte),
        b'-' | b'0'..=b'9' => number_end(bytes, start),
        // A character outside ASCII is one token, however many bytes UTF-8 spends on it.
        byte if byte >= 0x80 => scan_while(bytes, start + 1, |b| (0x80..0xC0).contains(&b)),
        // The punctuators, and any other ASCII character as a token of its own.
        _ => start + 1,
    };
    Some(end)
}

fn is_name_byte(byte: u8) -> bool {
    byte == b'_' || byte.is_ascii_alphanumeric()
}

/// The first index from `start` whose byte does not satisfy `keep`, or the text's end.
fn scan_while(bytes: &[u8], start: usize, keep: impl Fn(u8) -> bool) -> usize {
    let mut i = start;
    while bytes.get(i).is_some_and(|&b| keep(b)) {
        i += 1;
    }
    i
}

/// The end of an int or float value: `-?digits(.digits)?([eE][+-]?digits)?`. A lone `-` is a
/// token of one byte, as the parser will refuse it anyway.
fn number_end(bytes: &[u8], start: usize) -> usize {
    let at = |i: usize| bytes.get(i).copied();
    let digit = |i: usize| at(i).is_some_and(|b| b.is_ascii_digit());
    let mut i = start;
    if at(i) == Some(b'-') {
        i += 1;
    }
    i = scan_while(bytes, i, |b| b.is_ascii_digit());
    if at(i) == Some(b'.') && digit(i + 1) {
        i = scan_while(bytes, i + 1, |b| b.is_ascii_digit());
    }
    if matches!(at(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(at(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digit(j) {
            i = scan_while(bytes, j, |b| b.is_ascii_digit());
        }
    }
    i.max(start + 1)
}

/// The end of the string starting at `start` (a `"` or `"""`), or `None` if it is unterminated.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    const TRIPLE: &[u8] = b"\"\"\"";
    if bytes.get(start..start + 3) == Some(TRIPLE) {
        // In a block string only `\"""` is an escape; every other backslash is literal.
        let mut i = start + 3;
        loop {
            match bytes.get(i)? {
                b'\\' if bytes.get(i + 1..i + 4) == Some(TRIPLE) => i += 4,
                b'"' if bytes.get(i..i + 3) == Some(TRIPLE) => return Some(i + 3),
                _ => i += 1,
            }
        }
    }
    let mut i = start + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
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
    let analysis = Analyzer::new(doc, operation, variables, types).run()?;
    limits.check(&analysis)?;
    Ok(analysis)
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

/// What a selection set contributes to the expanded query, all counts saturating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Totals {
    cost: u64,
    /// The deepest field nesting below (and including) this set's own fields.
    depth: u64,
    /// Fields anywhere in the set.
    fields: u64,
    /// Fields at the set's own level: a fragment's contribution to the root field count.
    top_fields: u64,
    aliases: u64,
    directives: u64,
}

impl Totals {
    /// A field without a selection set.
    fn leaf(cost: u64) -> Totals {
        Totals {
            cost,
            depth: 1,
            fields: 1,
            top_fields: 1,
            aliases: 0,
            directives: 0,
        }
    }

    /// Adds the totals of selections that sit beside this set's (at the same level).
    fn merge(&mut self, other: &Totals) {
        self.cost = self.cost.saturating_add(other.cost);
        self.depth = self.depth.max(other.depth);
        self.fields = self.fields.saturating_add(other.fields);
        self.top_fields = self.top_fields.saturating_add(other.top_fields);
        self.aliases = self.aliases.saturating_add(other.aliases);
        self.directives = self.directives.saturating_add(other.directives);
    }

    fn add_directives(&mut self, count: usize) {
        self.directives = self.directives.saturating_add(to_u64(count));
    }

    /// The totals of a field whose selection set totals `self`, seen from the field's level.
    /// The field's own alias and directives are counted where it is met, not here.
    fn under_field(&self, base: u64, multiplier: u64) -> Totals {
        Totals {
            cost: base.saturating_add(multiplier.saturating_mul(self.cost)),
            depth: self.depth.saturating_add(1),
            fields: self.fields.saturating_add(1),
            top_fields: 1,
            aliases: self.aliases,
            directives: self.directives,
        }
    }
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// A fragment's state in the depth-first ordering: `Open` while its dependencies are being
/// measured (meeting it again then means a cycle), `Done` once its summary is known.
enum Mark {
    Open,
    Done(Totals),
}

/// A fragment whose spreads are being ordered, with the next of them to look at.
struct Pending<'a> {
    name: &'a str,
    definition: &'a FragmentDefinition,
    spreads: Vec<&'a str>,
    next: usize,
}

/// A selection set being measured on the explicit stack.
struct Frame<'a> {
    items: std::slice::Iter<'a, Positioned<Selection>>,
    /// The type the set's fields are resolved on; `None` when the schema does not know it.
    ty: Option<&'a str>,
    totals: Totals,
    /// For a field's selection set: the field's own cost and list multiplier. `None` for an
    /// inline fragment or the root set, whose totals merge into the enclosing level as they are.
    field: Option<(u64, u64)>,
}

impl<'a> Frame<'a> {
    fn new(set: &'a SelectionSet, ty: Option<&'a str>, field: Option<(u64, u64)>) -> Frame<'a> {
        Frame {
            items: set.items.iter(),
            ty,
            totals: Totals::default(),
            field,
        }
    }

    /// The frame's totals as the enclosing level sees them.
    fn finish(&self) -> Totals {
        match self.field {
            Some((base, multiplier)) => self.totals.under_field(base, multiplier),
            None => self.totals,
        }
    }
}

/// One operation's measurement.
struct Analyzer<'a> {
    doc: &'a ExecutableDocument,
    operation: &'a OperationDefinition,
    variables: &'a Variables,
    /// The operation's variable defaults, looked up by name in constant time, so a document
    /// with many variables and many paged fields stays linear.
    defaults: HashMap<&'a str, &'a ConstValue>,
    types: &'a TypeMap,
    fragments: HashMap<&'a str, Mark>,
    /// Fragment definitions measured; at most one per fragment, which is the point.
    fragments_measured: usize,
    /// Selections the ordering pass found in the operation and the fragments it reaches.
    selections_found: u64,
    /// Selections the measuring pass visited: equal to `selections_found` because no spread is
    /// ever walked twice.
    selections_measured: u64,
}

impl<'a> Analyzer<'a> {
    fn new(
        doc: &'a ExecutableDocument,
        operation: &'a OperationDefinition,
        variables: &'a Variables,
        types: &'a TypeMap,
    ) -> Analyzer<'a> {
        let defaults = operation
            .variable_definitions
            .iter()
            .filter_map(|definition| {
                let definition = &definition.node;
                let value = definition.default_value.as_ref()?;
                Some((definition.name.node.as_str(), &value.node))
            })
            .collect();
        Analyzer {
            doc,
            operation,
            variables,
            defaults,
            types,
            fragments: HashMap::new(),
            fragments_measured: 0,
            selections_found: 0,
            selections_measured: 0,
        }
    }

    fn run(&mut self) -> Result<Analysis, Refusal> {
        let operation = self.operation;
        let root = &operation.selection_set.node;
        self.order_fragments(root)?;
        let root_type = self.types.root_type(operation.ty);
        let mut totals = self.measure(root, Some(root_type))?;
        totals.add_directives(operation.directives.len());
        for variable in &operation.variable_definitions {
            totals.add_directives(variable.node.directives.len());
        }
        debug_assert!(
            self.fragments_measured <= self.doc.fragments.len(),
            "a fragment was measured twice"
        );
        debug_assert_eq!(
            self.selections_measured, self.selections_found,
            "a selection was walked twice"
        );
        Ok(Analysis {
            cost: totals.cost.max(totals.fields),
            depth: to_usize(totals.depth),
            fields: to_usize(totals.fields),
            aliases: to_usize(totals.aliases),
            root_fields: to_usize(totals.top_fields),
            directives: to_usize(totals.directives),
        })
    }

    /// Measures every fragment the root set reaches, each after the fragments it spreads, by a
    /// depth-first walk on an explicit stack. Refuses a spread of an undefined fragment, and a
    /// fragment met again while its own spreads are still being measured (a cycle).
    fn order_fragments(&mut self, root: &'a SelectionSet) -> Result<(), Refusal> {
        let mut stack: Vec<Pending<'a>> = Vec::new();
        for name in self.spreads_in(root) {
            self.open(name, &mut stack)?;
            while let Some(top) = stack.last_mut() {
                if let Some(&next) = top.spreads.get(top.next) {
                    top.next += 1;
                    self.open(next, &mut stack)?;
                    continue;
                }
                let Some(done) = stack.pop() else { break };
                let definition = done.definition;
                let condition = definition.type_condition.node.on.node.as_str();
                let mut totals = self.measure(&definition.selection_set.node, Some(condition))?;
                totals.add_directives(definition.directives.len());
                self.fragments_measured += 1;
                self.fragments.insert(done.name, Mark::Done(totals));
            }
        }
        Ok(())
    }

    /// Pushes the fragment `name` on the ordering stack unless it is already measured.
    fn open(&mut self, name: &'a str, stack: &mut Vec<Pending<'a>>) -> Result<(), Refusal> {
        match self.fragments.get(name) {
            Some(Mark::Done(_)) => Ok(()),
            Some(Mark::Open) => Err(Refusal::FragmentCycle {
                name: name.to_owned(),
            }),
            None => {
                let doc = self.doc;
                let definition = &doc
                    .fragments
                    .get(name)
                    .ok_or_else(|| Refusal::UnknownFragment {
                        name: name.to_owned(),
                    })?
                    .node;
                self.fragments.insert(name, Mark::Open);
                let spreads = self.spreads_in(&definition.selection_set.node);
                stack.push(Pending {
                    name,
                    definition,
                    spreads,
                    next: 0,
                });
                Ok(())
            }
        }
    }

    /// The names of the fragments spread anywhere in `set` (not inside those fragments).
    fn spreads_in(&mut self, set: &'a SelectionSet) -> Vec<&'a str> {
        let mut spreads = Vec::new();
        let mut sets = vec![set];
        while let Some(set) = sets.pop() {
            self.selections_found = self
                .selections_found
                .saturating_add(to_u64(set.items.len()));
            for selection in &set.items {
                match &selection.node {
                    Selection::Field(field) => sets.push(&field.node.selection_set.node),
                    Selection::InlineFragment(inline) => sets.push(&inline.node.selection_set.node),
                    Selection::FragmentSpread(spread) => {
                        spreads.push(spread.node.fragment_name.node.as_str())
                    }
                }
            }
        }
        spreads
    }

    /// The totals of `set` resolved on `ty`, using the summaries of the fragments it spreads,
    /// which [`Self::order_fragments`] measured first. Nested selection sets go on an explicit
    /// stack of frames; a finished frame folds into the one below it.
    fn measure(&mut self, set: &'a SelectionSet, ty: Option<&'a str>) -> Result<Totals, Refusal> {
        let types = self.types;
        let mut stack = vec![Frame::new(set, ty, None)];
        while let Some(frame) = stack.last_mut() {
            let Some(selection) = frame.items.next() else {
                let finished = frame.finish();
                stack.pop();
                match stack.last_mut() {
                    Some(parent) => parent.totals.merge(&finished),
                    None => return Ok(finished),
                }
                continue;
            };
            self.selections_measured = self.selections_measured.saturating_add(1);
            match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    frame.totals.add_directives(field.directives.len());
                    if field.alias.is_some() {
                        frame.totals.aliases = frame.totals.aliases.saturating_add(1);
                    }
                    let name = field.name.node.as_str();
                    // `__typename` costs 1 like any field: a spread bomb of it inside a list is
                    // paid per object, not once (a floor over the expanded field count alone
                    // missed the list multipliers).
                    let base = 1u64;
                    let parent = frame.ty;
                    let info = parent.and_then(|parent| types.field(parent, name));
                    let children = &field.selection_set.node;
                    if children.items.is_empty() {
                        frame.totals.merge(&Totals::leaf(base));
                    } else {
                        let multiplier = self.multiplier(parent, info, field);
                        let child_type = info.map(|info| info.type_name.as_str());
                        stack.push(Frame::new(children, child_type, Some((base, multiplier))));
                    }
                }
                Selection::InlineFragment(inline) => {
                    let inline = &inline.node;
                    frame.totals.add_directives(inline.directives.len());
                    let ty = match &inline.type_condition {
                        Some(condition) => Some(condition.node.on.node.as_str()),
                        None => frame.ty,
                    };
                    stack.push(Frame::new(&inline.selection_set.node, ty, None));
                }
                Selection::FragmentSpread(spread) => {
                    let spread = &spread.node;
                    frame.totals.add_directives(spread.directives.len());
                    let name = spread.fragment_name.node.as_str();
                    match self.fragments.get(name) {
                        Some(Mark::Done(summary)) => frame.totals.merge(summary),
                        // The ordering measured every spread fragment first, so these arms only
                        // guard against a caller that skipped it.
                        Some(Mark::Open) => {
                            return Err(Refusal::FragmentCycle {
                                name: name.to_owned(),
                            })
                        }
                        None => {
                            return Err(Refusal::UnknownFragment {
                                name: name.to_owned(),
                            })
                        }
                    }
                }
            }
        }
        Ok(Totals::default())
    }

    /// How many times a field's selection set is executed per execution of the field.
    fn multiplier(&self, parent: Option<&str>, info: Option<&FieldInfo>, field: &Field) -> u64 {
        let Some(info) = info else { return 1 };
        if info.type_name.ends_with(CONNECTION_SUFFIX) {
            return self.page_size(field);
        }
        if !info.is_list || parent.is_some_and(|parent| parent.ends_with(CONNECTION_SUFFIX)) {
            return 1;
        }
        if info
            .arguments
            .iter()
            .any(|argument| argument == IDS_ARGUMENT)
        {
            return self.ids_len(field);
        }
        NOMINAL_LIST_SIZE
    }

    /// A connection's page size: the larger of `first` and `last`, or the default page size
    /// when neither is given.
    fn page_size(&self, field: &Field) -> u64 {
        let first = self.page_argument(field, "first");
        let last = self.page_argument(field, "last");
        first.max(last).unwrap_or_else(|| to_u64(DEFAULT_PAGE_SIZE))
    }

    /// One page-size argument: `None` when absent or null (the resolver then uses its default),
    /// its value when from 1 to the largest page, and the largest page otherwise.
    fn page_argument(&self, field: &Field, name: &str) -> Option<u64> {
        let max = to_u64(MAX_PAGE_SIZE);
        match self.argument(field, name) {
            Shape::Absent | Shape::Null => None,
            Shape::Int(n) => Some(
                u64::try_from(n)
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .unwrap_or(max),
            ),
            Shape::List(_) | Shape::Text(_) | Shape::Variable(_) | Shape::Other => Some(max),
        }
    }

    /// The number of ids an `ids` lookup asks for.
    fn ids_len(&self, field: &Field) -> u64 {
        match self.argument(field, IDS_ARGUMENT) {
            Shape::List(len) => to_u64(len),
            Shape::Absent | Shape::Null | Shape::Variable(_) => to_u64(MAX_NODES),
            // GraphQL coerces a single value to a list of one.
            Shape::Int(_) | Shape::Text(_) | Shape::Other => 1,
        }
    }

    /// The outermost shape of a field's argument, variables replaced by their values.
    fn argument(&self, field: &Field, name: &str) -> Shape {
        let Some(argument) = field.get_argument(name) else {
            return Shape::Absent;
        };
        match Shape::of(&argument.node) {
            Shape::Variable(variable) => match self.variable(&variable) {
                Some(value) => Shape::of(value),
                // A variable neither given nor defaulted leaves the argument out.
                None => Shape::Absent,
            },
            shape => shape,
        }
    }

    /// A variable's value: the request's, else the operation's default.
    fn variable(&self, name: &str) -> Option<&'a ConstValue> {
        self.variables
            .get(name)
            .or_else(|| self.defaults.get(name).copied())
    }
}

/// The outermost layer of an argument value, all the cost model reads of it.
///
/// The parser's value type (with variables) is not exported by async-graphql, so it cannot be
/// matched on; it does implement `Serialize`, and [`ShapeProbe`] reads a value through that
/// without copying it or descending into its elements, so even a huge or deeply nested literal
/// costs one step per element of its outer list and no stack.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    /// The argument is not given (or is a variable neither given nor defaulted).
    Absent,
    Null,
    Int(i64),
    List(usize),
    Text(String),
    /// A variable, by name; [`Analyzer::argument`] replaces it by its value.
    Variable(String),
    /// Anything else: a float, a boolean, an object, an enum value's serialization, ...
    Other,
}

impl Shape {
    fn of(value: &impl Serialize) -> Shape {
        value.serialize(ShapeProbe).unwrap_or(Shape::Other)
    }
}

/// Why a value has no [`Shape`]: only for serde's plumbing, never shown to anyone.
#[derive(Debug)]
struct NoShape;

impl std::fmt::Display for NoShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the value has no shape the cost model reads")
    }
}

impl std::error::Error for NoShape {}

impl serde::ser::Error for NoShape {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        NoShape
    }
}

/// The serializer behind [`Shape::of`]. The parser's values serialize a variable as the map
/// `{"$var": name}`, which no object literal can spell (`$` starts no GraphQL name); numbers
/// serialize as `i64`, `u64` or `f64`.
struct ShapeProbe;

/// Counts a list's elements without serializing them.
struct ListProbe {
    len: usize,
}

/// Looks for the `$var` key of a serialized variable, ignoring every other entry.
struct MapProbe {
    variable_key: bool,
    variable: Option<String>,
}

const VARIABLE_KEY: &str = "$var";

impl Serializer for ShapeProbe {
    type Ok = Shape;
    type Error = NoShape;
    type SerializeSeq = ListProbe;
    type SerializeTuple = Impossible<Shape, NoShape>;
    type SerializeTupleStruct = Impossible<Shape, NoShape>;
    type SerializeTupleVariant = Impossible<Shape, NoShape>;
    type SerializeMap = MapProbe;
    type SerializeStruct = Impossible<Shape, NoShape>;
    type SerializeStructVariant = Impossible<Shape, NoShape>;

    fn serialize_bool(self, _: bool) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_i8(self, v: i8) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v))
    }
    fn serialize_u8(self, v: u8) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Shape, NoShape> {
        Ok(Shape::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Shape, NoShape> {
        Ok(i64::try_from(v).map_or(Shape::Other, Shape::Int))
    }
    fn serialize_f32(self, _: f32) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_f64(self, _: f64) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_char(self, v: char) -> Result<Shape, NoShape> {
        Ok(Shape::Text(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Shape, NoShape> {
        Ok(Shape::Text(v.to_owned()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_none(self) -> Result<Shape, NoShape> {
        Ok(Shape::Null)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Shape, NoShape> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Shape, NoShape> {
        Ok(Shape::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Shape, NoShape> {
        Ok(Shape::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Shape, NoShape> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Shape, NoShape> {
        Ok(Shape::Other)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<ListProbe, NoShape> {
        Ok(ListProbe { len: 0 })
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NoShape> {
        Err(NoShape)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NoShape> {
        Err(NoShape)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NoShape> {
        Err(NoShape)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MapProbe, NoShape> {
        Ok(MapProbe {
            variable_key: false,
            variable: None,
        })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NoShape> {
        Err(NoShape)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NoShape> {
        Err(NoShape)
    }
}

impl SerializeSeq for ListProbe {
    type Ok = Shape;
    type Error = NoShape;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, _: &T) -> Result<(), NoShape> {
        self.len = self.len.saturating_add(1);
        Ok(())
    }

    fn end(self) -> Result<Shape, NoShape> {
        Ok(Shape::List(self.len))
    }
}

impl SerializeMap for MapProbe {
    type Ok = Shape;
    type Error = NoShape;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), NoShape> {
        self.variable_key =
            matches!(key.serialize(ShapeProbe)?, Shape::Text(key) if key == VARIABLE_KEY);
        Ok(())
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), NoShape> {
        if self.variable_key {
            if let Shape::Text(name) = value.serialize(ShapeProbe)? {
                self.variable = Some(name);
            }
        }
        Ok(())
    }

    fn end(self) -> Result<Shape, NoShape> {
        Ok(self.variable.map_or(Shape::Other, Shape::Variable))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use async_graphql::parser::parse_query;

    fn types() -> TypeMap {
        TypeMap::try_from_sdl(&crate::graphql::sdl()).expect("the served schema's SDL parses")
    }

    fn run(query: &str) -> Result<Analysis, Refusal> {
        run_with(query, &Variables::default(), &QueryLimits::default())
    }

    fn run_with(
        query: &str,
        variables: &Variables,
        limits: &QueryLimits,
    ) -> Result<Analysis, Refusal> {
        let doc = parse_query(query).expect("test query parses");
        analyze(&doc, None, variables, &types(), limits)
    }

    /// Limits that refuse nothing, to read a document's measurements whatever they are.
    fn unlimited() -> QueryLimits {
        QueryLimits {
            max_cost: u64::MAX,
            max_depth: usize::MAX,
            max_aliases: usize::MAX,
            max_root_fields: usize::MAX,
            max_directives: usize::MAX,
            max_tokens: usize::MAX,
        }
    }

    fn measure(query: &str) -> Analysis {
        run_with(query, &Variables::default(), &unlimited()).expect("measurable")
    }

    fn cost_with(query: &str, variables: serde_json::Value) -> u64 {
        run_with(query, &Variables::from_json(variables), &unlimited())
            .expect("measurable")
            .cost
    }

    /// The measurement and the analyzer's work counters, for the tests that prove each
    /// fragment and selection is walked once.
    fn measure_counting(doc: &ExecutableDocument) -> (Result<Analysis, Refusal>, usize, u64, u64) {
        let types = types();
        let variables = Variables::default();
        let operation = select_operation(doc, None).expect("one operation");
        let mut analyzer = Analyzer::new(doc, operation, &variables, &types);
        let result = analyzer.run();
        (
            result,
            analyzer.fragments_measured,
            analyzer.selections_found,
            analyzer.selections_measured,
        )
    }

    const GRID_PAGE: &str = r#"{ project(id: "p") { id name customFields { id name type position }
        issues(first: 100, orderBy: {field: NUM}) {
            edges { cursor node { id num name state version fieldValues { value field { id } } } }
            pageInfo { hasNextPage endCursor } } } }"#;

    /// `F0` selects `leaf`; every later fragment spreads the previous one twice; the operation
    /// spreads the last one inside `root` (or at the root when `root` is empty).
    fn doubling_bomb(levels: usize, on: &str, root: &str, leaf: &str) -> String {
        let spread = format!("...F{levels}");
        let body = if root.is_empty() {
            spread
        } else {
            format!("{root} {{ {spread} }}")
        };
        let mut query = format!("{{ {body} }} fragment F0 on {on} {{ {leaf} }}");
        for i in 1..=levels {
            let j = i - 1;
            query.push_str(&format!(" fragment F{i} on {on} {{ ...F{j} ...F{j} }}"));
        }
        query
    }

    #[test]
    fn the_type_map_reads_the_served_schema() {
        let types = types();
        let issues = types.field("Project", "issues").expect("Project.issues");
        assert_eq!(issues.type_name, "IssueConnection");
        assert!(!issues.is_list);
        assert!(issues.arguments.iter().any(|a| a == "first"));
        let nodes = types.field("Query", "nodes").expect("Query.nodes");
        assert_eq!(nodes.type_name, "Node");
        assert!(nodes.is_list);
        assert_eq!(nodes.arguments, vec!["ids".to_owned()]);
        let page = types.field("IssueConnection", "nodes").expect("page");
        assert_eq!(page.type_name, "Issue");
        assert!(page.is_list);
        assert_eq!(
            types.field("Node", "id").map(|f| f.type_name.as_str()),
            Some("ID")
        );
        assert_eq!(types.root_type(OperationType::Query), "Query");
        assert_eq!(types.root_type(OperationType::Mutation), "Mutation");
        assert_eq!(types.root_type(OperationType::Subscription), "Subscription");
        assert!(TypeMap::try_from_sdl("type {").is_err());
        let blind = TypeMap::from_sdl("type {");
        assert_eq!(blind, TypeMap::default());
        assert!(blind.field("Project", "issues").is_none());
        assert_eq!(blind.root_type(OperationType::Query), "Query");
    }

    #[test]
    fn the_type_map_follows_schema_definitions_and_extensions() {
        let types = TypeMap::from_sdl(
            "schema { query: Root } type Root { a: Int } extend type Root { b: [Int] }",
        );
        assert_eq!(types.root_type(OperationType::Query), "Root");
        assert!(types.field("Root", "a").is_some());
        assert!(types.field("Root", "b").is_some_and(|b| b.is_list));
    }

    #[test]
    fn the_grid_page_passes_the_defaults_at_its_exact_cost() {
        let analysis = run(GRID_PAGE).expect("the grid page is served");
        // project 1 + id 1 + name 1 + customFields (1 + 10 × 4 = 41)
        // + issues (1 + 100 × (edges (1 + cursor 1 + node (1 + 5 scalars
        //   + fieldValues (1 + 10 × (value 1 + field (1 + id 1))))) + pageInfo (1 + 2)))
        // = 4 + 41 + 1 + 100 × 42 = 4,245.
        assert_eq!(
            analysis,
            Analysis {
                cost: 4_245,
                depth: 7,
                fields: 24,
                aliases: 0,
                root_fields: 1,
                directives: 0,
            }
        );
        assert_eq!(count_tokens(GRID_PAGE, usize::MAX), Ok(59));
    }

    #[test]
    fn nested_hundred_row_pages_are_too_costly() {
        let query = r#"{ project(id: "p") { issues(first: 100) { nodes { project {
            issues(first: 100) { nodes { project { issues(first: 100) { nodes { id } } } } } } } } } }"#;
        assert_eq!(
            run(query),
            Err(Refusal::TooCostly {
                cost: 2_030_302,
                max: 10_000
            })
        );
    }

    #[test]
    fn doubling_bombs_are_refused_measuring_each_fragment_once() {
        for (levels, cost) in [(20, (1u64 << 20) + 1), (60, (1u64 << 60) + 1)] {
            let doc = parse_query(doubling_bomb(levels, "Project", "project(id: \"p\")", "id"))
                .expect("parses");
            let (result, fragments, found, measured) = measure_counting(&doc);
            let analysis = result.expect("measurable");
            assert_eq!(analysis.cost, cost);
            assert_eq!(analysis.depth, 2);
            assert_eq!(fragments, levels + 1, "each fragment measured once");
            // The operation's two selections, one in F0 and two in every other fragment.
            assert_eq!(found, to_u64(2 + 1 + 2 * levels));
            assert_eq!(measured, found, "no spread walked twice");
            assert_eq!(
                QueryLimits::default().check(&analysis),
                Err(Refusal::TooCostly { cost, max: 10_000 })
            );
        }
    }

    #[test]
    fn doubling_bombs_saturate_instead_of_wrapping() {
        let analysis = measure(&doubling_bomb(
            70,
            "Project",
            "project(id: \"p\")",
            "a: id @include(if: true)",
        ));
        assert_eq!(analysis.cost, u64::MAX);
        assert_eq!(analysis.fields, usize::MAX);
        assert_eq!(analysis.aliases, usize::MAX);
        assert_eq!(analysis.directives, usize::MAX);
        let bomb = doubling_bomb(
            40,
            "Project",
            "project(id: \"p\")",
            "issues { nodes { id } }",
        );
        assert!(matches!(run(&bomb), Err(Refusal::TooCostly { .. })));
    }

    #[test]
    fn typename_bombs_cost_at_least_their_field_count() {
        let fields = (1 << 30) + 1;
        assert_eq!(
            run(&doubling_bomb(
                30,
                "Project",
                "project(id: \"p\")",
                "__typename"
            )),
            Err(Refusal::TooCostly {
                cost: fields,
                max: 10_000
            }),
            "`__typename` touches no store, but the executor still walks every copy"
        );
        assert_eq!(measure("{ __typename }").cost, 1);
        assert_eq!(measure("{ nodes(ids: []) { id } }").cost, 2);
        let root_bomb = doubling_bomb(30, "Query", "", "__typename");
        assert!(matches!(
            run(&root_bomb),
            Err(Refusal::TooManyRootFields { count, .. }) if count == 1 << 30
        ));
    }

    #[test]
    fn fragment_cycles_are_refused() {
        let pair = r#"{ project(id: "p") { ...F0 } }
            fragment F0 on Project { id ...F1 } fragment F1 on Project { name ...F0 }"#;
        assert!(matches!(run(pair), Err(Refusal::FragmentCycle { .. })));
        let own = r#"{ project(id: "p") { ...F } } fragment F on Project { tenant { projects { nodes { ...F } } } }"#;
        assert_eq!(
            run(own),
            Err(Refusal::FragmentCycle {
                name: "F".to_owned()
            })
        );
        let through_inline = r#"{ node(id: "n") { ...A } }
            fragment A on Node { ... on Project { ...B } } fragment B on Project { issues { nodes { ...A } } }"#;
        assert!(matches!(
            run(through_inline),
            Err(Refusal::FragmentCycle { .. })
        ));
    }

    #[test]
    fn unknown_fragments_are_refused() {
        let query =
            r#"{ project(id: "p") { ...Known } } fragment Known on Project { id ...Missing }"#;
        assert_eq!(
            run(query),
            Err(Refusal::UnknownFragment {
                name: "Missing".to_owned()
            })
        );
    }

    #[test]
    fn a_thousand_aliased_projects_are_refused() {
        let mut query = String::from("{");
        for i in 0..1_000 {
            query.push_str(&format!(
                r#" p{i}: project(id: "p") {{ issues {{ nodes {{ id }} }} }}"#
            ));
        }
        query.push('}');
        assert_eq!(
            run(&query),
            Err(Refusal::TooManyAliases {
                count: 1_000,
                max: 30
            })
        );
        assert_eq!(measure(&query).cost, 42_000);
    }

    #[test]
    fn node_lookup_fan_out_is_refused() {
        let ids = (0..100)
            .map(|i| format!("\"issue-{i}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let mut query = String::from("{");
        for i in 0..175 {
            query.push_str(&format!(" n{i}: nodes(ids: [{ids}]) {{ id }}"));
        }
        query.push('}');
        assert_eq!(
            run(&query),
            Err(Refusal::TooManyAliases {
                count: 175,
                max: 30
            })
        );
        let lenient = QueryLimits {
            max_aliases: 1_000,
            max_root_fields: 1_000,
            ..QueryLimits::default()
        };
        assert_eq!(
            run_with(&query, &Variables::default(), &lenient),
            Err(Refusal::TooCostly {
                cost: 175 * 101,
                max: 10_000
            })
        );
    }

    #[test]
    fn fragment_counts_are_the_expanded_counts() {
        let aliases = (0..10)
            .map(|i| format!("a{i}: id"))
            .collect::<Vec<_>>()
            .join(" ");
        let mut query = String::from(r#"{ project(id: "p") {"#);
        for _ in 0..100 {
            query.push_str(" ...Ten @include(if: true)");
        }
        query.push_str(&format!(" }} }} fragment Ten on Project {{ {aliases} }}"));
        let analysis = measure(&query);
        assert_eq!(analysis.aliases, 1_000);
        assert_eq!(analysis.directives, 100);
        assert_eq!(analysis.fields, 1_001);
        assert_eq!(analysis.cost, 1_001);
        assert_eq!(analysis.depth, 2);

        let root = "{ ...Roots ...Roots ... on Query { ...Roots } } \
                    fragment Roots on Query { a: tenant(id: \"t\") { id } b: issue(id: \"i\") { id } }";
        let analysis = measure(root);
        assert_eq!(analysis.root_fields, 6);
        assert_eq!(analysis.aliases, 6);
        assert_eq!(analysis.depth, 2);
    }

    #[test]
    fn page_sizes_come_from_first_last_and_variables() {
        let page = |args: &str| {
            let query = format!(
                "query($n: Int, $m: Int = 7) {{ project(id: \"p\") {{ issues{args} {{ nodes {{ id }} }} }} }}"
            );
            // project 1 + issues (1 + size × (nodes 1 + id 1))
            (cost_with(&query, serde_json::json!({ "n": 5, "s": "x", "z": null })) - 2) / 2
        };
        assert_eq!(page(""), 20);
        assert_eq!(page("(first: 3)"), 3);
        assert_eq!(page("(last: 30)"), 30);
        assert_eq!(page("(first: 3, last: 40)"), 40);
        assert_eq!(page("(first: $n)"), 5);
        assert_eq!(page("(first: $m)"), 7, "the variable's default");
        assert_eq!(page("(first: $unset)"), 20);
        assert_eq!(page("(first: null)"), 20);
        assert_eq!(page("(first: $z)"), 20);
        assert_eq!(page("(first: 0)"), 100);
        assert_eq!(page("(first: -3)"), 100);
        assert_eq!(page("(first: 1000)"), 100);
        assert_eq!(page("(first: 2.5)"), 100);
        assert_eq!(page("(first: \"x\")"), 100);
        assert_eq!(page("(first: $s)"), 100);
        let tenant = "{ tenant(id: \"t\") { projects(first: 50) { edges { node { id } } } } }";
        // tenant 1 + projects (1 + 50 × (edges 1 + node (1 + id 1)))
        assert_eq!(measure(tenant).cost, 152);
    }

    #[test]
    fn id_lookups_cost_their_list_length() {
        let lookup = |ids: &str, variables: serde_json::Value| {
            let query = format!("query($ids: [ID!]! = [\"d\"]) {{ nodes(ids: {ids}) {{ id }} }}");
            cost_with(&query, variables) - 1
        };
        assert_eq!(lookup("[\"a\", \"b\", \"c\"]", serde_json::json!({})), 3);
        assert_eq!(lookup("\"a\"", serde_json::json!({})), 1);
        assert_eq!(
            lookup("$ids", serde_json::json!({ "ids": ["a", "b", "c", "d"] })),
            4
        );
        assert_eq!(lookup("$ids", serde_json::json!({ "ids": "a" })), 1);
        assert_eq!(lookup("$ids", serde_json::json!({})), 1, "the default");
        assert_eq!(lookup("$ids", serde_json::json!({ "ids": null })), 100);
        assert_eq!(lookup("$other", serde_json::json!({})), 100);
    }

    #[test]
    fn type_conditions_pick_the_fields_and_lists_are_told_apart_by_parent() {
        // node 1 + (fieldValues 1 + 10 × value 1)
        let issue = r#"{ node(id: "n") { ... on Issue { fieldValues { value } } } }"#;
        assert_eq!(measure(issue).cost, 12);
        // nodes (1 + 2 × (issues (1 + 5 × (nodes 1 + id 1)))): the connection's `nodes` adds
        // no multiplier, the root `nodes` multiplies by its ids.
        let project = r#"{ nodes(ids: ["a", "b"]) { ...P } } fragment P on Project { issues(first: 5) { nodes { id } } }"#;
        assert_eq!(measure(project).cost, 23);
        // Without a type condition the interface's fields apply.
        let plain = r#"{ node(id: "n") { ... { id } ... @include(if: true) { __typename } } }"#;
        let analysis = measure(plain);
        // node 1 + id 1 + __typename 1.
        assert_eq!((analysis.cost, analysis.directives), (3, 1));
    }

    #[test]
    fn typename_costs_one_per_object_and_unknown_fields_cost_one() {
        // project 1 + __typename 1 + issues (1 + 20 × (nodes 1 + __typename 1)), as an Apollo
        // client that adds `__typename` everywhere would send it.
        let apollo = r#"{ project(id: "p") { __typename issues { nodes { __typename } } } }"#;
        assert_eq!(measure(apollo).cost, 43);
        // A spread bomb of `__typename` inside a page is paid per object (the review's
        // 9,000 objects × 8,192 copies, at a smaller scale).
        let mut bomb = String::from("fragment F0 on Issue { __typename }\n");
        for i in 1..=8 {
            bomb.push_str(&format!(
                "fragment F{i} on Issue {{ ...F{} ...F{} }}\n",
                i - 1,
                i - 1
            ));
        }
        bomb.push_str(r#"{ project(id: "p") { issues(first: 90) { nodes { ...F8 } } } }"#);
        assert!(measure(&bomb).cost > 90 * 256, "{}", measure(&bomb).cost);
        let unknown = r#"{ project(id: "p") { nope(first: 100) { deeper { id } } } }"#;
        assert_eq!(measure(unknown).cost, 4);
        assert_eq!(measure(unknown).depth, 4);
    }

    #[test]
    fn skip_and_include_count_as_included() {
        let query = r#"query($no: Boolean = false) @cached {
            project(id: "p") @skip(if: true) { issues @include(if: $no) { nodes { id } } } }"#;
        let analysis = measure(query);
        assert_eq!(analysis.cost, 42);
        assert_eq!(analysis.directives, 3);
    }

    #[test]
    fn the_operation_is_chosen_like_the_executor_chooses_it() {
        let types = types();
        let limits = QueryLimits::default();
        let vars = Variables::default();
        let two = parse_query("query A { __typename } query B { tenant(id: \"t\") { id } }")
            .expect("parses");
        assert_eq!(
            analyze(&two, Some("B"), &vars, &types, &limits).map(|a| a.cost),
            Ok(2)
        );
        assert_eq!(
            analyze(&two, None, &vars, &types, &limits),
            Err(Refusal::AmbiguousOperation)
        );
        assert_eq!(
            analyze(&two, Some("C"), &vars, &types, &limits),
            Err(Refusal::UnknownOperation {
                name: "C".to_owned()
            })
        );
        let named = parse_query("query A { __typename }").expect("parses");
        assert!(analyze(&named, None, &vars, &types, &limits).is_ok());
        let anonymous = parse_query("{ __typename }").expect("parses");
        assert!(matches!(
            analyze(&anonymous, Some("A"), &vars, &types, &limits),
            Err(Refusal::UnknownOperation { .. })
        ));
    }

    #[test]
    fn mutations_and_subscriptions_use_their_roots() {
        let mutation = r#"mutation { createTenant(input: {name: "t"}) { tenant { id } } }"#;
        assert_eq!(measure(mutation).cost, 3);
        // The schema has no subscriptions: unknown fields cost 1 and multiply by 1.
        let subscription = "subscription { events { items { id } } }";
        assert_eq!(measure(subscription).cost, 3);
    }

    #[test]
    fn depth_counts_fields_not_fragments() {
        let query = r#"{ project(id: "p") { ... on Project { ...F } } }
            fragment F on Project { ... { tenant { id } } }"#;
        assert_eq!(measure(query).depth, 3);
        assert_eq!(measure("{ __typename }").depth, 1);
    }

    #[test]
    fn long_fragment_chains_fit_a_two_mebibyte_stack() {
        let links = 2_000;
        let mut chain =
            String::from("{ project(id: \"p\") { ...F2000 } } fragment F0 on Project { id }");
        let mut nested =
            String::from("{ project(id: \"p\") { ...F2000 } } fragment F0 on Project { id }");
        for i in 1..=links {
            let j = i - 1;
            chain.push_str(&format!(" fragment F{i} on Project {{ ...F{j} }}"));
            nested.push_str(&format!(
                " fragment F{i} on Project {{ tenant {{ projects {{ nodes {{ ...F{j} }} }} }} }}"
            ));
        }
        let chain = parse_query(chain).expect("parses");
        let nested = parse_query(nested).expect("parses");
        let types = types();
        let handle = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || {
                let vars = Variables::default();
                let limits = unlimited();
                (
                    analyze(&chain, None, &vars, &types, &limits),
                    analyze(&nested, None, &vars, &types, &limits),
                )
            })
            .expect("spawn");
        let (chain, nested) = handle.join().expect("no stack overflow");
        let chain = chain.expect("measurable");
        assert_eq!((chain.cost, chain.depth), (2, 2));
        let nested = nested.expect("measurable");
        assert_eq!(nested.depth, 2 + 3 * links);
        assert_eq!(nested.cost, u64::MAX, "20 projects per page, 2,000 times");
        assert!(matches!(
            QueryLimits::default().check(&nested),
            Err(Refusal::TooDeep { .. })
        ));
    }

    #[test]
    fn tokens_are_counted_like_the_lexer_counts_them() {
        assert_eq!(count_tokens("", 10), Ok(0));
        assert_eq!(count_tokens("\u{feff} \t,,\r\n# just a comment", 10), Ok(0));
        assert_eq!(count_tokens("{ a { ...F } }", 10), Ok(7));
        assert_eq!(count_tokens("! $ & ( ) ... : = @ [ ] { | }", 100), Ok(14));
        assert_eq!(count_tokens("a(x: -1.5e+3, y: 0, z: 12)", 100), Ok(12));
        assert_eq!(count_tokens(r#"f(s: "a \" # b", t: "")"#, 100), Ok(9));
        assert_eq!(
            count_tokens("f(s: \"\"\" a \\\"\"\" \" \"\" b \"\"\")", 100),
            Ok(6),
            "an escaped triple quote stays inside the block string"
        );
        assert_eq!(count_tokens("a # b c d\n e", 10), Ok(2));
        assert_eq!(count_tokens("a \"unterminated { b c", 10), Ok(2));
        assert_eq!(count_tokens("a \"\"\"unterminated \"\" { b c", 10), Ok(2));
        assert_eq!(count_tokens("a \"\\", 10), Ok(2));
        assert_eq!(
            count_tokens("é ü %", 10),
            Ok(3),
            "one token per stray character"
        );
        assert_eq!(count_tokens(". .. - 1.", 10), Ok(6));
        assert_eq!(count_tokens("a b c", 3), Ok(3));
        assert_eq!(
            count_tokens("a b c d", 3),
            Err(Refusal::TooManyTokens { max: 3 })
        );
    }

    #[test]
    fn refusals_read_well() {
        assert_eq!(
            Refusal::TooCostly {
                cost: 20_000,
                max: 10_000
            }
            .to_string(),
            "the query's estimated cost is 20000, over the limit of 10000; ask for smaller \
             pages (`first`/`last`), fewer `ids`, or fewer nested lists"
        );
        assert_eq!(
            Refusal::FragmentCycle {
                name: "F".to_owned()
            }
            .to_string(),
            "fragment `F` spreads itself, directly or through other fragments"
        );
    }
}
