//! The web grid (`/` and `/p/<projectId>`, built from `web/` into `assets/grid/`) in a real
//! browser, against both stores: Debian's Chromium driven by playwright-core
//! (`tests/support/browser_grid.mjs`) with every request that is not for loopback blocked.
//! The script does what a user does (scrolls, clicks headers, types into cells, downloads)
//! and reports what the page shows; these tests judge it against the API's own pages:
//! - scrolling a 2,000-issue grid from top to bottom shows every row exactly once, at its
//!   `aria-rowindex`, in the API's order, for three sorts and a filter, reading each page once;
//! - a cell of every type edited by keyboard persists (the page reloaded and the API agree),
//!   and an invalid value shows the server's message and is rolled back;
//! - two users editing one cell: the second sees the conflict dialog and overwrites, or
//!   keeps theirs;
//! - a view's tab shows its order and count, and a Shift-click multi-sort saves a view; a
//!   view is renamed and deleted from its tab's menu;
//! - the CSV export's rows are the API's pages for the same sort and filter;
//! - a filter built in the filter bar (an OR group included) is the API's filter;
//! - a new issue added at the end of a long list is its last row, with no page read again;
//! - under `--auth jwt`, a token refused after signing in brings the sign-in dialog back.
//!
//! Any Content-Security-Policy violation, console error, page error or request that leaves
//! the machine fails the test. Needs Chromium, Node.js and npm: see `tests/support/browser.rs`.

use crate::support::app::{Backend, TestApp};
use crate::support::browser;
use gridgate::repo::verify;
use gridgate::seed::{self, Synthetic};
use serde_json::{json, Value};

/// Issues in the scrolled project.
const ISSUES: u32 = 2_000;
/// The grid's page size (`web/src/rows.ts`).
const PAGE: usize = 100;

/// Runs one scenario of `browser_grid.mjs` against `app` and returns its result, after
/// checking that nothing went wrong in the page.
async fn run(app: &TestApp, scenario: &str, spec: Value) -> Value {
    run_allowing(app, scenario, spec, &[]).await
}

/// [`run`], with console errors containing one of `expected` allowed (the browser logs every
/// 401 it receives, which signing in begins with).
async fn run_allowing(app: &TestApp, scenario: &str, mut spec: Value, expected: &[&str]) -> Value {
    spec["baseUrl"] = Value::from(app.url(""));
    spec["scenario"] = Value::from(scenario);
    let report = browser::run("browser_grid.mjs", spec).await;
    assert!(
        report["failure"].is_null(),
        "{scenario}: the browser step failed: {}",
        report["failure"].as_str().unwrap_or_default()
    );
    let console: Vec<&Value> = report["consoleErrors"]
        .as_array()
        .expect("console errors")
        .iter()
        .filter(|e| {
            !expected
                .iter()
                .any(|x| e.as_str().unwrap_or_default().contains(x))
        })
        .collect();
    assert!(console.is_empty(), "{scenario}: console errors {console:?}");
    for key in ["pageErrors", "violations", "blocked"] {
        assert_eq!(report[key], json!([]), "{scenario}: {key}");
    }
    report["result"].clone()
}

/// A counted synthetic project of `ISSUES` issues with a field of every type; returns its id
/// and its fields' ids by type name (`TEXT`, `INT`, …).
async fn big_project(app: &TestApp) -> (String, Value) {
    synthetic_project(app, ISSUES).await
}

/// A counted synthetic project of `issues` issues with a field of every type (see
/// [`big_project`]).
async fn synthetic_project(app: &TestApp, issues: u32) -> (String, Value) {
    let created = seed::synthetic(
        &app.store,
        Synthetic {
            projects: 1,
            issues,
            fields: 6,
            seed: 23,
        },
        |_| {},
    )
    .await
    .expect("seed");
    let project = created[0].project.clone();
    // The synthetic loader writes no counters; reindexing counts the project, so the grid
    // sizes its scrollbar from `totalCount`.
    verify::reindex(&app.store, None).await.expect("reindex");
    let fields = app
        .data(
            "query($p: ID!) { project(id: $p) { customFields { id type } } }",
            json!({"p": project}),
        )
        .await["project"]["customFields"]
        .as_array()
        .expect("fields")
        .iter()
        .map(|f| {
            (
                f["type"].as_str().unwrap_or_default().to_string(),
                f["id"].clone(),
            )
        })
        .collect::<serde_json::Map<_, _>>();
    (project, Value::Object(fields))
}

/// The (num, name) of every issue of the project under `order_by` and `filter`, from the
/// API's own pages.
async fn api_rows(
    app: &TestApp,
    project: &str,
    order_by: Value,
    filter: Value,
) -> Vec<(i64, String)> {
    let mut rows = Vec::new();
    let mut after = Value::Null;
    loop {
        let page = app
            .data(
                "query($p: ID!, $o: IssueOrder, $f: IssueFilter, $a: String) {
                    project(id: $p) { issues(first: 100, after: $a, orderBy: $o, filter: $f) {
                        pageInfo { hasNextPage endCursor } nodes { num name } } } }",
                json!({"p": project, "o": order_by, "f": filter, "a": after}),
            )
            .await;
        let issues = &page["project"]["issues"];
        for node in issues["nodes"].as_array().expect("nodes") {
            rows.push((
                node["num"].as_i64().expect("num"),
                node["name"].as_str().expect("name").to_string(),
            ));
        }
        if issues["pageInfo"]["hasNextPage"] != json!(true) {
            return rows;
        }
        after = issues["pageInfo"]["endCursor"].clone();
    }
}

/// The URL parameter of a filter.
fn filter_param(filter: &Value) -> String {
    url_encode(&filter.to_string())
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Scrolling the whole grid shows each row once, in the API's order, under three sorts and
/// a filter, and reads each page once.
async fn grid_scrolls_every_row_once(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, fields) = big_project(&app).await;
    let int = fields["INT"].as_str().expect("an INT field");
    let text = fields["TEXT"].as_str().expect("a TEXT field");
    let filter =
        json!({"column": {"field": "CUSTOM_FIELD", "customFieldId": text}, "contains": "a"});
    let cases = [
        (format!("/p/{project}"), json!(null), json!(null)),
        (
            format!("/p/{project}?sort=-name"),
            json!({"field": "NAME", "direction": "DESC"}),
            json!(null),
        ),
        (
            format!("/p/{project}?sort={int}~first"),
            json!({"field": "CUSTOM_FIELD", "customFieldId": int, "direction": "ASC", "empty": "FIRST"}),
            json!(null),
        ),
        (
            format!("/p/{project}?sort=name&filter={}", filter_param(&filter)),
            json!({"field": "NAME", "direction": "ASC"}),
            filter.clone(),
        ),
    ];
    let mut urls: Vec<&str> = cases.iter().map(|(url, _, _)| url.as_str()).collect();
    // The first order once more, read from the end upward until the tail meets the head.
    urls.push(cases[0].0.as_str());
    let upwards: Vec<bool> = urls
        .iter()
        .enumerate()
        .map(|(i, _)| i == cases.len())
        .collect();
    // The first order is scrolled back up to the top too, through the rows released on the
    // way down.
    let back: Vec<bool> = urls.iter().enumerate().map(|(i, _)| i == 0).collect();
    let result = run(
        &app,
        "scroll",
        json!({"urls": urls, "upwards": upwards, "back": back}),
    )
    .await;
    let grids = result.as_array().expect("one report per URL");
    assert_eq!(grids.len(), cases.len() + 1);
    let up = &grids[cases.len()];
    {
        let (url, order_by, filter) = &cases[0];
        let expected = api_rows(&app, &project, order_by.clone(), filter.clone()).await;
        let shown = shown_rows(&up["rows"]);
        assert_eq!(
            up["duplicates"],
            json!([]),
            "{url} upward: a row index showed two issues"
        );
        same_list(url, "rows read upward from the end", &shown, &expected);
        let backward = up["operations"]["GridIssues:last"].as_u64().unwrap_or(0) as usize;
        let forward = up["operations"]["GridIssues"].as_u64().unwrap_or(0) as usize;
        // The first page from the top, then pages from the end until they meet it.
        assert_eq!(forward, 1, "{url} upward: one page from the top");
        let minimum = (expected.len() - PAGE).div_ceil(PAGE);
        assert!(
            (minimum..=minimum + 1).contains(&backward),
            "{url} upward: {backward} pages read backward for {} rows",
            expected.len()
        );
    }
    {
        // The grid keeps the rows within 500 of the visible ones, in chunks of 500 rows
        // (KEEP and CHUNK_PAGES in web/src/rows.ts): at the bottom of 2,000 rows, the chunk
        // of rows 500 to 999 was released, so scrolling back to the top reads its 5 pages
        // again, and nothing else. The first chunk and the last are always kept.
        let (url, order_by, filter) = &cases[0];
        let expected = api_rows(&app, &project, order_by.clone(), filter.clone()).await;
        let back = &grids[0]["back"];
        assert_eq!(
            back["duplicates"],
            json!([]),
            "{url} back up: a row index showed two issues"
        );
        let shown = shown_rows(&back["rows"]);
        same_list(url, "rows scrolled back up", &shown, &expected);
        let down = grids[0]["operations"]["GridIssues"]
            .as_u64()
            .expect("pages");
        let both = back["operations"]["GridIssues"].as_u64().expect("pages");
        assert_eq!(both - down, 5, "{url}: pages read again on the way back up");
    }
    for ((url, order_by, filter), grid) in cases.iter().zip(grids) {
        let expected = api_rows(&app, &project, order_by.clone(), filter.clone()).await;
        let shown = shown_rows(&grid["rows"]);
        let indexes: Vec<i64> = grid["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["index"].as_i64().expect("aria-rowindex"))
            .collect();
        assert_eq!(
            grid["duplicates"],
            json!([]),
            "{url}: a row index showed two issues"
        );
        // Row i (from 1) is aria-rowindex i + 1: the header row is 1.
        let expected_indexes: Vec<i64> = (2..2 + expected.len() as i64).collect();
        same_list(url, "aria-rowindex", &indexes, &expected_indexes);
        same_list(url, "rows", &shown, &expected);
        let pages = grid["operations"]["GridIssues"]
            .as_u64()
            .expect("page requests") as usize;
        let minimum = expected.len().div_ceil(PAGE).max(1);
        // One request per page, and one more when the last full page could not tell that
        // nothing follows it.
        assert!(
            (minimum..=minimum + 1).contains(&pages),
            "{url}: {pages} page requests for {} rows",
            expected.len()
        );
        if filter.is_null() {
            assert_eq!(grid["rowCount"], json!(ISSUES + 1), "{url}: aria-rowcount");
            assert_eq!(grid["initial"]["count"], "2,000 issues", "{url}");
        } else {
            // The server cannot count a `contains` filter: the grid says "at least" and
            // aria-rowcount is -1 (unknown) until it has read the list to its end.
            assert_eq!(grid["initial"]["rowCount"], json!(-1), "{url}");
            assert!(
                grid["initial"]["count"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("at least"),
                "{url}: {}",
                grid["initial"]["count"]
            );
            assert_eq!(
                grid["rowCount"],
                json!(expected.len() + 1),
                "{url}: known at the end"
            );
        }
        eprintln!(
            "{backend:?} {url}: {} rows, {pages} page requests, first 50 rows at {} ms, \
             scrolled in {} ms, long tasks {}",
            expected.len(),
            grid["firstRowsMs"],
            grid["scrollMs"],
            grid["longTasks"]
        );
    }
}

/// Asserts two lists are equal, naming the first difference rather than printing thousands
/// of entries.
fn same_list<T: PartialEq + std::fmt::Debug>(url: &str, what: &str, shown: &[T], expected: &[T]) {
    if let Some(at) =
        (0..shown.len().max(expected.len())).find(|&i| shown.get(i) != expected.get(i))
    {
        panic!(
            "{url}: {what} differ first at {at} (shown {} entries, expected {}): shown {:?}, expected {:?}",
            shown.len(),
            expected.len(),
            &shown[at.min(shown.len())..(at + 5).min(shown.len())],
            &expected[at.min(expected.len())..(at + 5).min(expected.len())],
        );
    }
}

/// A small project with a column of every type and one issue.
async fn typed_project(app: &TestApp) -> (String, Value) {
    let tenant = app
        .data(
            r#"mutation { createTenant(input: {name: "Grid"}) { tenant { id } } }"#,
            json!({}),
        )
        .await["createTenant"]["tenant"]["id"]
        .clone();
    let project = app
        .data(
            r#"mutation($t: ID!) { createProject(input: {tenantId: $t, name: "Typed"}) { project { id } } }"#,
            json!({"t": tenant}),
        )
        .await["createProject"]["project"]["id"]
        .as_str()
        .expect("project")
        .to_string();
    let mut fields = serde_json::Map::new();
    for (name, ty) in [
        ("Notes", "TEXT"),
        ("Points", "INT"),
        ("Estimate", "NUMBER"),
        ("Due", "DATE"),
        ("Done", "CHECKBOX"),
        ("Priority", "SELECT"),
    ] {
        let options = if ty == "SELECT" {
            json!([{"label": "Low", "color": "green"}, {"label": "High", "color": "red"}])
        } else {
            Value::Null
        };
        let id = app
            .data(
                r#"mutation($p: ID!, $n: String!, $t: CustomFieldType!, $o: [SelectOptionInput!]) {
                    createCustomField(input: {projectId: $p, name: $n, type: $t, options: $o}) {
                        customField { id } } }"#,
                json!({"p": project, "n": name, "t": ty, "o": options}),
            )
            .await["createCustomField"]["customField"]["id"]
            .clone();
        fields.insert(ty.to_string(), id);
    }
    app.data(
        r#"mutation($p: ID!) { createIssue(input: {projectId: $p, name: "First issue"}) { issue { id } } }"#,
        json!({"p": project}),
    )
    .await;
    (project, Value::Object(fields))
}

/// The first issue of a project as the API reads it: name, state and each cell's value.
async fn first_issue(app: &TestApp, project: &str) -> Value {
    app.data(
        "query($p: ID!) { project(id: $p) { issues(first: 1) { nodes {
            name state version fieldValues { value field { type } option { label } } } } } }",
        json!({"p": project}),
    )
    .await["project"]["issues"]["nodes"][0]
        .clone()
}

/// Every column type is edited by keyboard and persists; an invalid integer shows the
/// server's message and is rolled back; two users editing one cell meet the conflict dialog.
async fn grid_edits_each_type_and_resolves_conflicts(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, fields) = typed_project(&app).await;
    let id = |ty: &str| fields[ty].as_str().expect("field").to_string();
    let steps = json!([
        {"column": "name", "kind": "type", "value": "Typed name"},
        {"column": id("TEXT"), "kind": "escape", "value": "never saved"},
        {"column": "name", "kind": "text", "value": "Renamed issue"},
        {"column": "state", "kind": "select", "value": "Closed"},
        {"column": id("TEXT"), "kind": "text", "value": "hello, \"world\""},
        {"column": id("INT"), "kind": "text", "value": "42"},
        {"column": id("NUMBER"), "kind": "text", "value": "3.25"},
        {"column": id("DATE"), "kind": "text", "value": "2026-03-04"},
        {"column": id("CHECKBOX"), "kind": "checkbox"},
        {"column": id("SELECT"), "kind": "select", "value": "High"},
        {"column": id("INT"), "kind": "invalid", "value": "forty"},
    ]);
    let result = run(
        &app,
        "edit",
        json!({"path": format!("/p/{project}"), "steps": steps}),
    )
    .await;
    // Edits merge their payloads into the cache: no page is read again.
    assert_eq!(
        result["readsAfter"]["GridIssues"],
        result["readsBefore"]["GridIssues"]
    );
    assert_eq!(result["readsAfter"]["GridIssues"], json!(1));
    let expected_cells = json!({
        "name": "Renamed issue",
        "state": "Closed",
        id("TEXT"): "hello, \"world\"",
        id("INT"): "42",
        id("NUMBER"): "3.25",
        id("DATE"): "2026-03-04",
        id("CHECKBOX"): "☑",
        id("SELECT"): "High",
        "num": "1",
    });
    assert_eq!(
        result["beforeReload"], expected_cells,
        "the cells after the edits"
    );
    assert_eq!(
        result["afterReload"], expected_cells,
        "the cells after a reload"
    );
    let messages = result["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 1);
    let message = messages[0]["message"].as_str().expect("a message");
    assert!(
        message.contains("forty") && message.contains("whole number"),
        "the server's message is shown: {message}"
    );
    assert_eq!(
        messages[0]["after"],
        json!("42"),
        "the refused edit is rolled back"
    );
    let issue = first_issue(&app, &project).await;
    assert_eq!(issue["name"], "Renamed issue");
    assert_eq!(issue["state"], "CLOSED");
    let values: Vec<(String, String)> = issue["fieldValues"]
        .as_array()
        .expect("values")
        .iter()
        .map(|v| {
            let shown = v["option"]["label"]
                .as_str()
                .or(v["value"].as_str())
                .unwrap_or_default();
            (
                v["field"]["type"].as_str().unwrap_or_default().to_string(),
                shown.to_string(),
            )
        })
        .collect();
    assert_eq!(
        values,
        [
            ("TEXT", "hello, \"world\""),
            ("INT", "42"),
            ("NUMBER", "3.25"),
            ("DATE", "2026-03-04"),
            ("CHECKBOX", "true"),
            ("SELECT", "High"),
        ]
        .map(|(t, v)| (t.to_string(), v.to_string()))
    );

    let conflict = run(
        &app,
        "conflict",
        json!({"path": format!("/p/{project}"), "column": id("TEXT"), "first": "from the first", "second": "from the second"}),
    )
    .await;
    let dialog = conflict["dialog"].as_str().expect("the dialog's text");
    assert!(
        dialog.contains("from the first") && dialog.contains("from the second"),
        "the dialog shows both values: {dialog}"
    );
    assert_eq!(conflict["shown"], "from the second");
    let issue = first_issue(&app, &project).await;
    assert_eq!(issue["fieldValues"][0]["value"], "from the second");
}

/// The CSV text's rows as (num, name), skipping its header.
fn csv_rows(text: &str) -> Vec<(i64, String)> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let headers = reader.headers().expect("a header row").clone();
    let num = headers
        .iter()
        .position(|h| h == "Num")
        .expect("a Num column");
    let name = headers
        .iter()
        .position(|h| h == "Name")
        .expect("a Name column");
    reader
        .records()
        .map(|r| {
            let r = r.expect("a CSV record");
            (r[num].parse().expect("a num"), r[name].to_string())
        })
        .collect()
}

/// A view's tab shows its order and count; a Shift-click multi-sort saves a view; the CSV
/// export holds the API's rows for the grid's sort and filter.
async fn grid_views_and_export(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, fields) = big_project(&app).await;
    let text = fields["TEXT"].as_str().expect("a TEXT field").to_string();
    let view = app
        .data(
            "mutation($i: CreateViewInput!) { createView(input: $i) { view { id } } }",
            json!({"i": {"projectId": project, "name": "By text", "orderBy": [
                {"field": "CUSTOM_FIELD", "customFieldId": text, "direction": "DESC"},
                {"field": "NUM", "direction": "ASC"}]}}),
        )
        .await["createView"]["view"]["id"]
        .as_str()
        .expect("view")
        .to_string();
    app.sweeps_idle().await;
    let first_ten = app
        .data(
            "query($p: ID!, $v: ID!) { project(id: $p) { view(id: $v) { issues(first: 10) { nodes { num } } } } }",
            json!({"p": project, "v": view}),
        )
        .await["project"]["view"]["issues"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["num"].clone())
        .collect::<Vec<_>>();

    let result = run(
        &app,
        "views",
        json!({
            "viewPath": format!("/p/{project}?view={view}"),
            "allPath": format!("/p/{project}"),
            "sortColumn": "name",
            "addColumn": "state",
            "viewName": "Name then state",
            "resortColumn": "num",
            "resortFirst": (1..=10).collect::<Vec<i64>>(),
            // The README's picture of the grid: `GRIDGATE_GRID_SCREENSHOT=docs/grid.png`.
            "screenshot": std::env::var("GRIDGATE_GRID_SCREENSHOT")
                .ok()
                .map(|path| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)),
        }),
    )
    .await;
    let jump = &result["jump"];
    let last = api_rows(&app, &project, Value::Null, Value::Null).await;
    assert_eq!(
        jump["last"]["index"],
        json!(ISSUES + 1),
        "the last row after the jump"
    );
    assert_eq!(jump["last"]["num"], json!(last.last().expect("issues").0));
    assert_eq!(
        jump["operations"]["GridIssues:last"],
        json!(1),
        "the end is read with `last`"
    );
    assert_eq!(
        jump["operations"]["GridIssues"],
        json!(1),
        "and not by reading every page"
    );
    let shown = &result["view"];
    assert_eq!(shown["tab"], "By text");
    assert_eq!(
        shown["tabCount"], " 2,000",
        "the tab shows the view's count"
    );
    assert_eq!(
        shown["tabTitle"], "Sorted by text 1 descending, then Num ascending",
        "and its order"
    );
    assert_eq!(shown["count"], "2,000 issues");
    assert_eq!(shown["rowCount"], json!(ISSUES + 1));
    let headers = shown["headers"].as_array().expect("headers");
    let header = |key: &str| {
        headers
            .iter()
            .find(|h| h["column"] == key)
            .cloned()
            .expect("header")
    };
    assert_eq!(header(&text)["sort"], "descending");
    assert_eq!(header(&text)["indicator"], "▼1");
    assert_eq!(
        header("num")["sort"],
        Value::Null,
        "aria-sort is on the first key only"
    );
    assert_eq!(header("num")["indicator"], "▲2");
    assert_eq!(header("name")["indicator"], Value::Null);
    let nums: Vec<Value> = shown["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["num"].clone())
        .collect();
    assert_eq!(nums, first_ten, "the view's first rows");

    let created = &result["created"];
    assert!(
        created["title"]
            .as_str()
            .unwrap_or_default()
            .contains("saved view"),
        "the dialog says multi-key sorts live in views: {}",
        created["title"]
    );
    assert_eq!(created["tab"], "Name then state");
    assert!(
        created["title"]
            .as_str()
            .unwrap_or_default()
            .contains("Name ascending, then State ascending"),
        "the Shift-click made a two-key order: {}",
        created["title"]
    );
    let views = app
        .data(
            "query($p: ID!) { project(id: $p) { views { id name } } }",
            json!({"p": project}),
        )
        .await["project"]["views"]
        .clone();
    let saved = views
        .as_array()
        .expect("views")
        .iter()
        .find(|v| v["name"] == "Name then state")
        .cloned()
        .expect("the saved view");
    assert!(
        created["url"]
            .as_str()
            .unwrap_or_default()
            .ends_with(&format!(
                "view={}",
                saved["id"].as_str().unwrap_or_default()
            )),
        "the page moved to the new view: {}",
        created["url"]
    );

    // Re-sorting the view from its header rebuilds it; the page then shows the new order.
    let resorted = &result["resorted"];
    assert!(
        resorted["title"]
            .as_str()
            .unwrap_or_default()
            .contains("Name then state"),
        "{}",
        resorted["title"]
    );
    let nums: Vec<Value> = resorted["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["num"].clone())
        .collect();
    assert_eq!(
        nums,
        (1..=10).map(|n| json!(n)).collect::<Vec<_>>(),
        "the view by num after the rebuild"
    );
    let saved = app
        .data(
            "query($p: ID!, $v: ID!) { project(id: $p) { view(id: $v) { orderBy { field direction } } } }",
            json!({"p": project, "v": saved["id"]}),
        )
        .await;
    assert_eq!(
        saved["project"]["view"]["orderBy"],
        json!([{"field": "NUM", "direction": "ASC"}])
    );

    let filter = json!({"column": {"field": "STATE"}, "eq": "OPEN"});
    let exported = run(
        &app,
        "export",
        json!({"path": format!("/p/{project}?sort=-name&filter={}", filter_param(&filter))}),
    )
    .await;
    let expected = api_rows(
        &app,
        &project,
        json!({"field": "NAME", "direction": "DESC"}),
        filter,
    )
    .await;
    assert!(!expected.is_empty());
    assert_eq!(
        csv_rows(exported["text"].as_str().expect("the file")),
        expected
    );
    assert!(exported["name"]
        .as_str()
        .unwrap_or_default()
        .ends_with(".csv"));
}

/// Adding an issue puts it where the order lists it (without reading a page again), deleting
/// it takes it out, and a column is added with options, renamed, moved and deleted.
async fn grid_manages_issues_and_columns(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, _) = typed_project(&app).await;
    let result = run(
        &app,
        "manage",
        json!({
            "path": format!("/p/{project}?sort=name"),
            "issueName": "Aardvark",
            "columnName": "Severity",
            "renamed": "Sev",
        }),
    )
    .await;
    assert_eq!(result["countBefore"], "1 issue");
    assert_eq!(
        result["addedAt"],
        json!(2),
        "first by name, under the header row"
    );
    assert_eq!(result["countAfterAdd"], "2 issues");
    assert_eq!(
        result["readsAfterAdd"]["GridIssues"],
        json!(1),
        "no page read again"
    );
    assert_eq!(result["countAfterDelete"], "1 issue");
    let base = [
        "Num", "Name", "State", "Notes", "Points", "Estimate", "Due", "Done", "Priority",
    ];
    let with = |extra: &[&str]| -> Value { json!(base.iter().chain(extra).collect::<Vec<_>>()) };
    assert_eq!(result["afterAdd"], with(&["Severity"]));
    let moved = json!([
        "Num", "Name", "State", "Notes", "Points", "Estimate", "Due", "Done", "Sev", "Priority"
    ]);
    assert_eq!(result["afterMove"], moved);
    assert_eq!(result["afterDelete"], with(&[]));
    let issues = app
        .data(
            "query($p: ID!) { project(id: $p) { issues(first: 10) { nodes { name } } customFields { name } } }",
            json!({"p": project}),
        )
        .await;
    assert_eq!(
        issues["project"]["issues"]["nodes"],
        json!([{"name": "First issue"}])
    );
    assert_eq!(
        issues["project"]["customFields"].as_array().map(Vec::len),
        Some(6)
    );
}

/// Under `--auth jwt` the page asks for a token, keeps it for the tab, and then shows the
/// caller's grid and only the caller's tenant.
async fn grid_signs_in_under_jwt(backend: Backend) {
    let app = TestApp::spawn_with_settings(backend, crate::auth::settings()).await;
    app.seed_demo().await;
    let token = crate::auth::token("tenant-0807", "grid:read grid:write");
    let result = run_allowing(
        &app,
        "signin",
        json!({"path": "/p/project-35e9", "token": token}),
        &["status of 401"],
    )
    .await;
    let names: Vec<Value> = result["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("Needs Painting"),
            json!("Check for rust"),
            json!("Girder needs replacing")
        ]
    );
    assert_eq!(result["tenants"], json!(["ACME Engineering"]));
    assert_eq!(result["stored"], json!(true));
}

/// A filter built in the filter bar (two conditions) is the API's filter: the page shows the
/// API's rows for it, counts them, and reads it back from the address.
async fn grid_filter_bar_builds_the_api_filter(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, fields) = big_project(&app).await;
    let int = fields["INT"].as_str().expect("an INT field");
    let result = run(
        &app,
        "filter",
        json!({
            "path": format!("/p/{project}?sort=name"),
            "conditions": [
                {"column": "state", "op": "eq", "value": "CLOSED"},
                {"column": int, "op": "gte", "value": "100"},
            ],
        }),
    )
    .await;
    let expected_filter = json!({"and": [
        {"column": {"field": "STATE"}, "eq": "CLOSED"},
        {"column": {"field": "CUSTOM_FIELD", "customFieldId": int}, "gte": "100"},
    ]});
    assert_eq!(result["filter"], expected_filter);
    let expected = api_rows(
        &app,
        &project,
        json!({"field": "NAME", "direction": "ASC"}),
        expected_filter,
    )
    .await;
    let shown = shown_rows(&result["rows"]);
    assert!(!shown.is_empty());
    same_list(
        "filter",
        "rows",
        &shown,
        &expected[..shown.len().min(expected.len())],
    );
    assert!(result["count"]
        .as_str()
        .unwrap_or_default()
        .contains("match"));
    assert_eq!(
        result["readBack"],
        json!([["state", "eq", "CLOSED"], [int, "gte", "100"]]),
        "the bar reads the filter back from the address"
    );
}

/// The first paint (first.js, which shows a grid's first rows before the page's script has
/// run) draws what the page itself renders: the same toolbar, tabs, header and first 50 rows,
/// attribute for attribute, for the plain list, a custom-field sort under a filter the server
/// cannot count, and a two-key view; and the page takes its two answers rather than asking
/// again (one request of each kind in all).
async fn grid_first_paint_is_the_pages_own_render(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, fields) = synthetic_project(&app, 300).await;
    let select = fields["SELECT"].as_str().expect("a SELECT field");
    let text = fields["TEXT"].as_str().expect("a TEXT field");
    let view = app
        .data(
            "mutation($i: CreateViewInput!) { createView(input: $i) { view { id } } }",
            json!({"i": {"projectId": project, "name": "Checked first", "orderBy": [
                {"field": "CUSTOM_FIELD", "customFieldId": fields["CHECKBOX"], "direction": "DESC"},
                {"field": "NAME", "direction": "ASC"}]}}),
        )
        .await["createView"]["view"]["id"]
        .as_str()
        .expect("view")
        .to_string();
    app.sweeps_idle().await;
    // Chips in a named colour, a `#rrggbb` colour and none.
    let options = app
        .data(
            "query($p: ID!) { project(id: $p) { customFields { id options { id label } } } }",
            json!({"p": project}),
        )
        .await["project"]["customFields"]
        .as_array()
        .expect("fields")
        .iter()
        .find(|f| f["id"] == select)
        .expect("the SELECT field")["options"]
        .as_array()
        .expect("options")
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let color = match i {
                0 => json!("red"),
                1 => json!("#336699"),
                _ => Value::Null,
            };
            json!({"id": o["id"], "label": o["label"], "color": color})
        })
        .collect::<Vec<_>>();
    app.data(
        "mutation($i: UpdateCustomFieldInput!) { updateCustomField(input: $i) { customField { id } } }",
        json!({"i": {"id": select, "options": options}}),
    )
    .await;
    app.sweeps_idle().await;
    let filter =
        json!({"column": {"field": "CUSTOM_FIELD", "customFieldId": text}, "contains": "e"});
    let urls = [
        format!("/p/{project}"),
        format!(
            "/p/{project}?sort=-{select}~first&filter={}",
            filter_param(&filter)
        ),
        format!("/p/{project}?view={view}"),
    ];
    let result = run(&app, "firstPaint", json!({"urls": urls, "rows": 50})).await;
    let pages = result.as_array().expect("one report per URL");
    assert_eq!(pages.len(), urls.len());
    for page in pages {
        let url = page["url"].as_str().unwrap_or_default();
        let painted: Vec<&str> = page["painted"]
            .as_array()
            .expect("markup")
            .iter()
            .map(|l| l.as_str().unwrap_or_default())
            .collect();
        let rendered: Vec<&str> = page["rendered"]
            .as_array()
            .expect("markup")
            .iter()
            .map(|l| l.as_str().unwrap_or_default())
            .collect();
        let rows = painted
            .iter()
            .filter(|l| l.contains(r#"class="grid-row" "#))
            .count();
        assert_eq!(rows, 50, "{url}: the first paint shows 50 rows");
        same_list(url, "the first paint's markup", &painted, &rendered);
        assert_eq!(
            page["paintedInert"],
            json!(true),
            "{url}: the first paint takes no input"
        );
        assert_eq!(
            page["firstPainted"],
            json!(true),
            "{url}: the page took over from the first paint"
        );
        let query = if url.contains("view=") {
            "GridViewIssues"
        } else {
            "GridIssues"
        };
        assert_eq!(
            page["operations"],
            json!({"GridProject": 1, query: 1}),
            "{url}: the page takes the first paint's answers"
        );
        assert_eq!(
            page["firstOperations"],
            json!({"GridProject": 1, query: 1}),
            "{url}: the first paint's own requests"
        );
    }
}

/// The rows a scenario reports (each with `num` and `name`), as (num, name).
fn shown_rows(rows: &Value) -> Vec<(i64, String)> {
    rows.as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["num"].as_i64().expect("num"),
                r["name"].as_str().expect("name").to_string(),
            )
        })
        .collect()
}

/// A filter of an OR group and a second condition, built in the filter bar, is the API's
/// filter: the address holds it, the bar reads it back, and the grid shows the API's rows for
/// it (every one, scrolled to the end) and its count.
async fn grid_filter_bar_builds_an_or_group(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, fields) = synthetic_project(&app, 300).await;
    let int = fields["INT"].as_str().expect("an INT field");
    let checkbox = fields["CHECKBOX"].as_str().expect("a CHECKBOX field");
    let result = run(
        &app,
        "filterGroups",
        json!({
            "path": format!("/p/{project}?sort=name"),
            "clauses": [
                {"or": [
                    {"column": "state", "op": "eq", "value": "CLOSED"},
                    {"column": int, "op": "gte", "value": "5"},
                ]},
                {"column": checkbox, "op": "checked"},
            ],
        }),
    )
    .await;
    let expected_filter = json!({"and": [
        {"or": [
            {"column": {"field": "STATE"}, "eq": "CLOSED"},
            {"column": {"field": "CUSTOM_FIELD", "customFieldId": int}, "gte": "5"},
        ]},
        {"column": {"field": "CUSTOM_FIELD", "customFieldId": checkbox}, "eq": "true"},
    ]});
    assert_eq!(
        result["filter"], expected_filter,
        "the filter in the address"
    );
    let order = json!({"field": "NAME", "direction": "ASC"});
    let expected = api_rows(&app, &project, order.clone(), expected_filter.clone()).await;
    // The counters cannot count an OR of a custom field; a page holding the whole list can.
    let total = app
        .data(
            "query($p: ID!, $o: IssueOrder, $f: IssueFilter) {
                project(id: $p) { issues(first: 100, orderBy: $o, filter: $f) { totalCount } } }",
            json!({"p": project, "o": order, "f": expected_filter}),
        )
        .await["project"]["issues"]["totalCount"]
        .as_i64()
        .expect("the list fits one page, so the API counts it");
    assert_eq!(total, expected.len() as i64);
    assert!(
        expected.len() > 30,
        "more rows than a screen: {}",
        expected.len()
    );
    let count = format!("{total} issues match");
    assert_eq!(result["initial"]["count"], count.as_str());
    assert_eq!(result["initial"]["total"], total.to_string());
    assert_eq!(result["initial"]["rowCount"], json!(total + 1));
    assert_eq!(result["duplicates"], json!([]));
    same_list(
        "filterGroups",
        "rows",
        &shown_rows(&result["rows"]),
        &expected,
    );
    let indexes: Vec<i64> = result["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["index"].as_i64().expect("aria-rowindex"))
        .collect();
    same_list(
        "filterGroups",
        "aria-rowindex",
        &indexes,
        &(2..2 + total).collect::<Vec<_>>(),
    );
    assert_eq!(result["count"], count.as_str(), "the count at the end");
    assert_eq!(result["rowCount"], json!(total + 1));
    assert_eq!(
        result["readBack"],
        json!([
            {"or": [["state", "eq", "CLOSED"], [int, "gte", "5"]]},
            [checkbox, "checked"],
        ]),
        "the bar reads the filter back from the address"
    );
}

/// Two users edit one cell; the second keeps the first's value at the conflict dialog: the
/// page shows it, sends nothing more, and the API holds it.
async fn grid_conflict_keeps_theirs(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, fields) = typed_project(&app).await;
    let text = fields["TEXT"].as_str().expect("a TEXT field");
    let result = run(
        &app,
        "conflictTheirs",
        json!({"path": format!("/p/{project}"), "column": text, "first": "from the first", "second": "from the second"}),
    )
    .await;
    let dialog = result["dialog"].as_str().expect("the dialog's text");
    assert!(
        dialog.contains("from the first") && dialog.contains("from the second"),
        "the dialog shows both values: {dialog}"
    );
    assert_eq!(result["shown"], "from the first", "the page shows theirs");
    assert_eq!(result["banners"], json!(0), "and no error");
    assert_eq!(
        result["sent"]["GridSetCell"],
        json!(1),
        "the refused write only: nothing overwrites theirs"
    );
    assert_eq!(result["afterReload"], "from the first");
    let issue = first_issue(&app, &project).await;
    assert_eq!(issue["fieldValues"][0]["value"], "from the first");
    assert_eq!(issue["version"], json!(2), "one write: the first user's");
}

/// At the end of a list sorted by num, a new issue is the last row: its index follows every
/// other row's, the grid grows by one row, and no page is read again.
async fn grid_adds_an_issue_at_the_end(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let issues = 300;
    let (project, _) = synthetic_project(&app, issues).await;
    let result = run(
        &app,
        "addAtEnd",
        json!({"path": format!("/p/{project}?sort=num"), "issueName": "Newest issue"}),
    )
    .await;
    let before = &result["before"];
    let after = &result["after"];
    let total = i64::from(issues);
    assert_eq!(before["rowCount"], json!(total + 1));
    assert_eq!(before["count"], "300 issues");
    let last_before = before["rows"]
        .as_array()
        .and_then(|r| r.last())
        .expect("rows at the end");
    assert_eq!(
        last_before["index"],
        json!(total + 1),
        "the jump shows the end"
    );
    assert_eq!(last_before["num"], json!(total));
    assert_eq!(
        before["reads"],
        json!({"GridProject": 1, "GridIssues": 1, "GridIssues:last": 1}),
        "the first page, then the end read backward"
    );
    assert_eq!(result["addedAt"], json!(total + 2), "the new issue is last");
    assert_eq!(result["addedNum"], json!(total + 1));
    assert_eq!(
        after["rowCount"],
        json!(total + 2),
        "aria-rowcount grows by one"
    );
    assert_eq!(after["count"], "301 issues");
    let shown = after["rows"].as_array().expect("rows");
    let (second_last, last) = (&shown[shown.len() - 2], &shown[shown.len() - 1]);
    assert_eq!(
        (&second_last["index"], &second_last["num"]),
        (&json!(total + 1), &json!(total)),
        "the row before it is the old last row"
    );
    assert_eq!(
        (&last["index"], &last["name"]),
        (&json!(total + 2), &json!("Newest issue"))
    );
    assert_eq!(after["reads"]["GridIssues"], json!(1), "no page read again");
    assert_eq!(after["reads"]["GridIssues:last"], json!(1));
    let expected = api_rows(
        &app,
        &project,
        json!({"field": "NUM", "direction": "ASC"}),
        Value::Null,
    )
    .await;
    assert_eq!(
        expected.last(),
        Some(&(total + 1, "Newest issue".to_string()))
    );
}

/// A view is renamed and deleted through its tab's menu: the tab and the API follow, and the
/// page leaves the deleted view's address.
async fn grid_renames_and_deletes_views_from_tabs(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, _) = synthetic_project(&app, 300).await;
    let mut ids = Vec::new();
    for name in ["By name", "By state"] {
        let field = if name == "By name" { "NAME" } else { "STATE" };
        ids.push(
            app.data(
                "mutation($i: CreateViewInput!) { createView(input: $i) { view { id } } }",
                json!({"i": {"projectId": project, "name": name, "orderBy": [
                    {"field": field, "direction": "ASC"}]}}),
            )
            .await["createView"]["view"]["id"]
                .as_str()
                .expect("view")
                .to_string(),
        );
    }
    app.sweeps_idle().await;
    let views = || async {
        app.data(
            "query($p: ID!) { project(id: $p) { views { id name } } }",
            json!({"p": project}),
        )
        .await["project"]["views"]
            .clone()
    };
    let result = run(
        &app,
        "viewTabs",
        json!({
            "path": format!("/p/{project}?view={}", ids[1]),
            "rename": "By state",
            "renamed": "State first",
            "remove": "State first",
        }),
    )
    .await;
    assert_eq!(result["opened"]["names"], json!(["By name", "By state"]));
    assert_eq!(result["opened"]["selected"], "By state");
    let renamed = &result["renamed"];
    assert_eq!(renamed["names"], json!(["By name", "State first"]));
    assert_eq!(
        renamed["selected"], "State first",
        "the tab shown keeps its place"
    );
    assert!(
        renamed["url"]
            .as_str()
            .unwrap_or_default()
            .ends_with(&format!("?view={}", ids[1])),
        "{}",
        renamed["url"]
    );
    let deleted = &result["deleted"];
    assert_eq!(deleted["removed"], ids[1].as_str());
    assert_eq!(deleted["names"], json!(["By name"]), "the tab is gone");
    assert_eq!(deleted["selected"], "All issues");
    assert_eq!(
        deleted["url"],
        app.url(&format!("/p/{project}")).as_str(),
        "the address has no view"
    );
    assert_eq!(deleted["count"], "300 issues");
    assert_eq!(
        views().await,
        json!([{"id": ids[0], "name": "By name"}]),
        "the API lists the view kept only"
    );
}

/// Under `--auth jwt`, a token refused after signing in (a sort, then a reload, sent with it)
/// brings the sign-in dialog back, saying so; signing in again shows the rows.
async fn grid_signs_in_again_after_a_refused_token(backend: Backend) {
    let app = TestApp::spawn_with_settings(backend, crate::auth::settings()).await;
    app.seed_demo().await;
    let token = crate::auth::token("tenant-0807", "grid:read grid:write");
    // Well formed, but signed with another secret.
    let refused = gridgate::auth::mint_hs256(
        "another-secret-another-secret-another!",
        "tester",
        "tenant-0807",
        "grid:read grid:write",
        std::time::Duration::from_secs(600),
        None,
        None,
    )
    .expect("token");
    let result = run_allowing(
        &app,
        "signinAgain",
        json!({"path": "/p/project-35e9", "token": token, "badToken": refused, "sortColumn": "name"}),
        &["status of 401"],
    )
    .await;
    let names = |step: &str| -> Vec<String> {
        result[step]["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let by_num = ["Needs Painting", "Check for rust", "Girder needs replacing"];
    let by_name = ["Check for rust", "Girder needs replacing", "Needs Painting"];
    assert_eq!(names("first"), by_num);
    let first = result["first"]["text"].as_str().unwrap_or_default();
    assert!(
        first.contains("needs a bearer token") && !first.contains("refused"),
        "no token was given yet: {first}"
    );
    for step in ["afterAction", "afterReload"] {
        let text = result[step]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains("the one given was refused"),
            "{step}: the dialog says the token was refused: {text}"
        );
        assert_eq!(names(step), by_name, "{step}: the rows, sorted by name");
        assert!(
            result[step]["url"]
                .as_str()
                .unwrap_or_default()
                .ends_with("?sort=name"),
            "{step}: {}",
            result[step]["url"]
        );
    }
    assert_eq!(result["stored"], json!(true), "the good token is kept");
}

crate::both_stores!(
    grid_first_paint_is_the_pages_own_render,
    grid_filter_bar_builds_the_api_filter,
    grid_manages_issues_and_columns,
    grid_signs_in_under_jwt,
    grid_scrolls_every_row_once,
    grid_edits_each_type_and_resolves_conflicts,
    grid_views_and_export,
    grid_filter_bar_builds_an_or_group,
    grid_conflict_keeps_theirs,
    grid_adds_an_issue_at_the_end,
    grid_renames_and_deletes_views_from_tabs,
    grid_signs_in_again_after_a_refused_token,
);
