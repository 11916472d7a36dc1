//! Measures saved views on the embedded store (issue 22's goals): the time and write units to
//! build a view over a seeded project, a view page's calls and read units against a
//! custom-field page of the same size, a selective view's reads, and a cell edit's write
//! units and calls with 0, 5 and 20 views whose keys hold the edited field, or do not.
//!
//! ```text
//! cargo run --release --example view_figures -- embedded /tmp/views 10000 20
//! cargo run --release --example view_figures -- dynamodb http://127.0.0.1:8000 10000 5
//! ```
//!
//! The last argument is the most views the cell-edit figures go up to (0, 5, then 20);
//! 0 skips them.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gridgate::graphql::{Gateway, GatewayOptions};
use gridgate::repo::sweep::{SweepConfig, Sweeper};
use gridgate::seed::{self, Synthetic};
use gridgate::store::dynamodb::{DynamoConfig, DynamoStore, SdkSettings};
use gridgate::store::embedded::EmbeddedStore;
use gridgate::store::{CostMeter, DynStore, Metered};
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, place, issues, views] = &args[..] else {
        return Err("usage: view_figures embedded DIR|dynamodb ENDPOINT ISSUES MAX_VIEWS".into());
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let store: DynStore = match kind.as_str() {
            "embedded" => {
                let dir = Path::new(place);
                let _ = std::fs::remove_dir_all(dir);
                std::fs::create_dir_all(dir)?;
                Arc::new(EmbeddedStore::open(dir, "views")?)
            }
            "dynamodb" => Arc::new(
                DynamoStore::connect_with(
                    DynamoConfig {
                        table: format!("view-figures-{}", std::process::id()),
                        endpoint: Some(place.clone()),
                        local_credentials: true,
                    },
                    SdkSettings::default(),
                )
                .await?,
            ),
            _ => return Err("the store is `embedded` or `dynamodb`".into()),
        };
        run(store, issues.parse()?, views.parse()?).await
    })
}

async fn call(gateway: &Gateway, query: &str, variables: Value) -> Result<(Value, Value), Error> {
    let response = gateway
        .execute(
            async_graphql::Request::new(query)
                .variables(async_graphql::Variables::from_json(variables)),
        )
        .await;
    let body = serde_json::to_value(&response)?;
    if body.get("errors").is_some_and(|e| !e.is_null()) {
        return Err(format!("{body:#}").into());
    }
    Ok((body["data"].clone(), body["extensions"]["cost"].clone()))
}

async fn build(store: &DynStore) -> Result<(Duration, Value), Error> {
    let meter = CostMeter::new();
    let metered: DynStore = Arc::new(Metered::new(store.clone(), meter.clone()));
    let config = SweepConfig {
        settle: Duration::ZERO,
        ..SweepConfig::default()
    };
    let started = Instant::now();
    Sweeper::new(metered, config).run_pending().await?;
    let report = meter.report();
    Ok((
        started.elapsed(),
        json!({"calls": report.dynamodb_calls, "wcu": report.write_capacity_units, "rcu": report.read_capacity_units}),
    ))
}

async fn run(store: DynStore, issues: u32, max_views: usize) -> Result<(), Error> {
    store.ensure_table().await?;
    let started = Instant::now();
    let params = Synthetic {
        projects: 1,
        issues,
        fields: 8,
        seed: 1,
    };
    let created = seed::synthetic(&store, params, |_| {}).await?;
    println!("seeded {issues} issues in {:?}", started.elapsed());
    let project = created[0].project.clone();
    let gateway = Gateway::new(store.clone(), GatewayOptions::default(), None);
    let (data, _) = call(
        &gateway,
        "query($p: ID!) { project(id: $p) { customFields { id type } } }",
        json!({"p": project}),
    )
    .await?;
    let fields: Vec<(String, String)> = data["project"]["customFields"]
        .as_array()
        .ok_or("fields")?
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap_or_default().to_string(),
                f["type"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let edited = fields[1].0.clone();
    let other = fields[2].0.clone();
    let create = |name: String, order: Value, filter: Value| {
        let gateway = &gateway;
        let project = project.clone();
        async move {
            let (data, _) = call(
                gateway,
                "mutation($i: CreateViewInput!) { createView(input: $i) { view { id } } }",
                json!({"i": {"projectId": project, "name": name, "orderBy": order, "filter": filter}}),
            )
            .await?;
            Ok::<String, Error>(
                data["createView"]["view"]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        }
    };

    // Building: one two-key view over every issue.
    let view = create(
        "by field".into(),
        json!([{"field": "CUSTOM_FIELD", "customFieldId": edited, "direction": "DESC"}, {"field": "NAME"}]),
        Value::Null,
    )
    .await?;
    let (took, cost) = build(&store).await?;
    println!("build of a 2-key view over {issues} issues: {took:?}, {cost}");

    // Page cost: the view's first page against the custom-field page of the same order.
    let view_page = "query($p: ID!, $v: ID!) { project(id: $p) { view(id: $v) { issues(first: 50) { totalCount nodes { num name fieldValues { value } } } } } }";
    let cf_page = "query($p: ID!, $o: IssueOrder) { project(id: $p) { issues(first: 50, orderBy: $o) { totalCount nodes { num name fieldValues { value } } } } }";
    for _ in 0..2 {
        call(&gateway, view_page, json!({"p": project, "v": view})).await?;
    }
    let (_, view_cost) = call(&gateway, view_page, json!({"p": project, "v": view})).await?;
    let order = json!({"field": "CUSTOM_FIELD", "customFieldId": edited, "direction": "DESC"});
    let (_, cf_cost) = call(&gateway, cf_page, json!({"p": project, "o": order})).await?;
    println!("page of 50: view {view_cost}; custom-field page {cf_cost}");

    // Isolation: a view of the first 50 issues by name.
    let few = create(
        "first fifty".into(),
        json!([{"field": "NAME"}]),
        json!({"column": {"field": "NUM"}, "lte": "50"}),
    )
    .await?;
    let (took, cost) = build(&store).await?;
    println!("build of a 50-issue view over {issues} issues: {took:?}, {cost}");
    for _ in 0..2 {
        call(
            &gateway,
            view_page.replace("50)", "100)").as_str(),
            json!({"p": project, "v": few}),
        )
        .await?;
    }
    let (data, cost) = call(
        &gateway,
        &view_page.replace("50)", "100)"),
        json!({"p": project, "v": few}),
    )
    .await?;
    println!(
        "selective view page: {} rows of {} (totalCount {}), {cost}",
        data["project"]["view"]["issues"]["nodes"]
            .as_array()
            .map_or(0, Vec::len),
        issues,
        data["project"]["view"]["issues"]["totalCount"]
    );

    // Write amplification: a cell edit with 0, 5 and 20 views (the two above count as views
    // whose keys hold the edited field or not).
    let (data, _) = call(
        &gateway,
        "query($p: ID!) { project(id: $p) { issues(first: 1) { nodes { id } } } }",
        json!({"p": project}),
    )
    .await?;
    let issue = data["project"]["issues"]["nodes"][0]["id"].clone();
    let edit = "mutation($i: ID!, $f: ID!, $v: String) { setIssueFieldValues(input: {issueId: $i, values: [{fieldId: $f, value: $v}]}) { issue { version } } }";
    let value_of = |f: &str| -> &'static str {
        match fields
            .iter()
            .find(|(id, _)| id == f)
            .map(|(_, t)| t.as_str())
        {
            Some("INT") | Some("NUMBER") => "7",
            Some("DATE") => "2024-02-03",
            Some("CHECKBOX") => "true",
            _ => "x",
        }
    };
    let mut measure = |views: usize| {
        let gateway = &gateway;
        let (issue, edited, other) = (issue.clone(), edited.clone(), other.clone());
        async move {
            let mut out = Vec::new();
            for field in [&edited, &other] {
                let (_, cost) = call(
                    gateway,
                    edit,
                    json!({"i": issue, "f": field, "v": value_of(field)}),
                )
                .await?;
                let (_, cost2) = call(
                    gateway,
                    edit,
                    json!({"i": issue, "f": field, "v": Value::Null}),
                )
                .await?;
                out.push((field == &edited, cost, cost2));
            }
            println!("cell edit with {views} views (set, then clear): in every view's keys {} {}; in none {} {}", out[0].1, out[0].2, out[1].1, out[1].2);
            Ok::<(), Error>(())
        }
    };
    if max_views == 0 {
        return Ok(());
    }
    // Delete the two views first, so the counts are exact.
    for id in [&view, &few] {
        call(
            &gateway,
            "mutation($i: ID!) { deleteView(input: {id: $i}) { deletedId } }",
            json!({"i": id}),
        )
        .await?;
    }
    build(&store).await?;
    measure(0).await?;
    let mut made = 0;
    for target in [5usize, 20].into_iter().filter(|t| *t <= max_views) {
        while made < target {
            create(
                format!("v{made}"),
                json!([{"field": "CUSTOM_FIELD", "customFieldId": edited}, {"field": "NAME"}]),
                Value::Null,
            )
            .await?;
            made += 1;
        }
        let (took, cost) = build(&store).await?;
        println!("built {made} views in {took:?}: {cost}");
        measure(made).await?;
    }
    let _ = &mut measure;
    Ok(())
}
