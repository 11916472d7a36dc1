//! `GET /export` and `gridgate export` against both stores: the rows of a CSV or NDJSON export
//! are the API's pages, in order, for orders, filters and saved views (a project with a column
//! of every type, SELECT labels, and text that needs quoting), at small pages and at the API's
//! page size; the refusals are coded (arguments, a view still building, unknown projects and
//! views, another tenant's project, credentials and scopes); exports are bounded per caller
//! and in total; one that runs out of query cost mid-way says so (NDJSON's error line, CSV's
//! aborted transfer), and one out of time is refused; the command writes the endpoint's bytes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use gridgate::app::Settings;
use gridgate::export::page::{arguments, document, variables, Which};
use gridgate::export::ExportList;
use gridgate::graphql::analysis::{analyze, QueryLimits, TypeMap};
use gridgate::http::admission::{Rate, Shares};
use gridgate::http::ExportLimits;
use gridgate::seed::{self, Synthetic};
use serde_json::{json, Value};

use crate::abuse::{bearer, jwt_settings, probed_app, refusals, within, ACME, MEDIA, SECRET};
use crate::cli::Cli;
use crate::support::app::{paused_app, Backend, TestApp};

/// The demo's projects of ACME and of Media.
const BRIDGE: &str = "project-35e9";
const NEWS: &str = "project-7b7e";

// ---------------------------------------------------------------------------------------------
// The API, however it is served.

/// A GraphQL endpoint that answers requests which must succeed.
#[async_trait]
trait Api: Sync {
    async fn data(&self, query: &str, variables: Value) -> Value;
}

#[async_trait]
impl Api for TestApp {
    async fn data(&self, query: &str, variables: Value) -> Value {
        TestApp::data(self, query, variables).await
    }
}

/// A server the test started as a process (`gridgate serve`).
struct Remote {
    graphql: String,
    client: reqwest::Client,
}

#[async_trait]
impl Api for Remote {
    async fn data(&self, query: &str, variables: Value) -> Value {
        let body: Value = self
            .client
            .post(&self.graphql)
            .json(&json!({ "query": query, "variables": variables }))
            .send()
            .await
            .expect("POST /graphql")
            .json()
            .await
            .expect("JSON body");
        assert!(body.get("errors").is_none(), "unexpected errors: {body:#}");
        body["data"].clone()
    }
}

// ---------------------------------------------------------------------------------------------
// A project with a column of every type.

/// The project's id and its fields' ids by name.
struct Grid {
    project: String,
    field: HashMap<&'static str, String>,
    /// SELECT option ids by label.
    option: HashMap<&'static str, String>,
}

const NOTES: &str = "Notes, \"free\"";
const PROJECT_NAME: &str = "Bridge, \"North\" – ½";
const LOW: &str = "Low, \"maybe\"";

/// An issue to create: its name, state and cells (field name, value or option label).
type Issue = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str)>,
);

/// A project of `tenant` with a TEXT, INT, NUMBER, DATE, CHECKBOX and SELECT field (in that
/// position order) and eight issues whose texts need CSV quoting (commas, quotes, newlines),
/// with empty cells and SELECT cells of both options.
async fn grid(api: &impl Api, tenant: &str) -> Grid {
    let project = api
        .data(
            "mutation($t: ID!, $n: String!) { createProject(input: {tenantId: $t, name: $n}) { project { id } } }",
            json!({"t": tenant, "n": PROJECT_NAME}),
        )
        .await["createProject"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut field = HashMap::new();
    let mut option = HashMap::new();
    for (name, kind) in [
        (NOTES, "TEXT"),
        ("Estimate", "INT"),
        ("Cost", "NUMBER"),
        ("Due", "DATE"),
        ("Done", "CHECKBOX"),
        ("Priority", "SELECT"),
    ] {
        let options =
            (kind == "SELECT").then(|| json!([{"label": "High", "color": "red"}, {"label": LOW}]));
        let created = api
            .data(
                "mutation($p: ID!, $n: String!, $t: CustomFieldType!, $o: [SelectOptionInput!]) {
                   createCustomField(input: {projectId: $p, name: $n, type: $t, options: $o}) {
                     customField { id options { id label } } } }",
                json!({"p": project, "n": name, "t": kind, "o": options}),
            )
            .await["createCustomField"]["customField"]
            .clone();
        field.insert(name, created["id"].as_str().unwrap().to_string());
        for o in created["options"].as_array().unwrap() {
            let label = if o["label"] == "High" { "High" } else { LOW };
            option.insert(label, o["id"].as_str().unwrap().to_string());
        }
    }
    let issues: [Issue; 8] = [
        (
            "Paint the deck",
            "OPEN",
            vec![
                (NOTES, "two coats, then varnish"),
                ("Estimate", "3"),
                ("Cost", "1200.50"),
                ("Due", "2023-05-01"),
                ("Done", "true"),
                ("Priority", "High"),
            ],
        ),
        (
            "Say \"hi\"",
            "CLOSED",
            vec![
                (NOTES, "line one\nline two"),
                ("Estimate", "-7"),
                ("Done", "false"),
                ("Priority", LOW),
            ],
        ),
        (
            "Rivets, bolts",
            "OPEN",
            vec![
                (NOTES, "=SUM(A1:A2)"),
                ("Cost", "-0.001"),
                ("Due", "2024-02-29"),
            ],
        ),
        (
            "Crème brûlée ✓",
            "OPEN",
            vec![
                (NOTES, "tab\there\r\nand CRLF"),
                ("Estimate", "42"),
                ("Priority", "High"),
            ],
        ),
        ("Empty cells", "CLOSED", vec![]),
        (
            "\"quoted\", twice \"\"",
            "OPEN",
            vec![("Estimate", "0"), ("Cost", "1000"), ("Done", "true")],
        ),
        (
            "Zeta",
            "OPEN",
            vec![(NOTES, "a,b,c"), ("Done", "true"), ("Priority", LOW)],
        ),
        (
            "alpha",
            "CLOSED",
            vec![(NOTES, "\"\""), ("Due", "1999-12-31"), ("Cost", "7.25")],
        ),
    ];
    for (name, state, cells) in issues {
        let values: Vec<Value> = cells
            .iter()
            .map(|(f, v)| {
                let value = option.get(v).cloned().unwrap_or_else(|| v.to_string());
                json!({"fieldId": field[f], "value": value})
            })
            .collect();
        api.data(
            "mutation($p: ID!, $n: String!, $s: IssueState, $v: [FieldValueInput!]) {
               createIssue(input: {projectId: $p, name: $n, state: $s, fieldValues: $v}) { issue { id } } }",
            json!({"p": project, "n": name, "s": state, "v": values}),
        )
        .await;
    }
    Grid {
        project,
        field,
        option,
    }
}

// ---------------------------------------------------------------------------------------------
// What the API answers, as an export would write it.

/// A column after num, name and state: its field's id and name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Column {
    id: String,
    name: String,
}

/// An issue as the API lists it: its cells' texts by field id (a SELECT cell's option label).
struct ApiRow {
    id: String,
    num: i64,
    name: String,
    state: String,
    cells: HashMap<String, String>,
}

const ROWS: &str = "pageInfo { hasNextPage endCursor }
    nodes { id num name state fieldValues { field { id type } value option { label } } }";

/// Every row of a list, read from `/graphql` in pages of `page` rows, and its columns: the
/// project's fields in position order, or the view's `columns`.
async fn api_rows(
    api: &impl Api,
    project: &str,
    list: &ExportList,
    page: usize,
) -> (Vec<Column>, Vec<ApiRow>) {
    let fields = api
        .data(
            "query($p: ID!) { project(id: $p) { customFields { id name } } }",
            json!({"p": project}),
        )
        .await["project"]["customFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| Column {
            id: f["id"].as_str().unwrap().into(),
            name: f["name"].as_str().unwrap().into(),
        })
        .collect::<Vec<_>>();
    let (query, variables, view_columns) = match list {
        ExportList::Issues { order_by, filter } => (
            format!(
                "query($p: ID!, $first: Int, $after: String, $o: IssueOrder, $f: IssueFilter) {{
                   project(id: $p) {{ list: issues(first: $first, after: $after, orderBy: $o, filter: $f) {{ {ROWS} }} }} }}"
            ),
            json!({
                "p": project,
                "o": order_by.as_ref().map(|o| async_graphql::InputType::to_value(o).into_json().unwrap()),
                "f": filter.as_deref().map(|f| async_graphql::InputType::to_value(f).into_json().unwrap()),
            }),
            None,
        ),
        ExportList::View(view) => {
            let columns: Vec<String> = api
                .data(
                    "query($p: ID!, $v: ID!) { project(id: $p) { view(id: $v) { columns } } }",
                    json!({"p": project, "v": view}),
                )
                .await["project"]["view"]["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect();
            (
                format!(
                    "query($p: ID!, $v: ID!, $first: Int, $after: String) {{
                       project(id: $p) {{ view(id: $v) {{ list: issues(first: $first, after: $after) {{ {ROWS} }} }} }} }}"
                ),
                json!({"p": project, "v": view}),
                Some(columns).filter(|c| !c.is_empty()),
            )
        }
    };
    let columns = match view_columns {
        None => fields,
        Some(ids) => ids
            .iter()
            .map(|id| fields.iter().find(|f| &f.id == id).unwrap().clone())
            .collect(),
    };
    let mut rows = Vec::new();
    let mut after = Value::Null;
    loop {
        let mut vars = variables.clone();
        vars["first"] = json!(page);
        vars["after"] = after.clone();
        let data = api.data(&query, vars).await;
        let list = match list {
            ExportList::Issues { .. } => &data["project"]["list"],
            ExportList::View(_) => &data["project"]["view"]["list"],
        };
        for node in list["nodes"].as_array().unwrap() {
            let cells = node["fieldValues"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|cell| {
                    let text = if cell["field"]["type"] == "SELECT" {
                        cell["option"]["label"].as_str()?.to_string()
                    } else {
                        cell["value"].as_str().unwrap().to_string()
                    };
                    Some((cell["field"]["id"].as_str().unwrap().to_string(), text))
                })
                .collect();
            rows.push(ApiRow {
                id: node["id"].as_str().unwrap().into(),
                num: node["num"].as_i64().unwrap(),
                name: node["name"].as_str().unwrap().into(),
                state: node["state"].as_str().unwrap().into(),
                cells,
            });
        }
        if list["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = list["pageInfo"]["endCursor"].clone();
    }
    (columns, rows)
}

/// The CSV records an export of these rows must hold: the header, then a record per row.
fn csv_records(columns: &[Column], rows: &[ApiRow]) -> Vec<Vec<String>> {
    let header = ["Num", "Name", "State"]
        .iter()
        .map(|s| s.to_string())
        .chain(columns.iter().map(|c| c.name.clone()));
    let mut records = vec![header.collect::<Vec<_>>()];
    for row in rows {
        let fixed = [row.num.to_string(), row.name.clone(), row.state.clone()];
        let cells = columns
            .iter()
            .map(|c| row.cells.get(&c.id).cloned().unwrap_or_default());
        records.push(fixed.into_iter().chain(cells).collect());
    }
    records
}

/// The NDJSON lines an export of these rows must hold.
fn ndjson_lines(columns: &[Column], rows: &[ApiRow]) -> Vec<Value> {
    rows.iter()
        .map(|row| {
            let fields: serde_json::Map<String, Value> = columns
                .iter()
                .map(|c| (c.id.clone(), json!(row.cells.get(&c.id))))
                .collect();
            json!({"id": row.id, "num": row.num, "name": row.name, "state": row.state, "fields": fields})
        })
        .collect()
}

/// A CSV body's records, read by the `csv` crate as any client would.
fn parse_csv(body: &[u8]) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(body)
        .records()
        .map(|r| r.unwrap().iter().map(str::to_string).collect())
        .collect()
}

fn parse_ndjson(body: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(body).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "{text}");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Exports over HTTP.

/// The URL parameters of an export of `list`.
fn query_of(project: &str, list: &ExportList, format: &str) -> String {
    let mut params = vec![("project", project.to_string()), ("format", format.into())];
    match list {
        ExportList::Issues { order_by, filter } => {
            if let Some(o) = order_by {
                let json = async_graphql::InputType::to_value(o).into_json().unwrap();
                params.push(("orderBy", json.to_string()));
            }
            if let Some(f) = filter {
                let json = async_graphql::InputType::to_value(f.as_ref())
                    .into_json()
                    .unwrap();
                params.push(("filter", json.to_string()));
            }
        }
        ExportList::View(view) => params.push(("view", view.clone())),
    }
    serde_urlencoded::to_string(params).unwrap()
}

/// GETs `/export?query` with an optional `Authorization`.
async fn get(app: &TestApp, query: &str, authorization: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(app.url(&format!("/export?{query}")));
    if let Some(authorization) = authorization {
        request = request.header("authorization", authorization);
    }
    within("an export's headers", request.send()).await.unwrap()
}

/// An export that must succeed: its headers, and its whole body.
async fn export(
    app: &TestApp,
    query: &str,
    authorization: Option<&str>,
) -> (reqwest::header::HeaderMap, Vec<u8>) {
    let response = get(app, query, authorization).await;
    let status = response.status();
    let headers = response.headers().clone();
    let body = within("an export's body", response.bytes())
        .await
        .expect("a whole body")
        .to_vec();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    (headers, body)
}

/// A refused export: its status, `Retry-After`, and its one error (which has a request id).
async fn refused(
    app: &TestApp,
    query: &str,
    authorization: Option<&str>,
) -> (u16, Option<String>, Value) {
    let response = get(app, query, authorization).await;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let body: Value = response.json().await.expect("a JSON refusal");
    let errors = body["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{body:#}");
    assert!(errors[0]["extensions"]["requestId"].is_string(), "{body:#}");
    (status, retry_after, errors[0].clone())
}

/// Exports `list` as CSV and as NDJSON and compares both, row for row and in order, with the
/// API's pages of `api_page` rows; also the headers and CSV's quoting on the wire.
async fn assert_export_is_the_api(
    app: &TestApp,
    project: &str,
    list: &ExportList,
    api_page: usize,
) {
    let (columns, rows) = api_rows(app, project, list, api_page).await;
    let (headers, body) = export(app, &query_of(project, list, "csv"), None).await;
    assert_eq!(headers["content-type"], "text/csv; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(parse_csv(&body), csv_records(&columns, &rows), "{list:?}");
    assert!(body.ends_with(b"\r\n"), "records end with CRLF");
    let (headers, body) = export(app, &query_of(project, list, "ndjson"), None).await;
    assert_eq!(headers["content-type"], "application/x-ndjson");
    assert_eq!(
        parse_ndjson(&body),
        ndjson_lines(&columns, &rows),
        "{list:?}"
    );
    // The cells are written in the columns' order.
    if let Some(line) = std::str::from_utf8(&body).unwrap().lines().next() {
        let at: Vec<usize> = columns.iter().map(|c| line.find(&c.id).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{line}");
    }
}

fn issues(order_by: Option<Value>, filter: Option<Value>) -> ExportList {
    ExportList::new(None, order_by, filter).unwrap()
}

/// An app whose exports read pages of 3 rows, so the fixture's lists take several.
async fn small_pages_app(backend: Backend) -> TestApp {
    let mut settings = Settings::default();
    settings.http.exports.page_size = 3;
    TestApp::spawn_with_settings(backend, settings).await
}

async fn new_tenant(app: &impl Api) -> String {
    app.data(
        r#"mutation { createTenant(input: {name: "Exporters"}) { tenant { id } } }"#,
        json!({}),
    )
    .await["createTenant"]["tenant"]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// An export's rows are the API's pages, in order, for the default order, orders by each kind
/// of column (empty cells first and last), filters on the sorted column and others, and a
/// filter that matches nothing; cells are canonical text, SELECT cells their labels, and
/// texts with commas, quotes and newlines come back as they were.
async fn export_rows_are_the_api_pages(backend: Backend) {
    let app = small_pages_app(backend).await;
    let tenant = new_tenant(&app).await;
    let grid = grid(&app, &tenant).await;
    let f = |name: &str| grid.field[name].clone();
    let lists = [
        issues(None, None),
        issues(Some(json!({"field": "NAME", "direction": "DESC"})), None),
        issues(
            Some(
                json!({"field": "CUSTOM_FIELD", "customFieldId": f("Estimate"), "empty": "FIRST"}),
            ),
            None,
        ),
        issues(
            Some(
                json!({"field": "CUSTOM_FIELD", "customFieldId": f("Priority"), "direction": "DESC"}),
            ),
            Some(json!({"column": {"field": "STATE"}, "eq": "OPEN"})),
        ),
        issues(
            Some(json!({"field": "CUSTOM_FIELD", "customFieldId": f("Cost")})),
            Some(
                json!({"column": {"field": "CUSTOM_FIELD", "customFieldId": f("Cost")}, "gte": "0"}),
            ),
        ),
        issues(
            None,
            Some(json!({"or": [
                {"column": {"field": "CUSTOM_FIELD", "customFieldId": f(NOTES)}, "contains": ","},
                {"column": {"field": "CUSTOM_FIELD", "customFieldId": f("Done")}, "eq": "true"},
            ]})),
        ),
        issues(
            None,
            Some(json!({"column": {"field": "NAME"}, "eq": "nothing"})),
        ),
    ];
    for list in &lists {
        assert_export_is_the_api(&app, &grid.project, list, 2).await;
    }

    // On the wire: the header's and cells' quoting, the file's name.
    let (headers, body) = export(&app, &query_of(&grid.project, &lists[0], "csv"), None).await;
    let text = String::from_utf8(body).unwrap();
    assert!(
        text.starts_with(
            "Num,Name,State,\"Notes, \"\"free\"\"\",Estimate,Cost,Due,Done,Priority\r\n\
             1,Paint the deck,OPEN,\"two coats, then varnish\",3,"
        ),
        "{text}"
    );
    assert!(
        text.contains("\r\n2,\"Say \"\"hi\"\"\",CLOSED,\"line one\nline two\",-7,,,false,\"Low, \"\"maybe\"\"\"\r\n"),
        "{text}"
    );
    assert!(
        text.contains("\r\n5,Empty cells,CLOSED,,,,,,\r\n"),
        "{text}"
    );
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"Bridge, _North_ _ _.csv\"; \
         filename*=UTF-8''Bridge%2C%20%22North%22%20%E2%80%93%20%C2%BD.csv"
    );
    let (headers, _) = export(&app, &query_of(&grid.project, &lists[0], "ndjson"), None).await;
    assert!(headers["content-disposition"]
        .to_str()
        .unwrap()
        .ends_with(".ndjson"));
    // `csv` is the default format.
    let (headers, _) = export(&app, &format!("project={}", grid.project), None).await;
    assert_eq!(headers["content-type"], "text/csv; charset=utf-8");
}

/// A view's export is its pages: its order, its filter, and its `columns` in their order (all
/// the fields in position order for a view without columns).
async fn a_views_export_is_its_pages(backend: Backend) {
    let app = small_pages_app(backend).await;
    let tenant = new_tenant(&app).await;
    let grid = grid(&app, &tenant).await;
    let create = |input: Value| {
        let app = &app;
        async move {
            app.data(
                "mutation($i: CreateViewInput!) { createView(input: $i) { view { id } } }",
                json!({"i": input}),
            )
            .await["createView"]["view"]["id"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let with_columns = create(json!({
        "projectId": grid.project,
        "name": "Open by priority",
        "orderBy": [
            {"field": "CUSTOM_FIELD", "customFieldId": grid.field["Priority"], "direction": "DESC", "empty": "FIRST"},
            {"field": "NAME"},
        ],
        "filter": {"column": {"field": "STATE"}, "eq": "OPEN"},
        "columns": [grid.field["Priority"], grid.field[NOTES]],
    }))
    .await;
    let without_columns = create(json!({
        "projectId": grid.project,
        "name": "By due date",
        "orderBy": [{"field": "CUSTOM_FIELD", "customFieldId": grid.field["Due"], "direction": "DESC"}],
    }))
    .await;
    app.sweeps_idle().await;
    for view in [&with_columns, &without_columns] {
        assert_export_is_the_api(&app, &grid.project, &ExportList::View(view.clone()), 2).await;
    }
    let (_, body) = export(
        &app,
        &query_of(&grid.project, &ExportList::View(with_columns), "csv"),
        None,
    )
    .await;
    let records = parse_csv(&body);
    assert_eq!(records[0], ["Num", "Name", "State", "Priority", NOTES]);
    // OPEN issues only, those without a priority first, then Low before High (descending),
    // then by name.
    let names: Vec<&str> = records[1..].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(
        names,
        [
            "\"quoted\", twice \"\"",
            "Rivets, bolts",
            "Zeta",
            "Crème brûlée ✓",
            "Paint the deck"
        ]
    );
    assert_eq!(grid.option.len(), 2);
}

/// A project of 250 issues with a field of every type exports at the API's page size (three
/// pages) exactly as the API pages it, by num and by a custom field.
async fn a_large_project_exports_at_the_api_page_size(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let seeded = seed::synthetic(
        &app.store,
        Synthetic {
            projects: 1,
            issues: 250,
            fields: 6,
            seed: 5,
        },
        |_| {},
    )
    .await
    .expect("seed");
    let project = seeded[0].project.clone();
    let (columns, _) = api_rows(&app, &project, &issues(None, None), 100).await;
    assert_export_is_the_api(&app, &project, &issues(None, None), 100).await;
    let select = &columns[5].id;
    let by_select = issues(
        Some(json!({"field": "CUSTOM_FIELD", "customFieldId": select, "direction": "DESC"})),
        None,
    );
    assert_export_is_the_api(&app, &project, &by_select, 100).await;
    let (_, body) = export(&app, &query_of(&project, &by_select, "csv"), None).await;
    assert_eq!(parse_csv(&body).len(), 251);
}

/// What cannot be exported is refused before anything is sent, in `/graphql`'s shape, with
/// a code and a status: arguments, an unknown or malformed project or view, a filter the API
/// refuses, and a view still building its first index.
async fn export_refusals_are_coded(backend: Backend) {
    let app = paused_app(backend, "export-test").await;
    app.seed_demo().await;
    let code = |error: &Value| error["extensions"]["code"].as_str().unwrap().to_string();
    let order = r#"{"field":"NAME"}"#;
    for (query, status, expected, says) in [
        (format!("project={BRIDGE}&view=xview-1&orderBy={order}"), 400, "BAD_USER_INPUT", "not both"),
        (format!("project={BRIDGE}&view=xview-1&filter={{}}"), 400, "BAD_USER_INPUT", "not both"),
        (format!("project={BRIDGE}&orderBy={{\"field\""), 400, "BAD_USER_INPUT", "not JSON"),
        (format!("project={BRIDGE}&orderBy={{\"field\":\"NUM\",\"field\":\"NAME\"}}"), 400, "BAD_USER_INPUT", "once"),
        (format!("project={BRIDGE}&orderBy={{\"field\":\"COLOUR\"}}"), 400, "BAD_USER_INPUT", "orderBy"),
        (format!("project={BRIDGE}&filter=[1]"), 400, "BAD_USER_INPUT", "filter"),
        (format!("project={BRIDGE}&filter={{\"column\":{{\"field\":\"CUSTOM_FIELD\",\"customFieldId\":\"xattrib-0000\"}},\"eq\":\"1\"}}"), 400, "BAD_USER_INPUT", "xattrib-0000"),
        (format!("project={BRIDGE}&format=xlsx"), 400, "BAD_USER_INPUT", "format"),
        (format!("project={BRIDGE}&sort=name"), 400, "BAD_USER_INPUT", "`sort`"),
        ("format=csv".to_string(), 400, "BAD_USER_INPUT", "`project` is required"),
        ("project=bridge".to_string(), 400, "BAD_USER_INPUT", "bridge"),
        (format!("project={BRIDGE}&project={NEWS}"), 400, "BAD_REQUEST", "repeats"),
        ("project=project-ffff".to_string(), 404, "NOT_FOUND", "project-ffff"),
        (format!("project={BRIDGE}&view=xview-0000"), 404, "NOT_FOUND", "xview-0000"),
    ] {
        let query = query.replace('{', "%7B").replace('}', "%7D").replace('"', "%22");
        let (got, _, error) = refused(&app, &query, None).await;
        assert_eq!((got, code(&error).as_str()), (status, expected), "{query}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
    // Only GET (and HEAD).
    let posted = app
        .client
        .post(app.url(&format!("/export?project={BRIDGE}")))
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status(), 405);

    // A view whose first index is still building (the app's sweeps are paused).
    let view = app
        .data(
            "mutation($p: ID!) { createView(input: {projectId: $p, name: \"Later\", orderBy: [{field: NAME}]}) { view { id status } } }",
            json!({"p": BRIDGE}),
        )
        .await["createView"]["view"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, retry_after, error) = refused(
        &app,
        &format!("project={BRIDGE}&view={view}&format=ndjson"),
        None,
    )
    .await;
    assert_eq!(
        (status, code(&error).as_str()),
        (409, "VIEW_BUILDING"),
        "{error}"
    );
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert!(error["extensions"]["progress"].is_object(), "{error}");
}

/// Under `--auth jwt` an export is authenticated and scoped exactly like `/graphql`: no
/// credentials is 401, no `grid:read` is 403, and a project of another tenant is `NOT_FOUND`,
/// answered like a project nobody has.
async fn exports_are_authenticated_like_graphql(backend: Backend) {
    let (app, _probe) = probed_app(backend, jwt_settings(Shares::default())).await;
    let acme = bearer(ACME);
    let media = bearer(MEDIA);
    let code = |error: &Value| error["extensions"]["code"].as_str().unwrap().to_string();

    let response = get(&app, &format!("project={BRIDGE}"), None).await;
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["www-authenticate"], "Bearer");
    let (status, _, error) = refused(&app, &format!("project={BRIDGE}"), Some("Bearer nope")).await;
    assert_eq!((status, code(&error).as_str()), (401, "UNAUTHENTICATED"));

    let (_, body) = export(&app, &format!("project={BRIDGE}"), Some(&acme)).await;
    assert!(
        body.starts_with(b"Num,Name,State,"),
        "{}",
        String::from_utf8_lossy(&body)
    );

    // Another tenant's project, and one nobody has: the same answer.
    let without_id = |error: &Value, id: &str| {
        let mut error = error.clone();
        error["extensions"]["requestId"] = Value::Null;
        error["message"] = error["message"].as_str().unwrap().replace(id, "ID").into();
        error
    };
    let (status, _, foreign) = refused(&app, &format!("project={BRIDGE}"), Some(&media)).await;
    assert_eq!((status, code(&foreign).as_str()), (404, "NOT_FOUND"));
    let (status, _, missing) = refused(&app, "project=project-ffff", Some(&media)).await;
    assert_eq!(status, 404);
    assert_eq!(
        without_id(&foreign, BRIDGE),
        without_id(&missing, "project-ffff")
    );
    let (status, _, _) = refused(&app, &format!("project={NEWS}"), Some(&acme)).await;
    assert_eq!(status, 404);

    // Valid credentials without `grid:read`.
    let write_only = gridgate::auth::mint_hs256(
        SECRET,
        "tester",
        ACME,
        "grid:write",
        Duration::from_secs(600),
        None,
        None,
    )
    .unwrap();
    let (status, _, error) = refused(
        &app,
        &format!("project={BRIDGE}"),
        Some(&format!("Bearer {write_only}")),
    )
    .await;
    assert_eq!(
        (status, code(&error).as_str()),
        (403, "FORBIDDEN"),
        "{error}"
    );
}

/// A caller runs at most its share of exports at once (429 past it) and the server its limit
/// (503), each with `Retry-After`; the places come back as exports end.
async fn exports_are_bounded_per_caller_and_in_total(backend: Backend) {
    let mut settings = jwt_settings(Shares::default());
    settings.http.exports = ExportLimits {
        per_caller: 2,
        total: 3,
        ..ExportLimits::default()
    };
    let (app, probe) = probed_app(backend, settings).await;
    let app = Arc::new(app);
    let (acme, media) = (bearer(ACME), bearer(MEDIA));
    let start = |authorization: &str, project: &str| {
        let (app, authorization) = (app.clone(), authorization.to_string());
        let query = format!("project={project}");
        tokio::spawn(async move { export(&app, &query, Some(&authorization)).await.1 })
    };
    probe.close_gate();
    // Each export's first page reads the project beside its issues (2 calls), and parks.
    let parked = vec![start(&acme, BRIDGE), start(&acme, BRIDGE)];
    probe.wait_parked(4).await;
    let (status, retry_after, error) =
        refused(&app, &format!("project={BRIDGE}"), Some(&acme)).await;
    assert_eq!(
        (status, error["extensions"]["code"].as_str()),
        (429, Some("RATE_LIMITED")),
        "{error}"
    );
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert!(
        error["message"].as_str().unwrap().contains("exports"),
        "{error}"
    );
    let mut parked = parked;
    parked.push(start(&media, NEWS));
    probe.wait_parked(6).await;
    let (status, retry_after, error) =
        refused(&app, &format!("project={NEWS}"), Some(&media)).await;
    assert_eq!(
        (status, error["extensions"]["code"].as_str()),
        (503, Some("OVERLOADED")),
        "{error}"
    );
    assert_eq!(retry_after.as_deref(), Some("1"));
    assert_eq!(refusals(&app, "caller_exports", "tenant").await, 1);
    assert_eq!(refusals(&app, "server_exports", "tenant").await, 1);
    probe.open_gate();
    for export in parked {
        let body = within("a parked export", export).await.unwrap();
        assert!(body.starts_with(b"Num,Name,State"));
    }
    // Every place is back.
    for _ in 0..2 {
        export(&app, &format!("project={BRIDGE}"), Some(&acme)).await;
    }
}

/// The cost of a page of `list` of `project` at `page` rows, as the API prices it.
fn page_cost(project: &str, list: &ExportList, which: Which, page: usize) -> u64 {
    let args = arguments(list, page, None);
    let doc = async_graphql::parser::parse_query(document(list, which)).unwrap();
    let types = TypeMap::from_sdl(&gridgate::graphql::sdl());
    analyze(
        &doc,
        None,
        &variables(project, list, &args),
        &types,
        &QueryLimits::default(),
    )
    .unwrap()
    .cost
}

/// An export is charged each page's price as it reads it: one whose caller's bucket of query
/// cost runs dry mid-way (and will not refill soon) stops there, NDJSON with an error line in
/// `/graphql`'s shape after the rows it wrote, CSV by aborting the transfer.
async fn an_export_out_of_query_cost_stops_visibly(backend: Backend) {
    let list = issues(None, None);
    let store = crate::support::app::TestStore::new(backend).await;
    let mut projects = Vec::new();
    for seed_number in [11, 12] {
        let seeded = seed::synthetic(
            &store.store,
            Synthetic {
                projects: 1,
                issues: 8,
                fields: 2,
                seed: seed_number,
            },
            |_| {},
        )
        .await
        .expect("seed");
        projects.push((seeded[0].tenant.clone(), seeded[0].project.clone()));
    }
    // Pages of 3: the first page and the second are paid for, the third (of 8 issues) is not,
    // and the bucket refills one point an hour.
    let head = page_cost(&projects[0].1, &list, Which::Head, 3);
    let next = page_cost(&projects[0].1, &list, Which::Next, 3);
    assert!(head > next, "{head} {next}");
    let mut settings = jwt_settings(Shares {
        cost_rate: Some(Rate {
            refill: Duration::from_secs(3600),
            burst: std::num::NonZeroU32::new(u32::try_from(head + next).unwrap()).unwrap(),
        }),
        ..Shares::default()
    });
    settings.http.exports.page_size = 3;
    let app = TestApp::serve_with_settings(store.store.clone(), store, settings).await;

    let (tenant, project) = &projects[0];
    let (_, body) = export(
        &app,
        &format!("project={project}&format=ndjson"),
        Some(&bearer(tenant)),
    )
    .await;
    let lines = parse_ndjson(&body);
    assert_eq!(lines.len(), 7, "{lines:#?}");
    let nums: Vec<i64> = lines[..6]
        .iter()
        .map(|l| l["num"].as_i64().unwrap())
        .collect();
    assert_eq!(nums, [1, 2, 3, 4, 5, 6]);
    let error = &lines[6]["errors"][0];
    assert_eq!(error["extensions"]["code"], "RATE_LIMITED", "{error}");
    assert!(error["extensions"]["requestId"].is_string(), "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("cost"),
        "{error}"
    );
    // The bucket is empty: the next export is refused before it starts.
    let (status, retry_after, error) =
        refused(&app, &format!("project={project}"), Some(&bearer(tenant))).await;
    assert_eq!(
        (status, error["extensions"]["code"].as_str()),
        (429, Some("RATE_LIMITED"))
    );
    assert!(
        retry_after.unwrap().parse::<u64>().unwrap() > 3600,
        "an hour a point"
    );

    // CSV cannot say it: the transfer is cut off, never silently short.
    let (tenant, project) = &projects[1];
    let response = get(&app, &format!("project={project}"), Some(&bearer(tenant))).await;
    assert_eq!(response.status(), 200);
    let body = within("an aborted body", response.bytes()).await;
    assert!(
        body.is_err(),
        "a CSV export stopped mid-way must not end cleanly"
    );
}

/// An export is bounded in time: one whose first page cannot be read within its time limit
/// is refused with `TIMEOUT` (504), and frees its places.
async fn an_export_out_of_time_is_refused(backend: Backend) {
    let mut settings = Settings::default();
    settings.http.exports = ExportLimits {
        total: 1,
        time_limit: Duration::from_millis(200),
        ..ExportLimits::default()
    };
    let (app, probe) = probed_app(backend, settings).await;
    probe.close_gate();
    let (status, _, error) = refused(&app, &format!("project={BRIDGE}"), None).await;
    assert_eq!(
        (status, error["extensions"]["code"].as_str()),
        (504, Some("TIMEOUT")),
        "{error}"
    );
    probe.open_gate();
    export(&app, &format!("project={BRIDGE}"), None).await;
}

/// `gridgate export` writes the bytes `GET /export` sends for the same arguments (CSV and
/// NDJSON, with an order and a filter), to standard output or a file, and refuses what the
/// endpoint refuses.
async fn the_command_writes_the_endpoints_bytes(backend: Backend) {
    let cli = Cli::new(backend);
    cli.run(&["table", "create"]);
    let (server, url) = cli.serve();
    let remote = Remote {
        graphql: url.clone(),
        client: reqwest::Client::new(),
    };
    let grid = grid(&remote, ACME).await;
    let order = json!({"field": "CUSTOM_FIELD", "customFieldId": grid.field["Estimate"], "direction": "DESC"});
    let filter = json!({"column": {"field": "STATE"}, "eq": "OPEN"});
    let cases: Vec<(Vec<String>, String)> = ["csv", "ndjson"]
        .into_iter()
        .flat_map(|format| {
            let list = issues(Some(order.clone()), Some(filter.clone()));
            [
                (
                    vec![format!("--format={format}")],
                    query_of(&grid.project, &issues(None, None), format),
                ),
                (
                    vec![
                        format!("--format={format}"),
                        format!("--order={order}"),
                        format!("--filter={filter}"),
                    ],
                    query_of(&grid.project, &list, format),
                ),
            ]
        })
        .collect();
    let mut served = Vec::new();
    for (_, query) in &cases {
        let export_url = url.replace("/graphql", &format!("/export?{query}"));
        let response = remote.client.get(export_url).send().await.unwrap();
        assert_eq!(response.status(), 200);
        served.push(response.bytes().await.unwrap().to_vec());
    }
    // The embedded store is one process's at a time.
    drop(server);
    for ((flags, _), served) in cases.iter().zip(&served) {
        let mut sub = vec!["export", "--project", grid.project.as_str()];
        sub.extend(flags.iter().map(String::as_str));
        let out = cli.command(&sub).output().expect("run gridgate export");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(served),
            "{flags:?}"
        );
    }
    // To a file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("grid.csv");
    let file_arg = file.to_string_lossy().into_owned();
    cli.run(&["export", "--project", &grid.project, "--output", &file_arg]);
    assert_eq!(std::fs::read(&file).unwrap(), served[0]);
    // Refusals: a project nobody has, a view and an order at once.
    let (_, stderr) = cli.run_failing(&["export", "--project", "project-ffff"]);
    assert!(stderr.contains("NOT_FOUND"), "{stderr}");
    let (_, stderr) = cli.run_failing(&[
        "export",
        "--project",
        &grid.project,
        "--view",
        "xview-1",
        "--order",
        r#"{"field":"NAME"}"#,
    ]);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
    let (_, stderr) = cli.run_failing(&["export", "--project", &grid.project, "--filter", "{"]);
    assert!(stderr.contains("--filter is not JSON"), "{stderr}");
}

crate::both_stores!(
    export_rows_are_the_api_pages,
    a_views_export_is_its_pages,
    a_large_project_exports_at_the_api_page_size,
    export_refusals_are_coded,
    exports_are_authenticated_like_graphql,
    exports_are_bounded_per_caller_and_in_total,
    an_export_out_of_query_cost_stops_visibly,
    an_export_out_of_time_is_refused,
    the_command_writes_the_endpoints_bytes,
);
