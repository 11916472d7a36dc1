//! The parsed-document cache, and what async-graphql's full validation has already accepted of
//! each document. A grid frontend sends the same few query texts over and over: parsing one
//! with async-graphql's grammar cost a grid page more CPU than reading its project, and
//! validating it again cost about 5 % of an embedded page. Documents are shared read-only;
//! each request executes its own copy of the tree.
//!
//! # Why an accepted document need not be validated again
//!
//! async-graphql's strict validation is a function of the document, the operation name and the
//! request's variables. Every rule but one reads the document alone; `ArgumentsOfCorrectType`
//! also checks each argument with the request's variables put in (in fragments and in the
//! selected operations). So once a request passed, another request with the same document,
//! operation name and variables passes too, and so does one whose variables differ only in
//! the text of *text variables*: variables that every operation declaring them types as
//! `String`, `String!`, `ID` or `ID!`. The input checks that run before validation
//! (`analysis::inputs`, "All Variable Usages Are Allowed") let such a variable stand only where
//! its own named type is expected, and there every string is valid.
//! The shape of the variables kept for a document ([`Accepted`]) is therefore the variables
//! with the strings of its text variables blanked; a request of an accepted shape runs
//! through a schema that skips the rules, and gets the response that full validation would
//! have let through. Nothing else is relaxed: a variable of any other type, a number where a
//! string is declared, a new operation name or a new document is validated in full.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_graphql::parser::parse_query;
use async_graphql::parser::types::{
    BaseType, DocumentOperations, ExecutableDocument, OperationDefinition, Type,
};
use async_graphql::{Name, ServerError, Value, Variables};
use lru::LruCache;

use super::analysis::{Checked, InputRefusal};

/// Longer query texts are parsed every time and never kept: the cache holds at most
/// [`CACHED_DOCUMENTS`] × this many bytes of text (2 MiB) and the trees parsed from it, so
/// clients sending many large or unique documents cannot grow the server's memory.
pub const MAX_CACHED_QUERY_BYTES: usize = 8 * 1024;
/// How many distinct documents are kept (least recently used first out).
pub const CACHED_DOCUMENTS: usize = 256;
/// How many accepted variable shapes a document keeps (a grid sends one per sort order).
pub const ACCEPTED_SHAPES: usize = 8;
/// Larger variables (in values and string bytes) are validated every time and never kept, so
/// the shapes kept stay within [`CACHED_DOCUMENTS`] × [`ACCEPTED_SHAPES`] × about this size.
pub const MAX_SHAPE_WEIGHT: usize = 2 * 1024;

/// Parsed documents by query text, least recently used evicted first.
pub struct Documents {
    cache: Mutex<LruCache<Box<str>, Arc<Document>>>,
}

/// A parsed document and the variable shapes with which it passed full validation.
pub struct Document {
    tree: ExecutableDocument,
    /// The text variables (see the module's documentation), by name.
    text_variables: Vec<Name>,
    /// Accepted shapes, the oldest replaced first once [`ACCEPTED_SHAPES`] are kept.
    accepted: Mutex<Accepted>,
    /// What [`crate::graphql::analysis::check_operation`] found of each operation (by name),
    /// once it was first run: it depends on the document alone.
    inputs: Vec<(Option<Name>, OnceLock<Verdict>)>,
}

/// What the input checks found of an operation.
pub type Verdict = Result<Checked, InputRefusal>;

/// The operation names and variable shapes a document was accepted with.
#[derive(Default)]
struct Accepted {
    shapes: Vec<(Option<Box<str>>, Variables)>,
    /// Where the next shape goes once the list is full.
    next: usize,
}

impl Default for Documents {
    fn default() -> Self {
        Documents::with_capacity(CACHED_DOCUMENTS)
    }
}

impl Documents {
    /// A cache of at most `capacity` documents (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Documents {
            cache: Mutex::new(LruCache::new(capacity)),
        }
    }

    /// The parsed document of `query`, from the cache when it was parsed before. A document
    /// that does not parse is not kept (its error is cheap to find again).
    pub fn get_or_parse(&self, query: &str) -> Result<Arc<Document>, ServerError> {
        let cacheable = query.len() <= MAX_CACHED_QUERY_BYTES;
        if cacheable {
            if let Some(doc) = self.lock().get(query) {
                return Ok(doc.clone());
            }
        }
        // Parsed outside the lock: a slow parse must not hold up other requests.
        let doc = Arc::new(Document::new(parse_query(query)?));
        if cacheable {
            self.lock().put(query.into(), doc.clone());
        }
        Ok(doc)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<Box<str>, Arc<Document>>> {
        // The cache holds no invariant a panicking holder could break: keep using it.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Document {
    fn new(mut tree: ExecutableDocument) -> Self {
        hoist_typename_directives(&mut tree);
        let mut text = Vec::<Name>::new();
        let mut other = Vec::<&Name>::new();
        for (_, operation) in tree.operations.iter() {
            for definition in &operation.node.variable_definitions {
                let name = &definition.node.name.node;
                if is_text(&definition.node.var_type.node) {
                    if !text.contains(name) {
                        text.push(name.clone());
                    }
                } else if !other.contains(&name) {
                    other.push(name);
                }
            }
        }
        text.retain(|name| !other.contains(&name));
        let inputs = tree
            .operations
            .iter()
            .map(|(name, _)| (name.cloned(), OnceLock::new()))
            .collect();
        Document {
            tree,
            text_variables: text,
            accepted: Mutex::default(),
            inputs,
        }
    }

    /// What `check` found of the operation the request runs: by its name, or the document's
    /// only operation when the request names none (the analysis has refused any other
    /// request). Found once per operation, at its first request, and read without a lock after.
    pub fn inputs(
        &self,
        operation: Option<&str>,
        check: impl FnOnce(&ExecutableDocument, &OperationDefinition) -> Verdict,
    ) -> Option<&Verdict> {
        let slots = &self.inputs;
        let at = match operation {
            Some(name) => slots
                .iter()
                .position(|(n, _)| n.as_ref().is_some_and(|n| n.as_str() == name))?,
            None if slots.len() == 1 => 0,
            None => return None,
        };
        let (name, slot) = &slots[at];
        let operation = match (&self.tree.operations, name) {
            (DocumentOperations::Single(op), _) => &op.node,
            (DocumentOperations::Multiple(ops), Some(name)) => &ops.get(name)?.node,
            // Several operations always have names.
            (DocumentOperations::Multiple(_), None) => return None,
        };
        Some(slot.get_or_init(|| check(&self.tree, operation)))
    }

    /// The parsed tree.
    pub fn tree(&self) -> &ExecutableDocument {
        &self.tree
    }

    /// Whether full validation accepted this document, run as `operation`, with variables of
    /// the same shape as `variables` (see the module's documentation).
    pub fn is_accepted(&self, operation: Option<&str>, variables: &Variables) -> bool {
        self.lock()
            .shapes
            .iter()
            .any(|(accepted_operation, shape)| {
                accepted_operation.as_deref() == operation && self.same_shape(shape, variables)
            })
    }

    /// The shape to keep once a request with these variables has passed full validation, or
    /// `None` when the variables are too large to keep.
    pub fn shape(&self, variables: &Variables) -> Option<Variables> {
        // Names count too: a client may send variables nobody declared, under any name.
        variables.iter().try_fold(0, |weight, (name, value)| {
            add_weight(weight + name.len(), value)
        })?;
        let mut shape = variables.clone();
        for (name, value) in shape.iter_mut() {
            if matches!(value, Value::String(_)) && self.text_variables.contains(name) {
                *value = Value::String(String::new());
            }
        }
        Some(shape)
    }

    /// Remembers that full validation accepted this document, run as `operation`, with
    /// variables of `shape` (from [`Self::shape`]).
    pub fn accept(&self, operation: Option<&str>, shape: Variables) {
        let mut accepted = self.lock();
        let known = accepted
            .shapes
            .iter()
            .any(|(o, s)| o.as_deref() == operation && *s == shape);
        if known {
            return;
        }
        let entry = (operation.map(Box::from), shape);
        if accepted.shapes.len() < ACCEPTED_SHAPES {
            accepted.shapes.push(entry);
        } else {
            let at = accepted.next;
            accepted.shapes[at] = entry;
            accepted.next = (at + 1) % ACCEPTED_SHAPES;
        }
    }

    /// Whether `given` has the shape `shape`: the same variables, with the same values except
    /// that a text variable's string may be any string.
    fn same_shape(&self, shape: &Variables, given: &Variables) -> bool {
        shape.len() == given.len()
            && shape
                .iter()
                .zip(given.iter())
                .all(|((name, kept), (given_name, value))| {
                    name == given_name
                        && (kept == value
                            || matches!((kept, value), (Value::String(_), Value::String(_)))
                                && self.text_variables.contains(name))
                })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Accepted> {
        // A shape is pushed or replaced whole, so a panicking holder leaves the list usable.
        self.accepted.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Moves `@skip` and `@include` of every `__typename` field onto an inline fragment around it
/// (`__typename @skip(if: $b)` becomes `... @skip(if: $b) { __typename }`), which the
/// specification defines to select exactly the same. async-graphql's validation does not look
/// at the directives of `__typename` (so a variable used only there is refused as unused), while
/// its execution does apply them; on an inline fragment both see them. Selection sets are walked
/// with an explicit stack, so a deep document cannot exhaust the native stack.
fn hoist_typename_directives(tree: &mut ExecutableDocument) {
    use async_graphql::parser::types::{InlineFragment, Selection, SelectionSet};
    use async_graphql::Positioned;
    let is_condition = |d: &Positioned<async_graphql::parser::types::Directive>| {
        matches!(d.node.name.node.as_str(), "skip" | "include")
    };
    use async_graphql::parser::types::DocumentOperations;
    let mut stack: Vec<&mut SelectionSet> = match &mut tree.operations {
        DocumentOperations::Single(op) => vec![&mut op.node.selection_set.node],
        DocumentOperations::Multiple(ops) => ops
            .values_mut()
            .map(|op| &mut op.node.selection_set.node)
            .collect(),
    };
    stack.extend(
        tree.fragments
            .values_mut()
            .map(|f| &mut f.node.selection_set.node),
    );
    while let Some(set) = stack.pop() {
        for item in &mut set.items {
            if let Selection::Field(field) = &mut item.node {
                if field.node.name.node == "__typename"
                    && field.node.directives.iter().any(is_condition)
                {
                    let (conditions, others) = std::mem::take(&mut field.node.directives)
                        .into_iter()
                        .partition(is_condition);
                    field.node.directives = others;
                    let pos = field.pos;
                    let bare = Positioned::new(Selection::Field(field.clone()), pos);
                    item.node = Selection::InlineFragment(Positioned::new(
                        InlineFragment {
                            type_condition: None,
                            directives: conditions,
                            selection_set: Positioned::new(SelectionSet { items: vec![bare] }, pos),
                        },
                        pos,
                    ));
                    continue;
                }
            }
            match &mut item.node {
                Selection::Field(field) => stack.push(&mut field.node.selection_set.node),
                Selection::InlineFragment(inline) => {
                    stack.push(&mut inline.node.selection_set.node)
                }
                Selection::FragmentSpread(_) => {}
            }
        }
    }
}

/// `String`, `String!`, `ID` or `ID!`: a type every string is a valid value of.
fn is_text(ty: &Type) -> bool {
    matches!(&ty.base, BaseType::Named(name) if name.as_str() == "String" || name.as_str() == "ID")
}

/// `weight` plus the weight of `value` (a value counts 8, a string or field name also its bytes),
/// or `None` past [`MAX_SHAPE_WEIGHT`]. Variables come from the request's JSON, so their
/// nesting is bounded by its parser's recursion limit.
fn add_weight(weight: usize, value: &Value) -> Option<usize> {
    let weight = weight + 8;
    let weight = match value {
        Value::String(s) => weight + s.len(),
        Value::Enum(name) => weight + name.len(),
        Value::Binary(bytes) => weight + bytes.len(),
        Value::List(items) => items.iter().try_fold(weight, add_weight)?,
        Value::Object(fields) => fields
            .iter()
            .try_fold(weight, |w, (name, v)| add_weight(w + name.len(), v))?,
        Value::Null | Value::Number(_) | Value::Boolean(_) => weight,
    };
    (weight <= MAX_SHAPE_WEIGHT).then_some(weight)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    impl Documents {
        fn len(&self) -> usize {
            self.lock().len()
        }

        fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    #[test]
    fn a_repeated_query_is_parsed_once_and_shared() {
        let documents = Documents::default();
        let first = documents.get_or_parse("{ __typename }").unwrap();
        let second = documents.get_or_parse("{ __typename }").unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(documents.len(), 1);
    }

    fn vars(value: serde_json::Value) -> Variables {
        Variables::from_json(value)
    }

    #[test]
    fn text_variables_are_those_every_operation_types_as_text() {
        let doc = Documents::default()
            .get_or_parse(
                "query A($s: String, $i: ID!, $n: Int, $x: String, $l: [String]) { __typename } \
                 query B($x: IssueField, $i: ID) { __typename }",
            )
            .unwrap();
        let mut names: Vec<&str> = doc.text_variables.iter().map(|n| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["i", "s"]);
    }

    #[test]
    fn an_accepted_shape_admits_other_text_and_nothing_else() {
        let doc = Documents::default()
            .get_or_parse("query Q($s: String, $n: Int, $o: IssueOrder) { __typename }")
            .unwrap();
        let accepted = json!({"s": "a", "n": 1, "o": {"field": "NUM"}});
        assert!(!doc.is_accepted(Some("Q"), &vars(accepted.clone())));
        doc.accept(Some("Q"), doc.shape(&vars(accepted.clone())).unwrap());
        assert!(doc.is_accepted(Some("Q"), &vars(accepted.clone())));
        assert!(doc.is_accepted(
            Some("Q"),
            &vars(json!({"s": "other text", "n": 1, "o": {"field": "NUM"}}))
        ));
        for other in [
            json!({"s": 5, "n": 1, "o": {"field": "NUM"}}),
            json!({"s": null, "n": 1, "o": {"field": "NUM"}}),
            json!({"s": "a", "n": 2, "o": {"field": "NUM"}}),
            json!({"s": "a", "n": "1", "o": {"field": "NUM"}}),
            json!({"s": "a", "n": 1, "o": {"field": "NAME"}}),
            json!({"s": "a", "n": 1}),
            json!({"s": "a", "n": 1, "o": {"field": "NUM"}, "t": 1}),
        ] {
            assert!(!doc.is_accepted(Some("Q"), &vars(other.clone())), "{other}");
        }
        assert!(!doc.is_accepted(None, &vars(accepted)));
    }

    #[test]
    fn large_variables_are_not_kept() {
        let doc = Documents::default()
            .get_or_parse("query Q($s: String) { __typename }")
            .unwrap();
        let fits = "x".repeat(MAX_SHAPE_WEIGHT - 9);
        assert!(doc.shape(&vars(json!({ "s": fits }))).is_some());
        let long = "x".repeat(MAX_SHAPE_WEIGHT - 8);
        assert!(doc.shape(&vars(json!({ "s": long }))).is_none());
        let mut named = serde_json::Map::new();
        named.insert("n".repeat(MAX_SHAPE_WEIGHT), json!(1));
        assert!(doc.shape(&vars(serde_json::Value::Object(named))).is_none());
        let deep = json!([[[[[[[[[[[[[[[[[[[[["x".repeat(MAX_SHAPE_WEIGHT)]]]]]]]]]]]]]]]]]]]]]);
        assert!(doc.shape(&vars(json!({ "s": deep }))).is_none());
    }

    #[test]
    fn the_oldest_shape_leaves_first() {
        let doc = Documents::default()
            .get_or_parse("query Q($n: Int) { __typename }")
            .unwrap();
        let n = |n: usize| vars(json!({ "n": n }));
        for i in 0..=ACCEPTED_SHAPES {
            doc.accept(None, doc.shape(&n(i)).unwrap());
            // Accepting a known shape again keeps one copy.
            doc.accept(None, doc.shape(&n(i)).unwrap());
        }
        assert!(!doc.is_accepted(None, &n(0)));
        assert!((1..=ACCEPTED_SHAPES).all(|i| doc.is_accepted(None, &n(i))));
        assert_eq!(doc.lock().shapes.len(), ACCEPTED_SHAPES);
    }

    #[test]
    fn errors_and_long_documents_are_not_kept() {
        let documents = Documents::default();
        assert!(documents.get_or_parse("{ unclosed").is_err());
        let long = format!("{{ __typename {} }}", "# padding\n".repeat(1000));
        assert!(long.len() > MAX_CACHED_QUERY_BYTES);
        let first = documents.get_or_parse(&long).unwrap();
        let second = documents.get_or_parse(&long).unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(documents.is_empty());
    }

    #[test]
    fn the_least_recently_used_document_leaves_first() {
        let documents = Documents::with_capacity(2);
        let a = documents.get_or_parse("{ a: __typename }").unwrap();
        documents.get_or_parse("{ b: __typename }").unwrap();
        // `a` is used again, so `b` is the one to go.
        assert!(Arc::ptr_eq(
            &a,
            &documents.get_or_parse("{ a: __typename }").unwrap()
        ));
        documents.get_or_parse("{ c: __typename }").unwrap();
        assert_eq!(documents.len(), 2);
        assert!(Arc::ptr_eq(
            &a,
            &documents.get_or_parse("{ a: __typename }").unwrap()
        ));
    }
}
