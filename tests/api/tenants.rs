//! `Query.tenants` over HTTP, on both stores: the tenant directory listed by name
//! (case-insensitively, then by id) and paged both ways; created tenants appear and renamed
//! ones move, racing renames included; a token's caller sees its own tenant alone; the exact
//! calls and waves of the web grid's home page (tenants and their projects); `verify` clean
//! after writes, and a missing, stale or stray directory row (a table written before the
//! directory existed) reported by `verify` and repaired by `reindex`.

use crate::support::app::{Backend, TestApp, TestStore};
use crate::support::waves::{self, WaveRecorder};
use gridgate::ids::TenantId;
use gridgate::model::Tenant;
use gridgate::repo::verify::{self, Problem};
use gridgate::store::{Key, WriteOp};
use gridgate::{items, keys};
use serde_json::{json, Value};

const ACME: &str = "tenant-0807";
const MEDIA: &str = "tenant-3cc8";

const PAGE: &str = r#"query($first: Int, $after: String, $last: Int, $before: String) {
  tenants(first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { id name } }
    nodes { id }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}"#;

/// The web grid's home page: the tenants and the first projects of each.
const HOME: &str =
    "{ tenants(first: 20) { nodes { id name projects(first: 20) { nodes { id name } } } } }";

const CREATE_TENANT: &str =
    r#"mutation($name: String!) { createTenant(input: {name: $name}) { tenant { id name } } }"#;
const RENAME_TENANT: &str = r#"mutation($id: ID!, $name: String!) { updateTenant(input: {id: $id, name: $name}) { tenant { id name } } }"#;

/// One page of the list as a client reads it.
#[derive(Debug)]
struct Listed {
    /// (id, name) of each edge, in order.
    rows: Vec<(String, String)>,
    has_next: bool,
    has_previous: bool,
    start: Value,
    end: Value,
}

fn listed(data: &Value) -> Listed {
    let tenants = &data["tenants"];
    let rows: Vec<(String, String)> = tenants["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|e| {
            let node = &e["node"];
            (
                node["id"].as_str().unwrap().to_string(),
                node["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let nodes: Vec<&str> = tenants["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    let edge_ids: Vec<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(nodes, edge_ids, "nodes list the edges' nodes");
    let info = &tenants["pageInfo"];
    Listed {
        rows,
        has_next: info["hasNextPage"].as_bool().unwrap(),
        has_previous: info["hasPreviousPage"].as_bool().unwrap(),
        start: info["startCursor"].clone(),
        end: info["endCursor"].clone(),
    }
}

async fn page(app: &TestApp, variables: Value) -> Listed {
    listed(&app.data(PAGE, variables).await)
}

/// The list read forward `size` rows at a time, and backward likewise: both give the same
/// rows, and every page's information is exact.
async fn walk(app: &TestApp, size: usize) -> Vec<(String, String)> {
    let mut forward = Vec::new();
    let mut after = Value::Null;
    loop {
        let p = page(app, json!({"first": size, "after": after})).await;
        assert_eq!(p.has_previous, !after.is_null(), "{p:?}");
        assert!(p.rows.len() <= size, "{p:?}");
        forward.extend(p.rows.iter().cloned());
        if !p.has_next {
            break;
        }
        assert_eq!(p.rows.len(), size, "only the last page is short: {p:?}");
        after = p.end;
    }
    let mut backward = Vec::new();
    let mut before = Value::Null;
    loop {
        let p = page(app, json!({"last": size, "before": before})).await;
        assert_eq!(p.has_next, !before.is_null(), "{p:?}");
        backward.splice(0..0, p.rows.iter().cloned());
        if !p.has_previous {
            break;
        }
        assert_eq!(p.rows.len(), size, "only the first page is short: {p:?}");
        before = p.start;
    }
    assert_eq!(forward, backward, "forward and backward agree");
    forward
}

/// `tenants` sorted as the directory sorts them: by name ignoring case, then by id.
fn by_name(tenants: &[(String, String)]) -> Vec<(String, String)> {
    let mut sorted = tenants.to_vec();
    sorted.sort_by(|(a_id, a), (b_id, b)| (a.to_lowercase(), a_id).cmp(&(b.to_lowercase(), b_id)));
    sorted
}

async fn create_tenant(app: &TestApp, name: &str) -> (String, String) {
    let data = app.data(CREATE_TENANT, json!({"name": name})).await;
    let tenant = &data["createTenant"]["tenant"];
    (
        tenant["id"].as_str().unwrap().to_string(),
        tenant["name"].as_str().unwrap().to_string(),
    )
}

async fn assert_clean(app: &TestApp) {
    let found = verify::verify(&app.store, None).await.expect("verify");
    assert!(found.is_empty(), "verify found drift: {found:#?}");
}

async fn tenants_are_listed_by_name_and_paged(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    // An empty table lists nothing, in either direction.
    for args in [json!({}), json!({"last": 5})] {
        let p = page(&app, args).await;
        assert!(p.rows.is_empty() && !p.has_next && !p.has_previous, "{p:?}");
        assert_eq!((p.start, p.end), (Value::Null, Value::Null));
    }
    app.seed_demo().await;
    let mut all = vec![
        (ACME.to_string(), "ACME Engineering".to_string()),
        (MEDIA.to_string(), "Big Media".to_string()),
    ];
    assert_eq!(walk(&app, 1).await, all);
    // Created tenants appear at their place by name; names equal but for case tie, and their
    // ids decide.
    for name in [
        "delta", "alpha", "Charlie", "ALPHA", "bravo", "Échelle", "zulu",
    ] {
        all.push(create_tenant(&app, name).await);
    }
    let expected = by_name(&all);
    let names: Vec<&str> = expected.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names[0], "ACME Engineering");
    assert_eq!(names[3], "Big Media");
    assert_eq!(*names.last().unwrap(), "Échelle", "sorted by UTF-8 bytes");
    for size in [1, 2, 3, 9, 100] {
        assert_eq!(walk(&app, size).await, expected, "pages of {size}");
    }
    let whole = page(&app, json!({"first": 100})).await;
    assert!(!whole.has_next && !whole.has_previous, "{whole:?}");
    let beyond = page(&app, json!({"after": whole.end})).await;
    assert!(beyond.rows.is_empty() && !beyond.has_next && beyond.has_previous);
    // A cursor bounds both ways: the rows strictly between two cursors.
    let edges = app.data(PAGE, json!({"first": 100})).await["tenants"]["edges"].clone();
    let between = page(
        &app,
        json!({"first": 100, "after": edges[1]["cursor"], "before": edges[5]["cursor"]}),
    )
    .await;
    assert_eq!(between.rows, expected[2..5]);
    // A rename moves the tenant to its new place; a rename to the same name but for case
    // keeps its place among the others.
    let delta = all.iter().position(|(_, n)| n == "delta").unwrap();
    let renamed = app
        .data(
            RENAME_TENANT,
            json!({"id": all[delta].0, "name": "Aardvark"}),
        )
        .await;
    assert_eq!(renamed["updateTenant"]["tenant"]["name"], "Aardvark");
    all[delta].1 = "Aardvark".into();
    let zulu = all.iter().position(|(_, n)| n == "zulu").unwrap();
    app.data(RENAME_TENANT, json!({"id": all[zulu].0, "name": "ZULU"}))
        .await;
    all[zulu].1 = "ZULU".into();
    let expected = by_name(&all);
    assert_eq!(expected[0].1, "Aardvark");
    assert_eq!(walk(&app, 2).await, expected);
    // Bad arguments are refused as on every connection.
    let (code, message) = app.error(PAGE, json!({"first": 0})).await;
    assert_eq!(code, "BAD_USER_INPUT", "{message}");
    let (code, message) = app.error(PAGE, json!({"first": 1, "last": 1})).await;
    assert_eq!(code, "BAD_USER_INPUT", "{message}");
    // A cursor of another list (a tenant's projects) is refused, not misread.
    let projects = app
        .data(
            r#"query($id: ID!) { tenant(id: $id) { projects(first: 1) { pageInfo { endCursor } } } }"#,
            json!({"id": ACME}),
        )
        .await;
    let foreign = &projects["tenant"]["projects"]["pageInfo"]["endCursor"];
    let (code, message) = app.error(PAGE, json!({"after": foreign})).await;
    assert_eq!(code, "BAD_USER_INPUT", "{message}");
    assert!(message.contains("another list"), "{message}");
    assert_clean(&app).await;
    // The synthetic seeder writes its tenant's directory row too. (Its projects are not
    // counted, which `verify` reports; the directory is clean.)
    let params = gridgate::seed::Synthetic {
        projects: 1,
        issues: 2,
        fields: 1,
        seed: 7,
    };
    let seeded = gridgate::seed::synthetic(&app.store, params, |_| {})
        .await
        .expect("synthetic seed");
    all.push((seeded[0].tenant.clone(), "Synthetic 7".into()));
    assert_eq!(walk(&app, 4).await, by_name(&all));
    let found = verify::verify(&app.store, None).await.expect("verify");
    assert!(found.iter().all(|m| m.key.sk != "tenants"), "{found:#?}");
}

async fn a_token_caller_sees_its_own_tenant_alone(backend: Backend) {
    let app = TestApp::spawn_with_settings(backend, crate::auth::settings()).await;
    app.seed_demo().await;
    let post = |tenant: &'static str, scope: &'static str, query: &'static str, vars: Value| {
        let app = &app;
        async move {
            let response = app
                .client
                .post(app.url("/graphql"))
                .header(
                    "authorization",
                    format!("Bearer {}", crate::auth::token(tenant, scope)),
                )
                .json(&json!({"query": query, "variables": vars}))
                .send()
                .await
                .expect("POST /graphql");
            assert_eq!(response.status(), 200);
            response.json::<Value>().await.expect("JSON body")
        }
    };
    for (tenant, name) in [(ACME, "ACME Engineering"), (MEDIA, "Big Media")] {
        for args in [json!({}), json!({"last": 3}), json!({"first": 1})] {
            let body = post(tenant, "grid:read", PAGE, args.clone()).await;
            assert!(body.get("errors").is_none(), "{body:#}");
            let p = listed(&body["data"]);
            assert_eq!(p.rows, [(tenant.to_string(), name.to_string())], "{args}");
            assert!(!p.has_next && !p.has_previous, "{p:?}");
            // The caller's own tenant is read by key: one call, whatever the table holds.
            assert_eq!(body["extensions"]["cost"]["dynamodbCalls"], 1, "{body:#}");
            // Its cursor pages on to nothing, both ways.
            for around in [json!({"after": p.end}), json!({"before": p.start})] {
                let body = post(tenant, "grid:read", PAGE, around.clone()).await;
                let q = listed(&body["data"]);
                assert!(q.rows.is_empty(), "{around}: {q:?}");
            }
        }
    }
    // One caller's cursor is another's foreign cursor.
    let acme = listed(&post(ACME, "grid:read", PAGE, json!({})).await["data"]);
    let body = post(MEDIA, "grid:read", PAGE, json!({"after": acme.end})).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "BAD_USER_INPUT",
        "{body:#}"
    );
    // A rename by the tenant's own caller shows in its list.
    let body = post(
        ACME,
        "grid:read grid:write",
        r#"mutation { updateTenant(input: {id: "tenant-0807", name: "Acme Works"}) { tenant { name } } }"#,
        json!({}),
    )
    .await;
    assert!(body.get("errors").is_none(), "{body:#}");
    let p = listed(&post(ACME, "grid:read", PAGE, json!({})).await["data"]);
    assert_eq!(p.rows, [(ACME.to_string(), "Acme Works".to_string())]);
    assert_clean(&app).await;
}

/// The home page's calls and waves, exact: one Query of the directory, then one Query of each
/// tenant's projects, all at once; a token's caller reads its tenant by key instead.
async fn the_home_page_stays_within_its_call_budget(backend: Backend) {
    let (app, recorder) = waves::spawn_recorded(backend).await;
    app.seed_demo().await;
    // Three more tenants with one project each (so every Query reads something, and the read
    // units are the same on both stores).
    for name in ["Carol", "Dave", "Erin"] {
        let (tenant, _) = create_tenant(&app, name).await;
        app.data(
            r#"mutation($t: ID!) { createProject(input: {tenantId: $t, name: "P"}) { project { id } } }"#,
            json!({"t": tenant}),
        )
        .await;
    }
    recorder.take();
    let body = app.post(HOME, json!({})).await;
    let calls = recorder.take();
    assert!(body.get("errors").is_none(), "{body:#}");
    let tenants = body["data"]["tenants"]["nodes"].as_array().unwrap();
    assert_eq!(tenants.len(), 5);
    assert_eq!(
        tenants[0]["projects"]["nodes"],
        json!([{"id": "project-35e9", "name": "Forth Rail Bridge"}])
    );
    let ops: Vec<&str> = calls.iter().map(|c| c.op).collect();
    assert_eq!(ops, ["Query"; 6], "{calls:?}");
    assert_eq!(waves::waves(&calls), 2, "{calls:?}");
    let cost = &body["extensions"]["cost"];
    assert_eq!(cost["dynamodbCalls"], 6, "{body:#}");
    // Six small Queries, each rounded up to half a unit.
    assert_eq!(cost["readCapacityUnits"], 3.0, "{body:#}");
    // Asking for a tenant again under the list reads nothing more: the list fed the loader.
    recorder.take();
    let body = app
        .post(
            "{ tenants(first: 20) { nodes { projects(first: 1) { nodes { tenant { name } } } } } }",
            json!({}),
        )
        .await;
    assert!(body.get("errors").is_none(), "{body:#}");
    assert_eq!(
        body["data"]["tenants"]["nodes"][0]["projects"]["nodes"][0]["tenant"]["name"],
        "ACME Engineering"
    );
    assert_eq!(recorder.take().len(), 6);
    drop(app);

    // A token's caller: the tenant by key, then its projects.
    let test_store = TestStore::new(backend).await;
    let recorder = WaveRecorder::new(test_store.store.clone());
    let mut settings = crate::auth::settings();
    settings.sweep.lease = std::time::Duration::from_secs(24 * 3600);
    let app = TestApp::serve_with_settings(recorder.clone(), test_store, settings).await;
    app.sweeps_idle().await;
    app.seed_demo().await;
    recorder.take();
    let body: Value = app
        .client
        .post(app.url("/graphql"))
        .header(
            "authorization",
            format!("Bearer {}", crate::auth::token(ACME, "grid:read")),
        )
        .json(&json!({"query": HOME}))
        .send()
        .await
        .expect("POST /graphql")
        .json()
        .await
        .expect("JSON body");
    let calls = recorder.take();
    assert!(body.get("errors").is_none(), "{body:#}");
    assert_eq!(
        body["data"]["tenants"]["nodes"],
        json!([{"id": ACME, "name": "ACME Engineering",
                "projects": {"nodes": [{"id": "project-35e9", "name": "Forth Rail Bridge"}]}}])
    );
    let ops: Vec<&str> = calls.iter().map(|c| c.op).collect();
    assert_eq!(ops, ["GetItem", "Query"], "{calls:?}");
    assert_eq!(waves::waves(&calls), 2, "{calls:?}");
    assert_eq!(body["extensions"]["cost"]["dynamodbCalls"], 2, "{body:#}");
}

/// Renames of one tenant racing each other: each commits whole or plans again (the tenant's
/// update is conditioned on the name it read), so the directory row ends with the name the
/// tenant ends with, listed once.
async fn racing_renames_keep_the_directory_in_step(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (id, _) = create_tenant(&app, "Start").await;
    let names: Vec<String> = (0..8).map(|i| format!("Name {i}")).collect();
    let renames = names
        .iter()
        .map(|name| app.data(RENAME_TENANT, json!({"id": id, "name": name})));
    for renamed in futures::future::join_all(renames).await {
        let name = renamed["updateTenant"]["tenant"]["name"].as_str().unwrap();
        assert!(names.iter().any(|n| n == name), "{renamed}");
    }
    let tenant = app
        .data(
            "query($id: ID!) { tenant(id: $id) { name } }",
            json!({"id": id}),
        )
        .await;
    let name = tenant["tenant"]["name"].as_str().unwrap().to_string();
    assert_eq!(walk(&app, 3).await, [(id, name)]);
    assert_clean(&app).await;
}

/// Directory rows that drifted (deleted, stale, stray, or never written, as by a version
/// before the directory) are reported by `verify` and repaired by `reindex`; a rename writes
/// a missing row again.
async fn verify_reports_and_reindex_repairs_the_directory(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.seed_demo().await;
    let created = create_tenant(&app, "Newco").await;
    assert_clean(&app).await;
    let before = walk(&app, 100).await;

    let tenant = |id: &str, name: &str| Tenant {
        id: TenantId::parse(id).unwrap(),
        name: name.into(),
    };
    let [_, stale] = items::tenant_items(&tenant(MEDIA, "Old Media"));
    let [_, stray] = items::tenant_items(&tenant("tenant-ffff", "Ghost"));
    // A tenant as a version before the directory wrote it: its item alone.
    let [legacy, _] = items::tenant_items(&tenant("tenant-1e9a", "Legacy"));
    app.store
        .transact_write(vec![
            WriteOp::Delete {
                key: keys::tenant_directory(&TenantId::parse(ACME).unwrap()),
                condition: None,
            },
            WriteOp::Put {
                item: stale,
                condition: None,
            },
            WriteOp::Put {
                item: stray,
                condition: None,
            },
            WriteOp::Put {
                item: legacy,
                condition: None,
            },
        ])
        .await
        .expect("damage the directory");
    // The list shows what the directory holds.
    let names: Vec<String> = walk(&app, 100).await.into_iter().map(|(_, n)| n).collect();
    assert_eq!(names, ["Ghost", "Newco", "Old Media"]);

    let found = verify::verify(&app.store, None).await.expect("verify");
    let summary: Vec<(Problem, Key)> = found.iter().map(|m| (m.problem, m.key.clone())).collect();
    let row = |id: &str| Key::new(id, "tenants");
    assert_eq!(
        summary,
        [
            (Problem::Missing, row(ACME)),
            (Problem::Missing, row("tenant-1e9a")),
            (Problem::Stale, row(MEDIA)),
            (Problem::Extra, row("tenant-ffff")),
        ],
        "{found:#?}"
    );
    assert!(
        found[2].detail.contains("Old Media") && found[2].detail.contains("Big Media"),
        "{}",
        found[2]
    );
    // Checking one project leaves the directory alone.
    let only = gridgate::ids::ProjectId::parse("project-35e9").unwrap();
    assert!(verify::verify(&app.store, Some(&only))
        .await
        .expect("verify")
        .is_empty());

    let repaired = verify::reindex(&app.store, None).await.expect("reindex");
    assert_eq!(repaired.len(), 4, "{repaired:#?}");
    assert_clean(&app).await;
    assert!(verify::reindex(&app.store, None)
        .await
        .expect("reindex")
        .is_empty());
    let mut expected = before.clone();
    expected.push(("tenant-1e9a".into(), "Legacy".into()));
    assert_eq!(walk(&app, 2).await, by_name(&expected));

    // A rename writes the row whole, so a tenant without one gets it back.
    app.store
        .transact_write(vec![WriteOp::Delete {
            key: keys::tenant_directory(&TenantId::parse(&created.0).unwrap()),
            condition: None,
        }])
        .await
        .expect("delete a directory row");
    app.data(RENAME_TENANT, json!({"id": created.0, "name": "Newco Ltd"}))
        .await;
    assert_clean(&app).await;
    let listed = walk(&app, 100).await;
    assert!(
        listed.contains(&(created.0.clone(), "Newco Ltd".to_string())),
        "{listed:?}"
    );
}

crate::both_stores!(
    tenants_are_listed_by_name_and_paged,
    a_token_caller_sees_its_own_tenant_alone,
    the_home_page_stays_within_its_call_budget,
    racing_renames_keep_the_directory_in_step,
    verify_reports_and_reindex_repairs_the_directory,
);
