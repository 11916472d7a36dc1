//! Response shape: async-graphql 7 resolves sibling fields concurrently and keeps their
//! results in completion order, and leaves a field that failed out of its object instead of
//! setting it to null. This puts every object of a response back in the order of its selection
//! set, and nulls failed fields with the spec's propagation (a failed non-null field nulls its
//! parent, up to the nearest nullable position), as the GraphQL spec asks of results.
//!
//! Fragments only shape the objects their type condition matches, so the walk follows the
//! schema: each object's type is its field's declared type when that is an object type, or its
//! `__typename` when selected (Apollo clients always select it). For an abstract field without
//! `__typename`, a type-conditioned fragment is taken to match when every field it selects is
//! present in the object.

use std::collections::{HashMap, HashSet};

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{
    BaseType, DocumentOperations, ExecutableDocument, OperationType, Selection, SelectionSet, Type,
    TypeKind, TypeSystemDefinition,
};
use async_graphql::{Name, PathSegment, ServerError, Value};

/// Fragments nest at most this deep (validation already rejects cycles; this only bounds the
/// walk).
const MAX_FRAGMENT_DEPTH: usize = 64;

/// What the walk needs to know of the schema, read once from its SDL.
#[derive(Debug, Default)]
pub struct ResponseOrder {
    /// Object and interface type → field → the field's declared type.
    fields: HashMap<String, HashMap<String, Type>>,
    /// Interface or union → the object types it can be.
    possible: HashMap<String, HashSet<String>>,
    query_type: String,
    mutation_type: String,
}

impl ResponseOrder {
    /// Reads the types of a schema from its SDL.
    pub fn from_sdl(sdl: &str) -> Self {
        let mut order = ResponseOrder {
            query_type: "Query".into(),
            mutation_type: "Mutation".into(),
            ..ResponseOrder::default()
        };
        let Ok(doc) = async_graphql::parser::parse_schema(sdl) else {
            return order;
        };
        for definition in doc.definitions {
            let TypeSystemDefinition::Type(ty) = definition else {
                continue;
            };
            let name = ty.node.name.node.to_string();
            let (fields, implements) = match &ty.node.kind {
                TypeKind::Object(o) => (&o.fields, &o.implements),
                TypeKind::Interface(i) => (&i.fields, &i.implements),
                TypeKind::Union(u) => {
                    let members = u.members.iter().map(|m| m.node.to_string()).collect();
                    order.possible.insert(name, members);
                    continue;
                }
                _ => continue,
            };
            for interface in implements {
                order
                    .possible
                    .entry(interface.node.to_string())
                    .or_default()
                    .insert(name.clone());
            }
            let field_types = fields
                .iter()
                .map(|f| (f.node.name.node.to_string(), f.node.ty.node.clone()))
                .collect();
            order.fields.insert(name, field_types);
        }
        order
    }

    /// Shapes a response's `data` for the operation `operation_name` of the parsed `doc`:
    /// failed fields (errors with a path) set to null, propagating to the parent while the
    /// position is non-null, and to the whole `data` when the root field is; then every
    /// object's fields in selection order, the nulled ones included.
    pub fn shape(
        &self,
        data: &mut Value,
        errors: &[ServerError],
        doc: &ExecutableDocument,
        operation_name: Option<&str>,
    ) {
        let operation = match &doc.operations {
            DocumentOperations::Single(op) => op,
            DocumentOperations::Multiple(ops) => match operation_name.and_then(|n| ops.get(n)) {
                Some(op) => op,
                None => return,
            },
        };
        let walk = Walk { order: self, doc };
        let root_set = &operation.node.selection_set.node;
        let root = self.root_type(operation.node.ty);
        for error in errors.iter().filter(|e| !e.path.is_empty()) {
            let nullable = walk.nullability(data, &error.path, root_set, root);
            // The deepest nullable position at or above the failed field takes the null.
            match nullable.iter().rposition(|n| *n) {
                Some(at) => set_null(data, &error.path[..=at]),
                None if nullable.len() == error.path.len() => *data = Value::Null,
                // The path could not be followed (a parent is already null): nothing to do.
                None => {}
            }
        }
        // async-graphql answers a selection set whose every field was skipped (`@skip`,
        // `@include`) with null; at the root that can only be an empty selection, which the
        // specification answers with an empty object.
        if *data == Value::Null && errors.is_empty() {
            *data = Value::Object(Default::default());
        }
        // Nulls first: `set_null` adds a missing key at the end, and the reorder then puts
        // it in its place.
        walk.reorder(data, &[root_set], Some(root), &mut Plans::default());
    }

    fn root_type(&self, ty: OperationType) -> &str {
        match ty {
            OperationType::Mutation => &self.mutation_type,
            _ => &self.query_type,
        }
    }

    fn is_abstract(&self, ty: &str) -> bool {
        self.possible.contains_key(ty)
    }

    /// Whether an object of type `ty` matches the type condition `condition`.
    fn matches(&self, condition: &str, ty: &str) -> bool {
        condition == ty || self.possible.get(condition).is_some_and(|p| p.contains(ty))
    }
}

/// Sets the value at `path` to null, adding the key when the object lacks it.
fn set_null(data: &mut Value, path: &[PathSegment]) {
    let Some((last, parents)) = path.split_last() else {
        *data = Value::Null;
        return;
    };
    let mut value = data;
    for segment in parents {
        value = match (segment, value) {
            (PathSegment::Field(key), Value::Object(map)) => match map.get_mut(key.as_str()) {
                Some(child) => child,
                None => return,
            },
            (PathSegment::Index(i), Value::List(items)) => match items.get_mut(*i) {
                Some(child) => child,
                None => return,
            },
            _ => return,
        };
    }
    match (last, value) {
        (PathSegment::Field(key), Value::Object(map)) => {
            map.insert(Name::new(key), Value::Null);
        }
        (PathSegment::Index(i), Value::List(items)) => {
            if let Some(item) = items.get_mut(*i) {
                *item = Value::Null;
            }
        }
        _ => {}
    }
}

fn named_type(ty: &Type) -> String {
    match &ty.base {
        BaseType::Named(name) => name.to_string(),
        BaseType::List(inner) => named_type(inner),
    }
}

/// The response keys of an object in order, each with the selection sets that shape its value
/// (a key selected twice merges both) and its declared type.
type Keys<'a> = IndexMap<Name, (Vec<&'a SelectionSet>, Option<Type>)>;

/// How to order the objects of one runtime type at one position of the response.
struct Plan<'a> {
    entries: Vec<Entry<'a>>,
}

/// One response key of a [`Plan`].
struct Entry<'a> {
    key: Name,
    /// The selection sets that shape the key's value.
    sets: Vec<&'a SelectionSet>,
    /// The key's declared (named) type, when the schema knows it.
    child_type: Option<String>,
    /// The plans of the objects under this key, shared by every object this plan orders.
    plans: Plans<'a>,
}

impl Plan<'_> {
    /// Whether the object's keys already come in the plan's order. A key the plan does not
    /// name sends the object through the rebuild; a key the object lacks (a skipped field)
    /// does not matter.
    fn in_order(&self, object: &IndexMap<Name, Value>) -> bool {
        let mut entries = self.entries.iter();
        object
            .keys()
            .all(|key| entries.by_ref().any(|entry| entry.key == *key))
    }
}

/// The plans made at one position, by runtime type (a position of an interface type may see
/// several; most see one).
#[derive(Default)]
struct Plans<'a>(Vec<(String, Plan<'a>)>);

impl<'a> Plans<'a> {
    fn for_type(&mut self, ty: &str, make: impl FnOnce() -> Plan<'a>) -> &mut Plan<'a> {
        let at = match self.0.iter().position(|(t, _)| t == ty) {
            Some(at) => at,
            None => {
                self.0.push((ty.to_string(), make()));
                self.0.len() - 1
            }
        };
        &mut self.0[at].1
    }
}

/// What [`Walk::find_field`] found.
#[derive(Default)]
struct Found<'a> {
    ty: Option<Type>,
    sets: Vec<&'a SelectionSet>,
}

struct Walk<'a> {
    order: &'a ResponseOrder,
    doc: &'a ExecutableDocument,
}

impl<'a> Walk<'a> {
    /// Whether each position of `path` may be null: a field's declared nullability, or a list
    /// item's. Shorter than `path` when the path cannot be followed.
    fn nullability(
        &self,
        data: &Value,
        path: &[PathSegment],
        root: &'a SelectionSet,
        root_type: &str,
    ) -> Vec<bool> {
        let mut out = Vec::with_capacity(path.len());
        let mut value = Some(data);
        let mut sets: Vec<&'a SelectionSet> = vec![root];
        let mut parent: Option<String> = Some(root_type.to_string());
        let mut current: Option<Type> = None;
        for segment in path {
            match segment {
                PathSegment::Field(key) => {
                    let Some(Value::Object(map)) = value else {
                        break;
                    };
                    let mut found = Found::default();
                    for set in &sets {
                        self.find_field(set, key, parent.as_deref(), &mut found, 0);
                    }
                    let Some(ty) = found.ty else {
                        break;
                    };
                    out.push(ty.nullable);
                    parent = Some(named_type(&ty));
                    current = Some(ty);
                    sets = found.sets;
                    value = map.get(key.as_str());
                }
                PathSegment::Index(i) => {
                    let Some(Type {
                        base: BaseType::List(item),
                        ..
                    }) = current.take()
                    else {
                        break;
                    };
                    out.push(item.nullable);
                    current = Some(*item);
                    value = match value {
                        Some(Value::List(items)) => items.get(*i),
                        _ => None,
                    };
                }
            }
        }
        out
    }

    /// The type condition and selection set of a fragment spread or inline fragment (`None`
    /// for a field, or a spread of an unknown fragment).
    fn fragment(&self, selection: &'a Selection) -> Option<(Option<Name>, &'a SelectionSet)> {
        match selection {
            Selection::Field(_) => None,
            Selection::FragmentSpread(spread) => {
                let fragment = self.doc.fragments.get(&spread.node.fragment_name.node)?;
                let condition = fragment.node.type_condition.node.on.node.clone();
                Some((Some(condition), &fragment.node.selection_set.node))
            }
            Selection::InlineFragment(inline) => Some((
                inline
                    .node
                    .type_condition
                    .as_ref()
                    .map(|c| c.node.on.node.clone()),
                &inline.node.selection_set.node,
            )),
        }
    }

    /// The declared type of the field selected under response key `key`, and the selection
    /// sets under it. Every fragment is searched, each with its type condition as the parent:
    /// the field failed, so a fragment that selects it applied, and validation guarantees that
    /// fields sharing a response key have the same type shape.
    fn find_field(
        &self,
        set: &'a SelectionSet,
        key: &str,
        parent: Option<&str>,
        found: &mut Found<'a>,
        depth: usize,
    ) {
        if depth > MAX_FRAGMENT_DEPTH {
            return;
        }
        for selection in &set.items {
            let (condition, inner) = match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    if field.response_key().node.as_str() != key {
                        continue;
                    }
                    if found.ty.is_none() {
                        found.ty = parent
                            .and_then(|p| self.order.fields.get(p))
                            .and_then(|f| f.get(field.name.node.as_str()))
                            .cloned();
                    }
                    found.sets.push(&field.selection_set.node);
                    continue;
                }
                _ => match self.fragment(&selection.node) {
                    Some(fragment) => fragment,
                    None => continue,
                },
            };
            let parent = condition.as_deref().or(parent);
            self.find_field(inner, key, parent, found, depth + 1);
        }
    }

    /// Puts every object under `value` in the order of `sets`. `plans` remembers the plan made
    /// for the first object of each runtime type at this position, so the rows of a list
    /// (and the cells of every row) share one plan instead of each walking the document.
    fn reorder(
        &self,
        value: &mut Value,
        sets: &[&'a SelectionSet],
        declared: Option<&str>,
        plans: &mut Plans<'a>,
    ) {
        match value {
            Value::List(items) => {
                for item in items {
                    self.reorder(item, sets, declared, plans);
                }
            }
            Value::Object(map) => {
                let runtime = match map.get("__typename") {
                    Some(Value::String(t)) => Some(t.as_str()),
                    _ => declared.filter(|d| !self.order.is_abstract(d)),
                };
                let plan = match runtime {
                    Some(ty) => plans.for_type(ty, || self.plan(sets, runtime, declared, map)),
                    // An abstract field without `__typename`: which fragments apply depends on
                    // the object itself, so its plan is its own.
                    None => {
                        let mut own = self.plan(sets, None, declared, map);
                        self.reorder_object(map, &mut own);
                        return;
                    }
                };
                self.reorder_object(map, plan);
            }
            _ => {}
        }
    }

    /// Puts one object's fields in its plan's order (unless they already are, as serial
    /// objects' are), then each field's value in its own.
    fn reorder_object(&self, map: &mut IndexMap<Name, Value>, plan: &mut Plan<'a>) {
        if plan.in_order(map) {
            // Each key is found from where the previous one was: one pass over both.
            let mut next = 0;
            for (key, field) in map.iter_mut() {
                if let Some(at) = plan.entries[next..].iter().position(|e| e.key == *key) {
                    next += at;
                    let entry = &mut plan.entries[next];
                    self.reorder(
                        field,
                        &entry.sets,
                        entry.child_type.as_deref(),
                        &mut entry.plans,
                    );
                    next += 1;
                }
            }
            return;
        }
        let mut unordered = std::mem::take(map);
        for entry in &mut plan.entries {
            if let Some(mut field) = unordered.shift_remove(&entry.key) {
                self.reorder(
                    &mut field,
                    &entry.sets,
                    entry.child_type.as_deref(),
                    &mut entry.plans,
                );
                map.insert(entry.key.clone(), field);
            }
        }
        // Anything the selection does not name keeps its place after the rest.
        map.extend(unordered);
    }

    /// The response keys an object of type `runtime` has under `sets`, in order.
    fn plan(
        &self,
        sets: &[&'a SelectionSet],
        runtime: Option<&str>,
        declared: Option<&str>,
        object: &IndexMap<Name, Value>,
    ) -> Plan<'a> {
        let mut keys = Keys::new();
        for set in sets {
            self.collect(set, runtime, declared, object, &mut keys, 0);
        }
        Plan {
            entries: keys
                .into_iter()
                .map(|(key, (sets, ty))| Entry {
                    key,
                    sets,
                    child_type: ty.as_ref().map(named_type),
                    plans: Plans::default(),
                })
                .collect(),
        }
    }

    fn collect(
        &self,
        set: &'a SelectionSet,
        runtime: Option<&str>,
        declared: Option<&str>,
        object: &IndexMap<Name, Value>,
        keys: &mut Keys<'a>,
        depth: usize,
    ) {
        if depth > MAX_FRAGMENT_DEPTH {
            return;
        }
        for selection in &set.items {
            let (condition, fragment_set) = match &selection.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let parent = runtime.or(declared);
                    let child_type = parent
                        .and_then(|p| self.order.fields.get(p))
                        .and_then(|f| f.get(field.name.node.as_str()))
                        .cloned();
                    let entry = keys
                        .entry(field.response_key().node.clone())
                        .or_insert_with(|| (Vec::new(), child_type));
                    entry.0.push(&field.selection_set.node);
                    continue;
                }
                _ => match self.fragment(&selection.node) {
                    Some(fragment) => fragment,
                    None => continue,
                },
            };
            if self.applies(
                condition.as_deref(),
                runtime,
                declared,
                fragment_set,
                object,
            ) {
                self.collect(fragment_set, runtime, declared, object, keys, depth + 1);
            }
        }
    }

    /// Whether a fragment with `condition` shapes this object.
    fn applies(
        &self,
        condition: Option<&str>,
        runtime: Option<&str>,
        declared: Option<&str>,
        set: &SelectionSet,
        object: &IndexMap<Name, Value>,
    ) -> bool {
        let Some(condition) = condition else {
            return true;
        };
        match runtime {
            Some(ty) if self.order.fields.contains_key(ty) => self.order.matches(condition, ty),
            // A type the SDL does not describe (introspection): nothing to check against.
            Some(_) => true,
            None if Some(condition) == declared => true,
            // An abstract field without `__typename`: the fragment matched if every field it
            // selects came back.
            None => set.items.iter().all(|s| match &s.node {
                Selection::Field(f) => object.contains_key(f.node.response_key().node.as_str()),
                _ => true,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(value: &Value) -> Vec<String> {
        match value {
            Value::Object(map) => map.keys().map(|k| k.to_string()).collect(),
            other => panic!("not an object: {other:?}"),
        }
    }

    fn order() -> ResponseOrder {
        ResponseOrder::from_sdl(&crate::graphql::sdl())
    }

    #[test]
    fn objects_follow_their_selection_sets() {
        let query = r#"
            query Q { z: tenant(id: "t") { name id } ...F a: issue(id: "i") { ... on Issue { num } id } }
            fragment F on Query { m: project(id: "p") { name } }
        "#;
        let mut data = Value::from_json(serde_json::json!({
            "a": {"id": "i", "num": 1},
            "m": {"name": "P"},
            "z": {"id": "t", "name": "T"}
        }))
        .unwrap();
        let doc = async_graphql::parser::parse_query(query).unwrap();
        order().shape(&mut data, &[], &doc, Some("Q"));
        assert_eq!(keys(&data), ["z", "m", "a"]);
        let Value::Object(top) = &data else {
            panic!("object")
        };
        assert_eq!(keys(&top["z"]), ["name", "id"]);
        assert_eq!(keys(&top["a"]), ["num", "id"]);
    }

    #[test]
    fn fragments_shape_only_the_types_they_name() {
        let query = r#"{
            nodes(ids: ["t", "p", "i"]) {
                ... on Issue { num id }
                ... on Tenant { name id }
                ...P
            }
            typed: nodes(ids: ["p"]) { __typename ... on Tenant { id name } ... on Project { name id } }
        }
        fragment P on Project { __typename name id }"#;
        let mut data = Value::from_json(serde_json::json!({
            "typed": [{"id": "p", "name": "P", "__typename": "Project"}],
            "nodes": [
                {"id": "t", "name": "T"},
                {"id": "p", "name": "P", "__typename": "Project"},
                {"id": "i", "num": 1}
            ]
        }))
        .unwrap();
        let doc = async_graphql::parser::parse_query(query).unwrap();
        order().shape(&mut data, &[], &doc, None);
        let Value::Object(top) = &data else {
            panic!("object")
        };
        assert_eq!(keys(&data), ["nodes", "typed"]);
        let Value::List(nodes) = &top["nodes"] else {
            panic!("list")
        };
        assert_eq!(keys(&nodes[0]), ["name", "id"]);
        assert_eq!(keys(&nodes[1]), ["__typename", "name", "id"]);
        assert_eq!(keys(&nodes[2]), ["num", "id"]);
        let Value::List(typed) = &top["typed"] else {
            panic!("list")
        };
        assert_eq!(keys(&typed[0]), ["__typename", "name", "id"]);
    }

    #[test]
    fn rows_share_one_plan_whatever_order_each_comes_in() {
        let query = r#"{ project(id: "p") { issues { edges { cursor node {
            id name @skip(if: false) fieldValues { value field { id name } } } } } } }"#;
        let mut data = Value::from_json(serde_json::json!({"project": {"issues": {"edges": [
            {"cursor": "a", "node": {"id": "1", "name": "A", "fieldValues": [
                {"value": "x", "field": {"id": "f", "name": "F"}},
                {"field": {"name": "G", "id": "g"}, "value": "y"}
            ]}},
            {"node": {"fieldValues": [], "name": "B", "id": "2"}, "cursor": "b"},
            {"cursor": "c", "node": {"id": "3", "fieldValues": [
                {"value": "z", "field": {"id": "f", "name": "F"}}
            ]}}
        ]}}}))
        .unwrap();
        let doc = async_graphql::parser::parse_query(query).unwrap();
        order().shape(&mut data, &[], &doc, None);
        // Key order is what is checked: compare the encoded text.
        let expected = concat!(
            r#"{"project":{"issues":{"edges":["#,
            r#"{"cursor":"a","node":{"id":"1","name":"A","fieldValues":["#,
            r#"{"value":"x","field":{"id":"f","name":"F"}},"#,
            r#"{"value":"y","field":{"id":"g","name":"G"}}]}},"#,
            r#"{"cursor":"b","node":{"id":"2","name":"B","fieldValues":[]}},"#,
            r#"{"cursor":"c","node":{"id":"3","fieldValues":["#,
            r#"{"value":"z","field":{"id":"f","name":"F"}}]}}]}}}"#
        );
        assert_eq!(serde_json::to_string(&data).unwrap(), expected);
    }

    #[test]
    fn failed_fields_are_nulled_in_their_place() {
        let query = r#"{ n: node(id: "x") { id } i: issue(id: "i") { name c: fieldValue(fieldId: "f") { value } num } }"#;
        let mut data = Value::from_json(serde_json::json!({
            "i": {"num": 1, "name": "N"}
        }))
        .unwrap();
        let error = |path: Vec<PathSegment>| ServerError {
            path,
            ..ServerError::new("failed", None)
        };
        let errors = [
            error(vec![PathSegment::Field("n".into())]),
            error(vec![
                PathSegment::Field("i".into()),
                PathSegment::Field("c".into()),
            ]),
        ];
        let doc = async_graphql::parser::parse_query(query).unwrap();
        order().shape(&mut data, &errors, &doc, None);
        let Value::Object(top) = &data else {
            panic!("object")
        };
        assert_eq!(
            top.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            ["n", "i"]
        );
        let Value::Object(issue) = &top["i"] else {
            panic!("object")
        };
        assert_eq!(
            issue.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            ["name", "c", "num"]
        );
        assert_eq!(top["n"], Value::Null);
    }
}
