//! Grid rows resolved by plan (`graphql/rows.rs`) answer exactly as async-graphql's executor
//! does, against both stores. Each query is sent twice: as a client writes it, and with one
//! selection repeated in every row, cell and field (`__typename` twice), which changes
//! nothing in the answer (GraphQL merges the two) but sends every object to the executor: a
//! plan never takes a selection set with a repeated response key. The bodies must be equal,
//! byte for byte.

use crate::support::app::{Backend, TestApp};
use gridgate::seed::{self, Synthetic};
use serde_json::{json, Value};

/// The queries mark the selection sets of rows, cells and fields with `%`: selecting
/// `__typename` there once, the query is what a client sends; twice, it means the same but
/// goes to the executor. (`@include(if: true)` would not do: async-graphql removes `@skip`
/// and `@include` before execution.)
fn planned(query: &str) -> String {
    query.replace('%', "__typename")
}

fn executed(query: &str) -> String {
    query.replace('%', "__typename __typename")
}

async fn project(app: &TestApp) -> String {
    let created = seed::synthetic(
        &app.store,
        Synthetic {
            projects: 1,
            issues: 40,
            // Every type, SELECT (the sixth) included.
            fields: 6,
            seed: 7,
        },
        |_| {},
    )
    .await
    .expect("seed");
    created[0].project.clone()
}

/// POSTs a request and returns the body as sent, so that comparisons see the order of keys.
async fn post_text(app: &TestApp, query: &str, variables: &Value) -> String {
    let response = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({ "query": query, "variables": variables }))
        .send()
        .await
        .expect("POST /graphql");
    assert_eq!(response.status(), 200);
    response.text().await.expect("a body")
}

/// Sends `query` as a client writes it and with directives everywhere: the two bodies must be
/// the same, byte for byte (data, key order, cost). Returns the body, parsed and as sent.
async fn same_answer(app: &TestApp, query: &str, variables: Value) -> (Value, String) {
    let fast = post_text(app, &planned(query), &variables).await;
    let slow = post_text(app, &executed(query), &variables).await;
    assert_eq!(fast, slow, "query: {query}");
    let body: Value = serde_json::from_str(&fast).expect("JSON");
    assert!(body.get("errors").is_none(), "unexpected errors: {body:#}");
    assert!(body["extensions"]["cost"].is_object(), "{body:#}");
    (body, fast)
}

const GRID: &str = r#"query Grid($p: ID!, $order: IssueOrder) {
  project(id: $p) {
    customFields { % id name type position status options { % id label color position } }
    issues(first: 25, orderBy: $order) {
      edges { % cursor node { % id num name state version
        fieldValues { % field { % id } fieldId value option { % id label color position } } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"#;

async fn grid_rows_answer_as_the_executor(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let p = project(&app).await;
    let select = app
        .data(
            "query($p: ID!) { project(id: $p) { customFields { id type } } }",
            json!({"p": p}),
        )
        .await["project"]["customFields"][5]
        .clone();
    assert_eq!(select["type"], "SELECT");
    for order in [
        json!({"field": "NUM"}),
        json!({"field": "NAME", "direction": "DESC"}),
        json!({"field": "CUSTOM_FIELD", "customFieldId": select["id"]}),
    ] {
        let (body, _) = same_answer(&app, GRID, json!({"p": p, "order": order})).await;
        let edges = body["data"]["project"]["issues"]["edges"]
            .as_array()
            .expect("edges");
        assert_eq!(edges.len(), 25);
        // The grid reads cells: the comparison would be vacuous without some.
        let cells: usize = edges
            .iter()
            .map(|e| e["node"]["fieldValues"].as_array().map_or(0, Vec::len))
            .sum();
        assert!(cells > 25, "{body:#}");
        // And SELECT cells with their options.
        let options = edges
            .iter()
            .flat_map(|e| e["node"]["fieldValues"].as_array().unwrap())
            .filter(|c| c["option"]["label"].is_string())
            .count();
        assert!(options > 5, "{body:#}");
    }
}

async fn aliases_typenames_and_fragments_answer_as_the_executor(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let p = project(&app).await;
    let query = r#"query Rows($p: ID!) {
  project(id: $p) {
    issues(first: 10, orderBy: {field: STATE}) {
      nodes { % n: num ...Row
        fieldValues { % ... on CustomFieldValue { v: value }
          field { % id name type position version } f: field { name % } } }
      edges { node { % id fieldValues { value % } } }
    }
  }
}
fragment Row on Issue { id name state version }"#;
    let (body, _) = same_answer(&app, query, json!({"p": p})).await;
    let first = &body["data"]["project"]["issues"]["nodes"][0];
    assert_eq!(first["__typename"], "Issue");
    assert!(first["n"].is_number(), "{first:#}");
    assert_eq!(first["fieldValues"][0]["__typename"], "CustomFieldValue");
    assert_eq!(
        first["fieldValues"][0]["field"]["__typename"],
        "CustomField"
    );
    assert!(first["fieldValues"][0]["v"].is_string(), "{first:#}");
    // Two selections of a cell's field keep their own texts in every row.
    let nodes = body["data"]["project"]["issues"]["nodes"]
        .as_array()
        .unwrap();
    for cell in nodes
        .iter()
        .flat_map(|n| n["fieldValues"].as_array().unwrap())
    {
        assert_eq!(cell["f"]["name"], cell["field"]["name"], "{cell:#}");
        assert_eq!(cell["f"]["__typename"], "CustomField", "{cell:#}");
        assert!(cell["f"].get("id").is_none(), "{cell:#}");
    }
}

/// Selections a plan leaves to the executor (a field that loads, an argument, a fragment on
/// an interface, a key selected twice) still answer the same, in the same order; and rows the
/// executor resolves still answer the same when their cells take a plan.
async fn selections_left_to_the_executor_answer_the_same(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let p = project(&app).await;
    let fields = app
        .data(
            "query($p: ID!) { project(id: $p) { customFields { id } } }",
            json!({"p": p}),
        )
        .await;
    let field = fields["project"]["customFields"][1]["id"].clone();
    let query = r#"query Mixed($p: ID!, $f: ID!) {
  project(id: $p) {
    customFields { % id project { name } version }
    issues(first: 8, orderBy: {field: NUM, direction: DESC}) {
      nodes { num project { id } fieldValues { value % field { id project { name } } } }
      edges { node { num fieldValue(fieldId: $f) { value } ... on Node { id } num } }
      cells: nodes { project { name } fieldValues { value % field { id % } } }
    }
  }
}"#;
    let (body, text) = same_answer(&app, query, json!({"p": p, "f": field})).await;
    let node = &body["data"]["project"]["issues"]["nodes"][0];
    assert_eq!(node["project"]["id"], json!(p));
    // A row the executor resolves (it selects `project`) still takes the plan for its cells.
    let cells = &body["data"]["project"]["issues"]["cells"][0]["fieldValues"];
    assert!(cells[0]["field"]["id"].is_string(), "{body:#}");
    // A key selected twice answers once, where it was first selected.
    let edge = text.find(r#""edges":[{"node":{"num":"#).expect("edges");
    let value = text[edge..].find(r#""fieldValue":"#).expect("fieldValue");
    let id = text[edge..].find(r#""id":"#).expect("id");
    assert!(value < id, "{text}");
}

crate::both_stores!(
    grid_rows_answer_as_the_executor,
    aliases_typenames_and_fragments_answer_as_the_executor,
    selections_left_to_the_executor_answer_the_same,
);
