//! Consistency of the write path under stress, against both stores: many concurrent writers
//! on one project, a sweep stopped half-way and resumed, source rows written by another tool
//! and then reindexed, and random sequences of mutations compared with an independent model.
//! After each, `verify` must find no drift.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::support::app::{Backend, TestApp, TestStore};
use gridgate::graphql::{Gateway, GatewayOptions};
use gridgate::ids::{FieldId, IssueId, ProjectId, TenantId};
use gridgate::items;
use gridgate::model::{CustomField, FieldType, Issue, IssueState, Project, Tenant};
use gridgate::paging::Limits;
use gridgate::repo::sweep::{SweepConfig, SweepOutcome, Sweeper};
use gridgate::repo::verify;
use gridgate::repo::writes::{RetryPolicy, Writes};
use gridgate::repo::Repo;
use gridgate::store::{DynStore, Item};
use proptest::prelude::*;
use serde_json::{json, Value};

fn writes(store: &DynStore) -> Writes {
    Writes::new(Repo::new(store.clone(), Limits::default()), None)
}

async fn assert_clean(store: &DynStore) {
    let found = verify::verify(store, None).await.expect("verify");
    assert!(found.is_empty(), "verify found drift: {found:#?}");
}

/// A tenant and a project with one INT field, written through the write layer.
async fn project_with_field(w: &Writes) -> (String, String) {
    let tenant = w.create_tenant(None, "T").await.unwrap().id;
    let project = w.create_project(None, &tenant, "P").await.unwrap().id;
    let field = w
        .create_field(None, &project, "Estimate", FieldType::Int, None, &[])
        .await
        .unwrap()
        .id;
    (project, field)
}

const WRITERS: usize = 64;

/// A saved view as `createView` takes it.
async fn create_view(app: &TestApp, project: &str, input: Value) -> String {
    let mut input = input;
    input["projectId"] = json!(project);
    app.data(
        "mutation($i: CreateViewInput!) { createView(input: $i) { view { id } } }",
        json!({"i": input}),
    )
    .await["createView"]["view"]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// 64 tasks at once, each creating an issue in one project and then editing two cells: one of
/// its own issue and one of an issue another task created (contention on the project's
/// counter and on hot issues, without `expectedVersion`). Numbers must come out 1..64, every
/// edit must apply exactly once, and `verify` must find no drift.
///
/// Three saved views watch the project: two (one filtered) built before the writers start, and
/// a third created while they write, so its build races them. Afterwards each view's rows are
/// exactly the reference computed from the issues' source rows, in its order, and each count
/// is exact.
async fn concurrent_writers_keep_numbers_unique_and_rows_consistent(backend: Backend) {
    use std::collections::HashMap;
    use std::sync::Mutex;
    let app = Arc::new(TestApp::spawn(backend).await);
    let w = writes(&app.store);
    let (project, field) = project_with_field(&w).await;
    let by_field = create_view(
        &app,
        &project,
        json!({"name": "by estimate", "orderBy": [
            {"field": "CUSTOM_FIELD", "customFieldId": field, "direction": "DESC", "empty": "FIRST"},
            {"field": "NAME"}]}),
    )
    .await;
    let high = create_view(
        &app,
        &project,
        json!({"name": "high", "orderBy": [{"field": "NAME", "direction": "DESC"}],
               "filter": {"column": {"field": "CUSTOM_FIELD", "customFieldId": field}, "gte": "1000"}}),
    )
    .await;
    app.sweeps_idle().await;
    let racing = {
        let (app, project, field) = (app.clone(), project.clone(), field.clone());
        tokio::spawn(async move {
            create_view(
                &app,
                &project,
                json!({"name": "built while writing", "orderBy": [
                    {"field": "CUSTOM_FIELD", "customFieldId": field}, {"field": "NUM", "direction": "DESC"}]}),
            )
            .await
        })
    };
    let create = r#"mutation($p: ID!, $n: String!) { createIssue(input: {projectId: $p, name: $n}) { issue { id num } } }"#;
    let edit = r#"mutation($i: ID!, $f: ID!, $v: String) { setIssueFieldValues(input: {issueId: $i, values: [{fieldId: $f, value: $v}]}) { issue { version } } }"#;
    let created: Arc<Mutex<Vec<String>>> = Arc::default();
    let edits: Arc<Mutex<HashMap<String, i64>>> = Arc::default();
    let mut tasks = Vec::new();
    for k in 0..WRITERS {
        let (app, created, edits) = (app.clone(), created.clone(), edits.clone());
        let (project, field) = (project.clone(), field.clone());
        tasks.push(tokio::spawn(async move {
            let data = app
                .data(create, json!({"p": project, "n": format!("created {k}")}))
                .await;
            let id = data["createIssue"]["issue"]["id"]
                .as_str()
                .unwrap()
                .to_string();
            let num = data["createIssue"]["issue"]["num"].as_i64().unwrap();
            let other = {
                let mut ids = created.lock().unwrap();
                ids.push(id.clone());
                // Deterministic choice among the issues created so far.
                ids[(k * 7) % ids.len()].clone()
            };
            // Every edit writes a value no other edit writes, so none is a no-op.
            for (n, target) in [&id, &other].into_iter().enumerate() {
                let value = (1000 * n + k).to_string();
                app.data(edit, json!({"i": target, "f": field, "v": value}))
                    .await;
                *edits.lock().unwrap().entry(target.clone()).or_default() += 1;
            }
            num
        }));
    }
    let mut nums = Vec::new();
    for task in tasks {
        nums.push(task.await.expect("task"));
    }
    nums.sort_unstable();
    assert_eq!(nums, (1..=WRITERS as i64).collect::<Vec<_>>());
    // Every edit applied exactly once: each issue's version is 1 + its edits.
    let edits = edits.lock().unwrap().clone();
    for (id, count) in &edits {
        let data = app
            .data(
                r#"query($i: ID!) { issue(id: $i) { version } }"#,
                json!({"i": id}),
            )
            .await;
        assert_eq!(
            data["issue"]["version"].as_i64().unwrap(),
            1 + count,
            "{id}"
        );
    }
    let racing = racing.await.expect("view task");
    app.sweeps_idle().await;
    // The reference, from the issues' source rows.
    let all = app
        .data(
            r#"query($p: ID!) { project(id: $p) { issues(first: 100) { nodes { num name fieldValues { value } } } } }"#,
            json!({"p": project}),
        )
        .await;
    let rows: Vec<(i64, String, Option<i64>)> = all["project"]["issues"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let value = n["fieldValues"][0]["value"]
                .as_str()
                .map(|v| v.parse().unwrap());
            (
                n["num"].as_i64().unwrap(),
                n["name"].as_str().unwrap().to_string(),
                value,
            )
        })
        .collect();
    assert_eq!(rows.len(), WRITERS);
    type Row = (i64, String, Option<i64>);
    let reference = |keep: &dyn Fn(&Row) -> bool,
                     order: &dyn Fn(&Row, &Row) -> std::cmp::Ordering| {
        let mut kept: Vec<&Row> = rows.iter().filter(|r| keep(r)).collect();
        kept.sort_by(|a, b| order(a, b));
        kept.into_iter().map(|r| r.0).collect::<Vec<i64>>()
    };
    let estimate_desc_empty_first = |a: &Row, b: &Row| match (a.2, b.2) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => y.cmp(&x),
    };
    let expected = [
        (
            &by_field,
            reference(&|_| true, &|a, b| {
                estimate_desc_empty_first(a, b)
                    .then(a.1.to_lowercase().cmp(&b.1.to_lowercase()))
                    .then(b.0.cmp(&a.0))
            }),
        ),
        (
            &high,
            reference(&|r| r.2.is_some_and(|v| v >= 1000), &|a, b| {
                b.1.to_lowercase()
                    .cmp(&a.1.to_lowercase())
                    .then(b.0.cmp(&a.0))
            }),
        ),
        (
            &racing,
            reference(&|_| true, &|a, b| {
                // Ascending, empty cells last; ties by the second key, num descending.
                match (a.2, b.2) {
                    (None, None) => std::cmp::Ordering::Equal,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (Some(x), Some(y)) => x.cmp(&y),
                }
                .then(b.0.cmp(&a.0))
            }),
        ),
    ];
    for (view, expected) in expected {
        let page = app
            .data(
                r#"query($p: ID!, $v: ID!) { project(id: $p) { view(id: $v) { status issues(first: 100) { totalCount nodes { num } } } } }"#,
                json!({"p": project, "v": view}),
            )
            .await;
        let page = &page["project"]["view"];
        assert_eq!(page["status"], "READY");
        let nums: Vec<i64> = page["issues"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["num"].as_i64().unwrap())
            .collect();
        assert_eq!(nums, expected, "view {view}");
        assert_eq!(page["issues"]["totalCount"], expected.len(), "view {view}");
    }
    let drift = verify::verify(&app.store, None).await.unwrap();
    let stats = app.app.gateway().write_stats();
    eprintln!(
        "CONCURRENCY backend={backend:?} writers={WRITERS} operations={} conflicts_retried={} conflicts_surfaced={} drift={}",
        3 * WRITERS,
        stats.retries.load(Ordering::Relaxed),
        stats.conflicts.load(Ordering::Relaxed),
        drift.len()
    );
    assert_eq!(stats.conflicts.load(Ordering::Relaxed), 0);
    assert!(drift.is_empty(), "{drift:#?}");
}

async fn a_sweep_stopped_half_way_is_finished_by_another_instance(backend: Backend) {
    let test_store = TestStore::new(backend).await;
    let store = test_store.store.clone();
    let w = writes(&store);
    let (project, field) = project_with_field(&w).await;
    let cells = [(field.clone(), Some("1".to_string()))];
    for i in 0..120 {
        w.create_issue(None, &project, &format!("i{i}"), None, &cells)
            .await
            .unwrap();
    }
    w.delete_field(None, &field).await.unwrap();
    let config = |owner: &str, lease: Duration, stop: Option<usize>| SweepConfig {
        owner: owner.into(),
        lease,
        batch: 49,
        stop_after_batches: stop,
        settle: Duration::ZERO,
    };
    // Instance A dies after one batch, holding a long lease: B may not take over.
    let a = Sweeper::new(
        store.clone(),
        config("a", Duration::from_secs(3600), Some(1)),
    );
    let b = Sweeper::new(store.clone(), config("b", Duration::from_secs(3600), None));
    let outcomes = a.run_pending().await.unwrap();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].1, SweepOutcome::Interrupted);
    assert_eq!(b.run_pending().await.unwrap()[0].1, SweepOutcome::Held);
    assert_clean(&store).await;
    // A restarts under the same identity and dies again, now with a lease that lapses at once.
    let a = Sweeper::new(store.clone(), config("a", Duration::ZERO, Some(1)));
    assert_eq!(
        a.run_pending().await.unwrap()[0].1,
        SweepOutcome::Interrupted
    );
    // B takes over and finishes; the job is gone and nothing of the field is left.
    assert_eq!(b.run_pending().await.unwrap()[0].1, SweepOutcome::Finished);
    assert!(b.pending().await.unwrap().is_empty());
    assert_clean(&store).await;
    let mut left = Vec::new();
    gridgate::store::retry::scan_all(store.as_ref(), |page| left.extend(page))
        .await
        .unwrap();
    let field_id = FieldId::parse(&field).unwrap();
    let mentions = left
        .iter()
        .filter(|item| format!("{item:?}").contains(field_id.part()))
        .count();
    assert_eq!(mentions, 0, "rows of the deleted field remain");
    // Running it again is a no-op.
    assert!(b.run_pending().await.unwrap().is_empty());
    let _ = ProjectId::parse(&project).unwrap();
}

/// A running gateway's sweeper finds jobs it was never told about (left by an instance that
/// died after committing a deletion) at its next periodic round, and takes over jobs whose
/// lease lapsed: no restart needed.
async fn the_sweeper_takes_over_jobs_of_instances_that_died(backend: Backend) {
    use gridgate::repo::sweep::SweepHandle;
    let test_store = TestStore::new(backend).await;
    let store = test_store.store.clone();
    let config = SweepConfig {
        owner: "survivor".into(),
        lease: Duration::from_millis(50),
        settle: Duration::ZERO,
        ..SweepConfig::default()
    };
    let handle = SweepHandle::spawn(Sweeper::new(store.clone(), config));
    handle.wait_idle().await;
    // Another instance deletes a field (its sweeper never runs: it "died"), and claims the
    // job of a second deletion before dying, with a lease that lapses at once.
    let w = writes(&store);
    let (project, field) = project_with_field(&w).await;
    let second = w
        .create_field(None, &project, "Second", FieldType::Int, None, &[])
        .await
        .unwrap()
        .id;
    let cells = [
        (field.clone(), Some("1".to_string())),
        (second.clone(), Some("2".to_string())),
    ];
    for i in 0..10 {
        w.create_issue(None, &project, &format!("i{i}"), None, &cells)
            .await
            .unwrap();
    }
    w.delete_field(None, &field).await.unwrap();
    w.delete_field(None, &second).await.unwrap();
    let dead = SweepConfig {
        owner: "dead".into(),
        lease: Duration::ZERO,
        settle: Duration::ZERO,
        stop_after_batches: Some(0),
        ..SweepConfig::default()
    };
    let target = gridgate::items::SweepTarget::Field {
        project: ProjectId::parse(&project).unwrap(),
        field: FieldId::parse(&second).unwrap(),
    };
    let outcome = Sweeper::new(store.clone(), dead)
        .run(&target)
        .await
        .unwrap();
    assert_eq!(outcome, SweepOutcome::Interrupted);
    // Two full rounds after the deletions: both jobs are done.
    let seen = handle.rounds();
    handle.wait_rounds(seen + 2).await;
    let left = Sweeper::new(store.clone(), SweepConfig::default())
        .pending()
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
    assert_clean(&store).await;
}

/// The cost of sweeping a column of 10,000 cells, measured through a metered store.
async fn sweeping_a_column_of_ten_thousand_cells(backend: Backend) {
    let test_store = TestStore::new(backend).await;
    let store = test_store.store.clone();
    let (project, field, all) = synthetic_rows(10_000, |_| true);
    store.bulk_put(all).await.unwrap();
    let meter = gridgate::store::CostMeter::new();
    let metered: DynStore = Arc::new(gridgate::store::Metered::new(store.clone(), meter.clone()));
    let w = writes(&metered);
    w.delete_field(None, field.as_str()).await.unwrap();
    let delete_cost = meter.report();
    let sweep_meter = gridgate::store::CostMeter::new();
    let swept: DynStore = Arc::new(gridgate::store::Metered::new(
        store.clone(),
        sweep_meter.clone(),
    ));
    let config = SweepConfig {
        settle: Duration::ZERO,
        ..SweepConfig::default()
    };
    let outcomes = Sweeper::new(swept, config).run_pending().await.unwrap();
    assert_eq!(outcomes[0].1, SweepOutcome::Finished);
    let sweep_cost = sweep_meter.report();
    eprintln!(
        "SWEEP COST backend={backend:?} deleteCustomField: {} calls, {} RCU, {} WCU; sweep of 10000 cells: {} calls, {} RCU, {} WCU",
        delete_cost.dynamodb_calls,
        delete_cost.read_capacity_units,
        delete_cost.write_capacity_units,
        sweep_cost.dynamodb_calls,
        sweep_cost.read_capacity_units,
        sweep_cost.write_capacity_units
    );
    assert_clean(&store).await;
    let _ = project;
}

/// A project of `n` issues with one INT field, as the writers would store it: tenant,
/// project, field and issues with every derived row. `has_value(num)` decides the cells.
fn synthetic_rows(n: u32, has_value: impl Fn(u32) -> bool) -> (Project, FieldId, Vec<Item>) {
    let tenant = Tenant {
        id: TenantId::generate(),
        name: "T".into(),
    };
    let project = Project {
        id: ProjectId::generate(),
        tenant: tenant.id.clone(),
        name: "P".into(),
        next_issue_num: n + 1,
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
    all.extend(items::field_items(&field));
    let mut counts = gridgate::model::IssueCounts::default();
    for num in 1..=n {
        let mut values = BTreeMap::new();
        if has_value(num) {
            values.insert(field.id.clone(), (num % 97).to_string().into());
        }
        let issue = Issue {
            id: IssueId::generate(),
            project: project.id.clone(),
            num,
            name: format!("Issue {}", (num * 7919) % 1000),
            state: if num % 3 == 0 {
                IssueState::Closed
            } else {
                IssueState::Open
            },
            values,
            version: 1,
        };
        counts.add(&issue, 1);
        all.extend(items::issue_items(&issue, std::slice::from_ref(&field)).unwrap());
    }
    let project = Project {
        counts: Some(counts),
        ..project
    };
    all.push(items::project_item(&project));
    (project, field.id, all)
}

async fn source_rows_from_another_tool_are_queryable_after_reindex(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let (project, field, all) = synthetic_rows(40, |num| num % 4 != 0);
    // Another tool writes only source rows, without GSI1SK and without any index row.
    let sources: Vec<Item> = all
        .into_iter()
        .filter(|item| {
            matches!(
                items::item_type(item),
                Some(
                    items::types::TENANT
                        | items::types::PROJECT
                        | items::types::CUSTOM_FIELD
                        | items::types::ISSUE
                )
            )
        })
        .map(|mut item| {
            item.remove("GSI1SK");
            // The contract's field rows carry no `Version`.
            if items::item_type(&item) == Some(items::types::CUSTOM_FIELD) {
                item.remove("Version");
            }
            item
        })
        .collect();
    app.store.bulk_put(sources).await.unwrap();
    let grid = r#"query($p: ID!, $o: IssueOrder) { project(id: $p) { issues(first: 100, orderBy: $o) { nodes { num name } } } }"#;
    let orders = [
        json!({"field": "NUM"}),
        json!({"field": "NAME"}),
        json!({"field": "STATE", "direction": "DESC"}),
        json!({"field": "CUSTOM_FIELD", "customFieldId": field.as_str()}),
    ];
    for order in &orders {
        let data = app
            .data(grid, json!({"p": project.id.as_str(), "o": order}))
            .await;
        assert_eq!(data["project"]["issues"]["nodes"], json!([]), "{order}");
    }
    // Nor is the tenant in the directory `Query.tenants` lists, until the reindex.
    let tenants = "{ tenants { nodes { id } } }";
    assert_eq!(
        app.data(tenants, json!({})).await["tenants"]["nodes"],
        json!([])
    );
    let drift = verify::verify(&app.store, None).await.unwrap();
    assert!(!drift.is_empty());
    let repaired = verify::reindex(&app.store, None).await.unwrap();
    assert_eq!(repaired.len(), drift.len());
    assert_clean(&app.store).await;
    assert!(
        verify::reindex(&app.store, None).await.unwrap().is_empty(),
        "idempotent"
    );
    assert_eq!(
        app.data(tenants, json!({})).await["tenants"]["nodes"],
        json!([{"id": project.tenant.as_str()}])
    );
    let by_num = app
        .data(grid, json!({"p": project.id.as_str(), "o": orders[0]}))
        .await;
    let nums: Vec<i64> = by_num["project"]["issues"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["num"].as_i64().unwrap())
        .collect();
    assert_eq!(nums, (1..=40).collect::<Vec<_>>());
    let by_field = app
        .data(grid, json!({"p": project.id.as_str(), "o": orders[3]}))
        .await;
    let nums: Vec<i64> = by_field["project"]["issues"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["num"].as_i64().unwrap())
        .collect();
    let mut expected: Vec<(i64, i64)> = (1..=40)
        .filter(|n| n % 4 != 0)
        .map(|n| (n % 97, n))
        .collect();
    expected.sort_unstable();
    let mut expected: Vec<i64> = expected.into_iter().map(|(_, n)| n).collect();
    expected.extend((1..=40).filter(|n| n % 4 == 0));
    assert_eq!(nums, expected);
    // The foreign rows are editable like any other.
    let w = writes(&app.store);
    w.update_field(None, field.as_str(), Some("Renamed"), Some(5), None, None)
        .await
        .unwrap();
    let first = by_num["project"]["issues"]["nodes"][0]["num"]
        .as_i64()
        .unwrap();
    assert_eq!(first, 1);
    assert_clean(&app.store).await;
}

/// A SELECT field's options are moved, added and removed while 8 tasks set its cells: a
/// cell write that checked its option against an older list retries (the edit bumps the
/// project's fields version), writes of a removed option are refused, and once the sweeps are
/// done every index row has its option's current key, every cell names a live option, the
/// counters hold, and a sort by the field gives the options' order.
async fn option_edits_race_cell_writes(backend: Backend) {
    let app = Arc::new(TestApp::spawn(backend).await);
    let w = writes(&app.store);
    let tenant = w.create_tenant(None, "T").await.unwrap().id;
    let project = w.create_project(None, &tenant, "P").await.unwrap().id;
    let input = |id: Option<&str>, label: &str| gridgate::options::OptionInput {
        id: id.map(str::to_string),
        label: label.to_string(),
        color: None,
    };
    let labels = ["a", "b", "c", "d", "e"];
    let first: Vec<_> = labels.iter().map(|l| input(None, l)).collect();
    let field = w
        .create_field(None, &project, "S", FieldType::Select, None, &first)
        .await
        .unwrap()
        .id;
    let options_now = |app: Arc<TestApp>, field: String| async move {
        let data = app
            .data(
                r#"query($f: ID!) { node(id: $f) { ... on CustomField { options { id label } } } }"#,
                json!({"f": field}),
            )
            .await;
        data["node"]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                (
                    o["id"].as_str().unwrap().to_string(),
                    o["label"].as_str().unwrap().to_string(),
                )
            })
            .collect::<Vec<(String, String)>>()
    };
    let initial = options_now(app.clone(), field.clone()).await;
    let mut issues = Vec::new();
    for i in 0..24 {
        let cells = [(field.clone(), Some(initial[i % initial.len()].0.clone()))];
        issues.push(
            w.create_issue(None, &project, &format!("i{i}"), None, &cells)
                .await
                .unwrap()
                .id,
        );
    }
    let set = r#"mutation($i: ID!, $f: ID!, $v: String) { setIssueFieldValues(input: {issueId: $i, values: [{fieldId: $f, value: $v}]}) { issue { version } } }"#;
    let mut tasks = Vec::new();
    for k in 0..8usize {
        let (app, field, issues) = (app.clone(), field.clone(), issues.clone());
        tasks.push(tokio::spawn(async move {
            let mut refused = 0;
            for n in 0..12usize {
                let options = options_now(app.clone(), field.clone()).await;
                let value = options[(k + n) % options.len()].0.clone();
                let target = &issues[(k * 5 + n * 7) % issues.len()];
                let body = app
                    .post(set, json!({"i": target, "f": field, "v": value}))
                    .await;
                match body["errors"][0]["extensions"]["code"].as_str() {
                    None => {}
                    // The option was removed between reading the list and writing.
                    Some("BAD_USER_INPUT") => refused += 1,
                    Some(other) => panic!("{other}: {body:#}"),
                }
            }
            refused
        }));
    }
    // Meanwhile: move the last option first, add one, remove one, move again.
    let edit = |order: Vec<gridgate::options::OptionInput>| {
        let (w, field) = (w.clone(), field.clone());
        async move {
            w.update_field(None, &field, None, None, None, Some(&order))
                .await
                .unwrap();
        }
    };
    let by =
        |current: &[(String, String)], order: &[&str]| -> Vec<gridgate::options::OptionInput> {
            order
                .iter()
                .map(|label| match current.iter().find(|(_, l)| l == label) {
                    Some((id, l)) => input(Some(id), l),
                    None => input(None, label),
                })
                .collect()
        };
    for order in [
        vec!["e", "a", "b", "c", "d"],
        vec!["e", "a", "f", "b", "c", "d"],
        vec!["e", "f", "b", "c", "d"],
        vec!["b", "e", "f", "c", "d"],
    ] {
        let current = options_now(app.clone(), field.clone()).await;
        edit(by(&current, &order)).await;
        tokio::task::yield_now().await;
    }
    let mut refused = 0;
    for task in tasks {
        refused += task.await.expect("task");
    }
    app.sweeps_idle().await;
    // Jobs another run left (a lease dropped by a later edit) finish here.
    let leftover = Sweeper::new(
        app.store.clone(),
        SweepConfig {
            settle: Duration::ZERO,
            ..SweepConfig::default()
        },
    )
    .run_pending()
    .await
    .unwrap();
    assert!(
        leftover.iter().all(|(_, o)| *o == SweepOutcome::Finished),
        "{leftover:?}"
    );
    assert_clean(&app.store).await;
    let data = app
        .data(
            r#"query($p: ID!, $f: ID!) { node(id: $f) { ... on CustomField { status options { id label } } }
                project(id: $p) { issues(first: 100, orderBy: {field: CUSTOM_FIELD, customFieldId: $f}) {
                  nodes { fieldValues { value option { position } } } } } }"#,
            json!({"p": project, "f": field}),
        )
        .await;
    assert_eq!(data["node"]["status"], "READY");
    let live: Vec<&str> = data["node"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap())
        .collect();
    assert_eq!(live, ["b", "e", "f", "c", "d"]);
    let positions: Vec<i64> = data["project"]["issues"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["fieldValues"][0]["option"]["position"].as_i64())
        .collect();
    let filled = data["project"]["issues"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["fieldValues"][0].is_object())
        .count();
    assert_eq!(positions.len(), filled, "every cell names a live option");
    assert!(positions.windows(2).all(|p| p[0] <= p[1]), "{positions:?}");
    eprintln!("OPTIONS backend={backend:?} writes=96 refused={refused} cells={filled}");
}

/// A store that plays a writer racing `reindex`: just before the transaction that repairs a
/// project's counters, it adds 1 to the issue count as a concurrent `createIssue` would.
struct RacingWriter {
    inner: DynStore,
    raced: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl gridgate::store::Store for RacingWriter {
    fn name(&self) -> &'static str {
        "racing"
    }
    async fn get(
        &self,
        key: &gridgate::store::Key,
    ) -> Result<gridgate::store::GetOutput, gridgate::store::StoreError> {
        self.inner.get(key).await
    }
    async fn get_consistent(
        &self,
        key: &gridgate::store::Key,
    ) -> Result<gridgate::store::GetOutput, gridgate::store::StoreError> {
        self.inner.get_consistent(key).await
    }
    async fn batch_get(
        &self,
        keys: &[gridgate::store::Key],
    ) -> Result<gridgate::store::BatchGetOutput, gridgate::store::StoreError> {
        self.inner.batch_get(keys).await
    }
    async fn batch_get_raw(
        &self,
        keys: &[gridgate::store::Key],
    ) -> Result<
        gridgate::store::BatchGetOutput<gridgate::store::RawItem>,
        gridgate::store::StoreError,
    > {
        self.inner.batch_get_raw(keys).await
    }
    async fn query(
        &self,
        query: &gridgate::store::Query,
    ) -> Result<gridgate::store::QueryOutput, gridgate::store::StoreError> {
        self.inner.query(query).await
    }
    async fn query_raw(
        &self,
        query: &gridgate::store::Query,
    ) -> Result<gridgate::store::QueryOutput<gridgate::store::RawItem>, gridgate::store::StoreError>
    {
        self.inner.query_raw(query).await
    }
    async fn scan(
        &self,
        start: Option<&gridgate::store::Key>,
        limit: Option<u32>,
    ) -> Result<gridgate::store::ScanOutput, gridgate::store::StoreError> {
        self.inner.scan(start, limit).await
    }
    async fn transact_write(
        &self,
        ops: Vec<gridgate::store::WriteOp>,
    ) -> Result<gridgate::store::WriteOutput, gridgate::store::StoreError> {
        use gridgate::store::{AttrPath, UpdateAction, WriteOp};
        let repair = ops.iter().find_map(|op| match op {
            WriteOp::Update { key, actions, .. }
                if actions
                    .iter()
                    .any(|a| a.path() == &AttrPath::new([items::attrs::ISSUE_COUNT])) =>
            {
                Some(key.clone())
            }
            _ => None,
        });
        if let Some(key) = repair {
            if !self.raced.swap(true, Ordering::SeqCst) {
                let add = WriteOp::Update {
                    key,
                    actions: vec![UpdateAction::Add(
                        AttrPath::new([items::attrs::ISSUE_COUNT]),
                        1,
                    )],
                    condition: None,
                };
                self.inner.transact_write(vec![add]).await?;
            }
        }
        self.inner.transact_write(ops).await
    }
    async fn batch_put(&self, items: Vec<Item>) -> Result<Vec<Item>, gridgate::store::StoreError> {
        self.inner.batch_put(items).await
    }
    async fn ensure_table(&self) -> Result<(), gridgate::store::StoreError> {
        self.inner.ensure_table().await
    }
    async fn ping(&self) -> Result<(), gridgate::store::StoreError> {
        self.inner.ping().await
    }
}

/// `reindex` repairs counters only if they still read as its scan read them: a writer's
/// increment that lands in between is kept (the repair waits for the next run), never lost.
async fn reindex_keeps_a_racing_writers_counter_change(backend: Backend) {
    use gridgate::store::{AttrPath, AttributeValue, UpdateAction, WriteOp};
    let test_store = TestStore::new(backend).await;
    let w = writes(&test_store.store);
    let (project, _) = project_with_field(&w).await;
    for i in 0..3 {
        w.create_issue(None, &project, &format!("i{i}"), None, &[])
            .await
            .unwrap();
    }
    assert_clean(&test_store.store).await;
    // Counters gone wrong (another tool wrote the table): 99 issues.
    let data = Repo::new(test_store.store.clone(), Limits::default())
        .project_data(&ProjectId::parse(&project).unwrap())
        .await
        .unwrap()
        .unwrap();
    let key = gridgate::keys::project(&data.project.id, &data.project.tenant);
    let wrong = WriteOp::Update {
        key: key.clone(),
        actions: vec![UpdateAction::Set(
            AttrPath::new([items::attrs::ISSUE_COUNT]),
            AttributeValue::N("99".into()),
        )],
        condition: None,
    };
    test_store.store.transact_write(vec![wrong]).await.unwrap();
    let racing: DynStore = Arc::new(RacingWriter {
        inner: test_store.store.clone(),
        raced: Default::default(),
    });
    let repaired = verify::reindex(&racing, None).await.unwrap();
    assert!(
        repaired.is_empty(),
        "the counters' repair waits: {repaired:#?}"
    );
    let count = |store: DynStore| {
        let key = key.clone();
        async move {
            let item = store.get_consistent(&key).await.unwrap().item.unwrap();
            item.get(items::attrs::ISSUE_COUNT).cloned()
        }
    };
    assert_eq!(
        count(test_store.store.clone()).await,
        Some(AttributeValue::N("100".into()))
    );
    // Once writers are quiet, the next run sets them to what the issues say.
    let repaired = verify::reindex(&test_store.store, None).await.unwrap();
    assert_eq!(repaired.len(), 1);
    assert_eq!(
        count(test_store.store.clone()).await,
        Some(AttributeValue::N("3".into()))
    );
    assert_clean(&test_store.store).await;
}

/// Saved views' indexes (issue 22) are kept by every issue write, in its transaction: an issue
/// that enters a view's filter gets its row, one whose keys change gets a new sort string, one
/// that leaves (or is deleted) loses it, and the index's counter follows. The rows read in
/// `GSI1` order are the reference's, the counters are exact, and `verify` is clean. (The view
/// row is written directly: the API that creates views comes with the rest of issue 22.)
async fn writers_keep_view_indexes_and_their_counters(backend: Backend) {
    use gridgate::ids::ViewId;
    use gridgate::model::{View, ViewColumn, ViewIndex, ViewKey};
    use gridgate::store::{Index, Query};
    let test_store = TestStore::new(backend).await;
    let store = test_store.store.clone();
    let w = writes(&store);
    let (project, field) = project_with_field(&w).await;
    let project_id = ProjectId::parse(&project).unwrap();
    let field_id = FieldId::parse(&field).unwrap();
    // Open issues, by estimate descending (empty first), then name.
    let view_id = ViewId::generate();
    let view = View {
        id: view_id.clone(),
        project: project_id.clone(),
        name: "Open by estimate".into(),
        columns: vec![field_id.clone()],
        position: 1,
        version: 1,
        serving: Some(ViewIndex {
            generation: 1,
            keys: vec![
                ViewKey {
                    column: ViewColumn::Custom(field_id.clone()),
                    descending: true,
                    empty_first: true,
                },
                ViewKey {
                    column: ViewColumn::Name,
                    descending: false,
                    empty_first: false,
                },
            ],
            filter: Some(r#"{"column":{"field":"STATE"},"eq":"OPEN"}"#.into()),
        }),
        building: None,
        built: None,
        retired: Vec::new(),
        deleted: false,
    };
    let [definition, lookup] = items::view_items(&view);
    store
        .transact_write(vec![
            gridgate::store::WriteOp::Put {
                item: definition,
                condition: None,
            },
            gridgate::store::WriteOp::Put {
                item: lookup,
                condition: None,
            },
        ])
        .await
        .unwrap();
    let mut ids = Vec::new();
    for (i, estimate) in [Some("3"), None, Some("7"), Some("3"), None, Some("-1")]
        .iter()
        .enumerate()
    {
        let cells: Vec<(String, Option<String>)> = estimate
            .iter()
            .map(|e| (field.clone(), Some(e.to_string())))
            .collect();
        let state = if i == 3 {
            Some(IssueState::Closed)
        } else {
            None
        };
        ids.push(
            w.create_issue(None, &project, &format!("n{}", 9 - i), state, &cells)
                .await
                .unwrap()
                .id,
        );
    }
    // Edits: a key changes, an issue leaves the view, another enters, one is deleted.
    w.set_issue_values(None, &ids[0], &[(field.clone(), Some("10".into()))], None)
        .await
        .unwrap();
    w.update_issue(None, &ids[2], None, Some(IssueState::Closed), None)
        .await
        .unwrap();
    w.update_issue(None, &ids[3], None, Some(IssueState::Open), None)
        .await
        .unwrap();
    w.delete_issue(None, &ids[5]).await.unwrap();
    let partition = gridgate::keys::view_partition(&view_id, 1);
    let rows = gridgate::store::retry::query_all(
        store.as_ref(),
        &Query::partition(Index::Gsi1, partition.clone()),
    )
    .await
    .unwrap();
    let in_view: Vec<String> = rows
        .iter()
        .map(|r| items::item_pk(r).unwrap().to_string())
        .collect();
    // Issue 0 (10), 3 (3), then the empty ones first: 1 (n8) and 4 (n5), by name.
    let expected: Vec<String> = [4, 1, 0, 3].iter().map(|&i| ids[i].clone()).collect();
    assert_eq!(in_view, expected);
    let data = Repo::new(store.clone(), Limits::default())
        .project_data(&project_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(data.views, vec![view]);
    let counts = data.project.counts.unwrap();
    assert_eq!(counts.matched.get(&partition), Some(&4));
    assert_clean(&store).await;
}

crate::both_stores!(
    writers_keep_view_indexes_and_their_counters,
    reindex_keeps_a_racing_writers_counter_change,
    option_edits_race_cell_writes,
    concurrent_writers_keep_numbers_unique_and_rows_consistent,
    the_sweeper_takes_over_jobs_of_instances_that_died,
    a_sweep_stopped_half_way_is_finished_by_another_instance,
    sweeping_a_column_of_ten_thousand_cells,
    source_rows_from_another_tool_are_queryable_after_reindex,
);

// ---------------------------------------------------------------------------------------------
// Random sequences of mutations against an independent model.

#[derive(Clone, Debug)]
enum Op {
    Create {
        name: usize,
        value: Option<i64>,
        text: Option<usize>,
    },
    Rename {
        issue: usize,
        name: usize,
    },
    Close {
        issue: usize,
        closed: bool,
    },
    SetValue {
        issue: usize,
        value: Option<i64>,
    },
    SetText {
        issue: usize,
        text: Option<usize>,
    },
    Delete {
        issue: usize,
    },
}

const NAMES: &[&str] = &[
    "alpha", "Bravo", "bravo", "Émile", "zebra", "Zürich", "a", "ab", "",
];

fn op() -> impl Strategy<Value = Op> {
    let value = proptest::option::of(-50i64..50);
    let text = proptest::option::of(0..NAMES.len() - 1);
    prop_oneof![
        3 => (0..NAMES.len() - 1, value.clone(), text.clone())
            .prop_map(|(name, value, text)| Op::Create { name, value, text }),
        1 => (any::<usize>(), 0..NAMES.len() - 1).prop_map(|(issue, name)| Op::Rename { issue, name }),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(issue, closed)| Op::Close { issue, closed }),
        2 => (any::<usize>(), value).prop_map(|(issue, value)| Op::SetValue { issue, value }),
        1 => (any::<usize>(), text).prop_map(|(issue, text)| Op::SetText { issue, text }),
        1 => any::<usize>().prop_map(|issue| Op::Delete { issue }),
    ]
}

#[derive(Clone, Debug)]
struct ModelIssue {
    id: String,
    num: i64,
    name: String,
    closed: bool,
    value: Option<i64>,
    text: Option<String>,
}

async fn run_sequence(backend: Backend, ops: Vec<Op>) {
    let test_store = TestStore::new(backend).await;
    let store = test_store.store.clone();
    let w = writes(&store).with_retry(RetryPolicy::default());
    let (project, int_field) = project_with_field(&w).await;
    let text_field = w
        .create_field(None, &project, "Note", FieldType::Text, None, &[])
        .await
        .unwrap()
        .id;
    let mut model: Vec<ModelIssue> = Vec::new();
    let mut next_num = 1;
    for op in ops {
        let pick = |i: usize, model: &Vec<ModelIssue>| (!model.is_empty()).then(|| i % model.len());
        match op {
            Op::Create { name, value, text } => {
                let mut cells = Vec::new();
                if let Some(v) = value {
                    cells.push((int_field.clone(), Some(v.to_string())));
                }
                if let Some(t) = text {
                    cells.push((text_field.clone(), Some(NAMES[t].to_string())));
                }
                let cells: Vec<_> = cells
                    .into_iter()
                    .filter(|(_, v)| v.as_deref() != Some(""))
                    .collect();
                let id = w
                    .create_issue(None, &project, NAMES[name], None, &cells)
                    .await
                    .unwrap()
                    .id;
                model.push(ModelIssue {
                    id,
                    num: next_num,
                    name: NAMES[name].to_string(),
                    closed: false,
                    value,
                    text: text.map(|t| NAMES[t].to_string()).filter(|t| !t.is_empty()),
                });
                next_num += 1;
            }
            Op::Rename { issue, name } => {
                let Some(i) = pick(issue, &model) else {
                    continue;
                };
                w.update_issue(None, &model[i].id, Some(NAMES[name]), None, None)
                    .await
                    .unwrap();
                model[i].name = NAMES[name].to_string();
            }
            Op::Close { issue, closed } => {
                let Some(i) = pick(issue, &model) else {
                    continue;
                };
                let state = if closed {
                    IssueState::Closed
                } else {
                    IssueState::Open
                };
                w.update_issue(None, &model[i].id, None, Some(state), None)
                    .await
                    .unwrap();
                model[i].closed = closed;
            }
            Op::SetValue { issue, value } => {
                let Some(i) = pick(issue, &model) else {
                    continue;
                };
                let cells = [(int_field.clone(), value.map(|v| v.to_string()))];
                w.set_issue_values(None, &model[i].id, &cells, None)
                    .await
                    .unwrap();
                model[i].value = value;
            }
            Op::SetText { issue, text } => {
                let Some(i) = pick(issue, &model) else {
                    continue;
                };
                let text = text.map(|t| NAMES[t].to_string()).filter(|t| !t.is_empty());
                let cells = [(text_field.clone(), text.clone())];
                w.set_issue_values(None, &model[i].id, &cells, None)
                    .await
                    .unwrap();
                model[i].text = text;
            }
            Op::Delete { issue } => {
                let Some(i) = pick(issue, &model) else {
                    continue;
                };
                w.delete_issue(None, &model[i].id).await.unwrap();
                model.remove(i);
            }
        }
    }
    assert_clean(&store).await;
    let gateway = Gateway::new(store.clone(), GatewayOptions::default(), None);
    let orders: Vec<(Value, Vec<i64>)> = vec![
        (
            json!({"field": "NUM"}),
            oracle(&model, |_| Some(0i64.into()), true),
        ),
        (
            json!({"field": "NUM", "direction": "DESC"}),
            oracle(&model, |_| Some(0i64.into()), false),
        ),
        (
            json!({"field": "NAME"}),
            oracle(&model, |m| Some(Key::Text(m.name.to_lowercase())), true),
        ),
        (
            json!({"field": "NAME", "direction": "DESC"}),
            oracle(&model, |m| Some(Key::Text(m.name.to_lowercase())), false),
        ),
        (
            json!({"field": "STATE"}),
            oracle(&model, |m| Some(i64::from(m.closed).into()), true),
        ),
        (
            json!({"field": "STATE", "direction": "DESC"}),
            oracle(&model, |m| Some(i64::from(m.closed).into()), false),
        ),
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": int_field}),
            oracle(&model, |m| m.value.map(Into::into), true),
        ),
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": int_field, "direction": "DESC"}),
            oracle(&model, |m| m.value.map(Into::into), false),
        ),
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": text_field}),
            oracle(
                &model,
                |m| m.text.as_ref().map(|t| Key::Text(t.to_lowercase())),
                true,
            ),
        ),
        (
            json!({"field": "CUSTOM_FIELD", "customFieldId": text_field, "direction": "DESC"}),
            oracle(
                &model,
                |m| m.text.as_ref().map(|t| Key::Text(t.to_lowercase())),
                false,
            ),
        ),
    ];
    for (order, expected) in orders {
        let request = async_graphql::Request::new(
            r#"query($p: ID!, $o: IssueOrder) { project(id: $p) { issues(first: 100, orderBy: $o) { nodes { num } } } }"#,
        )
        .variables(async_graphql::Variables::from_json(json!({"p": project, "o": order})));
        let response = gateway.execute(request).await;
        assert!(response.errors.is_empty(), "{:?}", response.errors);
        let data = serde_json::to_value(&response.data).unwrap();
        let nums: Vec<i64> = data["project"]["issues"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["num"].as_i64().unwrap())
            .collect();
        assert_eq!(nums, expected, "{order}");
    }
}

/// A sort key of the model: numbers, or text compared by its UTF-8 bytes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Int(i64),
    Text(String),
}

impl From<i64> for Key {
    fn from(v: i64) -> Self {
        Key::Int(v)
    }
}

/// The expected order: rows with a key by (key, num) in the direction, then rows without one
/// by num in the direction.
fn oracle(
    model: &[ModelIssue],
    key: impl Fn(&ModelIssue) -> Option<Key>,
    ascending: bool,
) -> Vec<i64> {
    let mut with: Vec<(Key, i64)> = model
        .iter()
        .filter_map(|m| Some((key(m)?, m.num)))
        .collect();
    let mut without: Vec<i64> = model
        .iter()
        .filter(|m| key(m).is_none())
        .map(|m| m.num)
        .collect();
    with.sort();
    without.sort_unstable();
    if !ascending {
        with.reverse();
        without.reverse();
    }
    with.into_iter().map(|(_, n)| n).chain(without).collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_mutations_keep_verify_clean_and_orderings_right_embedded(ops in proptest::collection::vec(op(), 1..40)) {
        runtime().block_on(run_sequence(Backend::Embedded, ops));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn random_mutations_keep_verify_clean_and_orderings_right_dynamodb(ops in proptest::collection::vec(op(), 1..30)) {
        runtime().block_on(run_sequence(Backend::Dynamodb, ops));
    }
}
