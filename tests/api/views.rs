//! API tests of saved views over HTTP, against both stores: a view's pages are its filter's
//! issues in its multi-key order, forward and backward, with an exact count, kept by every
//! write; a warm view page takes 3 calls in 2 waves; a view refuses pages with `VIEW_BUILDING`
//! (and its progress) until its first index is built, and a build cut short resumes without
//! duplicates; a new filter builds a new index beside the old, which serves until the swap;
//! deleting a field the view sorts and filters by rebuilds it without them; deleting the view
//! removes its rows and counters; `verify` stays clean throughout.

use std::cmp::Ordering;

use crate::support::app::{Backend, TestApp};
use crate::support::waves;
use gridgate::ids::ViewId;
use gridgate::repo::sweep::{SweepConfig, SweepOutcome, Sweeper};
use gridgate::repo::verify;
use gridgate::store::{Index, Query};
use serde_json::{json, Value};

const OWNER: &str = "views-test";

fn sweep_config() -> SweepConfig {
    crate::support::app::test_sweeps(OWNER)
}

/// An app whose own sweeps stop before their first batch.
async fn paused_app(backend: Backend) -> TestApp {
    crate::support::app::paused_app(backend, OWNER).await
}

/// Runs the pending sweeps with `config`, returning how each ended.
async fn run_sweeps(app: &TestApp, config: SweepConfig) -> Vec<SweepOutcome> {
    app.sweeps_idle().await;
    Sweeper::new(app.store.clone(), config)
        .run_pending()
        .await
        .expect("sweeps")
        .into_iter()
        .map(|(_, outcome)| outcome)
        .collect()
}

async fn assert_clean(app: &TestApp) {
    let found = verify::verify(&app.store, None).await.expect("verify");
    assert!(found.is_empty(), "verify found drift: {found:#?}");
}

/// A project with an INT field `Estimate` and a TEXT field `Team`.
async fn project(app: &TestApp) -> (String, String, String) {
    let tenant = app
        .data(
            r#"mutation { createTenant(input: {name: "Acme"}) { tenant { id } } }"#,
            json!({}),
        )
        .await["createTenant"]["tenant"]["id"]
        .clone();
    let project = app
        .data(
            r#"mutation($t: ID!) { createProject(input: {tenantId: $t, name: "Board"}) { project { id } } }"#,
            json!({"t": tenant}),
        )
        .await["createProject"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let field = |name: &'static str, ty: &'static str| {
        let project = project.clone();
        async move {
            app.data(
                r#"mutation($p: ID!, $n: String!, $t: CustomFieldType!) {
                    createCustomField(input: {projectId: $p, name: $n, type: $t}) { customField { id } } }"#,
                json!({"p": project, "n": name, "t": ty}),
            )
            .await["createCustomField"]["customField"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let estimate = field("Estimate", "INT").await;
    let team = field("Team", "TEXT").await;
    (project, estimate, team)
}

/// One issue of the reference model.
#[derive(Clone, Debug)]
struct Row {
    id: String,
    num: i64,
    name: String,
    open: bool,
    estimate: Option<i64>,
    team: Option<String>,
}

async fn create_issue(app: &TestApp, project: &str, fields: (&str, &str), row: &Row) -> String {
    let mut values = Vec::new();
    if let Some(e) = row.estimate {
        values.push(json!({"fieldId": fields.0, "value": e.to_string()}));
    }
    if let Some(t) = &row.team {
        values.push(json!({"fieldId": fields.1, "value": t}));
    }
    let state = if row.open { "OPEN" } else { "CLOSED" };
    app.data(
        r#"mutation($p: ID!, $n: String!, $s: IssueState, $v: [FieldValueInput!]) {
            createIssue(input: {projectId: $p, name: $n, state: $s, fieldValues: $v}) { issue { id } } }"#,
        json!({"p": project, "n": row.name, "s": state, "v": values}),
    )
    .await["createIssue"]["issue"]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The issues a view keyed (estimate DESC, empties first; name ASC) and filtered to `keep`
/// holds, in its order: ties break by num in the first key's direction (descending).
fn by_estimate_then_name(rows: &[Row], keep: impl Fn(&Row) -> bool) -> Vec<i64> {
    let mut kept: Vec<&Row> = rows.iter().filter(|r| keep(r)).collect();
    kept.sort_by(|a, b| {
        let by_estimate = match (a.estimate, b.estimate) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => y.cmp(&x),
        };
        let by_name = a.name.to_lowercase().cmp(&b.name.to_lowercase());
        by_estimate.then(by_name).then(b.num.cmp(&a.num))
    });
    kept.into_iter().map(|r| r.num).collect()
}

const PAGE: &str = r#"query($p: ID!, $v: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    project(id: $p) { view(id: $v) { status issues(first: $first, after: $after, last: $last, before: $before) {
        totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } nodes { num } } } } }"#;

/// Every issue of the view, paging forward by `size`, and the count each page reported.
async fn page_forward(app: &TestApp, project: &str, view: &str, size: i64) -> (Vec<i64>, i64) {
    let mut nums = Vec::new();
    let mut after = Value::Null;
    loop {
        let data = app
            .data(
                PAGE,
                json!({"p": project, "v": view, "first": size, "after": after}),
            )
            .await;
        let issues = &data["project"]["view"]["issues"];
        let count = issues["totalCount"].as_i64().unwrap();
        nums.extend(
            issues["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["num"].as_i64().unwrap()),
        );
        if !issues["pageInfo"]["hasNextPage"].as_bool().unwrap() {
            return (nums, count);
        }
        after = issues["pageInfo"]["endCursor"].clone();
    }
}

/// Every issue of the view, paging backward from the end by `size`.
async fn page_backward(app: &TestApp, project: &str, view: &str, size: i64) -> Vec<i64> {
    let mut pages = Vec::new();
    let mut before = Value::Null;
    loop {
        let data = app
            .data(
                PAGE,
                json!({"p": project, "v": view, "last": size, "before": before}),
            )
            .await;
        let issues = &data["project"]["view"]["issues"];
        let nums: Vec<i64> = issues["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["num"].as_i64().unwrap())
            .collect();
        pages.push(nums);
        if !issues["pageInfo"]["hasPreviousPage"].as_bool().unwrap() {
            break;
        }
        before = issues["pageInfo"]["startCursor"].clone();
    }
    pages.into_iter().rev().flatten().collect()
}

const VIEW_PARTS: &str = "id name status version position columns filter orderBy { field customFieldId direction empty } progress { scanned total }";

async fn create_view(app: &TestApp, project: &str, input: Value) -> Value {
    let mut input = input;
    input["projectId"] = json!(project);
    app.data(
        &format!(
            "mutation($i: CreateViewInput!) {{ createView(input: $i) {{ view {{ {VIEW_PARTS} }} }} }}"
        ),
        json!({"i": input}),
    )
    .await["createView"]["view"]
        .clone()
}

async fn read_view(app: &TestApp, project: &str, view: &str) -> Value {
    app.data(
        &format!(
            "query($p: ID!, $v: ID!) {{ project(id: $p) {{ view(id: $v) {{ {VIEW_PARTS} }} }} }}"
        ),
        json!({"p": project, "v": view}),
    )
    .await["project"]["view"]
        .clone()
}

/// The rows of one generation of a view's index, read straight from `GSI1`.
async fn index_rows(app: &TestApp, view: &str, generation: u32) -> usize {
    let partition = gridgate::view::partition(&ViewId::parse(view).unwrap(), generation);
    let query = Query::partition(Index::Gsi1, partition);
    gridgate::store::retry::query_all(app.store.as_ref(), &query)
        .await
        .unwrap()
        .len()
}

fn sample(i: i64) -> Row {
    let names = ["delta", "Alpha", "charlie", "bravo", "echo", "alpha"];
    Row {
        id: String::new(),
        num: i + 1,
        name: names[(i % 6) as usize].to_string(),
        open: i % 4 != 3,
        estimate: (i % 5 != 2).then_some((i * 7) % 4 - 1),
        team: (i % 3 == 0).then(|| "core".to_string()),
    }
}

async fn views_page_sort_filter_and_count(backend: Backend) {
    let (app, recorder) = waves::spawn_recorded(backend).await;
    let (project, estimate, team) = project(&app).await;
    let fields = (estimate.as_str(), team.as_str());
    let mut rows: Vec<Row> = (0..23).map(sample).collect();
    for row in &mut rows {
        row.id = create_issue(&app, &project, fields, row).await;
    }
    let view = create_view(
        &app,
        &project,
        json!({
            "name": "Open by estimate",
            "orderBy": [
                {"field": "CUSTOM_FIELD", "customFieldId": estimate, "direction": "DESC", "empty": "FIRST"},
                {"field": "NAME"}
            ],
            "filter": {"column": {"field": "STATE"}, "eq": "OPEN"},
            "columns": [estimate, team],
        }),
    )
    .await;
    let id = view["id"].as_str().unwrap().to_string();
    assert_eq!(view["version"], 1);
    assert_eq!(view["columns"], json!([estimate, team]));
    assert_eq!(
        view["filter"],
        json!({"column": {"field": "STATE"}, "eq": "OPEN"})
    );
    assert_eq!(
        view["orderBy"],
        json!([
            {"field": "CUSTOM_FIELD", "customFieldId": estimate, "direction": "DESC", "empty": "FIRST"},
            {"field": "NAME", "customFieldId": null, "direction": "ASC", "empty": "LAST"}
        ])
    );
    app.sweeps_idle().await;
    let view = read_view(&app, &project, &id).await;
    assert_eq!(view["status"], "READY", "{view:#}");
    assert_eq!(view["progress"], Value::Null);

    let open = |r: &Row| r.open;
    let expected = by_estimate_then_name(&rows, open);
    for size in [1, 4, 100] {
        let (nums, count) = page_forward(&app, &project, &id, size).await;
        assert_eq!(nums, expected, "forward by {size}");
        assert_eq!(count, expected.len() as i64);
        assert_eq!(
            page_backward(&app, &project, &id, size).await,
            expected,
            "backward by {size}"
        );
    }

    // A warm view page: the view's index Query beside the project, then the issues (a view
    // first seen takes a wave more: its index's partition is on the view's row).
    let grid = r#"query($p: ID!, $v: ID!) { project(id: $p) { name view(id: $v) {
        issues(first: 5) { totalCount nodes { num name fieldValues { value } } } } } }"#;
    let vars = json!({"p": project, "v": id});
    recorder.take();
    let cold = app.data(grid, vars.clone()).await;
    let cold_calls = recorder.take();
    let warm = app.post(grid, vars.clone()).await;
    let warm_calls = recorder.take();
    assert_eq!(warm["data"], cold);
    assert_eq!(
        warm["extensions"]["cost"]["dynamodbCalls"].as_u64(),
        Some(warm_calls.len() as u64)
    );
    // The pages above taught the gateway the view's serving generation already.
    assert_eq!(
        (cold_calls.len(), waves::waves(&cold_calls)),
        (3, 2),
        "{cold_calls:?}"
    );
    assert_eq!(
        (warm_calls.len(), waves::waves(&warm_calls)),
        (3, 2),
        "{warm_calls:?}"
    );

    // Writes keep the view: an issue enters (reopened), one leaves (closed), one moves (its
    // estimate), one is created, one deleted.
    let set = |query: &'static str, vars: Value| {
        let app = &app;
        async move { app.data(query, vars).await }
    };
    let reopened = rows.iter().position(|r| !r.open).unwrap();
    set(
        r#"mutation($i: ID!) { updateIssue(input: {id: $i, state: OPEN}) { issue { id } } }"#,
        json!({"i": rows[reopened].id}),
    )
    .await;
    rows[reopened].open = true;
    let closed = rows.iter().position(|r| r.open).unwrap();
    set(
        r#"mutation($i: ID!) { updateIssue(input: {id: $i, state: CLOSED}) { issue { id } } }"#,
        json!({"i": rows[closed].id}),
    )
    .await;
    rows[closed].open = false;
    let moved = rows.iter().rposition(|r| r.open).unwrap();
    set(
        r#"mutation($i: ID!, $f: ID!) { setIssueFieldValues(input: {issueId: $i, values: [{fieldId: $f, value: "99"}]}) { issue { id } } }"#,
        json!({"i": rows[moved].id, "f": estimate}),
    )
    .await;
    rows[moved].estimate = Some(99);
    let mut new = sample(5);
    new.num = rows.len() as i64 + 1;
    new.open = true;
    new.id = create_issue(&app, &project, fields, &new).await;
    rows.push(new);
    let gone = rows
        .iter()
        .position(|r| r.open && r.estimate.is_none())
        .unwrap();
    set(
        r#"mutation($i: ID!) { deleteIssue(input: {id: $i}) { deletedId } }"#,
        json!({"i": rows[gone].id}),
    )
    .await;
    rows.remove(gone);
    let expected = by_estimate_then_name(&rows, open);
    let (nums, count) = page_forward(&app, &project, &id, 6).await;
    assert_eq!(nums, expected);
    assert_eq!(count, expected.len() as i64);
    assert_clean(&app).await;

    // A new filter builds generation 2 beside generation 1; once it serves, the old rows and
    // cursors are gone.
    let first_page = app
        .data(PAGE, json!({"p": project, "v": id, "first": 2}))
        .await;
    let old_cursor = first_page["project"]["view"]["issues"]["pageInfo"]["endCursor"].clone();
    let updated = app
        .data(
            &format!(
                r#"mutation($i: ID!, $f: IssueFilter) {{ updateView(input: {{id: $i, filter: $f, expectedVersion: 1}}) {{ view {{ {VIEW_PARTS} }} }} }}"#
            ),
            json!({"i": id, "f": {"and": [
                {"column": {"field": "STATE"}, "eq": "OPEN"},
                {"column": {"field": "CUSTOM_FIELD", "customFieldId": team}, "eq": "CORE"}
            ]}}),
        )
        .await["updateView"]["view"]
        .clone();
    assert_eq!(updated["version"], 2);
    app.sweeps_idle().await;
    assert_eq!(read_view(&app, &project, &id).await["status"], "READY");
    let core = |r: &Row| r.open && r.team.as_deref() == Some("core");
    let expected = by_estimate_then_name(&rows, core);
    let (nums, count) = page_forward(&app, &project, &id, 3).await;
    assert_eq!(nums, expected);
    assert_eq!(count, expected.len() as i64);
    assert_eq!(index_rows(&app, &id, 1).await, 0);
    assert_eq!(index_rows(&app, &id, 2).await, expected.len());
    let (code, message) = app
        .error(
            PAGE,
            json!({"p": project, "v": id, "first": 2, "after": old_cursor}),
        )
        .await;
    assert_eq!(code, "BAD_USER_INPUT", "{message}");
    assert_clean(&app).await;

    // Deleting the field the view sorts by and filters on: the view loses that key and that
    // leaf (the `and` keeps its other operand) and is rebuilt.
    app.data(
        r#"mutation($f: ID!) { deleteCustomField(input: {id: $f}) { deletedId } }"#,
        json!({"f": estimate}),
    )
    .await;
    app.sweeps_idle().await;
    let rebuilt = read_view(&app, &project, &id).await;
    assert_eq!(rebuilt["status"], "READY", "{rebuilt:#}");
    assert_eq!(rebuilt["columns"], json!([team]));
    assert_eq!(
        rebuilt["orderBy"],
        json!([{"field": "NAME", "customFieldId": null, "direction": "ASC", "empty": "LAST"}])
    );
    assert_eq!(
        rebuilt["filter"],
        json!({"and": [{"column": {"field": "STATE"}, "eq": "OPEN"},
                       {"column": {"field": "CUSTOM_FIELD", "customFieldId": team}, "eq": "CORE"}]})
    );
    let mut expected: Vec<&Row> = rows.iter().filter(|r| core(r)).collect();
    expected.sort_by_key(|r| (r.name.to_lowercase(), r.num));
    let expected: Vec<i64> = expected.into_iter().map(|r| r.num).collect();
    assert_eq!(
        page_forward(&app, &project, &id, 100).await,
        (expected.clone(), expected.len() as i64)
    );
    assert_clean(&app).await;

    // Deleting the view: it is gone at once, its rows and counters once swept.
    app.data(
        r#"mutation($i: ID!) { deleteView(input: {id: $i}) { deletedId } }"#,
        json!({"i": id}),
    )
    .await;
    let gone = app
        .data(
            "query($p: ID!, $v: ID!) { project(id: $p) { views { id } view(id: $v) { id } } node(id: $v) { id } }",
            json!({"p": project, "v": id}),
        )
        .await;
    assert_eq!(
        gone,
        json!({"project": {"views": [], "view": null}, "node": null})
    );
    app.sweeps_idle().await;
    for generation in 1..=4 {
        assert_eq!(index_rows(&app, &id, generation).await, 0);
    }
    assert_clean(&app).await;
}

async fn a_view_builds_resumably_and_refuses_pages_until_ready(backend: Backend) {
    let app = paused_app(backend).await;
    let (project, estimate, team) = project(&app).await;
    let fields = (estimate.as_str(), team.as_str());
    let mut rows: Vec<Row> = (0..17).map(sample).collect();
    for row in &mut rows {
        row.id = create_issue(&app, &project, fields, row).await;
    }
    let view = create_view(
        &app,
        &project,
        json!({"name": "Everything", "orderBy": [
            {"field": "CUSTOM_FIELD", "customFieldId": estimate, "direction": "DESC", "empty": "FIRST"},
            {"field": "NAME"}]}),
    )
    .await;
    let id = view["id"].as_str().unwrap().to_string();
    assert_eq!(view["status"], "BUILDING");
    assert_eq!(view["progress"], json!({"scanned": 0, "total": 17}));
    let body = app
        .post(PAGE, json!({"p": project, "v": id, "first": 5}))
        .await;
    let error = &body["errors"][0];
    assert_eq!(error["extensions"]["code"], "VIEW_BUILDING", "{body:#}");
    assert_eq!(error["extensions"]["retryable"], true);
    assert_eq!(
        error["extensions"]["progress"],
        json!({"scanned": 0, "total": 17})
    );
    // Two batches of 5, then the process "dies"; an issue edited meanwhile is kept by its
    // writer; the rest resumes after the last num read, counting nothing twice.
    let cut = SweepConfig {
        batch: 5,
        stop_after_batches: Some(2),
        ..sweep_config()
    };
    assert_eq!(run_sweeps(&app, cut).await, [SweepOutcome::Interrupted]);
    let half = read_view(&app, &project, &id).await;
    assert_eq!(half["status"], "BUILDING");
    assert_eq!(half["progress"], json!({"scanned": 10, "total": 17}));
    assert_eq!(index_rows(&app, &id, 1).await, 10);
    // Half-built, the index is its build's: `verify` checks only what serves.
    assert_clean(&app).await;
    app.data(
        r#"mutation($i: ID!, $f: ID!) { setIssueFieldValues(input: {issueId: $i, values: [{fieldId: $f, value: "42"}]}) { issue { id } } }"#,
        json!({"i": rows[15].id, "f": estimate}),
    )
    .await;
    rows[15].estimate = Some(42);
    let rest = SweepConfig {
        batch: 5,
        ..sweep_config()
    };
    assert_eq!(run_sweeps(&app, rest).await, [SweepOutcome::Finished]);
    let ready = read_view(&app, &project, &id).await;
    assert_eq!(ready["status"], "READY");
    assert_eq!(index_rows(&app, &id, 1).await, 17);
    let (nums, count) = page_forward(&app, &project, &id, 100).await;
    assert_eq!(nums, by_estimate_then_name(&rows, |_| true));
    assert_eq!(count, 17);
    assert_clean(&app).await;
}

async fn view_inputs_are_checked(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, estimate, _) = project(&app).await;
    let create = |input: Value| {
        let mut input = input;
        input["projectId"] = json!(project);
        let app = &app;
        async move {
            app.error(
                "mutation($i: CreateViewInput!) { createView(input: $i) { view { id } } }",
                json!({"i": input}),
            )
            .await
        }
    };
    let num = json!({"field": "NUM"});
    for (input, expected) in [
        (
            json!({"name": "x", "orderBy": []}),
            "input.orderBy: a view sorts by 1 to 3 keys, not 0",
        ),
        (
            json!({"name": "x", "orderBy": [num, {"field": "NAME"}, {"field": "STATE"}, {"field": "CUSTOM_FIELD", "customFieldId": estimate}]}),
            "input.orderBy: a view sorts by 1 to 3 keys, not 4",
        ),
        (
            json!({"name": "x", "orderBy": [num, num]}),
            "input.orderBy[1]: the view already sorts by this column",
        ),
        (
            json!({"name": "x", "orderBy": [{"field": "CUSTOM_FIELD", "customFieldId": "xattrib-0000"}]}),
            "is not a custom field of",
        ),
        (
            json!({"name": "x", "orderBy": [num], "filter": {"or": [{"column": {"field": "NAME"}, "gt": "a"}, {"column": {"field": "STATE"}, "eq": "SHUT"}]}}),
            "input.filter.or[1]: eq:",
        ),
        (
            json!({"name": "x", "orderBy": [num], "columns": [estimate, estimate]}),
            "input.columns[1]: ",
        ),
        (
            json!({"name": " ", "orderBy": [num]}),
            "input.name: must be 1 to 500 characters",
        ),
    ] {
        let (code, message) = create(input.clone()).await;
        assert_eq!(code, "BAD_USER_INPUT", "{input}: {message}");
        assert!(message.contains(expected), "{input}: {message}");
    }
    for i in 0..20 {
        create_view(
            &app,
            &project,
            json!({"name": format!("v{i}"), "orderBy": [num]}),
        )
        .await;
    }
    let (code, message) = create(json!({"name": "one too many", "orderBy": [num]})).await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        (
            "BAD_USER_INPUT",
            "input.projectId: a project has at most 20 views"
        )
    );
    let views = app
        .data(
            "query($p: ID!) { project(id: $p) { views { name position } } }",
            json!({"p": project}),
        )
        .await;
    let names: Vec<&str> = views["project"]["views"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 20);
    assert_eq!((names[0], names[19]), ("v0", "v19"));
    // A stale version is a conflict; a rename moves the version on and rebuilds nothing.
    let views = app
        .data(
            "query($p: ID!) { project(id: $p) { views { id version } } }",
            json!({"p": project}),
        )
        .await;
    let first = views["project"]["views"][0]["id"].clone();
    let rename = "mutation($i: ID!, $v: Int) { updateView(input: {id: $i, name: \"Renamed\", expectedVersion: $v}) { view { name version status } } }";
    let (code, _) = app.error(rename, json!({"i": first, "v": 7})).await;
    assert_eq!(code, "CONFLICT");
    app.sweeps_idle().await;
    let renamed = app.data(rename, json!({"i": first, "v": 1})).await;
    assert_eq!(
        renamed["updateView"]["view"],
        json!({"name": "Renamed", "version": 2, "status": "READY"})
    );
    assert_clean(&app).await;
}

/// A view sorted by a SELECT field follows the options' order: moving an option rebuilds
/// the view with its keys kept (its rows' sort strings change), adding one rebuilds nothing,
/// and removing one drops the filter leaf that named it.
async fn option_edits_rebuild_the_views_that_name_the_field(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, _, _) = project(&app).await;
    let parts = "id options { id label }";
    let field = app
        .data(
            &format!(
                r#"mutation($p: ID!) {{ createCustomField(input: {{projectId: $p, name: "Stage", type: SELECT,
                    options: [{{label: "a"}}, {{label: "b"}}, {{label: "c"}}]}}) {{ customField {{ {parts} }} }} }}"#
            ),
            json!({"p": project}),
        )
        .await["createCustomField"]["customField"]
        .clone();
    let id = field["id"].as_str().unwrap().to_string();
    let option = |label: &str| {
        field["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["label"] == label)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (a, b, c) = (option("a"), option("b"), option("c"));
    for (name, value) in [("one", &c), ("two", &a), ("three", &b), ("four", &a)] {
        app.data(
            r#"mutation($p: ID!, $n: String!, $v: [FieldValueInput!]) {
                createIssue(input: {projectId: $p, name: $n, fieldValues: $v}) { issue { id } } }"#,
            json!({"p": project, "n": name, "v": [{"fieldId": id, "value": value}]}),
        )
        .await;
    }
    let by_stage = json!([{"field": "CUSTOM_FIELD", "customFieldId": id}]);
    let view = create_view(
        &app,
        &project,
        json!({"name": "By stage", "orderBy": by_stage}),
    )
    .await;
    let view = view["id"].as_str().unwrap().to_string();
    let filtered = create_view(
        &app,
        &project,
        json!({"name": "Not b", "orderBy": [{"field": "NUM"}],
               "filter": {"and": [{"column": {"field": "CUSTOM_FIELD", "customFieldId": id}, "ne": b},
                                  {"column": {"field": "NAME"}, "startsWith": "t"}]}}),
    )
    .await;
    let filtered = filtered["id"].as_str().unwrap().to_string();
    app.sweeps_idle().await;
    assert_eq!(
        page_forward(&app, &project, &view, 10).await,
        (vec![2, 4, 3, 1], 4)
    );
    assert_eq!(
        page_forward(&app, &project, &filtered, 10).await,
        (vec![2], 1)
    );
    let set_options = |options: Value| {
        let app = &app;
        let id = id.clone();
        async move {
            app.data(
                r#"mutation($f: ID!, $o: [SelectOptionInput!]) {
                    updateCustomField(input: {id: $f, options: $o}) { customField { id } } }"#,
                json!({"f": id, "o": options}),
            )
            .await;
        }
    };
    // Adding an option moves nothing: no view is rebuilt.
    set_options(json!([{"id": a, "label": "a"}, {"id": b, "label": "b"}, {"id": c, "label": "c"}, {"label": "d"}])).await;
    assert_eq!(read_view(&app, &project, &view).await["version"], 1);
    // Moving `c` first rebuilds the view with its key kept.
    set_options(json!([{"id": c, "label": "c"}, {"id": a, "label": "a"}, {"id": b, "label": "b"}]))
        .await;
    app.sweeps_idle().await;
    let rebuilt = read_view(&app, &project, &view).await;
    assert_eq!(rebuilt["status"], "READY");
    assert_eq!(rebuilt["orderBy"][0]["customFieldId"], json!(id));
    assert_eq!(
        page_forward(&app, &project, &view, 10).await,
        (vec![1, 2, 4, 3], 4)
    );
    assert_eq!(index_rows(&app, &view, 1).await, 0);
    // Removing `b` clears its cell and drops the leaf that named it; the other leaf stays.
    set_options(json!([{"id": c, "label": "c"}, {"id": a, "label": "a"}])).await;
    app.sweeps_idle().await;
    let pruned = read_view(&app, &project, &filtered).await;
    assert_eq!(
        pruned["filter"],
        json!({"and": [{"column": {"field": "NAME"}, "startsWith": "t"}]})
    );
    assert_eq!(
        page_forward(&app, &project, &filtered, 10).await,
        (vec![2, 3], 2)
    );
    assert_eq!(
        page_forward(&app, &project, &view, 10).await,
        (vec![1, 2, 4, 3], 4)
    );
    assert_clean(&app).await;
}

crate::both_stores!(
    option_edits_rebuild_the_views_that_name_the_field,
    views_page_sort_filter_and_count,
    a_view_builds_resumably_and_refuses_pages_until_ready,
    view_inputs_are_checked,
);
