//! Skipping async-graphql's validation for a document that passed it before (see
//! `graphql/documents.rs`) never changes a reply: random requests over documents built to
//! catch a too-loose rule — a variable typed as text in one operation and as an enum in
//! another, a fragment that uses a variable where only another operation declares it, a
//! nullable variable with a default in a non-null position, lists, directives — get exactly
//! the reply that a never-seen copy of the same document gets, which is validated in full.
//!
//! Validation does not depend on the store, so this runs on the embedded one; the API test
//! `validation_is_skipped_only_where_it_would_pass` covers both stores over HTTP.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use async_graphql::{Request, Variables};
use gridgate::graphql::{Gateway, GatewayOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};
use support::app::{Backend, TestStore};

/// Documents that are valid for some variables and operations and not for others.
const DOCUMENTS: &[&str] = &[
    "query Q($p: ID!, $n: Int, $a: String, $o: IssueOrder) { project(id: $p) { \
     issues(first: $n, after: $a, orderBy: $o) { edges { cursor node { num } } } } }",
    // `$x` is an id in A and an enum in B; `$y` is text in both and used in the fragment.
    "query A($x: ID!, $y: String) { ...F node(id: $x) { id } } \
     query B($x: IssueOrderField!, $y: String) { ...F project(id: \"project-35e9\") { \
     issues(first: 1, orderBy: {field: $x}) { nodes { num } } } } \
     fragment F on Query { project(id: \"project-35e9\") { issues(first: 1, after: $y) { nodes { num } } } }",
    // The fragment is spread in B only, but validation puts the variables into every fragment.
    "query A($x: ID!) { node(id: $x) { id } } query B($x: IssueOrderField!) { ...G } \
     fragment G on Query { project(id: \"project-35e9\") { issues(first: 1, orderBy: {field: $x}) { nodes { num } } } }",
    // A nullable variable with a default stands where a non-null id is expected.
    "query Q($p: ID = \"project-35e9\") { project(id: $p) { id name } }",
    "query Q($ids: [ID!]!) { nodes(ids: $ids) { id } }",
    "query Q($b: Boolean!, $p: ID!) { project(id: $p) @include(if: $b) { id } }",
    // Never valid: text where an id is expected.
    "query Q($s: String) { project(id: $s) { id } }",
];

fn value() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!("project-35e9"),
        json!("project-0000"),
        json!("issue-020e"),
        json!("NUM"),
        json!("NAME"),
        json!("BOGUS"),
        json!(""),
        json!(1),
        json!(35),
        json!(-1),
        json!(1_u64 << 40),
        json!(1.5),
        json!(true),
        json!(null),
        json!(["project-35e9", "issue-020e"]),
        json!(["project-35e9", 1]),
        json!({"field": "NUM"}),
        json!({"field": "BOGUS"}),
        json!({"field": "CUSTOM_FIELD", "customFieldId": "xattrib-3812"}),
        json!({"field": "NAME", "direction": "DESC"}),
    ])
}

/// The variables each document declares, and its operations' names.
const DECLARED: &[(&[&str], &[&str])] = &[
    (&["p", "n", "a", "o"], &["Q"]),
    (&["x", "y"], &["A", "B"]),
    (&["x"], &["A", "B"]),
    (&["p"], &["Q"]),
    (&["ids"], &["Q"]),
    (&["b", "p"], &["Q"]),
    (&["s"], &["Q"]),
];

/// A value for most declared variables (so that most requests reach validation), sometimes
/// an undeclared one, and an operation name that is mostly one of the document's; then the
/// same request with other strings in place of its variables' strings, the change that an
/// accepted shape may let through without validation.
fn request() -> impl Strategy<Value = (usize, Option<&'static str>, [Value; 2])> {
    (0..DOCUMENTS.len()).prop_flat_map(|document| {
        let (names, operations) = DECLARED[document];
        let mut choices: Vec<Option<&'static str>> = operations.iter().copied().map(Some).collect();
        choices.extend([None, Some("Nope")]);
        (
            prop::sample::select(choices),
            prop::collection::vec(prop::option::weighted(0.85, value()), names.len()),
            prop::option::weighted(0.1, value()),
            prop::collection::vec(value(), names.len() + 1),
        )
            .prop_map(move |(operation, values, extra, others)| {
                let mut variables = serde_json::Map::new();
                for (name, value) in names.iter().zip(values) {
                    if let Some(value) = value {
                        variables.insert((*name).to_owned(), value);
                    }
                }
                if let Some(extra) = extra {
                    variables.insert("extra".to_owned(), extra);
                }
                let mut variant = variables.clone();
                for (value, other) in variant.values_mut().zip(others) {
                    if value.is_string() && other.is_string() {
                        *value = other;
                    }
                }
                let variables = [Value::Object(variables), Value::Object(variant)];
                (document, operation, variables)
            })
    })
}

/// The gateway's reply to one request, as its JSON.
async fn reply(
    gateway: &Gateway,
    query: &str,
    operation: Option<&str>,
    variables: &Value,
) -> Value {
    let mut request = Request::new(query).variables(Variables::from_json(variables.clone()));
    if let Some(operation) = operation {
        request = request.operation_name(operation);
    }
    let mut reply = serde_json::to_value(gateway.execute(request).await).expect("a JSON reply");
    // async-graphql keeps a document's operations in a hash map, so validation reports the
    // errors of several operations in an order that differs between two parses of one text.
    if let Some(errors) = reply["errors"].as_array_mut() {
        errors.sort_by_cached_key(Value::to_string);
    }
    reply
}

#[test]
fn skipping_validation_never_changes_a_reply() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (gateway, _store) = runtime.block_on(async {
        let store = TestStore::new(Backend::Embedded).await;
        gridgate::seed::demo(&store.store).await.expect("seed demo");
        let gateway = Gateway::new(store.store.clone(), GatewayOptions::default(), None);
        (Arc::new(gateway), store)
    });
    static FRESH: OnceLock<AtomicUsize> = OnceLock::new();
    let fresh = FRESH.get_or_init(AtomicUsize::default);
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 200,
            // The runner is not the `proptest!` macro, so it knows no source file to persist to;
            // a failure prints its minimal case.
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let sequences = prop::collection::vec(request(), 1..6);
    let result = runner.run(&sequences, |requests| {
        runtime.block_on(async {
            for (document, operation, variables) in requests
                .iter()
                .flat_map(|(d, o, vs)| vs.iter().map(move |v| (d, o, v)))
            {
                let query = DOCUMENTS[*document];
                let got = reply(&gateway, query, *operation, variables).await;
                // Another text for the same document, so it is parsed and validated afresh.
                let n = fresh.fetch_add(1, Ordering::Relaxed);
                let expected =
                    reply(&gateway, &format!("{query}\n# {n}"), *operation, variables).await;
                prop_assert_eq!(
                    &got,
                    &expected,
                    "document {} as {:?} with {}",
                    document,
                    operation,
                    variables
                );
            }
            Ok(())
        })
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    // Both ways were taken, or the comparison proved nothing.
    let counts = gateway.validation_counts();
    assert!(
        counts.skipped >= 50 && counts.validated >= 200,
        "{counts:?}"
    );
}
