//! Response field order: async-graphql 7 resolves sibling fields concurrently and keeps their
//! results in completion order; this puts every object of a response back in the order of its
//! selection set, as the GraphQL spec asks of serialized results.

use async_graphql::indexmap::IndexMap;
use async_graphql::parser::types::{
    DocumentOperations, ExecutableDocument, Selection, SelectionSet,
};
use async_graphql::{Name, Value};

/// Fragments nest at most this deep (validation already rejects cycles; this only bounds the
/// walk).
const MAX_FRAGMENT_DEPTH: usize = 64;

/// Reorders `data` (a response's `data`) by the operation `operation_name` of `query`. A query
/// that does not parse leaves `data` as it is (it produced no data anyway).
pub fn restore_field_order(data: &mut Value, query: &str, operation_name: Option<&str>) {
    let Ok(doc) = async_graphql::parser::parse_query(query) else {
        return;
    };
    let operation = match &doc.operations {
        DocumentOperations::Single(op) => op,
        DocumentOperations::Multiple(ops) => match operation_name.and_then(|n| ops.get(n)) {
            Some(op) => op,
            None => return,
        },
    };
    reorder(data, &[&operation.node.selection_set.node], &doc);
}

fn reorder(value: &mut Value, sets: &[&SelectionSet], doc: &ExecutableDocument) {
    match value {
        Value::List(items) => {
            for item in items {
                reorder(item, sets, doc);
            }
        }
        Value::Object(map) => {
            let mut keys: IndexMap<Name, Vec<&SelectionSet>> = IndexMap::new();
            for set in sets {
                collect(set, doc, &mut keys, 0);
            }
            let mut unordered = std::mem::take(map);
            for (key, subsets) in keys {
                if let Some(mut field) = unordered.shift_remove(&key) {
                    reorder(&mut field, &subsets, doc);
                    map.insert(key, field);
                }
            }
            // Anything the selection does not name keeps its place after the rest.
            map.extend(unordered);
        }
        _ => {}
    }
}

/// The response keys a selection set produces, in order, each with the selection sets that
/// shape its value (a key selected twice merges both).
fn collect<'a>(
    set: &'a SelectionSet,
    doc: &'a ExecutableDocument,
    keys: &mut IndexMap<Name, Vec<&'a SelectionSet>>,
    depth: usize,
) {
    if depth > MAX_FRAGMENT_DEPTH {
        return;
    }
    for selection in &set.items {
        match &selection.node {
            Selection::Field(field) => keys
                .entry(field.node.response_key().node.clone())
                .or_default()
                .push(&field.node.selection_set.node),
            Selection::FragmentSpread(spread) => {
                if let Some(fragment) = doc.fragments.get(&spread.node.fragment_name.node) {
                    collect(&fragment.node.selection_set.node, doc, keys, depth + 1);
                }
            }
            Selection::InlineFragment(inline) => {
                collect(&inline.node.selection_set.node, doc, keys, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        restore_field_order(&mut data, query, Some("Q"));
        let Value::Object(top) = &data else {
            panic!("object")
        };
        let keys: Vec<&str> = top.keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["z", "m", "a"]);
        let Value::Object(z) = &top["z"] else {
            panic!("object")
        };
        assert_eq!(
            z.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            ["name", "id"]
        );
        let Value::Object(a) = &top["a"] else {
            panic!("object")
        };
        assert_eq!(
            a.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            ["num", "id"]
        );
    }
}
