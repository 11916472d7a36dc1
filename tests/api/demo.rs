//! API tests over HTTP on the demo data, against both stores: every ordering, paging forward
//! and backward one row at a time, lookups, bad input, and the HTTP endpoints.

use crate::support::app::{Backend, TestApp};
use serde_json::{json, Value};

const BRIDGE: &str = "project-35e9";
const START: &str = "xattrib-3812";
const END: &str = "xattrib-882a";
const NUM_ITEMS: &str = "xattrib-3fe6";
const SIGN_OFF: &str = "xattrib-47e5";

const PAGE: &str = r#"
query Page($project: ID!, $first: Int, $after: String, $last: Int, $before: String, $order: IssueOrder) {
  project(id: $project) {
    issues(first: $first, after: $after, last: $last, before: $before, orderBy: $order) {
      edges { cursor node { num } }
      nodes { num }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}"#;

async fn demo_app(backend: Backend) -> TestApp {
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    app
}

fn nums(connection: &Value) -> Vec<i64> {
    connection["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| e["node"]["num"].as_i64().expect("num"))
        .collect()
}

async fn page(app: &TestApp, vars: Value) -> Value {
    let data = app.data(PAGE, vars).await;
    data["project"]["issues"].clone()
}

/// Every ordering of the demo project with its expected issue nums.
fn expected_orders() -> Vec<(Value, Vec<i64>)> {
    let o = |field: &str, custom: Option<&str>, dir: &str| match custom {
        Some(id) => json!({"field": field, "customFieldId": id, "direction": dir}),
        None => json!({"field": field, "direction": dir}),
    };
    vec![
        (o("NUM", None, "ASC"), vec![1, 2, 3]),
        (o("NUM", None, "DESC"), vec![3, 2, 1]),
        // Check for rust (2) < Girder needs replacing (3) < Needs Painting (1).
        (o("NAME", None, "ASC"), vec![2, 3, 1]),
        (o("NAME", None, "DESC"), vec![1, 3, 2]),
        // OPEN before CLOSED, ties by num in the sort's direction.
        (o("STATE", None, "ASC"), vec![1, 3, 2]),
        (o("STATE", None, "DESC"), vec![2, 3, 1]),
        // Dates chronologically; issue 3 has no Start/End and comes last either way.
        (o("CUSTOM_FIELD", Some(START), "ASC"), vec![1, 2, 3]),
        (o("CUSTOM_FIELD", Some(START), "DESC"), vec![2, 1, 3]),
        (o("CUSTOM_FIELD", Some(END), "ASC"), vec![1, 2, 3]),
        (o("CUSTOM_FIELD", Some(END), "DESC"), vec![2, 1, 3]),
        // Only issue 3 has Num Items / Sign Off; the empty ones follow by num in direction.
        (o("CUSTOM_FIELD", Some(NUM_ITEMS), "ASC"), vec![3, 1, 2]),
        (o("CUSTOM_FIELD", Some(NUM_ITEMS), "DESC"), vec![3, 2, 1]),
        (o("CUSTOM_FIELD", Some(SIGN_OFF), "ASC"), vec![3, 1, 2]),
        (o("CUSTOM_FIELD", Some(SIGN_OFF), "DESC"), vec![3, 2, 1]),
    ]
}

async fn every_ordering_in_one_page(backend: Backend) {
    let app = demo_app(backend).await;
    for (order, expected) in expected_orders() {
        let conn = page(
            &app,
            json!({"project": BRIDGE, "first": 100, "order": order}),
        )
        .await;
        assert_eq!(nums(&conn), expected, "order {order}");
        let node_nums: Vec<i64> = conn["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["num"].as_i64().unwrap())
            .collect();
        assert_eq!(node_nums, expected, "nodes of {order}");
        assert_eq!(conn["pageInfo"]["hasNextPage"], false);
        assert_eq!(conn["pageInfo"]["hasPreviousPage"], false);
    }
}

async fn every_ordering_one_row_at_a_time(backend: Backend) {
    let app = demo_app(backend).await;
    for (order, expected) in expected_orders() {
        // Forward with first: 1.
        let mut seen = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let conn = page(
                &app,
                json!({"project": BRIDGE, "first": 1, "after": after, "order": order}),
            )
            .await;
            let got = nums(&conn);
            assert_eq!(got.len(), 1, "order {order}: one row per page");
            seen.extend(got);
            let info = &conn["pageInfo"];
            assert_eq!(
                info["hasPreviousPage"],
                seen.len() > 1,
                "order {order} at {seen:?}"
            );
            assert_eq!(info["startCursor"], conn["edges"][0]["cursor"]);
            assert_eq!(info["endCursor"], conn["edges"][0]["cursor"]);
            if info["hasNextPage"] == false {
                break;
            }
            after = info["endCursor"].as_str().map(String::from);
        }
        assert_eq!(seen, expected, "forward pages of {order}");

        // Backward with last: 1, from the end.
        let mut seen = Vec::new();
        let mut before: Option<String> = None;
        loop {
            let conn = page(
                &app,
                json!({"project": BRIDGE, "last": 1, "before": before, "order": order}),
            )
            .await;
            let got = nums(&conn);
            assert_eq!(got.len(), 1, "order {order}: one row per page");
            seen.splice(0..0, got);
            let info = &conn["pageInfo"];
            assert_eq!(
                info["hasNextPage"],
                seen.len() > 1,
                "order {order} at {seen:?}"
            );
            if info["hasPreviousPage"] == false {
                break;
            }
            before = info["startCursor"].as_str().map(String::from);
        }
        assert_eq!(seen, expected, "backward pages of {order}");
    }
}

async fn pages_of_two_and_bounds(backend: Backend) {
    let app = demo_app(backend).await;
    let order = json!({"field": "CUSTOM_FIELD", "customFieldId": NUM_ITEMS, "direction": "ASC"});
    let first = page(&app, json!({"project": BRIDGE, "first": 2, "order": order})).await;
    assert_eq!(nums(&first), vec![3, 1]);
    assert_eq!(first["pageInfo"]["hasNextPage"], true);
    let second = page(
        &app,
        json!({"project": BRIDGE, "first": 2, "after": first["pageInfo"]["endCursor"], "order": order}),
    )
    .await;
    assert_eq!(nums(&second), vec![2]);
    assert_eq!(second["pageInfo"]["hasNextPage"], false);
    assert_eq!(second["pageInfo"]["hasPreviousPage"], true);
    // `before` the last row, paging backward, crosses from the empty cells into the valued ones.
    let back = page(
        &app,
        json!({"project": BRIDGE, "last": 2, "before": second["edges"][0]["cursor"], "order": order}),
    )
    .await;
    assert_eq!(nums(&back), vec![3, 1]);
    assert_eq!(back["pageInfo"]["hasPreviousPage"], false);
    assert_eq!(back["pageInfo"]["hasNextPage"], true);
    // `first` bounded by `before` stops at the bound.
    let bounded = page(
        &app,
        json!({"project": BRIDGE, "first": 10, "before": second["edges"][0]["cursor"], "order": order}),
    )
    .await;
    assert_eq!(nums(&bounded), vec![3, 1]);
    // Default page size applies without first/last.
    let all = page(&app, json!({"project": BRIDGE})).await;
    assert_eq!(nums(&all), vec![1, 2, 3]);
}

async fn reads_a_whole_grid(backend: Backend) {
    let app = demo_app(backend).await;
    let data = app
        .data(
            r#"{
              project(id: "project-35e9") {
                id name
                tenant { id name }
                customFields { id name type position project { id } }
                issues(first: 10) {
                  nodes {
                    id num name state project { id }
                    fieldValues { field { id name type } value }
                    start: fieldValue(fieldId: "xattrib-3812") { value }
                    other: fieldValue(fieldId: "xattrib-9999") { value }
                  }
                }
              }
            }"#,
            json!({}),
        )
        .await;
    let project = &data["project"];
    assert_eq!(project["name"], "Forth Rail Bridge");
    assert_eq!(
        project["tenant"],
        json!({"id": "tenant-0807", "name": "ACME Engineering"})
    );
    let fields: Vec<(String, String, i64)> = project["customFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["project"]["id"], BRIDGE);
            (
                f["name"].as_str().unwrap().to_string(),
                f["type"].as_str().unwrap().to_string(),
                f["position"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        fields,
        vec![
            ("Start".into(), "DATE".into(), 1),
            ("End".into(), "DATE".into(), 2),
            ("Num Items".into(), "INT".into(), 3),
            ("Sign Off".into(), "TEXT".into(), 4),
        ]
    );
    let issues = project["issues"]["nodes"].as_array().unwrap();
    assert_eq!(issues.len(), 3);
    assert_eq!(issues[0]["id"], "issue-020e");
    assert_eq!(issues[0]["name"], "Needs Painting");
    assert_eq!(issues[0]["state"], "OPEN");
    assert_eq!(issues[1]["state"], "CLOSED");
    assert_eq!(issues[0]["start"], json!({"value": "2023-05-01"}));
    assert_eq!(issues[0]["other"], Value::Null);
    assert_eq!(issues[2]["start"], Value::Null);
    let cells = |i: usize| -> Vec<(String, String)> {
        issues[i]["fieldValues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["field"]["name"].as_str().unwrap().to_string(),
                    c["value"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        cells(0),
        vec![
            ("Start".into(), "2023-05-01".into()),
            ("End".into(), "2023-06-01".into())
        ]
    );
    assert_eq!(
        cells(2),
        vec![
            ("Num Items".into(), "42".into()),
            ("Sign Off".into(), "Approved".into())
        ]
    );
}

async fn tenants_list_projects_by_name(backend: Backend) {
    let app = demo_app(backend).await;
    let data = app
        .data(
            r#"{
              acme: tenant(id: "tenant-0807") { name projects { nodes { id name } pageInfo { hasNextPage } } }
              media: tenant(id: "tenant-3cc8") { name projects(first: 1) { nodes { name tenant { id } issues { nodes { num name } } } } }
            }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        data["acme"]["projects"]["nodes"],
        json!([{"id": "project-35e9", "name": "Forth Rail Bridge"}])
    );
    assert_eq!(data["acme"]["projects"]["pageInfo"]["hasNextPage"], false);
    assert_eq!(data["media"]["name"], "Big Media");
    let daily = &data["media"]["projects"]["nodes"][0];
    assert_eq!(daily["name"], "The Daily News");
    assert_eq!(daily["tenant"]["id"], "tenant-3cc8");
    assert_eq!(
        daily["issues"]["nodes"],
        json!([{"num": 1, "name": "Launch new newspaper!"}, {"num": 2, "name": "Hire reporter for showbiz desk"}])
    );
}

async fn node_lookups(backend: Backend) {
    let app = demo_app(backend).await;
    let data = app
        .data(
            r#"{
              nodes(ids: ["tenant-0807", "project-7b7e", "xattrib-3fe6", "issue-af34", "issue-ffff", "xattrib-ffff"]) {
                __typename id
                ... on Tenant { name }
                ... on Project { name }
                ... on CustomField { name type project { id } }
                ... on Issue { num name }
              }
              node(id: "issue-67d1") { id ... on Issue { name } }
              missingTenant: tenant(id: "tenant-ffff") { id }
              missingProject: project(id: "project-ffff") { id }
              issue(id: "issue-3544") { num project { name } }
              missingIssue: issue(id: "issue-ffff") { id }
            }"#,
            json!({}),
        )
        .await;
    assert_eq!(
        data["nodes"],
        json!([
            {"__typename": "Tenant", "id": "tenant-0807", "name": "ACME Engineering"},
            {"__typename": "Project", "id": "project-7b7e", "name": "The Daily News"},
            {"__typename": "CustomField", "id": "xattrib-3fe6", "name": "Num Items", "type": "INT", "project": {"id": "project-35e9"}},
            {"__typename": "Issue", "id": "issue-af34", "num": 3, "name": "Girder needs replacing"},
            null,
            null
        ])
    );
    assert_eq!(
        data["node"],
        json!({"id": "issue-67d1", "name": "Check for rust"})
    );
    assert_eq!(data["missingTenant"], Value::Null);
    assert_eq!(data["missingProject"], Value::Null);
    assert_eq!(data["missingIssue"], Value::Null);
    assert_eq!(
        data["issue"],
        json!({"num": 1, "project": {"name": "The Daily News"}})
    );
}

async fn bad_input_is_a_coded_error(backend: Backend) {
    let app = demo_app(backend).await;
    let bad = |q: &'static str| q;
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            bad(r#"{ node(id: "nonsense") { id } }"#),
            json!({}),
            "BAD_USER_INPUT",
            "not an id",
        ),
        (
            bad(r#"{ project(id: "issue-020e") { id } }"#),
            json!({}),
            "BAD_USER_INPUT",
            "not a valid project id",
        ),
        (
            bad(r#"{ issue(id: "issue-") { id } }"#),
            json!({}),
            "BAD_USER_INPUT",
            "not a valid issue id",
        ),
        (
            bad(r#"{ tenant(id: "tenant-a b") { id } }"#),
            json!({}),
            "BAD_USER_INPUT",
            "not a valid tenant id",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "first": 0}),
            "BAD_USER_INPUT",
            "`first` must be between 1 and 100",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "first": 101}),
            "BAD_USER_INPUT",
            "`first` must be between 1 and 100",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "last": -1}),
            "BAD_USER_INPUT",
            "`last` must be between 1 and 100",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "first": 1, "last": 1}),
            "BAD_USER_INPUT",
            "not both",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "after": "garbage"}),
            "BAD_USER_INPUT",
            "not a valid cursor",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "order": {"field": "CUSTOM_FIELD"}}),
            "BAD_USER_INPUT",
            "needs `customFieldId`",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "order": {"field": "NAME", "customFieldId": START}}),
            "BAD_USER_INPUT",
            "only applies to field CUSTOM_FIELD",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "order": {"field": "CUSTOM_FIELD", "customFieldId": "xattrib-ffff"}}),
            "BAD_USER_INPUT",
            "xattrib-ffff is not a custom field of project-35e9",
        ),
        (
            PAGE,
            json!({"project": "project-7b7e", "order": {"field": "CUSTOM_FIELD", "customFieldId": START}}),
            "BAD_USER_INPUT",
            "xattrib-3812 is not a custom field of project-7b7e",
        ),
        (
            PAGE,
            json!({"project": BRIDGE, "order": {"field": "CUSTOM_FIELD", "customFieldId": "issue-020e"}}),
            "BAD_USER_INPUT",
            "not a valid custom field id",
        ),
        (
            bad(
                r#"{ project(id: "project-35e9") { issues { nodes { fieldValue(fieldId: "zzz") { value } } } } }"#,
            ),
            json!({}),
            "BAD_USER_INPUT",
            "not a valid custom field id",
        ),
    ];
    for (query, vars, code, message) in cases {
        let (got_code, got_message) = app.error(query, vars.clone()).await;
        assert_eq!(got_code, code, "{query} {vars}: {got_message}");
        assert!(
            got_message.contains(message),
            "{vars}: `{got_message}` should contain `{message}`"
        );
    }

    // A cursor from another ordering, or another project's list, is rejected, never misread.
    let conn = page(&app, json!({"project": BRIDGE, "first": 1})).await;
    let cursor = conn["pageInfo"]["endCursor"].clone();
    let (code, message) = app
        .error(PAGE, json!({"project": BRIDGE, "after": cursor, "order": {"field": "NUM", "direction": "DESC"}}))
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    assert!(message.contains("another list or ordering"), "{message}");
    let (code, _) = app
        .error(PAGE, json!({"project": "project-7b7e", "before": cursor}))
        .await;
    assert_eq!(code, "BAD_USER_INPUT");
    let projects_cursor = app
        .data(
            r#"{ tenant(id: "tenant-0807") { projects { pageInfo { endCursor } } } }"#,
            json!({}),
        )
        .await["tenant"]["projects"]["pageInfo"]["endCursor"]
        .clone();
    let (code, _) = app
        .error(PAGE, json!({"project": BRIDGE, "after": projects_cursor}))
        .await;
    assert_eq!(code, "BAD_USER_INPUT");

    // Too many ids for `nodes`.
    let ids: Vec<String> = (0..101).map(|i| format!("issue-{i}")).collect();
    let (code, message) = app
        .error(
            "query($ids: [ID!]!) { nodes(ids: $ids) { id } }",
            json!({"ids": ids}),
        )
        .await;
    assert_eq!(
        (code.as_str(), message.contains("at most 100")),
        ("BAD_USER_INPUT", true)
    );

    // Malformed GraphQL is reported with a code too.
    let (code, _) = app.error("{ project(id: 1) { nope } }", json!({})).await;
    assert_eq!(code, "GRAPHQL_VALIDATION_FAILED");
}

async fn http_endpoints(backend: Backend) {
    let app = demo_app(backend).await;
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);

    let graphiql = app
        .client
        .get(app.url("/graphql"))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(graphiql.status(), 200);
    let html = graphiql.text().await.unwrap();
    assert!(
        html.contains("graphiql") && html.contains("/graphql"),
        "GraphiQL page"
    );

    // Browser grids on other origins may call the API (preflight included).
    let preflight = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/graphql"))
        .header("origin", "http://grid.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success());
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");

    let playground = app.client.get(app.url("/playground")).send().await.unwrap();
    assert_eq!(playground.status(), 200);
    assert!(playground
        .text()
        .await
        .unwrap()
        .contains("GraphQL Playground"));

    let get: Value = app
        .client
        .get(app.url("/graphql"))
        .query(&[("query", "{ tenant(id: \"tenant-3cc8\") { name } }")])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(get["data"]["tenant"]["name"], "Big Media");
    assert_eq!(get["extensions"]["cost"]["dynamodbCalls"], 1);

    let mutation = app
        .client
        .get(app.url("/graphql"))
        .query(&[("query", "mutation { nothing }")])
        .send()
        .await
        .unwrap();
    assert_eq!(mutation.status(), 405);
}

/// Exact DynamoDB calls of demo grid pages: 2 by NUM; 3 for other columns among valued rows;
/// a page that runs from valued rows into empty cells adds the filtered query (4).
async fn demo_grid_costs(backend: Backend) {
    let app = demo_app(backend).await;
    let grid = r#"query($order: IssueOrder, $first: Int) { project(id: "project-35e9") {
        name customFields { id name type position }
        issues(first: $first, orderBy: $order) { nodes { num name state fieldValues { field { id } value } } }
    } }"#;
    let cases = [
        (json!({"field": "NUM"}), 3, 2),
        (json!({"field": "NAME", "direction": "DESC"}), 3, 3),
        (json!({"field": "STATE"}), 3, 3),
        // Two issues have a Start date: a page of 1 and its look-ahead row stay among them; a
        // page of 3 runs on into the empty cells, which takes the filtered query.
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": START}),
            1,
            3,
        ),
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": START}),
            3,
            4,
        ),
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": NUM_ITEMS, "direction": "DESC"}),
            3,
            4,
        ),
    ];
    for (order, first, calls) in cases {
        let body = app
            .post(grid, json!({"order": order, "first": first}))
            .await;
        assert!(body.get("errors").is_none(), "{body:#}");
        let cost = &body["extensions"]["cost"];
        assert_eq!(cost["dynamodbCalls"], calls, "{order} first {first}");
        eprintln!("DEMO COST backend={backend:?} order={order} first={first} {cost}");
    }
}

/// Bounds on both sides, in both directions: `first`/`last` with `after` and `before` together.
async fn pages_between_two_cursors(backend: Backend) {
    let app = demo_app(backend).await;
    let order = json!({"field": "CUSTOM_FIELD", "customFieldId": NUM_ITEMS, "direction": "ASC"});
    // Order 3, 1, 2: cursors of every row.
    let all = page(&app, json!({"project": BRIDGE, "first": 3, "order": order})).await;
    let cursor = |i: usize| all["edges"][i]["cursor"].clone();
    let cases = [
        (
            json!({"first": 5, "after": cursor(0), "before": cursor(2)}),
            vec![1],
            false,
            true,
        ),
        (
            json!({"last": 5, "after": cursor(0), "before": cursor(2)}),
            vec![1],
            false,
            false,
        ),
        (
            json!({"last": 5, "after": cursor(0)}),
            vec![1, 2],
            false,
            false,
        ),
        (json!({"last": 1, "after": cursor(0)}), vec![2], true, false),
        (
            json!({"first": 1, "after": cursor(0), "before": cursor(2)}),
            vec![1],
            false,
            true,
        ),
        (
            json!({"first": 5, "after": cursor(2), "before": cursor(0)}),
            vec![],
            false,
            true,
        ),
    ];
    // Relay's rules: with `last`, hasPreviousPage says whether the bounded range holds more
    // rows than asked; with `first`, it says whether rows precede `after`.
    for (args, expected, has_previous_when_last, has_previous_when_first) in cases {
        let mut vars = args.clone();
        vars["project"] = json!(BRIDGE);
        vars["order"] = order.clone();
        let conn = page(&app, vars).await;
        assert_eq!(nums(&conn), expected, "{args}");
        let info = &conn["pageInfo"];
        if args.get("last").is_some() {
            assert_eq!(info["hasPreviousPage"], has_previous_when_last, "{args}");
            assert_eq!(info["hasNextPage"], args.get("before").is_some(), "{args}");
        } else {
            assert_eq!(info["hasPreviousPage"], has_previous_when_first, "{args}");
            // Every bounded range here holds no more rows than asked.
            assert_eq!(info["hasNextPage"], false, "{args}");
        }
    }
    // Without `before`, more rows after the page mean a next page.
    let conn = page(
        &app,
        json!({"project": BRIDGE, "first": 1, "after": cursor(0), "order": order}),
    )
    .await;
    assert_eq!(nums(&conn), vec![1]);
    assert_eq!(conn["pageInfo"]["hasNextPage"], true);
}

/// Failures outside resolvers also carry codes: bad bodies, batches, out-of-range Ints, forged
/// cursors.
async fn malformed_requests_are_coded(backend: Backend) {
    let app = demo_app(backend).await;
    let post_raw = |body: &'static str| {
        app.client
            .post(app.url("/graphql"))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for (body, fragment) in [
        ("{bad json", "not a GraphQL request"),
        (r#"{"query": 5}"#, "`query` must be a string"),
        (
            r#"[{"query": "{ __typename }"}, {"query": "{ __typename }"}]"#,
            "batched requests are not supported",
        ),
    ] {
        let response = post_raw(body).await.unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let json: Value = response.json().await.expect("a JSON error body");
        assert_eq!(
            json["errors"][0]["extensions"]["code"], "BAD_REQUEST",
            "{body}"
        );
        assert!(
            json["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains(fragment),
            "{json}"
        );
    }
    let (code, message) = app
        .error(PAGE, json!({"project": BRIDGE, "first": 10_000_000_000i64}))
        .await;
    assert_eq!(code, "BAD_USER_INPUT", "{message}");
    let (code, message) = app
        .error(
            r#"{ project(id: "project-35e9") { issues(first: 10000000000) { nodes { num } } } }"#,
            json!({}),
        )
        .await;
    // A literal is the document's own mistake, found before anything runs.
    assert_eq!(code, "GRAPHQL_VALIDATION_FAILED", "{message}");
    assert!(message.contains("expected `Int`"), "{message}");

    // A body over the limit is refused before it is read.
    let big = format!(
        r#"{{"query": "{{ __typename }}", "pad": "{}"}}"#,
        "x".repeat(600 * 1024)
    );
    let response = app
        .client
        .post(app.url("/graphql"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let json: Value = response.json().await.expect("a JSON refusal");
    assert_eq!(json["errors"][0]["extensions"]["code"], "BAD_REQUEST");
    assert!(json["errors"][0]["extensions"]["requestId"].is_string());

    // A cursor naming a second segment on a list that has one (edited by hand: the scope and
    // version are right, the segment is not, and the signature no longer matches). A cursor
    // is base64url(version 3, the list's 8-byte digest, the segment, ...).
    let conn = page(&app, json!({"project": BRIDGE, "first": 1})).await;
    let real = conn["pageInfo"]["endCursor"].as_str().unwrap().to_string();
    use base64::Engine;
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut bytes = engine.decode(&real).expect("a base64url cursor");
    assert_eq!((bytes[0], bytes[9]), (3, 0), "version 3, first segment");
    bytes[9] = 1;
    let forged = engine.encode(&bytes);
    for arg in ["after", "before"] {
        let (code, message) = app
            .error(PAGE, json!({"project": BRIDGE, arg: forged}))
            .await;
        assert_eq!(code, "BAD_USER_INPUT", "{message}");
        assert!(message.contains("not a valid cursor"), "{message}");
    }
}

/// Response objects keep the order of the query's selection sets, however long each field
/// took to resolve.
async fn response_fields_keep_query_order(backend: Backend) {
    let app = demo_app(backend).await;
    let response = app
        .client
        .post(app.url("/graphql"))
        .json(&json!({"query": r#"{
            slow: tenant(id: "tenant-0807") { projects { pageInfo { hasNextPage } nodes { customFields { id } issues { nodes { num } } } } }
            fast: tenant(id: "tenant-3cc8") { name id }
            mid: project(id: "project-7b7e") { name }
        }"#}))
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    let at = |key: &str| {
        text.find(&format!("\"{key}\""))
            .unwrap_or_else(|| panic!("{key} in {text}"))
    };
    assert!(at("slow") < at("fast") && at("fast") < at("mid"), "{text}");
    assert!(at("pageInfo") < at("nodes"), "{text}");
    assert!(at("name") < at("id\":\"tenant-3cc8"), "{text}");
    assert!(text.find("\"data\"").unwrap() < text.find("\"extensions\"").unwrap());

    // Fragments shape only the types they name, with or without `__typename`.
    let response = app
        .client
        .post(app.url("/graphql"))
        .json(
            &json!({"query": r#"{ nodes(ids: ["tenant-0807", "project-7b7e", "issue-af34"]) {
            ... on Issue { num id }
            ... on Tenant { name id }
            ...P
        } }
        fragment P on Project { __typename name id }"#}),
        )
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    for expected in [
        r#"{"name":"ACME Engineering","id":"tenant-0807"}"#,
        r#"{"__typename":"Project","name":"The Daily News","id":"project-7b7e"}"#,
        r#"{"num":3,"id":"issue-af34"}"#,
    ] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
}

crate::both_stores!(
    pages_between_two_cursors,
    malformed_requests_are_coded,
    response_fields_keep_query_order,
    demo_grid_costs,
    every_ordering_in_one_page,
    every_ordering_one_row_at_a_time,
    pages_of_two_and_bounds,
    reads_a_whole_grid,
    tenants_list_projects_by_name,
    node_lookups,
    bad_input_is_a_coded_error,
    http_endpoints,
);
