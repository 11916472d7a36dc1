//! The walk of an operation as it would execute: fragments ordered and measured once each,
//! totals per selection set, and the cost model's list multipliers.

use std::collections::HashMap;

use async_graphql::parser::types::{
    ExecutableDocument, Field, FragmentDefinition, OperationDefinition, Selection, SelectionSet,
};
use async_graphql::parser::Positioned;
use async_graphql::{Value as ConstValue, Variables};

use super::shape::Shape;
use super::types::{FieldInfo, TypeMap};
use super::{Analysis, Refusal, NOMINAL_LIST_SIZE};
use crate::graphql::MAX_NODES;
use crate::paging::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};

/// The suffix of the connection types, whose fields page with `first` and `last`.
const CONNECTION_SUFFIX: &str = "Connection";

/// The argument that makes a list field a lookup by id (`Query.nodes(ids:)`).
const IDS_ARGUMENT: &str = "ids";
/// The arguments that give a connection's page size: `paging::PageArgs`'s `first` and `last`
/// (a test holds them to that type's names).
pub const PAGE_SIZE_ARGUMENTS: [&str; 2] = ["first", "last"];
/// The argument that filters a connection (`Project.issues(filter:)`; a test holds it to
/// `graphql::args::IssuesArgs`'s names).
pub const FILTER_ARGUMENT: &str = "filter";
/// What a filtered connection adds to its own cost: a filtered page reads on past the rows it
/// returns (up to the request's read budget) and tests each one, work its page size does not
/// show.
pub const FILTERED_LIST_COST: u64 = 500;

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

pub(super) fn to_u64(n: usize) -> u64 {
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
pub(super) struct Analyzer<'a> {
    doc: &'a ExecutableDocument,
    operation: &'a OperationDefinition,
    variables: &'a Variables,
    /// The operation's variable defaults, looked up by name in constant time, so a document
    /// with many variables and many paged fields stays linear.
    defaults: HashMap<&'a str, &'a ConstValue>,
    types: &'a TypeMap,
    fragments: HashMap<&'a str, Mark>,
    /// Fragment definitions measured; at most one per fragment, which is the point.
    pub(super) fragments_measured: usize,
    /// Selections the ordering pass found in the operation and the fragments it reaches.
    pub(super) selections_found: u64,
    /// Selections the measuring pass visited: equal to `selections_found` because no spread is
    /// ever walked twice.
    pub(super) selections_measured: u64,
}

impl<'a> Analyzer<'a> {
    pub(super) fn new(
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

    pub(super) fn run(&mut self) -> Result<Analysis, Refusal> {
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
                    let parent = frame.ty;
                    let base = 1u64.saturating_add(self.filter_cost(field));
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
            .any(|argument| argument.name == IDS_ARGUMENT)
        {
            return self.ids_len(field);
        }
        NOMINAL_LIST_SIZE
    }

    /// A connection's page size: the larger of `first` and `last`, or the default page size
    /// when neither is given.
    fn page_size(&self, field: &Field) -> u64 {
        let [first, last] = PAGE_SIZE_ARGUMENTS.map(|name| self.page_argument(field, name));
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

    /// What a field's filter adds to its cost: [`FILTERED_LIST_COST`] when it has a filter
    /// (as a literal or a variable) that is not null.
    fn filter_cost(&self, field: &Field) -> u64 {
        match self.argument(field, FILTER_ARGUMENT) {
            Shape::Absent | Shape::Null => 0,
            _ => FILTERED_LIST_COST,
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
