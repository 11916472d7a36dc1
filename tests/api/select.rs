//! API tests of SELECT columns over HTTP, against both stores: options created, edited and
//! refused; cells that must name an option; sorting and filtering by the options' order; a
//! reorder that re-keys only the moved option's index rows, and a removal that clears its
//! cells and their counter, both on the leased sweep, with `status` saying `REINDEXING` until
//! the sweep is done.

use std::collections::BTreeMap;

use crate::support::app::{Backend, TestApp};
use gridgate::repo::sweep::{SweepConfig, SweepOutcome, Sweeper};
use gridgate::repo::verify;
use gridgate::store::{Index, Query};
use serde_json::{json, Value};

/// The lease owner of the app and of the test's own sweeper, so the test can finish a job
/// the app claimed and left (it runs no batch: `stop_after_batches: Some(0)`).
const OWNER: &str = "select-test";

fn sweep_config() -> SweepConfig {
    crate::support::app::test_sweeps(OWNER)
}

/// An app whose own sweeps stop before their first batch.
async fn paused_app(backend: Backend) -> TestApp {
    crate::support::app::paused_app(backend, OWNER).await
}

/// Runs the pending sweeps to the end, as the app would without the pause.
async fn finish_sweeps(app: &TestApp) {
    app.sweeps_idle().await;
    let outcomes = Sweeper::new(app.store.clone(), sweep_config())
        .run_pending()
        .await
        .expect("sweeps");
    assert!(
        outcomes.iter().all(|(_, o)| *o == SweepOutcome::Finished),
        "{outcomes:?}"
    );
}

const FIELD_PARTS: &str = "id type version status options { id label color position }";

async fn create_select(app: &TestApp, project: &str, options: Value) -> Value {
    let data = app
        .data(
            &format!(
                r#"mutation($p: ID!, $o: [SelectOptionInput!]) {{
                    createCustomField(input: {{projectId: $p, name: "Priority", type: SELECT, options: $o}}) {{
                      customField {{ {FIELD_PARTS} }} }} }}"#
            ),
            json!({"p": project, "o": options}),
        )
        .await;
    data["createCustomField"]["customField"].clone()
}

async fn update_options(app: &TestApp, field: &str, options: Value) -> Value {
    let data = app
        .data(
            &format!(
                r#"mutation($f: ID!, $o: [SelectOptionInput!]) {{
                    updateCustomField(input: {{id: $f, options: $o}}) {{ customField {{ {FIELD_PARTS} }} }} }}"#
            ),
            json!({"f": field, "o": options}),
        )
        .await;
    data["updateCustomField"]["customField"].clone()
}

fn labels(field: &Value) -> Vec<String> {
    field["options"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(at, o)| {
            assert_eq!(o["position"], at, "{field}");
            o["label"].as_str().unwrap().to_string()
        })
        .collect()
}

/// The id of the option labelled `label`.
fn option_id(field: &Value, label: &str) -> String {
    field["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["label"] == label)
        .unwrap_or_else(|| panic!("no option {label} in {field}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The option list to send for the labels `order`: existing options by id (with their label
/// and colour), other labels as new options.
fn inputs(field: &Value, order: &[&str]) -> Value {
    json!(order
        .iter()
        .map(|label| {
            match field["options"]
                .as_array()
                .unwrap()
                .iter()
                .find(|o| o["label"] == *label)
            {
                Some(o) => json!({"id": o["id"], "label": o["label"], "color": o["color"]}),
                None => json!({"label": label}),
            }
        })
        .collect::<Vec<_>>())
}

const GRID: &str = r#"query($p: ID!, $order: IssueOrder, $filter: IssueFilter) { project(id: $p) {
    issues(first: 100, orderBy: $order, filter: $filter) {
      totalCount
      nodes { num version fieldValues { value option { id label color position } field { id } } } } } }"#;

/// The issue nums in the order a sort by `field` gives, with each one's option label (`None`
/// for an empty cell, or a cell whose option is gone).
async fn sorted(
    app: &TestApp,
    project: &str,
    field: &str,
    dir: &str,
) -> Vec<(i64, Option<String>)> {
    let data = app
        .data(
            GRID,
            json!({"p": project, "order": {"field": "CUSTOM_FIELD", "customFieldId": field, "direction": dir}}),
        )
        .await;
    data["project"]["issues"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let cell = n["fieldValues"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["field"]["id"] == field);
            let label = cell.and_then(|c| c["option"]["label"].as_str().map(String::from));
            (n["num"].as_i64().unwrap(), label)
        })
        .collect()
}

/// The labels in the order `sorted` gave them, empty cells as "-".
fn label_order(rows: &[(i64, Option<String>)]) -> Vec<String> {
    rows.iter()
        .map(|(_, l)| l.clone().unwrap_or_else(|| "-".into()))
        .collect()
}

/// Every value row of `field`: issue id → `GSI1SK`.
async fn value_rows(app: &TestApp, field: &str) -> BTreeMap<String, String> {
    let partition = format!("xvalue-{}", field.trim_start_matches("xattrib-"));
    let rows = gridgate::store::retry::query_all(
        app.store.as_ref(),
        &Query::partition(Index::Gsi1, partition),
    )
    .await
    .expect("query");
    rows.iter()
        .map(|row| {
            let text = |name: &str| match row.get(name) {
                Some(gridgate::store::AttributeValue::S(s)) => s.clone(),
                other => panic!("{name}: {other:?}"),
            };
            (text("PK"), text("GSI1SK"))
        })
        .collect()
}

async fn assert_clean(app: &TestApp) {
    let found = verify::verify(&app.store, None).await.expect("verify");
    assert!(found.is_empty(), "verify found drift: {found:#?}");
}

async fn project(app: &TestApp) -> String {
    let tenant = app
        .data(
            r#"mutation { createTenant(input: {name: "Acme"}) { tenant { id } } }"#,
            json!({}),
        )
        .await["createTenant"]["tenant"]["id"]
        .clone();
    app.data(
        r#"mutation($t: ID!) { createProject(input: {tenantId: $t, name: "Board"}) { project { id } } }"#,
        json!({"t": tenant}),
    )
    .await["createProject"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn select_columns_sort_filter_and_reindex(backend: Backend) {
    let app = paused_app(backend).await;
    let project = project(&app).await;
    let field = create_select(
        &app,
        &project,
        json!([{"label": " Low ", "color": "gray"}, {"label": "Mid", "color": "#00aa00"}, {"label": "High", "color": "red"}]),
    )
    .await;
    assert_eq!(field["type"], "SELECT");
    assert_eq!(field["status"], "READY");
    assert_eq!(labels(&field), ["Low", "Mid", "High"]);
    assert_eq!(field["options"][0]["color"], "gray");
    let id = field["id"].as_str().unwrap().to_string();
    let (low, mid, high) = (
        option_id(&field, "Low"),
        option_id(&field, "Mid"),
        option_id(&field, "High"),
    );
    // Ids chosen so their own order differs from the options' (whatever was generated).
    let cells = [&high, &low, &mid, "", &high, &low, &mid, &low, ""];
    for (i, option) in cells.iter().enumerate() {
        let values = if option.is_empty() {
            json!([])
        } else {
            json!([{"fieldId": id, "value": option}])
        };
        app.data(
            r#"mutation($p: ID!, $n: String!, $v: [FieldValueInput!]) { createIssue(input: {projectId: $p, name: $n, fieldValues: $v}) { issue { id } } }"#,
            json!({"p": project, "n": format!("issue {i}"), "v": values}),
        )
        .await;
    }
    // A cell names an option by its id: anything else is refused, naming the input.
    let (code, message) = app
        .error(
            r#"mutation($p: ID!, $v: [FieldValueInput!]) { createIssue(input: {projectId: $p, name: "x", fieldValues: $v}) { issue { id } } }"#,
            json!({"p": project, "v": [{"fieldId": id, "value": "Low"}]}),
        )
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(message.contains("fieldValues[0].value"), "{message}");

    let asc = sorted(&app, &project, &id, "ASC").await;
    assert_eq!(
        label_order(&asc),
        ["Low", "Low", "Low", "Mid", "Mid", "High", "High", "-", "-"]
    );
    let desc = sorted(&app, &project, &id, "DESC").await;
    assert_eq!(
        label_order(&desc),
        ["High", "High", "Mid", "Mid", "Low", "Low", "Low", "-", "-"]
    );
    // Filters compare by the options' order too, and count exactly.
    let data = app
        .data(
            GRID,
            json!({"p": project, "filter": {"column": {"field": "CUSTOM_FIELD", "customFieldId": id}, "gt": low}}),
        )
        .await;
    assert_eq!(
        data["project"]["issues"]["nodes"].as_array().unwrap().len(),
        4
    );
    let data = app
        .data(
            GRID,
            json!({"p": project, "filter": {"column": {"field": "CUSTOM_FIELD", "customFieldId": id}, "isEmpty": false}}),
        )
        .await;
    assert_eq!(data["project"]["issues"]["totalCount"], 7);
    let (code, message) = app
        .error(
            GRID,
            json!({"p": project, "filter": {"column": {"field": "CUSTOM_FIELD", "customFieldId": id}, "eq": "Low"}}),
        )
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(message.starts_with("filter: eq:"), "{message}");

    // Move High to the front, rename Mid, add Urgent: only High's rows get new sort strings.
    let before = value_rows(&app, &id).await;
    let mut order = inputs(&field, &["High", "Low", "Mid"]);
    order[2]["label"] = json!("Medium");
    order
        .as_array_mut()
        .unwrap()
        .push(json!({"label": "Urgent"}));
    let edited = update_options(&app, &id, order).await;
    assert_eq!(labels(&edited), ["High", "Low", "Medium", "Urgent"]);
    assert_eq!(option_id(&edited, "Medium"), mid, "a rename keeps the id");
    assert_eq!(edited["status"], "REINDEXING");
    // While High's rows still carry its old key, a filter on the sorted field still finds
    // them: such leaves are tested on the rows read, not answered by a key condition.
    let data = app
        .data(
            GRID,
            json!({"p": project,
                   "order": {"field": "CUSTOM_FIELD", "customFieldId": id},
                   "filter": {"column": {"field": "CUSTOM_FIELD", "customFieldId": id}, "eq": high}}),
        )
        .await;
    assert_eq!(
        data["project"]["issues"]["nodes"].as_array().unwrap().len(),
        2
    );
    finish_sweeps(&app).await;
    let after = value_rows(&app, &id).await;
    assert_eq!(before.len(), after.len());
    let changed: Vec<&String> = before
        .iter()
        .filter(|(issue, sort)| after.get(*issue) != Some(*sort))
        .map(|(issue, _)| issue)
        .collect();
    assert_eq!(
        changed.len(),
        2,
        "only High's two cells are re-keyed: {changed:?}"
    );
    let data = app
        .data(
            &format!(
                r#"query($f: ID!) {{ node(id: $f) {{ ... on CustomField {{ {FIELD_PARTS} }} }} }}"#
            ),
            json!({"f": id}),
        )
        .await;
    assert_eq!(data["node"]["status"], "READY");
    let asc = sorted(&app, &project, &id, "ASC").await;
    assert_eq!(
        label_order(&asc),
        ["High", "High", "Low", "Low", "Low", "Medium", "Medium", "-", "-"]
    );

    // Remove Low: its cells read with no option until the sweep clears them, and no cell may
    // take it any more.
    let removed = update_options(&app, &id, inputs(&edited, &["High", "Medium", "Urgent"])).await;
    assert_eq!(labels(&removed), ["High", "Medium", "Urgent"]);
    assert_eq!(removed["status"], "REINDEXING");
    let (code, _) = app
        .error(
            r#"mutation($p: ID!, $v: [FieldValueInput!]) { createIssue(input: {projectId: $p, name: "x", fieldValues: $v}) { issue { id } } }"#,
            json!({"p": project, "v": [{"fieldId": id, "value": low}]}),
        )
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    let pending = sorted(&app, &project, &id, "ASC").await;
    assert_eq!(
        label_order(&pending),
        ["High", "High", "-", "-", "-", "Medium", "Medium", "-", "-"]
    );
    finish_sweeps(&app).await;
    let asc = sorted(&app, &project, &id, "ASC").await;
    assert_eq!(
        label_order(&asc),
        ["High", "High", "Medium", "Medium", "-", "-", "-", "-", "-"]
    );
    let data = app
        .data(
            GRID,
            json!({"p": project, "filter": {"column": {"field": "CUSTOM_FIELD", "customFieldId": id}, "isEmpty": true}}),
        )
        .await;
    assert_eq!(data["project"]["issues"]["totalCount"], 5);
    // The cleared issues' versions moved on (a cell of theirs changed).
    let versions: Vec<i64> = data["project"]["issues"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["version"].as_i64().unwrap())
        .collect();
    assert_eq!(
        versions.iter().filter(|v| **v == 2).count(),
        3,
        "{versions:?}"
    );
    assert_clean(&app).await;
}

async fn option_lists_are_checked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let project = project(&app).await;
    let refused = |query: String, vars: Value| {
        let app = &app;
        async move { app.error(&query, vars).await }
    };
    let create = |ty: &str| {
        format!(
            r#"mutation($p: ID!, $o: [SelectOptionInput!]) {{ createCustomField(input: {{projectId: $p, name: "F", type: {ty}, options: $o}}) {{ customField {{ id }} }} }}"#
        )
    };
    for (ty, options, path) in [
        ("INT", json!([{"label": "a"}]), "options"),
        (
            "SELECT",
            json!([{"label": "a"}, {"label": " A"}]),
            "options[1].label",
        ),
        ("SELECT", json!([{"label": ""}]), "options[0].label"),
        (
            "SELECT",
            json!([{"label": "a", "color": "chartreuse"}]),
            "options[0].color",
        ),
        (
            "SELECT",
            json!([{"id": "opt-00000000", "label": "a"}]),
            "options[0].id",
        ),
    ] {
        let (code, message) = refused(create(ty), json!({"p": project, "o": options})).await;
        assert_eq!(code, "BAD_USER_INPUT", "{ty} {options}");
        assert!(
            message.starts_with(&format!("input.{path}:")),
            "{ty} {options}: {message}"
        );
    }
    let many: Vec<Value> = (0..=200)
        .map(|i| json!({"label": format!("o{i}")}))
        .collect();
    let (code, message) = refused(create("SELECT"), json!({"p": project, "o": many})).await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(message.contains("at most 200 options"), "{message}");
    // Other types have no options, and a field without options takes no cell.
    let field = create_select(&app, &project, json!([])).await;
    assert_eq!(field["options"], json!([]));
    let (code, _) = refused(
        r#"mutation($p: ID!, $v: [FieldValueInput!]) { createIssue(input: {projectId: $p, name: "x", fieldValues: $v}) { issue { id } } }"#.into(),
        json!({"p": project, "v": [{"fieldId": field["id"], "value": "opt-00000000"}]}),
    )
    .await;
    assert_eq!(code, "BAD_USER_INPUT");
    let int = app
        .data(
            r#"mutation($p: ID!) { createCustomField(input: {projectId: $p, name: "N", type: INT}) { customField { id options { id } status } } }"#,
            json!({"p": project}),
        )
        .await;
    assert_eq!(
        int["createCustomField"]["customField"]["options"],
        json!([])
    );
    assert_eq!(int["createCustomField"]["customField"]["status"], "READY");
    assert_clean(&app).await;
}

/// Options moved back and forth without end: order keys made between ever closer neighbours
/// would grow by a byte an edit, until sort strings passed DynamoDB's limit and the sweep
/// failed for good. Keys stay short (a respacing re-keys every cell once in a while), every
/// sweep finishes, and the sort follows the options' order after each edit.
async fn endless_moves_keep_keys_short_and_the_field_ready(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let project = project(&app).await;
    let mut field = create_select(
        &app,
        &project,
        json!([{"label": "L0"}, {"label": "L1"}, {"label": "L2"}, {"label": "L3"}]),
    )
    .await;
    let id = field["id"].as_str().unwrap().to_string();
    for label in ["L3", "L2", "L1", "L0", "L3", "L2", "L1", "L0"] {
        app.data(
            r#"mutation($p: ID!, $v: [FieldValueInput!]) { createIssue(input: {projectId: $p, name: "i", fieldValues: $v}) { issue { id } } }"#,
            json!({"p": project, "v": [{"fieldId": id, "value": option_id(&field, label)}]}),
        )
        .await;
    }
    let patterns: [&[usize]; 2] = [&[0, 3, 2, 1], &[1, 2, 0, 3]];
    let steps = if backend == Backend::Embedded { 80 } else { 40 };
    for step in 0..steps {
        let live = labels(&field);
        let order: Vec<&str> = patterns[step % 2]
            .iter()
            .map(|&i| live[i].as_str())
            .collect();
        field = update_options(&app, &id, inputs(&field, &order)).await;
        app.sweeps_idle().await;
        let data = app
            .data(
                &format!(r#"query($f: ID!) {{ node(id: $f) {{ ... on CustomField {{ {FIELD_PARTS} }} }} }}"#),
                json!({"f": id}),
            )
            .await;
        assert_eq!(data["node"]["status"], "READY", "step {step}");
        let mut expected: Vec<String> = order
            .iter()
            .flat_map(|l| [l.to_string(), l.to_string()])
            .collect();
        expected.truncate(8);
        assert_eq!(
            label_order(&sorted(&app, &project, &id, "ASC").await),
            expected,
            "step {step}"
        );
        let longest = value_rows(&app, &id)
            .await
            .values()
            .map(String::len)
            .max()
            .unwrap_or(0);
        assert!(
            longest <= 32 + 11,
            "step {step}: a sort string of {longest} bytes"
        );
    }
    assert_clean(&app).await;
}

/// Rows another tool left under an option's key (an orphan, a row that disagrees with its
/// issue) do not hold the options sweep up: each becomes what its issue derives, or goes.
async fn drifted_rows_do_not_hold_up_the_options_sweep(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let project = project(&app).await;
    let field = create_select(
        &app,
        &project,
        json!([{"label": "A"}, {"label": "B"}, {"label": "C"}]),
    )
    .await;
    let id = field["id"].as_str().unwrap().to_string();
    let (a, b) = (option_id(&field, "A"), option_id(&field, "B"));
    let mut issues = Vec::new();
    for option in [&a, &b] {
        let data = app
            .data(
                r#"mutation($p: ID!, $v: [FieldValueInput!]) { createIssue(input: {projectId: $p, name: "i", fieldValues: $v}) { issue { id } } }"#,
                json!({"p": project, "v": [{"fieldId": id, "value": option}]}),
            )
            .await;
        issues.push(
            data["createIssue"]["issue"]["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    // A's key, as the rows under it carry it, from the issue that holds A.
    let rows = value_rows(&app, &id).await;
    let a_sort = rows[&issues[0]].clone();
    let part = format!("xvalue-{}", id.trim_start_matches("xattrib-"));
    let row = |pk: &str, sort: &str, value: &str| {
        use gridgate::store::AttributeValue::S;
        let map: std::collections::HashMap<String, gridgate::store::AttributeValue> = [
            ("PK", pk),
            ("SK", part.as_str()),
            ("GSI1SK", sort),
            ("Type", "FieldValue"),
            ("Value", value),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), S(v.to_string())))
        .collect();
        gridgate::store::Item::from(map)
    };
    // An orphan under A's key, and B's issue (num 2) with its row moved under A's key, saying A.
    let a_part = a_sort.split('\u{1}').next().unwrap();
    let orphan = row("issue-00000000000000000000000000", &a_sort, &a);
    let wrong = row(&issues[1], &format!("{a_part}\u{1}0000000002"), &a);
    for item in [orphan, wrong] {
        app.store
            .transact_write(vec![gridgate::store::WriteOp::Put {
                item,
                condition: None,
            }])
            .await
            .expect("put");
    }
    // Move A last: the sweep re-keys A's rows and meets the two drifted ones.
    let moved = update_options(&app, &id, inputs(&field, &["B", "C", "A"])).await;
    assert_eq!(labels(&moved), ["B", "C", "A"]);
    app.sweeps_idle().await;
    let pending = Sweeper::new(app.store.clone(), sweep_config())
        .pending()
        .await
        .unwrap();
    assert!(pending.is_empty(), "{pending:?}");
    assert_clean(&app).await;
    assert_eq!(
        label_order(&sorted(&app, &project, &id, "ASC").await),
        ["B", "A"]
    );
}

crate::both_stores!(
    select_columns_sort_filter_and_reindex,
    option_lists_are_checked,
    endless_moves_keep_keys_short_and_the_field_ready,
    drifted_rows_do_not_hold_up_the_options_sweep,
);
