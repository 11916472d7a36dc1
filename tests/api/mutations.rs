//! API tests of the write path over HTTP, against both stores: every mutation, its validation
//! errors and conflicts, idempotent retries, deletions swept in the background, exact write
//! costs, and `verify` clean after all of it.

use crate::support::app::{Backend, TestApp};
use gridgate::repo::verify;
use serde_json::{json, Value};

const CREATE_TENANT: &str = r#"
mutation($name: String!, $cmid: String) {
  createTenant(input: {name: $name, clientMutationId: $cmid}) { clientMutationId tenant { id name } }
}"#;

const CREATE_PROJECT: &str = r#"
mutation($tenant: ID!, $name: String!) {
  createProject(input: {tenantId: $tenant, name: $name}) {
    project { id name version tenant { id } }
    edge { cursor node { id } }
  }
}"#;

const CREATE_FIELD: &str = r#"
mutation($project: ID!, $name: String!, $type: CustomFieldType!, $position: Int) {
  createCustomField(input: {projectId: $project, name: $name, type: $type, position: $position}) {
    customField { id name type position version project { id } }
  }
}"#;

const CREATE_ISSUE: &str = r#"
mutation($project: ID!, $name: String!, $state: IssueState, $values: [FieldValueInput!], $cmid: String) {
  createIssue(input: {projectId: $project, name: $name, state: $state, fieldValues: $values, clientMutationId: $cmid}) {
    clientMutationId
    issue { id num name state version fieldValues { field { id } value } }
    edge { cursor node { id num } }
  }
}"#;

const SET_VALUES: &str = r#"
mutation($issue: ID!, $values: [FieldValueInput!]!, $expected: Int, $cmid: String) {
  setIssueFieldValues(input: {issueId: $issue, values: $values, expectedVersion: $expected, clientMutationId: $cmid}) {
    clientMutationId
    issue { id version fieldValues { field { id } value } }
  }
}"#;

const UPDATE_ISSUE: &str = r#"
mutation($id: ID!, $name: String, $state: IssueState, $expected: Int) {
  updateIssue(input: {id: $id, name: $name, state: $state, expectedVersion: $expected}) {
    issue { id name state version }
  }
}"#;

const GRID: &str = r#"
query($project: ID!, $order: IssueOrder) {
  project(id: $project) {
    customFields { id name position }
    issues(first: 100, orderBy: $order) { edges { cursor node { num name } } }
  }
}"#;

/// A tenant and a project with an INT and a TEXT field.
struct Fixture {
    tenant: String,
    project: String,
    int_field: String,
    text_field: String,
}

async fn fixture(app: &TestApp) -> Fixture {
    let tenant = app.data(CREATE_TENANT, json!({"name": "  Acme  "})).await;
    assert_eq!(
        tenant["createTenant"]["tenant"]["name"], "Acme",
        "names are trimmed"
    );
    let tenant = tenant["createTenant"]["tenant"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let project = app
        .data(CREATE_PROJECT, json!({"tenant": tenant, "name": "Bridge"}))
        .await;
    let project = project["createProject"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let field = |name: &str, ty: &str| {
        let vars = json!({"project": project, "name": name, "type": ty});
        async move {
            let data = app.data(CREATE_FIELD, vars).await;
            data["createCustomField"]["customField"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let int_field = field("Estimate", "INT").await;
    let text_field = field("Owner", "TEXT").await;
    Fixture {
        tenant,
        project,
        int_field,
        text_field,
    }
}

async fn create_issue(app: &TestApp, project: &str, name: &str, values: Value) -> Value {
    app.data(
        CREATE_ISSUE,
        json!({"project": project, "name": name, "values": values}),
    )
    .await["createIssue"]
        .clone()
}

async fn assert_clean(app: &TestApp) {
    let found = verify::verify(&app.store, None).await.expect("verify");
    assert!(found.is_empty(), "verify found drift: {found:#?}");
}

fn nums(grid: &Value) -> Vec<i64> {
    grid["project"]["issues"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["node"]["num"].as_i64().unwrap())
        .collect()
}

async fn every_mutation_round_trips(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;

    // createProject's edge carries the cursor the project has in its tenant's list.
    let created = app
        .data(
            CREATE_PROJECT,
            json!({"tenant": f.tenant, "name": "Aqueduct"}),
        )
        .await;
    let edge_cursor = created["createProject"]["edge"]["cursor"].clone();
    assert_eq!(created["createProject"]["project"]["version"], 1);
    let list = app
        .data(
            r#"query($t: ID!) { tenant(id: $t) { projects { edges { cursor node { name } } } } }"#,
            json!({"t": f.tenant}),
        )
        .await;
    let edges = list["tenant"]["projects"]["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 2);
    assert_eq!(edges[0]["node"]["name"], "Aqueduct");
    assert_eq!(edges[0]["cursor"], edge_cursor);

    // createIssue: numbers from 1, canonical values, edge cursor of the default order.
    let first = create_issue(
        &app,
        &f.project,
        "Paint",
        json!([{"fieldId": f.int_field, "value": "007"}, {"fieldId": f.text_field, "value": "Ann"}]),
    )
    .await;
    assert_eq!(first["issue"]["num"], 1);
    assert_eq!(first["issue"]["state"], "OPEN");
    assert_eq!(first["issue"]["version"], 1);
    assert_eq!(
        first["issue"]["fieldValues"],
        json!([{"field": {"id": f.int_field}, "value": "7"}, {"field": {"id": f.text_field}, "value": "Ann"}])
    );
    let second = create_issue(&app, &f.project, "Inspect", json!([])).await;
    assert_eq!(second["issue"]["num"], 2);
    let grid = app.data(GRID, json!({"project": f.project})).await;
    let grid_edges = grid["project"]["issues"]["edges"].as_array().unwrap();
    assert_eq!(grid_edges[1]["cursor"], second["edge"]["cursor"]);
    assert_eq!(nums(&grid), [1, 2]);

    // updateIssue with the right version; the name sort row moves.
    let id = first["issue"]["id"].as_str().unwrap();
    let updated = app
        .data(
            UPDATE_ISSUE,
            json!({"id": id, "name": "Zinc coat", "state": "CLOSED", "expected": 1}),
        )
        .await;
    assert_eq!(
        updated["updateIssue"]["issue"],
        json!({"id": id, "name": "Zinc coat", "state": "CLOSED", "version": 2})
    );
    let by_name = app
        .data(
            GRID,
            json!({"project": f.project, "order": {"field": "NAME"}}),
        )
        .await;
    assert_eq!(nums(&by_name), [2, 1]);
    let by_state = app
        .data(
            GRID,
            json!({"project": f.project, "order": {"field": "STATE"}}),
        )
        .await;
    assert_eq!(nums(&by_state), [2, 1]);

    // setIssueFieldValues: set, change and clear cells.
    let set = app
        .data(
            SET_VALUES,
            json!({"issue": id, "values": [{"fieldId": f.int_field, "value": "-3"}, {"fieldId": f.text_field, "value": null}]}),
        )
        .await;
    assert_eq!(
        set["setIssueFieldValues"]["issue"]["fieldValues"],
        json!([{"field": {"id": f.int_field}, "value": "-3"}])
    );
    assert_eq!(set["setIssueFieldValues"]["issue"]["version"], 3);
    let second_id = second["issue"]["id"].as_str().unwrap();
    app.data(
        SET_VALUES,
        json!({"issue": second_id, "values": [{"fieldId": f.int_field, "value": "5"}]}),
    )
    .await;
    let by_int = app
        .data(
            GRID,
            json!({"project": f.project, "order": {"field": "CUSTOM_FIELD", "customFieldId": f.int_field, "direction": "DESC"}}),
        )
        .await;
    assert_eq!(nums(&by_int), [2, 1]);

    // updateCustomField: rename and move; position reorders the columns.
    let moved = app
        .data(
            r#"mutation($id: ID!) { updateCustomField(input: {id: $id, name: "Effort", position: 9}) { customField { name position version } } }"#,
            json!({"id": f.int_field}),
        )
        .await;
    assert_eq!(
        moved["updateCustomField"]["customField"],
        json!({"name": "Effort", "position": 9, "version": 2})
    );
    let grid = app.data(GRID, json!({"project": f.project})).await;
    let columns: Vec<&str> = grid["project"]["customFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Owner", "Effort"]);

    // updateProject and updateTenant.
    let renamed = app
        .data(
            r#"mutation($id: ID!) { updateProject(input: {id: $id, name: "Forth Bridge", expectedVersion: 1}) { project { name version } } }"#,
            json!({"id": f.project}),
        )
        .await;
    assert_eq!(
        renamed["updateProject"]["project"],
        json!({"name": "Forth Bridge", "version": 2})
    );
    let tenant = app
        .data(
            r#"mutation($id: ID!) { updateTenant(input: {id: $id, name: "ACME"}) { tenant { name } } }"#,
            json!({"id": f.tenant}),
        )
        .await;
    assert_eq!(tenant["updateTenant"]["tenant"]["name"], "ACME");

    // deleteIssue: gone from every ordering.
    let deleted = app
        .data(
            r#"mutation($id: ID!) { deleteIssue(input: {id: $id, clientMutationId: "d1"}) { deletedId clientMutationId } }"#,
            json!({"id": second_id}),
        )
        .await;
    assert_eq!(
        deleted["deleteIssue"],
        json!({"deletedId": second_id, "clientMutationId": "d1"})
    );
    for order in [json!({"field": "NAME"}), json!({"field": "NUM"})] {
        let grid = app
            .data(GRID, json!({"project": f.project, "order": order}))
            .await;
        assert_eq!(nums(&grid), [1]);
    }
    let gone = app
        .data(
            r#"query($id: ID!) { issue(id: $id) { id } }"#,
            json!({"id": second_id}),
        )
        .await;
    assert_eq!(gone["issue"], Value::Null);
    app.sweeps_idle().await;
    assert_clean(&app).await;
}

async fn validation_errors_name_the_input_field(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;
    let date = app
        .data(
            CREATE_FIELD,
            json!({"project": f.project, "name": "Due", "type": "DATE"}),
        )
        .await["createCustomField"]["customField"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let number = app
        .data(
            CREATE_FIELD,
            json!({"project": f.project, "name": "Cost", "type": "NUMBER"}),
        )
        .await["createCustomField"]["customField"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let done = app
        .data(
            CREATE_FIELD,
            json!({"project": f.project, "name": "Done", "type": "CHECKBOX"}),
        )
        .await["createCustomField"]["customField"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cases: Vec<(Value, &str)> = vec![
        (
            json!([{"fieldId": done, "value": "yes"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": done, "value": "1"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": f.int_field, "value": "9223372036854775808"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": f.int_field, "value": "1.5"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": number, "value": "1e200"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": number, "value": "NaN"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": number, "value": "1234567890123456789012345678901234567890"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": date, "value": "2023-02-30"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": date, "value": "0000-01-01"}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": f.text_field, "value": "x".repeat(10_001)}]),
            "fieldValues[0].value",
        ),
        (
            json!([{"fieldId": f.int_field, "value": "1"}, {"fieldId": f.int_field, "value": "2"}]),
            "fieldValues[1].fieldId",
        ),
        (
            json!([{"fieldId": "xattrib-nope", "value": "1"}]),
            "fieldValues[0].fieldId",
        ),
        (
            json!([{"fieldId": "issue-1", "value": "1"}]),
            "fieldValues[0].fieldId",
        ),
    ];
    for (values, field) in cases {
        let (code, message) = app
            .error(
                CREATE_ISSUE,
                json!({"project": f.project, "name": "x", "values": values}),
            )
            .await;
        assert_eq!(code, "BAD_USER_INPUT", "{values}");
        assert!(
            message.starts_with(&format!("input.{field}: ")),
            "{values}: {message}"
        );
    }
    // Canonical forms are stored.
    let ok = create_issue(
        &app,
        &f.project,
        "ok",
        json!([{"fieldId": number, "value": "-0"}, {"fieldId": date, "value": "2024-02-29"},
               {"fieldId": done, "value": " TRUE "}]),
    )
    .await;
    let values: Vec<&str> = ok["issue"]["fieldValues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["2024-02-29", "0", "true"]);

    for name in ["", "   ", &"n".repeat(501)] {
        let (code, message) = app
            .error(CREATE_ISSUE, json!({"project": f.project, "name": name}))
            .await;
        assert_eq!(
            (code.as_str(), message.starts_with("input.name: ")),
            ("BAD_USER_INPUT", true)
        );
    }
    // Not found, and a type change.
    let (code, _) = app
        .error(
            CREATE_ISSUE,
            json!({"project": "project-missing", "name": "x"}),
        )
        .await;
    assert_eq!(code, "NOT_FOUND");
    let (code, message) = app
        .error(
            r#"mutation($id: ID!) { updateCustomField(input: {id: $id, type: TEXT}) { customField { id } } }"#,
            json!({"id": f.int_field}),
        )
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(message.contains("cannot be changed"), "{message}");
    // Too many values for one atomic write.
    let mut many = Vec::new();
    for i in 0..97 {
        let id = app
            .data(
                CREATE_FIELD,
                json!({"project": f.project, "name": format!("f{i}"), "type": "INT"}),
            )
            .await["createCustomField"]["customField"]["id"]
            .clone();
        many.push(json!({"fieldId": id, "value": "1"}));
    }
    let (code, message) = app
        .error(
            CREATE_ISSUE,
            json!({"project": f.project, "name": "wide", "values": many}),
        )
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(message.contains("more than the 100"), "{message}");
    many.pop();
    create_issue(&app, &f.project, "wide", Value::Array(many)).await;
    assert_clean(&app).await;
}

async fn stale_versions_conflict_and_change_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;
    let issue = create_issue(&app, &f.project, "a", json!([])).await;
    let id = issue["issue"]["id"].as_str().unwrap();
    app.data(UPDATE_ISSUE, json!({"id": id, "name": "b", "expected": 1}))
        .await;
    let body = app
        .post(UPDATE_ISSUE, json!({"id": id, "name": "c", "expected": 1}))
        .await;
    assert_eq!(body["errors"][0]["extensions"]["code"], "CONFLICT");
    assert_eq!(body["errors"][0]["extensions"]["retryable"], false);
    let (code, _) = app
        .error(
            SET_VALUES,
            json!({"issue": id, "values": [{"fieldId": f.int_field, "value": "1"}], "expected": 1}),
        )
        .await;
    assert_eq!(code, "CONFLICT");
    let now = app
        .data(
            r#"query($id: ID!) { issue(id: $id) { name version fieldValues { value } } }"#,
            json!({"id": id}),
        )
        .await;
    assert_eq!(
        now["issue"],
        json!({"name": "b", "version": 2, "fieldValues": []})
    );
    let (code, _) = app
        .error(
            r#"mutation($id: ID!) { updateProject(input: {id: $id, name: "x", expectedVersion: 7}) { project { id } } }"#,
            json!({"id": f.project}),
        )
        .await;
    assert_eq!(code, "CONFLICT");
    assert_clean(&app).await;
}

/// A field that fails is null in `data` (async-graphql 7 leaves it out), and a failed non-null
/// field nulls its parent, up to the whole `data` for a mutation's non-null payload.
async fn failed_fields_are_null_as_the_spec_says(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    let body = app
        .post(
            r#"{ issue(id: "issue-020e") { name c: fieldValue(fieldId: "garbage") { value } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"],
        json!({"issue": {"name": "Needs Painting", "c": null}})
    );
    assert_eq!(body["errors"][0]["path"], json!(["issue", "c"]));
    let body = app
        .post(
            r#"{ project(id: "project-35e9") { name issues(first: 0) { edges { cursor } } } t: tenant(id: "tenant-0807") { name } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"],
        json!({"project": null, "t": {"name": "ACME Engineering"}})
    );
    let body = app
        .post(
            r#"mutation { a: createTenant(input: {name: "A"}) { tenant { name } } b: createIssue(input: {projectId: "project-0000", name: "x"}) { issue { id } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(body["data"], Value::Null);
    assert_eq!(body["errors"][0]["extensions"]["code"], "NOT_FOUND");
    // `data` is null, but the tenant was created: the answer says so.
    let applied = body["extensions"]["applied"].as_array().expect("applied");
    assert_eq!(applied.len(), 1, "{body:#}");
    assert_eq!(applied[0]["mutation"], "createTenant");
    let tenant = applied[0]["id"].as_str().unwrap();
    let read = app
        .data(
            "query($id: ID!) { tenant(id: $id) { name } }",
            json!({ "id": tenant }),
        )
        .await;
    assert_eq!(read["tenant"]["name"], "A");
    let body = app
        .post(
            r#"{ nodes(ids: ["issue-020e"]) { id ... on Issue { f: fieldValue(fieldId: "bad") { value } } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"],
        json!({"nodes": [{"id": "issue-020e", "f": null}]})
    );
}

/// An edit that changes nothing writes nothing and keeps every version, so it cannot make
/// another client's `expectedVersion` stale.
async fn edits_that_change_nothing_write_nothing(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;
    let issue = create_issue(
        &app,
        &f.project,
        "same",
        json!([{"fieldId": f.int_field, "value": "1"}]),
    )
    .await;
    let id = issue["issue"]["id"].as_str().unwrap();
    let noops = [
        (UPDATE_ISSUE, json!({"id": id})),
        (
            UPDATE_ISSUE,
            json!({"id": id, "name": " same ", "state": "OPEN"}),
        ),
        (SET_VALUES, json!({"issue": id, "values": []})),
        (
            SET_VALUES,
            json!({"issue": id, "values": [{"fieldId": f.int_field, "value": "01"}]}),
        ),
        (
            SET_VALUES,
            json!({"issue": id, "values": [{"fieldId": f.text_field, "value": null}]}),
        ),
        (
            r#"mutation($id: ID!) { updateProject(input: {id: $id, name: "Bridge"}) { project { version } } }"#,
            json!({"id": f.project}),
        ),
        (
            r#"mutation($id: ID!) { updateCustomField(input: {id: $id, name: "Estimate"}) { customField { version } } }"#,
            json!({"id": f.int_field}),
        ),
        (
            r#"mutation($id: ID!) { updateTenant(input: {id: $id, name: "Acme"}) { tenant { id } } }"#,
            json!({"id": f.tenant}),
        ),
    ];
    for (query, vars) in noops {
        let body = app.post(query, vars.clone()).await;
        assert!(body.get("errors").is_none(), "{vars}: {body:#}");
        assert_eq!(
            body["extensions"]["cost"]["writeCapacityUnits"], 0.0,
            "{vars}"
        );
    }
    let now = app
        .data(
            r#"query($i: ID!, $p: ID!, $f: ID!) { issue(id: $i) { version } project(id: $p) { version } node(id: $f) { ... on CustomField { version } } }"#,
            json!({"i": id, "p": f.project, "f": f.int_field}),
        )
        .await;
    assert_eq!(
        now,
        json!({"issue": {"version": 1}, "project": {"version": 1}, "node": {"version": 1}})
    );
}

async fn client_mutation_ids_make_retries_idempotent(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;
    let vars = json!({"project": f.project, "name": "once", "cmid": "req-1"});
    let first = app.data(CREATE_ISSUE, vars.clone()).await["createIssue"].clone();
    // A retry whose request is not byte-identical (literals instead of variables, other
    // formatting, name not yet trimmed) but means the same input returns the first result.
    let retry = format!(
        r#"mutation {{ createIssue(input: {{clientMutationId: "req-1", name: "  once ", projectId: "{}"}}) {{ clientMutationId issue {{ id num }} }} }}"#,
        f.project
    );
    let again = app.data(&retry, json!({})).await["createIssue"].clone();
    assert_eq!(first["issue"]["id"], again["issue"]["id"]);
    assert_eq!(again["issue"]["num"], 1);
    assert_eq!(again["clientMutationId"], "req-1");
    // The same id with other input is refused, not answered with another call's result.
    let mut other = vars.clone();
    other["values"] = json!([{"fieldId": f.int_field, "value": "3"}]);
    let (code, message) = app.error(CREATE_ISSUE, other).await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(message.starts_with("input.clientMutationId: "), "{message}");
    let next = create_issue(&app, &f.project, "next", json!([])).await;
    assert_eq!(next["issue"]["num"], 2, "the retry minted no number");
    // Concurrent retries of one cell edit apply once.
    let id = first["issue"]["id"].as_str().unwrap();
    let edit =
        json!({"issue": id, "values": [{"fieldId": f.int_field, "value": "8"}], "cmid": "edit-1"});
    let (a, b) = tokio::join!(
        app.data(SET_VALUES, edit.clone()),
        app.data(SET_VALUES, edit)
    );
    assert_eq!(
        a["setIssueFieldValues"]["issue"]["id"],
        b["setIssueFieldValues"]["issue"]["id"]
    );
    let version = app
        .data(
            r#"query($id: ID!) { issue(id: $id) { version } }"#,
            json!({"id": id}),
        )
        .await;
    assert_eq!(version["issue"]["version"], 2, "applied exactly once");
    // Concurrent retries of a conditional update both get the one result, never CONFLICT.
    let update = r#"mutation($id: ID!) { updateIssue(input: {id: $id, name: "Twice", expectedVersion: 2, clientMutationId: "upd-1"}) { issue { name version } } }"#;
    let (a, b) = tokio::join!(
        app.post(update, json!({"id": id})),
        app.post(update, json!({"id": id}))
    );
    for body in [&a, &b] {
        assert!(body.get("errors").is_none(), "{body:#}");
        assert_eq!(body["data"]["updateIssue"]["issue"]["name"], "Twice");
    }
    // The same id for another mutation is refused.
    let (code, message) = app
        .error(CREATE_TENANT, json!({"name": "t", "cmid": "req-1"}))
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(message.contains("clientMutationId"), "{message}");
    assert_clean(&app).await;
}

/// Rows other tools wrote: a cell its field's type does not accept blocks edits with a clear
/// message until the edit sets or clears it; a project with an explicit `FieldsVersion` of 0
/// takes writes like one without.
async fn foreign_rows_are_edited_safely(backend: Backend) {
    use gridgate::store::{AttrPath, AttributeValue, Key, UpdateAction, WriteOp};
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;
    let issue = create_issue(&app, &f.project, "a", json!([])).await;
    let id = issue["issue"]["id"].as_str().unwrap();
    let tenant_key = |pk: &str, sk: &str| Key::new(pk, sk);
    app.store
        .transact_write(vec![
            WriteOp::Update {
                key: tenant_key(id, &f.project),
                actions: vec![UpdateAction::Set(
                    AttrPath::new(["Values", f.int_field.as_str()]),
                    AttributeValue::N("4.5".into()),
                )],
                condition: None,
            },
            WriteOp::Update {
                key: tenant_key(&f.project, &f.tenant),
                actions: vec![UpdateAction::Set(
                    AttrPath::new(["FieldsVersion"]),
                    AttributeValue::N("0".into()),
                )],
                condition: None,
            },
        ])
        .await
        .unwrap();
    let (code, message) = app
        .error(UPDATE_ISSUE, json!({"id": id, "name": "b"}))
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(
        message.starts_with("input.name: the issue's cell of") && message.contains("\"4.5\""),
        "{message}"
    );
    let fixed = app
        .data(
            SET_VALUES,
            json!({"issue": id, "values": [{"fieldId": f.int_field, "value": "4"}]}),
        )
        .await;
    assert_eq!(
        fixed["setIssueFieldValues"]["issue"]["fieldValues"],
        json!([{"field": {"id": f.int_field}, "value": "4"}])
    );
    create_issue(&app, &f.project, "b", json!([])).await;
    // The other tool's cell bypassed the project's counters, which no edit of the issue can
    // see (the cell was there before and after it): `verify` reports them and `reindex`
    // repairs them.
    let found = verify::verify(&app.store, None).await.expect("verify");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].to_string().contains("issue counters"),
        "{}",
        found[0]
    );
    verify::reindex(&app.store, None).await.expect("reindex");
    assert_clean(&app).await;
}

async fn deleting_a_field_hides_it_and_sweeps_its_cells(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;
    for i in 0..5 {
        create_issue(
            &app,
            &f.project,
            &format!("i{i}"),
            json!([{"fieldId": f.int_field, "value": i.to_string()}, {"fieldId": f.text_field, "value": "t"}]),
        )
        .await;
    }
    let deleted = app
        .data(
            r#"mutation($id: ID!) { deleteCustomField(input: {id: $id}) { deletedId } }"#,
            json!({"id": f.int_field}),
        )
        .await;
    assert_eq!(deleted["deleteCustomField"]["deletedId"], f.int_field);
    // Gone from the API at once, whatever the sweep has done so far.
    let grid = app
        .data(
            r#"query($p: ID!, $f: ID!) { project(id: $p) { customFields { id } issues { nodes { fieldValues { field { id } } } } } node(id: $f) { id } }"#,
            json!({"p": f.project, "f": f.int_field}),
        )
        .await;
    assert_eq!(
        grid["project"]["customFields"],
        json!([{"id": f.text_field}])
    );
    assert_eq!(grid["node"], Value::Null);
    for node in grid["project"]["issues"]["nodes"].as_array().unwrap() {
        assert_eq!(
            node["fieldValues"],
            json!([{"field": {"id": f.text_field}}])
        );
    }
    let (code, _) = app
        .error(
            GRID,
            json!({"project": f.project, "order": {"field": "CUSTOM_FIELD", "customFieldId": f.int_field}}),
        )
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    let (code, _) = app
        .error(
            r#"mutation($id: ID!) { deleteCustomField(input: {id: $id}) { deletedId } }"#,
            json!({"id": f.int_field}),
        )
        .await;
    assert_eq!(code, "NOT_FOUND");
    app.sweeps_idle().await;
    assert_clean(&app).await;
    let pending = gridgate::repo::sweep::Sweeper::new(app.store.clone(), Default::default())
        .pending()
        .await
        .unwrap();
    assert!(pending.is_empty(), "{pending:?}");
}

async fn deleting_a_project_sweeps_every_row(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;
    let keep = app
        .data(CREATE_PROJECT, json!({"tenant": f.tenant, "name": "Keep"}))
        .await["createProject"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    create_issue(&app, &keep, "kept", json!([])).await;
    let mut ids = Vec::new();
    for i in 0..30 {
        let issue = create_issue(
            &app,
            &f.project,
            &format!("i{i}"),
            json!([{"fieldId": f.int_field, "value": "1"}]),
        )
        .await;
        ids.push(issue["issue"]["id"].as_str().unwrap().to_string());
    }
    app.data(
        r#"mutation($id: ID!) { deleteProject(input: {id: $id}) { deletedId } }"#,
        json!({"id": f.project}),
    )
    .await;
    let after = app
        .data(
            r#"query($p: ID!, $t: ID!, $i: ID!) { project(id: $p) { id } issue(id: $i) { id } tenant(id: $t) { projects { nodes { name } } } }"#,
            json!({"p": f.project, "t": f.tenant, "i": ids[0]}),
        )
        .await;
    assert_eq!(after["project"], Value::Null);
    assert_eq!(after["issue"], Value::Null);
    assert_eq!(
        after["tenant"]["projects"]["nodes"],
        json!([{"name": "Keep"}])
    );
    let (code, _) = app
        .error(CREATE_ISSUE, json!({"project": f.project, "name": "late"}))
        .await;
    assert_eq!(code, "NOT_FOUND");
    app.sweeps_idle().await;
    assert_clean(&app).await;
    // Nothing of the project is left but the other project's rows.
    let mut left = Vec::new();
    gridgate::store::retry::scan_all(app.store.as_ref(), |page| left.extend(page))
        .await
        .unwrap();
    let mentions = left
        .iter()
        .filter(|item| format!("{item:?}").contains(f.project.as_str()))
        .count();
    assert_eq!(mentions, 0, "rows of the deleted project remain");
}

/// The write cost of the figures the issue asks for, exact on both stores.
async fn write_costs(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let f = fixture(&app).await;
    let mut values = Vec::new();
    for i in 0..10 {
        let id = app
            .data(
                CREATE_FIELD,
                json!({"project": f.project, "name": format!("c{i}"), "type": "INT"}),
            )
            .await["createCustomField"]["customField"]["id"]
            .clone();
        values.push(json!({"fieldId": id, "value": (i * 1000).to_string()}));
    }
    let body = app
        .post(
            r#"mutation($p: ID!, $v: [FieldValueInput!]) { createIssue(input: {projectId: $p, name: "Ten values", fieldValues: $v}) { issue { id fieldValues { value } project { name } } } }"#,
            json!({"p": f.project, "v": values}),
        )
        .await;
    let cost = body["extensions"]["cost"].clone();
    eprintln!("WRITE COST backend={backend:?} createIssue(10 values) {cost}");
    // One consistent Query of the project, one TransactWriteItems of 14 rows (project counter,
    // issue, name and state rows, 10 value rows), one consistent read of the issue back; the
    // payload's cells and project come from the data the write was checked against.
    assert_eq!(cost["dynamodbCalls"], 3);
    assert_eq!(
        body["data"]["createIssue"]["issue"]["fieldValues"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    // Reads: the project partition (12 fields) and the issue, each strongly consistent.
    assert_eq!(cost["readCapacityUnits"], 2.0);
    // Each of the 14 rows is under 1 KB, and a transactional write costs 2 WCU per started KB
    // per row: 28 WCU, as AWS charges and the embedded store computes. DynamoDB Local reports
    // far less for transactions (see ARCHITECTURE.md, "Cost accounting"), so its own figure is
    // pinned separately.
    let wcu = |embedded: f64, local: f64| match backend {
        Backend::Embedded => embedded,
        Backend::Dynamodb => local,
    };
    assert_eq!(cost["writeCapacityUnits"], wcu(28.0, 4.0));
    let issue = body["data"]["createIssue"]["issue"]["id"].as_str().unwrap();
    let body = app
        .post(
            r#"mutation($i: ID!, $f: ID!) { setIssueFieldValues(input: {issueId: $i, values: [{fieldId: $f, value: "5"}]}) { issue { id fieldValues { value } } } }"#,
            json!({"i": issue, "f": values[3]["fieldId"]}),
        )
        .await;
    let cost = body["extensions"]["cost"].clone();
    eprintln!("WRITE COST backend={backend:?} one cell edit {cost}");
    // Reads: the issue and its project; the transaction: issue, project check, value row;
    // the issue read back.
    assert_eq!(cost["dynamodbCalls"], 4);
    assert_eq!(cost["readCapacityUnits"], 3.0);
    assert_eq!(cost["writeCapacityUnits"], wcu(6.0, 12.0));
    // Moving a column rewrites its definition row and nothing else, whatever the issues.
    let body = app
        .post(
            r#"mutation($f: ID!) { updateCustomField(input: {id: $f, position: 99}) { customField { position } } }"#,
            json!({"f": values[0]["fieldId"]}),
        )
        .await;
    let cost = body["extensions"]["cost"].clone();
    eprintln!("WRITE COST backend={backend:?} move a column {cost}");
    assert_eq!(
        body["data"]["updateCustomField"]["customField"]["position"],
        99
    );
    // Lookup row and project partition to plan, one transaction, the same two reads back.
    assert_eq!(cost["dynamodbCalls"], 5);
    assert_eq!(cost["writeCapacityUnits"], 2.0);
}

// ---------------------------------------------------------------------------------------------
// Wrong-typed input: refused before anything runs.

const ACME: &str = "tenant-0807";
const BRIDGE: &str = "project-35e9";
const ISSUE: &str = "issue-020e";
const SIGN_OFF: &str = "xattrib-47e5";

/// A valid input of `mutation` on the demo data. Every mutation of the schema needs one: a
/// mutation added later fails the matrix until it has one here.
fn valid_input(mutation: &str) -> Value {
    match mutation {
        "createTenant" => json!({"name": "Matrix"}),
        "updateTenant" => json!({"id": ACME, "name": "Renamed"}),
        "createProject" => json!({"tenantId": ACME, "name": "P"}),
        "updateProject" => json!({"id": BRIDGE, "name": "R"}),
        "deleteProject" => json!({"id": BRIDGE}),
        "createCustomField" => json!({"projectId": BRIDGE, "name": "F", "type": "TEXT"}),
        "updateCustomField" => json!({"id": SIGN_OFF, "name": "G"}),
        "deleteCustomField" => json!({"id": SIGN_OFF}),
        "createIssue" => {
            json!({"projectId": BRIDGE, "name": "I", "fieldValues": [{"fieldId": SIGN_OFF, "value": "ok"}]})
        }
        "updateIssue" => json!({"id": ISSUE, "name": "J"}),
        "setIssueFieldValues" => {
            json!({"issueId": ISSUE, "values": [{"fieldId": SIGN_OFF, "value": "x"}]})
        }
        "deleteIssue" => json!({"id": ISSUE}),
        "createView" => json!({"projectId": BRIDGE, "name": "V", "orderBy": [{"field": "NAME"}],
                               "filter": {"column": {"field": "STATE"}, "eq": "OPEN"}, "columns": [SIGN_OFF]}),
        "updateView" => json!({"id": "xview-01", "name": "W"}),
        "deleteView" => json!({"id": "xview-01"}),
        other => panic!("the matrix has no valid input for `{other}`: add one"),
    }
}

/// The schema's mutations, each with its input type's fields (name, type as SDL text).
fn mutations() -> Vec<(String, Vec<(String, String)>)> {
    use async_graphql::parser::types::{TypeKind, TypeSystemDefinition};
    let schema = async_graphql::parser::parse_schema(gridgate::graphql::sdl()).unwrap();
    let mut inputs = std::collections::HashMap::new();
    let mut mutations = Vec::new();
    for definition in &schema.definitions {
        let TypeSystemDefinition::Type(ty) = definition else {
            continue;
        };
        let ty = &ty.node;
        match &ty.kind {
            TypeKind::InputObject(input) => {
                let fields = input
                    .fields
                    .iter()
                    .map(|f| (f.node.name.node.to_string(), f.node.ty.node.to_string()));
                inputs.insert(ty.name.node.to_string(), fields.collect::<Vec<_>>());
            }
            TypeKind::Object(object) if ty.name.node == "Mutation" => {
                for field in &object.fields {
                    let input = field.node.arguments[0].node.ty.node.to_string();
                    mutations.push((field.node.name.node.to_string(), input));
                }
            }
            _ => {}
        }
    }
    mutations
        .into_iter()
        .map(|(name, input)| {
            let fields = inputs[input.trim_end_matches('!')].clone();
            (name, fields)
        })
        .collect()
}

/// Values of every shape (string, number, boolean, list, object, null) that are wrong for a
/// value of type `ty` (SDL text), each with its shape's name. A shape that could be right for
/// the type (a string for a `String`) is left out.
fn wrong_values(ty: &str) -> Vec<(&'static str, Value)> {
    let required = ty.ends_with('!');
    let named = ty.trim_end_matches('!');
    let mut wrong = Vec::new();
    if !matches!(named, "String" | "ID") {
        // Not a value of any enum of the schema either.
        wrong.push(("string", json!("not-a-value")));
    }
    // A float is a number, but not an `Int` or an `ID`.
    wrong.push((
        "number",
        if named == "Int" || named == "ID" {
            json!(1.5)
        } else {
            json!(5)
        },
    ));
    wrong.push(("boolean", json!(true)));
    // A list where a single value is expected, or a list of booleans where a list of
    // anything else is: the schema's inputs have no boolean.
    wrong.push(("list", json!([true])));
    // No input type has a field `bogus`, and no scalar takes an object.
    wrong.push(("object", json!({"bogus": 1})));
    if required {
        wrong.push(("null", Value::Null));
    }
    wrong
}

/// A JSON value as a GraphQL literal (strings quoted; the checks take a string for an enum).
fn literal(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}: {}", literal(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(literal).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// Every item of the table, to compare before and after (as a set: [`Table`]'s equality).
async fn table(app: &TestApp) -> Table {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let page = app.store.scan(start.as_ref(), None).await.expect("scan");
        items.extend(page.items);
        match page.last_evaluated {
            Some(key) => start = Some(key),
            None => break,
        }
    }
    Table(items)
}

/// A table's items; two tables are equal when they hold the same items, in any order (items
/// are maps, with no order to sort them by).
#[derive(Debug)]
struct Table(Vec<gridgate::store::Item>);

impl PartialEq for Table {
    fn eq(&self, other: &Table) -> bool {
        self.0.len() == other.0.len() && self.0.iter().all(|item| other.0.contains(item))
    }
}

/// Every mutation, with every wrong-typed shape put in its `input` and in each of its input's
/// fields, sent in variables and as literals: each is refused with a client's code before a
/// single store call, and the table is unchanged after all of them.
async fn wrong_typed_input_is_refused_before_anything_runs(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    let before = table(&app).await;
    let mut cases = 0;
    for (mutation, fields) in mutations() {
        let valid = valid_input(&mutation);
        // (where, the input with one wrong value)
        let mut inputs: Vec<(String, Value)> = wrong_values("Input!")
            .into_iter()
            .map(|(shape, wrong)| (format!("input as {shape}"), wrong))
            .collect();
        for (field, ty) in &fields {
            for (shape, wrong) in wrong_values(ty) {
                let mut input = valid.clone();
                input[field.as_str()] = wrong;
                inputs.push((format!("{field} as {shape}"), input));
            }
        }
        for (place, input) in inputs {
            let by_variable = format!(
                "mutation($in: {}!) {{ {mutation}(input: $in) {{ __typename }} }}",
                input_type(&mutation)
            );
            let by_literal = format!(
                "mutation {{ {mutation}(input: {}) {{ __typename }} }}",
                literal(&input)
            );
            for (how, query, variables) in [
                ("variables", by_variable, json!({ "in": input })),
                ("literal", by_literal, json!({})),
            ] {
                let body = app.post(&query, variables).await;
                let code = body["errors"][0]["extensions"]["code"].as_str();
                assert!(
                    matches!(code, Some("BAD_USER_INPUT" | "GRAPHQL_VALIDATION_FAILED")),
                    "{mutation}, {place}, in {how}: {body:#}"
                );
                assert!(body["data"].is_null(), "{mutation}, {place}: {body:#}");
                assert!(body["extensions"].get("applied").is_none(), "{body:#}");
                assert_eq!(
                    body["extensions"]["cost"]["dynamodbCalls"], 0,
                    "{mutation}, {place}, in {how}: refused before any call: {body:#}"
                );
                cases += 1;
            }
        }
    }
    assert_eq!(
        table(&app).await,
        before,
        "no wrong-typed input changed anything"
    );
    // Every mutation, its input and each input field, with 4 to 6 shapes, two ways.
    assert!(cases > 400, "{cases} cases");
    eprintln!("wrong-typed input matrix: {cases} requests, all refused, table unchanged");
}

fn input_type(mutation: &str) -> String {
    let mut chars = mutation.chars();
    let first = chars.next().unwrap().to_ascii_uppercase();
    format!("{first}{}Input", chars.as_str())
}

/// A document whose first mutation is valid and whose second has wrong-typed input runs
/// nothing: the first mutation is not applied behind an error.
async fn no_mutation_runs_before_a_refused_input(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    let before = table(&app).await;
    let query = r#"mutation($in: CreateIssueInput!) {
        a: updateIssue(input: {id: "issue-020e", name: "v2"}) { issue { name } }
        b: createIssue(input: $in) { issue { id } }
    }"#;
    for input in [
        json!("x"),
        json!(5),
        json!(true),
        json!([]),
        json!({"bogus": 1}),
    ] {
        let body = app.post(query, json!({ "in": input })).await;
        assert_eq!(
            body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
            "{body:#}"
        );
        assert!(body["data"].is_null(), "{body:#}");
    }
    let literal = r#"mutation {
        a: updateIssue(input: {id: "issue-020e", name: "v2"}) { issue { name } }
        b: createIssue(input: "x") { issue { id } }
    }"#;
    let body = app.post(literal, json!({})).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED",
        "{body:#}"
    );
    assert_eq!(
        table(&app).await,
        before,
        "the first mutation was not applied"
    );
    let name = app
        .data(r#"{ issue(id: "issue-020e") { name } }"#, json!({}))
        .await;
    assert_eq!(name["issue"]["name"], "Needs Painting");
}

/// Wrong inputs the matrix does not reach: inside list items, a variable of the wrong type in a
/// literal, null for a variable that stands where a value is required (allowed only through
/// its default), a wrong input in a later mutation that `@skip` does not remove. Each is
/// refused before any call, and nothing changes.
async fn wrong_inputs_in_depth_are_refused_before_anything_runs(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    let before = table(&app).await;
    let cases = [
        (
            r#"mutation($in: CreateIssueInput!) { createIssue(input: $in) { __typename } }"#,
            json!({"in": {"projectId": BRIDGE, "name": "n", "fieldValues": [{"fieldId": SIGN_OFF, "value": "ok"}, {"fieldId": true}]}}),
            "BAD_USER_INPUT",
        ),
        (
            r#"mutation { createIssue(input: {projectId: "project-35e9", name: "n", fieldValues: [{fieldId: "xattrib-47e5"}, {fieldId: 1.5}]}) { __typename } }"#,
            json!({}),
            "GRAPHQL_VALIDATION_FAILED",
        ),
        (
            r#"mutation($x: Int) { updateIssue(input: {id: "issue-020e", name: $x}) { __typename } }"#,
            json!({"x": 5}),
            "GRAPHQL_VALIDATION_FAILED",
        ),
        (
            r#"mutation($in: UpdateIssueInput = {id: "issue-020e", name: "d"}) { updateIssue(input: $in) { __typename } }"#,
            json!({"in": null}),
            "BAD_USER_INPUT",
        ),
        (
            r#"mutation($s: IssueState) { updateIssue(input: {id: "issue-020e", state: $s}) { __typename } }"#,
            json!({"s": "HALF_OPEN"}),
            "BAD_USER_INPUT",
        ),
        (
            r#"mutation($b: Boolean!) {
                a: updateIssue(input: {id: "issue-020e", name: "v2"}) { __typename }
                b: createIssue(input: {projectId: true, name: "x"}) @skip(if: $b) { __typename }
            }"#,
            json!({"b": false}),
            "GRAPHQL_VALIDATION_FAILED",
        ),
    ];
    for (query, variables, code) in cases {
        let body = app.post(query, variables).await;
        assert_eq!(
            body["errors"][0]["extensions"]["code"], code,
            "{query}: {body:#}"
        );
        assert_eq!(
            body["extensions"]["cost"]["dynamodbCalls"], 0,
            "{query}: {body:#}"
        );
    }
    assert_eq!(table(&app).await, before);
    // The default of a variable that is left out applies.
    let body = app
        .post(
            r#"mutation($in: UpdateIssueInput = {id: "issue-020e", name: "From the default"}) { updateIssue(input: $in) { issue { name } } }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        body["data"]["updateIssue"]["issue"]["name"], "From the default",
        "{body:#}"
    );
}

crate::both_stores!(
    wrong_inputs_in_depth_are_refused_before_anything_runs,
    wrong_typed_input_is_refused_before_anything_runs,
    no_mutation_runs_before_a_refused_input,
    every_mutation_round_trips,
    validation_errors_name_the_input_field,
    stale_versions_conflict_and_change_nothing,
    client_mutation_ids_make_retries_idempotent,
    edits_that_change_nothing_write_nothing,
    failed_fields_are_null_as_the_spec_says,
    foreign_rows_are_edited_safely,
    deleting_a_field_hides_it_and_sweeps_its_cells,
    deleting_a_project_sweeps_every_row,
    write_costs,
);
