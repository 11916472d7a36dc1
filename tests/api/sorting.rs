//! Sorting and paging on synthetic data, against both stores: every ordering of every column
//! type, paged forward and backward with several page sizes, compared with an independent
//! in-memory oracle; the read cap for empty cells; and the DynamoDB call budgets of a grid page.

use std::cmp::Ordering;
use std::str::FromStr;

use crate::support::app::{Backend, TestApp};
use crate::support::waves;
use bigdecimal::BigDecimal;
use gridgate::paging::Limits;
use gridgate::seed::{self, Synthetic};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// One issue as the oracle sees it.
#[derive(Clone, Debug)]
struct Row {
    num: i64,
    name: String,
    open: bool,
    /// field id → value text
    values: std::collections::HashMap<String, String>,
}

#[derive(Clone, Debug)]
struct Field {
    id: String,
    kind: String,
    /// A SELECT field's option ids, in the options' order.
    options: Vec<String>,
}

async fn synthetic_project(app: &TestApp, issues: u32, fields: u32, seed: u64) -> String {
    let created = seed::synthetic(
        &app.store,
        Synthetic {
            projects: 1,
            issues,
            fields,
            seed,
        },
        |_| {},
    )
    .await
    .expect("seed");
    created[0].project.clone()
}

/// Reads the whole project through the API in num order (itself checked: nums ascending).
async fn read_all(app: &TestApp, project: &str) -> (Vec<Field>, Vec<Row>) {
    let mut rows = Vec::new();
    let mut after: Option<String> = None;
    let mut fields: Option<Vec<Field>>;
    loop {
        let data = app
            .data(
                r#"query($p: ID!, $after: String) { project(id: $p) {
                    customFields { id type options { id position } }
                    issues(first: 100, after: $after) {
                      nodes { num name state fieldValues { field { id } value } }
                      pageInfo { hasNextPage endCursor }
                    } } }"#,
                json!({"p": project, "after": after}),
            )
            .await;
        let p = &data["project"];
        fields = Some(
            p["customFields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| Field {
                    id: f["id"].as_str().unwrap().into(),
                    kind: f["type"].as_str().unwrap().into(),
                    options: f["options"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .enumerate()
                        .map(|(at, o)| {
                            assert_eq!(o["position"], at, "options come in their order");
                            o["id"].as_str().unwrap().to_string()
                        })
                        .collect(),
                })
                .collect::<Vec<_>>(),
        );
        for n in p["issues"]["nodes"].as_array().unwrap() {
            rows.push(Row {
                num: n["num"].as_i64().unwrap(),
                name: n["name"].as_str().unwrap().into(),
                open: n["state"] == "OPEN",
                values: n["fieldValues"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| {
                        (
                            c["field"]["id"].as_str().unwrap().to_string(),
                            c["value"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect(),
            });
        }
        if p["issues"]["pageInfo"]["hasNextPage"] == false {
            break;
        }
        after = p["issues"]["pageInfo"]["endCursor"]
            .as_str()
            .map(String::from);
    }
    let nums: Vec<i64> = rows.iter().map(|r| r.num).collect();
    assert!(
        nums.windows(2).all(|w| w[0] < w[1]),
        "NUM order is ascending: {nums:?}"
    );
    (fields.expect("at least one page"), rows)
}

/// Compares two values of a field the way users expect, without sort strings.
fn compare_values(field: &Field, a: &str, b: &str) -> Ordering {
    match field.kind.as_str() {
        "INT" | "NUMBER" => BigDecimal::from_str(a)
            .unwrap()
            .cmp(&BigDecimal::from_str(b).unwrap()),
        "TEXT" => a.to_lowercase().cmp(&b.to_lowercase()),
        "DATE" => a.cmp(b),
        // `false` before `true`, which their texts' order happens to be.
        "CHECKBOX" => a.cmp(b),
        // The options' order, which is not their ids' or labels' order.
        "SELECT" => {
            let at = |id: &str| field.options.iter().position(|o| o == id).unwrap();
            at(a).cmp(&at(b))
        }
        other => panic!("unknown type {other}"),
    }
}

/// The expected num order for an `orderBy`.
fn oracle(fields: &[Field], rows: &[Row], order: &Value) -> Vec<i64> {
    let desc = order["direction"] == "DESC";
    let dir = |o: Ordering| if desc { o.reverse() } else { o };
    let mut rows: Vec<&Row> = rows.iter().collect();
    let field = order["field"].as_str().unwrap();
    match field {
        "NUM" => rows.sort_by(|a, b| dir(a.num.cmp(&b.num))),
        "NAME" => rows.sort_by(|a, b| {
            dir(a
                .name
                .to_lowercase()
                .cmp(&b.name.to_lowercase())
                .then(a.num.cmp(&b.num)))
        }),
        "STATE" => rows.sort_by(|a, b| dir((!a.open).cmp(&!b.open).then(a.num.cmp(&b.num)))),
        "CUSTOM_FIELD" => {
            let id = order["customFieldId"].as_str().unwrap();
            let field = fields.iter().find(|f| f.id == id).unwrap();
            // Empty cells after all values in both directions, or before them all.
            let empty_first = order["empty"] == "FIRST";
            let place = |o: Ordering| if empty_first { o.reverse() } else { o };
            rows.sort_by(|a, b| match (a.values.get(id), b.values.get(id)) {
                (Some(x), Some(y)) => dir(compare_values(field, x, y).then(a.num.cmp(&b.num))),
                (Some(_), None) => place(Ordering::Less),
                (None, Some(_)) => place(Ordering::Greater),
                (None, None) => dir(a.num.cmp(&b.num)),
            });
        }
        other => panic!("unknown field {other}"),
    }
    rows.iter().map(|r| r.num).collect()
}

fn orders(fields: &[Field]) -> Vec<Value> {
    let mut out = Vec::new();
    for dir in ["ASC", "DESC"] {
        for f in ["NUM", "NAME", "STATE"] {
            out.push(json!({"field": f, "direction": dir}));
        }
        for f in fields {
            out.push(json!({"field": "CUSTOM_FIELD", "customFieldId": f.id, "direction": dir}));
            out.push(json!({"field": "CUSTOM_FIELD", "customFieldId": f.id, "direction": dir, "empty": "FIRST"}));
        }
    }
    out
}

const PAGE: &str = r#"
query Page($p: ID!, $first: Int, $after: String, $last: Int, $before: String, $order: IssueOrder, $filter: IssueFilter) {
  project(id: $p) {
    issues(first: $first, after: $after, last: $last, before: $before, orderBy: $order, filter: $filter) {
      edges { node { num } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
      totalCount
    }
  }
}"#;

struct PageOut {
    nums: Vec<i64>,
    info: Value,
    calls: i64,
    /// `extensions.plan` (when the app explains plans and the page was filtered).
    plan: Value,
    total: Value,
}

async fn fetch_page(app: &TestApp, vars: Value) -> PageOut {
    let body = app.post(PAGE, vars).await;
    assert!(body.get("errors").is_none(), "{body:#}");
    let conn = &body["data"]["project"]["issues"];
    PageOut {
        nums: conn["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["node"]["num"].as_i64().unwrap())
            .collect(),
        info: conn["pageInfo"].clone(),
        calls: body["extensions"]["cost"]["dynamodbCalls"]
            .as_i64()
            .unwrap(),
        plan: body["extensions"]["plan"].clone(),
        total: conn["totalCount"].clone(),
    }
}

/// Pages forward with `first: size` to the end; returns the concatenated nums and the pages.
async fn walk_forward(
    app: &TestApp,
    project: &str,
    order: &Value,
    size: i64,
) -> (Vec<i64>, Vec<PageOut>) {
    walk_forward_filtered(app, project, order, &Value::Null, size).await
}

/// [`walk_forward`] with a filter.
async fn walk_forward_filtered(
    app: &TestApp,
    project: &str,
    order: &Value,
    filter: &Value,
    size: i64,
) -> (Vec<i64>, Vec<PageOut>) {
    let mut all = Vec::new();
    let mut pages = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = fetch_page(
            app,
            json!({"p": project, "first": size, "after": after, "order": order, "filter": filter}),
        )
        .await;
        all.extend(&page.nums);
        assert_eq!(page.info["hasPreviousPage"], after.is_some());
        let done = page.info["hasNextPage"] == false;
        after = page.info["endCursor"].as_str().map(String::from);
        pages.push(page);
        if done {
            break;
        }
        assert!(pages.len() < 1000, "paging does not end");
    }
    (all, pages)
}

async fn walk_backward(app: &TestApp, project: &str, order: &Value, size: i64) -> Vec<i64> {
    walk_backward_filtered(app, project, order, &Value::Null, size).await
}

/// [`walk_backward`] with a filter.
async fn walk_backward_filtered(
    app: &TestApp,
    project: &str,
    order: &Value,
    filter: &Value,
    size: i64,
) -> Vec<i64> {
    let mut all: Vec<i64> = Vec::new();
    let mut before: Option<String> = None;
    for _ in 0..1000 {
        let page = fetch_page(
            app,
            json!({"p": project, "last": size, "before": before, "order": order, "filter": filter}),
        )
        .await;
        all.splice(0..0, page.nums.iter().copied());
        assert_eq!(page.info["hasNextPage"], before.is_some());
        if page.info["hasPreviousPage"] == false {
            return all;
        }
        before = page.info["startCursor"].as_str().map(String::from);
    }
    panic!("paging does not end");
}

async fn every_ordering_matches_the_oracle(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let project = synthetic_project(&app, 60, 6, 7).await;
    let (fields, rows) = read_all(&app, &project).await;
    assert_eq!(fields.len(), 6);
    for order in orders(&fields) {
        let expected = oracle(&fields, &rows, &order);
        let (forward, pages) = walk_forward(&app, &project, &order, 7).await;
        assert_eq!(forward, expected, "forward pages of 7, {order}");
        assert!(pages
            .iter()
            .all(|p| p.nums.len() == 7 || p.info["hasNextPage"] == false));
        let backward = walk_backward(&app, &project, &order, 11).await;
        assert_eq!(backward, expected, "backward pages of 11, {order}");
        let (whole, _) = walk_forward(&app, &project, &order, 100).await;
        assert_eq!(whole, expected, "one page, {order}");
    }
}

async fn empty_cells_are_found_within_a_read_cap(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Limits {
            max_filtered_reads: 10,
        },
    )
    .await;
    let project = synthetic_project(&app, 80, 4, 11).await;
    let (fields, rows) = read_all(&app, &project).await;
    for field in &fields {
        for dir in ["ASC", "DESC"] {
            let order =
                json!({"field": "CUSTOM_FIELD", "customFieldId": field.id, "direction": dir});
            let expected = oracle(&fields, &rows, &order);
            let (got, pages) = walk_forward(&app, &project, &order, 20).await;
            assert_eq!(got, expected, "{order}");
            let valued = rows
                .iter()
                .filter(|r| r.values.contains_key(&field.id))
                .count();
            // Finding the ~15% empty cells among 80 rows takes more than 10 reads, so some page
            // must have come back short, and none read without bound.
            assert!(
                pages
                    .iter()
                    .any(|p| p.nums.len() < 20 && p.info["hasNextPage"] == true),
                "{order}: expected a page cut short by the read cap ({valued} valued)"
            );
            for p in &pages {
                assert!(p.calls <= 4, "{order}: a page made {} calls", p.calls);
            }
            let backward = walk_backward(&app, &project, &order, 20).await;
            assert_eq!(backward, expected, "backward {order}");
        }
    }
}

const GRID: &str = r#"
query Grid($p: ID!, $first: Int, $after: String, $order: IssueOrder) {
  project(id: $p) {
    id name
    customFields { id name type position }
    issues(first: $first, after: $after, orderBy: $order) {
      edges { cursor node { id num name state fieldValues { field { id } value } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"#;

/// Runs the grid query and returns (calls, read capacity units, rows returned, end cursor).
async fn grid_cost(
    app: &TestApp,
    project: &str,
    first: i64,
    order: &Value,
    after: Option<Value>,
) -> (i64, f64, usize, Option<Value>) {
    let body = app
        .post(
            GRID,
            json!({"p": project, "first": first, "order": order, "after": after}),
        )
        .await;
    assert!(body.get("errors").is_none(), "{body:#}");
    let cost = &body["extensions"]["cost"];
    let issues = &body["data"]["project"]["issues"];
    (
        cost["dynamodbCalls"].as_i64().unwrap(),
        cost["readCapacityUnits"].as_f64().unwrap(),
        issues["edges"].as_array().unwrap().len(),
        Some(issues["pageInfo"]["endCursor"].clone()),
    )
}

async fn grid_pages_stay_within_the_call_budget(backend: Backend) {
    let (app, recorder) = waves::spawn_recorded(backend).await;
    for fields in [1u32, 8] {
        let project = synthetic_project(&app, 150, fields, 3 + fields as u64).await;
        let (field_list, rows) = read_all(&app, &project).await;
        // (name, order, calls, waves): the project, its fields and the page's index Query
        // start together; a page read from index rows then loads its issues.
        let mut orders = vec![
            ("NUM", json!({"field": "NUM"}), 2, 1),
            ("NAME", json!({"field": "NAME"}), 3, 2),
            (
                "STATE",
                json!({"field": "STATE", "direction": "DESC"}),
                3,
                2,
            ),
        ];
        for f in &field_list {
            let valued = rows.iter().filter(|r| r.values.contains_key(&f.id)).count();
            // The budget holds while the page lies among rows that have a value.
            assert!(valued > 100, "seed gives {valued} values for {}", f.id);
            orders.push((
                "CUSTOM_FIELD",
                json!({"field": "CUSTOM_FIELD", "customFieldId": f.id}),
                3,
                2,
            ));
        }
        for (name, order, budget, wave_budget) in &orders {
            for direction in ["ASC", "DESC"] {
                let mut order = order.clone();
                order["direction"] = json!(direction);
                for first in [1, 10, 100] {
                    recorder.take();
                    let (calls, rcu, n, end) = grid_cost(&app, &project, first, &order, None).await;
                    let recorded = recorder.take();
                    assert_eq!(n, first as usize);
                    assert_eq!(
                        calls, *budget,
                        "{name} {order} first {first} with {fields} fields"
                    );
                    assert_eq!(recorded.len() as i64, calls, "{recorded:?}");
                    assert_eq!(
                        waves::waves(&recorded),
                        *wave_budget,
                        "{name} {order} first {first} with {fields} fields: {recorded:?}"
                    );
                    eprintln!(
                        "COST backend={backend:?} fields={fields} order={name} {direction} first={first} calls={calls} waves={} rcu={rcu}",
                        waves::waves(&recorded)
                    );
                    // The next page, from a cursor in the middle of the list, costs the same.
                    if first <= 10 {
                        let (calls, _, n, _) = grid_cost(&app, &project, first, &order, end).await;
                        let recorded = recorder.take();
                        assert_eq!(
                            (calls, n, waves::waves(&recorded)),
                            (*budget, first as usize, *wave_budget),
                            "next page of {name} {order}: {recorded:?}"
                        );
                    }
                }
            }
        }
        // Read capacity, exact: every issue item of this data set is under 4 KB, so a page of
        // 100 issues costs 50 RCU by BatchGetItem (each item rounded up on its own) but only a
        // few units by Query (the items summed, then rounded).
        let expected_rcu = if fields == 1 { 3.0 } else { 6.0 };
        let (_, rcu, _, _) = grid_cost(&app, &project, 100, &json!({"field": "NUM"}), None).await;
        assert_eq!(rcu, expected_rcu, "NUM page of 100 with {fields} fields");
        let (_, rcu, _, _) = grid_cost(&app, &project, 100, &json!({"field": "NAME"}), None).await;
        assert_eq!(rcu, 52.0, "NAME page of 100 with {fields} fields");
    }
}

/// Writes a project of `issues` issues with one INT field that every issue has except those in
/// `empty` (nums): the worst case for finding empty cells with a filtered query.
async fn nearly_full_column(app: &TestApp, issues: u32, empty: &[u32]) -> (String, String) {
    use gridgate::ids::{FieldId, IssueId, ProjectId, TenantId};
    use gridgate::items;
    use gridgate::model::{CustomField, FieldType, Issue, IssueState, Project, Tenant};
    let tenant = Tenant {
        id: TenantId::generate(),
        name: "Sparse".into(),
    };
    let project = Project {
        id: ProjectId::generate(),
        tenant: tenant.id.clone(),
        name: "Nearly full".into(),
        next_issue_num: issues + 1,
        version: 1,
        fields_version: 0,
        deleted: false,
        counts: None,
    };
    let field = CustomField {
        id: FieldId::generate(),
        project: project.id.clone(),
        name: "Estimate".into(),
        field_type: FieldType::Int,
        position: 1,
        version: 1,
        deleted: false,
        options: Vec::new(),
    };
    let mut all: Vec<_> = items::tenant_items(&tenant).into();
    all.push(items::project_item(&project));
    all.extend(items::field_items(&field));
    for num in 1..=issues {
        let mut values = std::collections::BTreeMap::new();
        if !empty.contains(&num) {
            values.insert(field.id.clone(), (num % 7).to_string().into());
        }
        let issue = Issue {
            id: IssueId::generate(),
            project: project.id.clone(),
            num,
            name: format!("Issue {num}"),
            state: IssueState::Open,
            values,
            version: 1,
        };
        all.extend(items::issue_items(&issue, std::slice::from_ref(&field)).unwrap());
    }
    app.store.bulk_put(all).await.unwrap();
    (project.id.to_string(), field.id.to_string())
}

/// A column with a single empty cell at the very end: finding it takes a few growing reads per
/// page, never a long run of small ones, and the read cap still bounds every request.
async fn rare_empty_cells_take_few_calls(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, field) = nearly_full_column(&app, 1200, &[1200]).await;
    let order = json!({"field": "CUSTOM_FIELD", "customFieldId": field});
    let (nums, pages) = walk_forward(&app, &project, &order, 100).await;
    // Values are num % 7, ties by num; the empty cell comes last.
    let mut expected: Vec<i64> = (1..1200).collect();
    expected.sort_by_key(|n| (n % 7, *n));
    expected.push(1200);
    assert_eq!(nums, expected);
    for (i, p) in pages.iter().enumerate() {
        assert!(p.calls <= 8, "page {i} made {} calls", p.calls);
        eprintln!(
            "RARE backend={backend:?} page={i} rows={} calls={}",
            p.nums.len(),
            p.calls
        );
    }
    // The default cap (1000 reads) cannot cover the 1199 valued rows before the empty one in a
    // single request, so the search spans two requests: one page came back short.
    assert!(pages
        .iter()
        .any(|p| p.nums.len() < 100 && p.info["hasNextPage"] == true));
}

/// The read cap is per request: two lists in one query share it. (The lists differ in size:
/// two fields asking for the very same page share one read of it.)
async fn read_cap_is_shared_by_a_request(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Limits {
            max_filtered_reads: 3,
        },
    )
    .await;
    app.seed_demo().await;
    let query = r#"query($order: IssueOrder) { project(id: "project-35e9") {
        a: issues(first: 3, orderBy: $order) { nodes { num } pageInfo { hasNextPage endCursor } }
        b: issues(first: 2, orderBy: $order) { nodes { num } pageInfo { hasNextPage endCursor } }
    } }"#;
    let order = json!({"field": "CUSTOM_FIELD", "customFieldId": "xattrib-3fe6"});
    let data = app.data(query, json!({"order": order})).await;
    let lists = [&data["project"]["a"], &data["project"]["b"]];
    let lens: Vec<usize> = lists
        .iter()
        .map(|l| l["nodes"].as_array().unwrap().len())
        .collect();
    // Whichever list read first spent the budget (3 reads find issues 1 and 2, or issue 1);
    // the other stops after the valued row and says there is more.
    let mut sorted = lens.clone();
    sorted.sort();
    assert_eq!(sorted, vec![1, 3], "{data:#}");
    let short = lists[lens.iter().position(|&n| n == 1).unwrap()];
    assert_eq!(short["nodes"], json!([{"num": 3}]));
    assert_eq!(short["pageInfo"]["hasNextPage"], true);
    // Its cursor continues in a new request with a fresh budget.
    let next = fetch_page(
        &app,
        json!({"p": "project-35e9", "first": 3, "after": short["pageInfo"]["endCursor"], "order": order}),
    )
    .await;
    assert_eq!(next.nums, vec![1, 2]);
}

/// Pages read ahead of their project are exact: one read per distinct page, none for a skipped
/// field, and a page of a project nobody can see is reported as a miss beside the project's.
async fn prefetched_pages_are_read_once(backend: Backend) {
    let (app, recorder) = waves::spawn_recorded(backend).await;
    app.seed_demo().await;
    let run = |query: &'static str, vars: Value| {
        let app = &app;
        let recorder = &recorder;
        async move {
            recorder.take();
            let body = app.post(query, vars).await;
            let calls = recorder.take();
            let cost = &body["extensions"]["cost"];
            assert_eq!(
                cost["dynamodbCalls"].as_u64().unwrap() as usize,
                calls.len(),
                "{body:#} {calls:?}"
            );
            (body, calls)
        }
    };
    // Two orderings of one project: both pages start with the project.
    let (body, calls) = run(
        r#"query($p: ID!) { project(id: $p) {
            a: issues(first: 2) { nodes { num } }
            b: issues(first: 2, orderBy: {field: NUM, direction: DESC}) { nodes { num } }
            c: issues(first: 2) { nodes { num } } } }"#,
        json!({"p": "project-35e9"}),
    )
    .await;
    assert!(body.get("errors").is_none(), "{body:#}");
    assert_eq!(body["data"]["project"]["a"], body["data"]["project"]["c"]);
    assert_eq!(body["data"]["project"]["a"]["nodes"][0]["num"], 1);
    assert_eq!((calls.len(), waves::waves(&calls)), (3, 1), "{calls:?}");
    // A filtered page whose key conditions answer its filter is read ahead too, once the
    // gateway has seen its column's type: the first request checks the filter against the
    // loaded project (2 waves), the next reads beside the project (1 wave), with the same rows
    // and count. An empty-first order reads nothing ahead (its first segment is a search).
    let filtered = r#"query($p: ID!, $f: IssueFilter, $o: IssueOrder) { project(id: $p) {
        issues(first: 2, orderBy: $o, filter: $f) { totalCount nodes { num } } } }"#;
    let range = json!({"column": {"field": "CUSTOM_FIELD", "customFieldId": "xattrib-3812"}, "gte": "2023-05-02"});
    let by_date = json!({"field": "CUSTOM_FIELD", "customFieldId": "xattrib-3812"});
    let vars = json!({"p": "project-35e9", "f": range, "o": by_date});
    let (cold, cold_calls) = run(filtered, vars.clone()).await;
    let (warm, warm_calls) = run(filtered, vars).await;
    assert_eq!(cold["data"], warm["data"]);
    assert_eq!(
        warm["data"]["project"]["issues"]["nodes"],
        json!([{"num": 2}]),
        "{warm:#}"
    );
    assert_eq!(waves::waves(&cold_calls), 3, "{cold_calls:?}");
    assert_eq!(
        (warm_calls.len(), waves::waves(&warm_calls)),
        (3, 2),
        "{warm_calls:?}"
    );
    let first = json!({"p": "project-35e9", "f": {"column": {"field": "NUM"}, "gte": "1"},
                       "o": {"field": "CUSTOM_FIELD", "customFieldId": "xattrib-3812", "empty": "FIRST"}});
    let (body, _) = run(filtered, first).await;
    assert!(body.get("errors").is_none(), "{body:#}");
    // A skipped field reads nothing.
    let (body, calls) = run(
        r#"query($p: ID!) { project(id: $p) { name issues(first: 2) @skip(if: true) { nodes { num } } } }"#,
        json!({"p": "project-35e9"}),
    )
    .await;
    assert!(body["data"]["project"].get("issues").is_none(), "{body:#}");
    assert_eq!(calls.len(), 1, "{calls:?}");
    // A project that does not exist: null, and the page read beside it is one miss.
    let (body, calls) = run(
        r#"query($p: ID!) { project(id: $p) { issues(first: 2) { nodes { num } } } }"#,
        json!({"p": "project-0000"}),
    )
    .await;
    assert_eq!(body["data"]["project"], Value::Null);
    assert_eq!((calls.len(), waves::waves(&calls)), (2, 1), "{calls:?}");
    assert_eq!(body["extensions"]["cost"]["readCapacityUnits"], 1.0);
    // A field of no project, and a cursor of another ordering: the usual refusals, and the
    // page read ahead is dropped.
    let (body, _) = run(
        r#"query($p: ID!, $o: IssueOrder) { project(id: $p) { issues(first: 2, orderBy: $o) { nodes { num } } } }"#,
        json!({"p": "project-35e9", "o": {"field": "CUSTOM_FIELD", "customFieldId": "xattrib-0000"}}),
    )
    .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{body:#}"
    );
    let (first, _) = run(
        r#"query($p: ID!) { project(id: $p) { issues(first: 1) { pageInfo { endCursor } } } }"#,
        json!({"p": "project-35e9"}),
    )
    .await;
    let cursor = first["data"]["project"]["issues"]["pageInfo"]["endCursor"].clone();
    let (body, _) = run(
        r#"query($p: ID!, $c: String) { project(id: $p) { issues(first: 2, after: $c, orderBy: {field: NAME}) { nodes { num } } } }"#,
        json!({"p": "project-35e9", "c": cursor}),
    )
    .await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{body:#}"
    );
}

// Filters.

/// An app whose responses say how their filtered pages were read (`extensions.plan`).
async fn explaining_app(backend: Backend) -> TestApp {
    let mut settings = gridgate::app::Settings::default();
    settings.gateway.explain_plans = true;
    TestApp::spawn_with_settings(backend, settings).await
}

/// A column's cell in a row, as the API writes it (`None`: empty).
fn cell(row: &Row, column: &Value) -> Option<String> {
    match column["field"].as_str().unwrap() {
        "NUM" => Some(row.num.to_string()),
        "NAME" => Some(row.name.clone()),
        "STATE" => Some(if row.open { "OPEN" } else { "CLOSED" }.to_string()),
        _ => row
            .values
            .get(column["customFieldId"].as_str().unwrap())
            .cloned(),
    }
}

/// Compares two texts of a column the way users expect (numbers as numbers, text ignoring
/// case, OPEN before CLOSED), without sort strings.
fn compare_cells(fields: &[Field], column: &Value, a: &str, b: &str) -> Ordering {
    match column["field"].as_str().unwrap() {
        "NUM" => a.parse::<i64>().unwrap().cmp(&b.parse::<i64>().unwrap()),
        "NAME" => a.to_lowercase().cmp(&b.to_lowercase()),
        "STATE" => (a == "CLOSED").cmp(&(b == "CLOSED")),
        _ => {
            let id = column["customFieldId"].as_str().unwrap();
            compare_values(fields.iter().find(|f| f.id == id).unwrap(), a, b)
        }
    }
}

/// Case folding char by char (see `filter::fold`).
fn fold(text: &str) -> String {
    text.chars().flat_map(char::to_lowercase).collect()
}

/// The reference semantics of a filter, written from its JSON with plain comparisons: empty
/// cells are NULL (only `isEmpty: true` holds on one), every operator of a leaf must hold.
fn passes(fields: &[Field], row: &Row, filter: &Value) -> bool {
    if let Some(all) = filter.get("and") {
        return all
            .as_array()
            .unwrap()
            .iter()
            .all(|f| passes(fields, row, f));
    }
    if let Some(any) = filter.get("or") {
        return any
            .as_array()
            .unwrap()
            .iter()
            .any(|f| passes(fields, row, f));
    }
    if let Some(inner) = filter.get("not") {
        return !passes(fields, row, inner);
    }
    let column = &filter["column"];
    let value = cell(row, column);
    filter.as_object().unwrap().iter().all(|(op, operand)| {
        if op == "column" {
            return true;
        }
        if op == "isEmpty" {
            return value.is_none() == operand.as_bool().unwrap();
        }
        let Some(v) = value.as_deref() else {
            return false;
        };
        let cmp = |o: &Value| compare_cells(fields, column, v, o.as_str().unwrap());
        match op.as_str() {
            "eq" => cmp(operand) == Ordering::Equal,
            "ne" => cmp(operand) != Ordering::Equal,
            "in" => operand
                .as_array()
                .unwrap()
                .iter()
                .any(|o| cmp(o) == Ordering::Equal),
            "lt" => cmp(operand) == Ordering::Less,
            "lte" => cmp(operand) != Ordering::Greater,
            "gt" => cmp(operand) == Ordering::Greater,
            "gte" => cmp(operand) != Ordering::Less,
            "contains" => fold(v).contains(&fold(operand.as_str().unwrap())),
            "startsWith" => fold(v).starts_with(&fold(operand.as_str().unwrap())),
            other => panic!("unknown operator {other}"),
        }
    })
}

/// Whether `totalCount` must come from the counters (never null) for a filter: every leaf
/// tests the state, or the filter is one `isEmpty` leaf on a custom field.
fn counters_count(filter: &Value) -> bool {
    fn state_only(filter: &Value) -> bool {
        ["and", "or"]
            .iter()
            .find_map(|c| filter.get(*c))
            .map(|children| children.as_array().unwrap().iter().all(state_only))
            .or_else(|| filter.get("not").map(state_only))
            .unwrap_or_else(|| filter["column"]["field"] == "STATE")
    }
    let single_is_empty = filter["column"]["field"] == "CUSTOM_FIELD"
        && filter.as_object().unwrap().len() == 2
        && filter.get("isEmpty").is_some();
    state_only(filter) || single_is_empty
}

/// A random filter over the project's columns, with operands mostly taken from its rows (so
/// filters match some rows and not others), at most `depth` levels deep.
fn random_filter(rng: &mut StdRng, fields: &[Field], rows: &[Row], depth: u32) -> Value {
    if depth > 1 && rng.random_bool(0.35) {
        let children = |rng: &mut StdRng| {
            (0..rng.random_range(1..=3))
                .map(|_| random_filter(rng, fields, rows, depth - 1))
                .collect::<Vec<_>>()
        };
        return match rng.random_range(0..3) {
            0 => json!({"and": children(rng)}),
            1 => json!({"or": children(rng)}),
            _ => json!({"not": random_filter(rng, fields, rows, depth - 1)}),
        };
    }
    let mut columns = vec![
        (json!({"field": "NUM"}), "NUM"),
        (json!({"field": "NAME"}), "TEXT"),
        (json!({"field": "STATE"}), "STATE"),
    ];
    for f in fields {
        columns.push((
            json!({"field": "CUSTOM_FIELD", "customFieldId": f.id}),
            f.kind.as_str(),
        ));
    }
    let (column, kind) = columns[rng.random_range(0..columns.len())].clone();
    let operand = |rng: &mut StdRng| -> String {
        let row = &rows[rng.random_range(0..rows.len())];
        match cell(row, &column) {
            Some(v) if kind == "TEXT" && rng.random_bool(0.3) => v.to_uppercase(),
            Some(v) => v,
            None if kind == "NUM" => rng.random_range(0..100).to_string(),
            None if kind == "STATE" => "OPEN".into(),
            None => match kind {
                "INT" | "NUMBER" => rng.random_range(-1000..1000).to_string(),
                "DATE" => "2020-06-15".into(),
                "CHECKBOX" => "true".into(),
                "SELECT" => {
                    let id = column["customFieldId"].as_str().unwrap();
                    let options = &fields.iter().find(|f| f.id == id).unwrap().options;
                    options[rng.random_range(0..options.len())].clone()
                }
                _ => "m".into(),
            },
        }
    };
    let mut leaf = serde_json::Map::new();
    leaf.insert("column".into(), column.clone());
    let mut ops: Vec<&str> = vec!["eq", "ne", "in", "lt", "lte", "gt", "gte", "isEmpty"];
    if kind == "TEXT" {
        ops.extend(["contains", "startsWith"]);
    }
    for _ in 0..rng.random_range(1..=2) {
        let op = ops[rng.random_range(0..ops.len())];
        let value = match op {
            "isEmpty" => json!(rng.random_bool(0.5)),
            "in" => json!((0..rng.random_range(1..=3))
                .map(|_| operand(rng))
                .collect::<Vec<_>>()),
            "contains" | "startsWith" => {
                let text = operand(rng);
                let chars: Vec<char> = text.chars().collect();
                let start = if op == "contains" {
                    rng.random_range(0..chars.len().max(1))
                } else {
                    0
                };
                let len = rng.random_range(1..=3);
                json!(chars.iter().skip(start).take(len).collect::<String>())
            }
            _ => json!(operand(rng)),
        };
        leaf.insert(op.into(), value);
    }
    Value::Object(leaf)
}

/// Random filters and orders, paged forward and backward with random page sizes, give exactly
/// the rows of the reference evaluator in the oracle's order; a range on the sorted column
/// reads only the rows it returns (and one more to know there is a next page).
async fn filters_match_the_reference(backend: Backend) {
    let app = explaining_app(backend).await;
    let project = synthetic_project(&app, 70, 6, 21).await;
    let (fields, rows) = read_all(&app, &project).await;
    let orders = orders(&fields);
    let cases = if backend == Backend::Embedded {
        120
    } else {
        40
    };
    // Cases whose filter kept some rows and dropped others: the ones that test something.
    let mut selective = 0;
    for case in 0..cases {
        let mut rng = StdRng::seed_from_u64(case);
        let filter = random_filter(&mut rng, &fields, &rows, 4);
        let mut order = orders[rng.random_range(0..orders.len())].clone();
        if order["field"] == "CUSTOM_FIELD" && rng.random_bool(0.5) {
            order["empty"] = json!("FIRST");
        }
        let kept: Vec<Row> = rows
            .iter()
            .filter(|r| passes(&fields, r, &filter))
            .cloned()
            .collect();
        let expected = oracle(&fields, &kept, &order);
        if !kept.is_empty() && kept.len() < rows.len() {
            selective += 1;
        }
        let size = [1, 3, 7, 25, 100][rng.random_range(0..5)];
        let what = format!("case {case}: filter {filter} order {order} first {size}");
        let (got, pages) = walk_forward_filtered(&app, &project, &order, &filter, size).await;
        assert_eq!(got, expected, "{what}");
        // The count is exact whenever it is given, and given whenever the counters tell it.
        let counted = counters_count(&filter);
        for page in &pages {
            match page.total.as_u64() {
                Some(total) => assert_eq!(total as usize, expected.len(), "{what}: totalCount"),
                None => assert!(
                    !counted
                        && (page.info["hasNextPage"] == true
                            || page.info["hasPreviousPage"] == true),
                    "{what}: totalCount is null"
                ),
            }
            let plan = &page.plan[0];
            assert!(plan.is_object(), "{what}: no plan in {}", page.plan);
            assert_eq!(
                plan["rowsReturned"].as_u64().unwrap() as usize,
                page.nums.len(),
                "{what}"
            );
        }
        if rng.random_bool(0.5) {
            let size = [2, 9, 100][rng.random_range(0..3)];
            let back = walk_backward_filtered(&app, &project, &order, &filter, size).await;
            assert_eq!(back, expected, "{what}, backward by {size}");
        }
    }
    assert!(
        selective * 2 > cases,
        "only {selective} of {cases} filters were selective"
    );
}

/// A range on the sorted column is a key condition: each page reads the rows it returns and
/// one more, whatever the direction, and the empty cells of a custom field are not read.
async fn ranges_on_the_sorted_column_read_only_their_rows(backend: Backend) {
    let app = explaining_app(backend).await;
    let project = synthetic_project(&app, 90, 4, 5).await;
    let (fields, rows) = read_all(&app, &project).await;
    let int = fields.iter().find(|f| f.kind == "INT").unwrap();
    let column = json!({"field": "CUSTOM_FIELD", "customFieldId": int.id});
    let num = json!({"field": "NUM"});
    let cases = [
        (
            json!({"field": "NUM"}),
            json!({"column": num, "gte": "20", "lt": "61"}),
        ),
        (
            json!({"field": "NUM", "direction": "DESC"}),
            json!({"column": num, "gt": "5", "lte": "50"}),
        ),
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": int.id}),
            json!({"column": column, "gte": "-500", "lte": "500"}),
        ),
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": int.id, "direction": "DESC"}),
            json!({"column": column, "gt": "0"}),
        ),
        (
            json!({"field": "NAME"}),
            json!({"column": {"field": "NAME"}, "startsWith": "b"}),
        ),
        (
            json!({"field": "NAME", "direction": "DESC"}),
            json!({"column": {"field": "NAME"}, "gte": "C", "lt": "n"}),
        ),
        (
            json!({"field": "STATE"}),
            json!({"column": {"field": "STATE"}, "eq": "CLOSED"}),
        ),
    ];
    for (order, filter) in cases {
        let kept: Vec<Row> = rows
            .iter()
            .filter(|r| passes(&fields, r, &filter))
            .cloned()
            .collect();
        assert!(kept.len() > 3, "{filter}: a test of few rows");
        let expected = oracle(&fields, &kept, &order);
        let (got, pages) = walk_forward_filtered(&app, &project, &order, &filter, 10).await;
        assert_eq!(got, expected, "{filter} {order}");
        for page in &pages {
            let plan = &page.plan[0];
            assert_eq!(plan["residual"], Value::Null, "{filter}: {plan}");
            let (read, returned) = (
                plan["rowsRead"].as_u64().unwrap(),
                plan["rowsReturned"].as_u64().unwrap(),
            );
            assert_eq!(returned as usize, page.nums.len());
            assert!(
                read <= returned + 1,
                "{filter}: read {read} for {returned}: {plan}"
            );
        }
    }
}

/// A filter no key condition answers reads on until its page is full or the request's read
/// budget is spent: then the page comes back short, with `hasNextPage` and the cursor at the
/// last row read, and going on from there gives exactly the filtered list, in both directions.
async fn filtered_pages_fill_within_the_read_budget(backend: Backend) {
    let app = TestApp::spawn_with(
        backend,
        Limits {
            max_filtered_reads: 12,
        },
    )
    .await;
    let project = synthetic_project(&app, 80, 5, 13).await;
    let (fields, rows) = read_all(&app, &project).await;
    let text = fields.iter().find(|f| f.kind == "TEXT").unwrap();
    let cases = [
        (
            json!({"field": "NUM"}),
            json!({"column": {"field": "NAME"}, "startsWith": "z"}),
        ),
        (
            json!({"field": "NAME", "direction": "DESC"}),
            json!({"column": {"field": "CUSTOM_FIELD", "customFieldId": text.id}, "contains": "a"}),
        ),
        (
            json!({"field": "STATE"}),
            json!({"not": {"column": {"field": "NUM"}, "lt": "40"}}),
        ),
    ];
    for (order, filter) in cases {
        let kept: Vec<Row> = rows
            .iter()
            .filter(|r| passes(&fields, r, &filter))
            .cloned()
            .collect();
        let expected = oracle(&fields, &kept, &order);
        assert!(
            !expected.is_empty() && expected.len() < rows.len(),
            "{filter}"
        );
        let (got, pages) = walk_forward_filtered(&app, &project, &order, &filter, 10).await;
        assert_eq!(got, expected, "{filter} {order}");
        assert!(
            pages
                .iter()
                .any(|p| p.nums.len() < 10 && p.info["hasNextPage"] == true),
            "{filter}: expected a page cut short by the read budget"
        );
        for page in &pages {
            // A query of at most 12 rows and the batch that loads their issues.
            assert!(
                page.calls <= 6,
                "{filter}: a page made {} calls",
                page.calls
            );
        }
        let back = walk_backward_filtered(&app, &project, &order, &filter, 10).await;
        assert_eq!(back, expected, "backward {filter} {order}");
    }
}

/// A state equality under a num order reads the state partition only for a rare state (the
/// counters say how rare), and a cursor read under one plan goes on under the other when the
/// counters change the plan between pages.
async fn rare_states_read_their_partition_and_cursors_survive_a_change_of_plan(backend: Backend) {
    let app = explaining_app(backend).await;
    let tenant = app
        .data(
            r#"mutation { createTenant(input: {name: "T"}) { tenant { id } } }"#,
            json!({}),
        )
        .await["createTenant"]["tenant"]["id"]
        .clone();
    let project = app
        .data(
            "mutation($t: ID!) { createProject(input: {tenantId: $t, name: \"P\"}) { project { id } } }",
            json!({"t": tenant}),
        )
        .await["createProject"]["project"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut ids = Vec::new();
    for i in 0..24 {
        let state = if i % 8 == 3 { "CLOSED" } else { "OPEN" };
        let created = app
            .data(
                "mutation($p: ID!, $n: String!, $s: IssueState) { createIssue(input: {projectId: $p, name: $n, state: $s}) { issue { id } } }",
                json!({"p": project, "n": format!("issue {i}"), "s": state}),
            )
            .await;
        ids.push(created["createIssue"]["issue"]["id"].clone());
    }
    let closed = json!({"column": {"field": "STATE"}, "eq": "CLOSED"});
    let open = json!({"column": {"field": "STATE"}, "eq": "OPEN"});
    let num = json!({"field": "NUM"});
    // 3 of 24 closed: their partition; 21 open: the num partition, tested row by row.
    let first = fetch_page(
        &app,
        json!({"p": project, "first": 2, "order": num, "filter": closed}),
    )
    .await;
    assert_eq!(first.nums, [4, 12]);
    assert!(
        first.plan[0]["segments"][0]["partition"]
            .as_str()
            .unwrap()
            .ends_with("#state"),
        "{}",
        first.plan
    );
    assert_eq!(first.total, 3);
    let common = fetch_page(
        &app,
        json!({"p": project, "first": 2, "order": num, "filter": open}),
    )
    .await;
    assert_eq!(
        common.plan[0]["segments"][0]["partition"], project,
        "{}",
        common.plan
    );
    assert_eq!(common.plan[0]["residual"], "STATE eq \"1\"");
    // Close most of the rest: CLOSED is common now, so the next page reads the num partition,
    // from the cursor the state partition gave.
    for id in ids.iter().step_by(2) {
        app.data(
            "mutation($id: ID!) { updateIssue(input: {id: $id, state: CLOSED}) { issue { id } } }",
            json!({"id": id}),
        )
        .await;
    }
    let after = first.info["endCursor"].clone();
    let next = fetch_page(
        &app,
        json!({"p": project, "first": 3, "after": after, "order": num, "filter": closed}),
    )
    .await;
    assert_eq!(next.nums, [13, 15, 17], "{}", next.plan);
    assert_eq!(next.plan[0]["segments"][0]["partition"], project);
    let back = fetch_page(
        &app,
        json!({"p": project, "last": 5, "before": next.info["startCursor"], "order": num, "filter": closed}),
    )
    .await;
    assert_eq!(back.nums, [5, 7, 9, 11, 12]);
}

async fn bad_filters_are_refused_with_their_path(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let project = synthetic_project(&app, 5, 4, 3).await;
    let (fields, _) = read_all(&app, &project).await;
    let int = fields.iter().find(|f| f.kind == "INT").unwrap();
    let int_col = json!({"field": "CUSTOM_FIELD", "customFieldId": int.id});
    let leaf = json!({"column": {"field": "NUM"}, "gt": "1"});
    let query = r#"query($p: ID!, $f: IssueFilter) { project(id: $p) { issues(filter: $f) { nodes { num } } } }"#;
    let cases = [
        (
            json!({"column": {"field": "NUM"}}),
            "filter: a leaf needs at least one operator",
        ),
        (json!({"eq": "1"}), "filter: a leaf needs the `column`"),
        (json!({}), "filter: an empty filter"),
        (
            json!({"and": [leaf], "column": {"field": "NUM"}, "eq": "1"}),
            "filter: a filter is either",
        ),
        (
            json!({"and": [leaf], "or": [leaf]}),
            "filter: a filter is either",
        ),
        (
            json!({"and": [leaf, {"column": int_col, "eq": "x"}]}),
            "filter.and[1]: eq: `x` is not a valid int value",
        ),
        (
            json!({"or": [{"not": {"column": int_col, "contains": "1"}}]}),
            "filter.or[0].not: contains: applies to text columns",
        ),
        (
            json!({"column": {"field": "CUSTOM_FIELD", "customFieldId": "xattrib-00000000000000000000000000"}, "eq": "1"}),
            "is not a custom field of",
        ),
        (
            json!({"column": {"field": "STATE"}, "eq": "open"}),
            "expected OPEN or CLOSED",
        ),
        (
            json!({"column": {"field": "NUM"}, "in": (0..101).map(|i| i.to_string()).collect::<Vec<_>>()}),
            "in: at most 100 values, got 101",
        ),
        (
            json!({"and": [{"and": [{"and": [{"and": [leaf]}]}]}]}),
            "filter.and[0].and[0].and[0].and[0]: filters nest at most 4 levels deep",
        ),
        (
            json!({"or": vec![leaf.clone(); 21]}),
            "filter.or[20]: a filter has at most 20 leaves",
        ),
        (
            json!({"and": vec![json!({"or": []}); 60]}),
            "filter.and[49]: a filter has at most 50 objects",
        ),
    ];
    for (filter, message) in cases {
        let (code, got) = app.error(query, json!({"p": project, "f": filter})).await;
        assert_eq!(code, "BAD_USER_INPUT", "{filter}: {got}");
        assert!(got.contains(message), "{filter}: `{got}` lacks `{message}`");
    }
    // A cursor is bound to its filter.
    let page = fetch_page(
        &app,
        json!({"p": project, "first": 1, "filter": {"column": {"field": "NUM"}, "gt": "1"}}),
    )
    .await;
    let cursor = page.info["endCursor"].clone();
    let (code, message) = app
        .error(
            r#"query($p: ID!, $c: String) { project(id: $p) { issues(after: $c, filter: {column: {field: NUM}, gt: "2"}) { nodes { num } } } }"#,
            json!({"p": project, "c": cursor}),
        )
        .await;
    assert_eq!(code, "BAD_USER_INPUT", "{message}");
    assert!(message.contains("another list"), "{message}");
    // A page bounded by a cursor on its far side is not the whole list: its length is no count.
    let uncounted = json!({"column": {"field": "NUM"}, "gte": "1"});
    let two = fetch_page(&app, json!({"p": project, "first": 2, "filter": uncounted})).await;
    assert_eq!(two.total, Value::Null);
    let before = fetch_page(
        &app,
        json!({"p": project, "first": 100, "before": two.info["endCursor"], "filter": uncounted}),
    )
    .await;
    assert_eq!((before.nums.len(), &before.total), (1, &Value::Null));
    let after = fetch_page(
        &app,
        json!({"p": project, "last": 100, "after": two.info["startCursor"], "filter": uncounted}),
    )
    .await;
    assert_eq!((after.nums.len(), &after.total), (4, &Value::Null));
    let whole = fetch_page(
        &app,
        json!({"p": project, "first": 100, "filter": uncounted}),
    )
    .await;
    assert_eq!(whole.total, 5);
}

// Counts.

const COUNTS: &str = r#"
query Counts($p: ID!, $state: IssueFilter, $notState: IssueFilter, $empty: IssueFilter, $filled: IssueFilter) {
  project(id: $p) {
    all: issues(first: 1) { ...Count }
    state: issues(first: 1, filter: $state) { ...Count }
    notState: issues(first: 1, filter: $notState) { ...Count }
    empty: issues(first: 1, filter: $empty) { ...Count }
    filled: issues(first: 1, filter: $filled) { ...Count }
  }
}
fragment Count on IssueConnection { nodes { num } totalCount }"#;

/// Checks the counted `totalCount`s of the project against its rows read one by one: all
/// issues, the open ones (and `not` them), and the empty and filled cells of `field`.
async fn assert_counts(app: &TestApp, project: &str, field: &str, when: &str) {
    let (_, rows) = read_all(app, project).await;
    let state = json!({"column": {"field": "STATE"}, "eq": "OPEN"});
    let column = json!({"field": "CUSTOM_FIELD", "customFieldId": field});
    let variables = json!({"p": project, "state": state, "notState": {"not": state},
                   "empty": {"column": column, "isEmpty": true},
                   "filled": {"column": column, "isEmpty": false}});
    let body = app.post(COUNTS, variables.clone()).await;
    assert!(body.get("errors").is_none(), "{body:#}");
    let p = &body["data"]["project"];
    let open = rows.iter().filter(|r| r.open).count();
    let filled = rows.iter().filter(|r| r.values.contains_key(field)).count();
    let got: Vec<_> = ["all", "state", "notState", "empty", "filled"]
        .iter()
        .map(|k| p[k]["totalCount"].clone())
        .collect();
    assert_eq!(
        got,
        [
            rows.len(),
            open,
            rows.len() - open,
            rows.len() - filled,
            filled
        ]
        .map(|n| json!(n)),
        "{when}"
    );
    // Counting costs nothing: the same lists without their counts make the same calls.
    let uncounted = app
        .post(&COUNTS.replace(" totalCount }", " }"), variables)
        .await;
    assert_eq!(
        body["extensions"]["cost"]["dynamodbCalls"],
        uncounted["extensions"]["cost"]["dynamodbCalls"],
        "{when}: {body:#}"
    );
}

/// Every write keeps the counters: creates with and without values, state changes, cells set
/// and cleared, deletes, a field deleted; `verify` finds them right, finds them wrong once
/// tampered with, and `reindex` repairs them.
async fn counts_follow_every_write(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let project = synthetic_project(&app, 12, 4, 9).await;
    let (fields, _) = read_all(&app, &project).await;
    let field = fields[1].id.clone();
    assert_counts(&app, &project, &field, "seeded").await;
    let mutate = |query: &'static str, input: Value| {
        let app = &app;
        async move {
            let body = app.post(query, json!({"input": input})).await;
            assert!(body.get("errors").is_none(), "{query}: {body:#}");
            body["data"].clone()
        }
    };
    let created = mutate(
        "mutation($input: CreateIssueInput!) { createIssue(input: $input) { issue { id } } }",
        json!({"projectId": project, "name": "counted", "state": "CLOSED",
               "fieldValues": [{"fieldId": field, "value": "7"}]}),
    )
    .await;
    let issue = created["createIssue"]["issue"]["id"].clone();
    assert_counts(&app, &project, &field, "after a create").await;
    mutate(
        "mutation($input: UpdateIssueInput!) { updateIssue(input: $input) { issue { id } } }",
        json!({"id": issue, "state": "OPEN"}),
    )
    .await;
    assert_counts(&app, &project, &field, "after reopening").await;
    mutate(
        "mutation($input: SetIssueFieldValuesInput!) { setIssueFieldValues(input: $input) { issue { id } } }",
        json!({"issueId": issue, "values": [{"fieldId": field, "value": null}]}),
    )
    .await;
    assert_counts(&app, &project, &field, "after clearing a cell").await;
    let (_, rows) = read_all(&app, &project).await;
    let empty_one = rows
        .iter()
        .find(|r| !r.values.contains_key(&field))
        .unwrap()
        .num;
    let page = app
        .data(
            r#"query($p: ID!, $f: IssueFilter) { project(id: $p) { issues(filter: $f) { nodes { id num } } } }"#,
            json!({"p": project, "f": {"column": {"field": "NUM"}, "eq": empty_one.to_string()}}),
        )
        .await;
    let other = page["project"]["issues"]["nodes"][0]["id"].clone();
    mutate(
        "mutation($input: SetIssueFieldValuesInput!) { setIssueFieldValues(input: $input) { issue { id } } }",
        json!({"issueId": other, "values": [{"fieldId": field, "value": "-4"}]}),
    )
    .await;
    assert_counts(&app, &project, &field, "after filling a cell").await;
    mutate(
        "mutation($input: DeleteIssueInput!) { deleteIssue(input: $input) { deletedId } }",
        json!({"id": other}),
    )
    .await;
    assert_counts(&app, &project, &field, "after a delete").await;
    mutate(
        "mutation($input: DeleteCustomFieldInput!) { deleteCustomField(input: $input) { deletedId } }",
        json!({"id": fields[2].id}),
    )
    .await;
    app.sweeps_idle().await;
    assert_counts(&app, &project, &field, "after deleting another field").await;
    let verified = gridgate::repo::verify::verify(&app.store, None)
        .await
        .unwrap();
    assert_eq!(verified, vec![], "the writers' counters verify");

    // A counter another writer got wrong is found and repaired.
    let id = gridgate::ids::ProjectId::parse(&project).unwrap();
    let data = gridgate::repo::Repo::new(app.store.clone(), Limits::default())
        .project_data(&id)
        .await
        .unwrap()
        .unwrap();
    let mut tampered = data.project.clone();
    tampered.counts.as_mut().unwrap().open += 3;
    app.store
        .bulk_put(vec![gridgate::items::project_item(&tampered)])
        .await
        .unwrap();
    let found = gridgate::repo::verify::verify(&app.store, None)
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let report = found[0].to_string();
    assert!(
        report.starts_with(&format!("stale ({project}, "))
            && report.contains("8 open")
            && report.contains("the issues say 12, 5,"),
        "{report}"
    );
    let repaired = gridgate::repo::verify::reindex(&app.store, None)
        .await
        .unwrap();
    assert_eq!(repaired.len(), 1);
    assert_eq!(
        gridgate::repo::verify::verify(&app.store, None)
            .await
            .unwrap(),
        vec![]
    );
    assert_counts(&app, &project, &field, "after reindex").await;
}

crate::both_stores!(
    prefetched_pages_are_read_once,
    counts_follow_every_write,
    filters_match_the_reference,
    filtered_pages_fill_within_the_read_budget,
    rare_states_read_their_partition_and_cursors_survive_a_change_of_plan,
    ranges_on_the_sorted_column_read_only_their_rows,
    bad_filters_are_refused_with_their_path,
    rare_empty_cells_take_few_calls,
    read_cap_is_shared_by_a_request,
    every_ordering_matches_the_oracle,
    empty_cells_are_found_within_a_read_cap,
    grid_pages_stay_within_the_call_budget,
);
