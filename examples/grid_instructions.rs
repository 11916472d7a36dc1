//! Runs grid pages in process on one thread, for counting the instructions a page costs.
//!
//! Wall-clock figures on this 2-core machine swing by 15-25 % between runs of the same binary;
//! an instruction count under callgrind is the same every time, so it judges a change to the
//! per-row work exactly (SHA-256 runs in software under valgrind, so cursors weigh more there
//! than on a CPU with SHA extensions). See README, "Performance".
//!
//! ```text
//! cargo build --release --example grid_instructions
//! B=target/release/examples/grid_instructions
//! $B seed /tmp/grid                      # 1 project, 5,000 issues, 8 custom fields
//! valgrind --tool=callgrind $B run /tmp/grid 20 NUM   # and again with 60: the
//! valgrind --tool=callgrind $B run /tmp/grid 60 NUM   # difference / 40 is one page
//! ```
//!
//! `ORDER` is `NUM`, `CF` (the second custom field, descending), `FR` (CF with a range on
//! that field, compare.sh's filtered page) or `VW` (a saved view by CF descending, then name,
//! compare.sh's view page, built on first use); pages have 50 rows.

use std::path::Path;
use std::sync::Arc;

use gridgate::graphql::{Gateway, GatewayOptions};
use gridgate::seed::{self, Synthetic, GRID_PAGE_QUERY};
use gridgate::store::embedded::EmbeddedStore;
use gridgate::store::DynStore;

/// The server's allocator, so the counts are the server's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Where `seed` leaves the project's id for `run`.
const PROJECT_FILE: &str = "project-id";

const USAGE: &str = "usage: grid_instructions seed DIR | run DIR PAGES NUM|CF|FR|VW";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["seed", dir] => rt.block_on(seed_data(Path::new(dir))),
        ["run", dir, pages, order] => {
            let (gateway, variables) = rt.block_on(prepare(Path::new(dir), order))?;
            let pages: usize = pages.parse()?;
            let started = std::time::Instant::now();
            run_pages(&rt, &gateway, &variables, pages)?;
            eprintln!(
                "{pages} pages, {:?} per page",
                started.elapsed() / pages.max(1) as u32
            );
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

async fn seed_data(dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let store: DynStore = Arc::new(EmbeddedStore::open(dir, "bench")?);
    store.ensure_table().await?;
    let params = Synthetic {
        projects: 1,
        issues: 5000,
        fields: 8,
        seed: 1,
    };
    let created = seed::synthetic(&store, params, |_| {}).await?;
    std::fs::write(dir.join(PROJECT_FILE), &created[0].project)?;
    Ok(())
}

/// The gateway over the seeded store, and the page's variables (its project and order).
async fn prepare(
    dir: &Path,
    order: &str,
) -> Result<(Gateway, async_graphql::Variables), Box<dyn std::error::Error>> {
    let id = std::fs::read_to_string(dir.join(PROJECT_FILE))?;
    let store: DynStore = Arc::new(EmbeddedStore::open(dir, "bench")?);
    let gateway = Gateway::new(store, GatewayOptions::default(), None);
    let fields = gateway
        .execute(async_graphql::Request::new(format!(
            r#"{{ project(id: "{id}") {{ id customFields {{ id }} }} }}"#
        )))
        .await;
    let data = serde_json::to_value(&fields.data)?;
    let project = &data["project"];
    let field = &project["customFields"][1]["id"];
    let by_field = serde_json::json!({
        "field": "CUSTOM_FIELD",
        "customFieldId": field,
        "direction": "DESC",
    });
    if order == "VW" {
        let view = view_of(&gateway, &project["id"], field).await?;
        let variables = serde_json::json!({"p": project["id"], "first": 50, "v": view});
        return Ok((gateway, async_graphql::Variables::from_json(variables)));
    }
    let (order, filter) = match order {
        "NUM" => (serde_json::json!({"field": "NUM"}), serde_json::Value::Null),
        "CF" => (by_field, serde_json::Value::Null),
        // compare.sh's FR page: the CF page with a range on the sorted field.
        "FR" => (
            by_field,
            serde_json::json!({
                "column": {"field": "CUSTOM_FIELD", "customFieldId": field},
                "gte": "-500",
                "lt": "500",
            }),
        ),
        _ => return Err(USAGE.into()),
    };
    let mut variables = serde_json::json!({"p": project["id"], "first": 50, "order": order});
    if !filter.is_null() {
        variables["filter"] = filter;
    }
    Ok((gateway, async_graphql::Variables::from_json(variables)))
}

/// The project's first view (created and built here when there is none).
async fn view_of(
    gateway: &Gateway,
    project: &serde_json::Value,
    field: &serde_json::Value,
) -> Result<String, Box<dyn std::error::Error>> {
    let run = |query: &str, variables: serde_json::Value| {
        gateway.execute(
            async_graphql::Request::new(query)
                .variables(async_graphql::Variables::from_json(variables)),
        )
    };
    let views = serde_json::to_value(
        run(
            "query($p: ID!) { project(id: $p) { views { id status } } }",
            serde_json::json!({"p": project}),
        )
        .await
        .data,
    )?;
    if let Some(id) = views["project"]["views"][0]["id"].as_str() {
        return Ok(id.to_string());
    }
    let created = serde_json::to_value(
        run(
            r#"mutation($p: ID!, $f: ID!) { createView(input: {projectId: $p, name: "bench",
                orderBy: [{field: CUSTOM_FIELD, customFieldId: $f, direction: DESC}, {field: NAME}]}) { view { id } } }"#,
            serde_json::json!({"p": project, "f": field}),
        )
        .await
        .data,
    )?;
    let id = created["createView"]["view"]["id"]
        .as_str()
        .ok_or("createView failed")?
        .to_string();
    let config = gridgate::repo::sweep::SweepConfig {
        settle: std::time::Duration::ZERO,
        ..Default::default()
    };
    gridgate::repo::sweep::Sweeper::new(gateway.store().clone(), config)
        .run_pending()
        .await?;
    Ok(id)
}

/// compare.sh's view page.
const VIEW_PAGE_QUERY: &str = r#"query Grid($p: ID!, $first: Int, $v: ID!) {
  project(id: $p) {
    customFields { id name type position }
    view(id: $v) { issues(first: $first) {
      edges { cursor node { id num name state fieldValues { field { id } value } } }
      pageInfo { hasNextPage endCursor }
    } }
  }
}"#;

/// The grid page's query; with a `filter` argument for the filtered page.
fn query(filtered: bool) -> String {
    if !filtered {
        return GRID_PAGE_QUERY.to_string();
    }
    GRID_PAGE_QUERY
        .replace(
            "$order: IssueOrder)",
            "$order: IssueOrder, $filter: IssueFilter)",
        )
        .replace("orderBy: $order)", "orderBy: $order, filter: $filter)")
}

/// The pages, after three to warm the caches (documents, plans, the file's pages). Kept out
/// of line so that a profile can be limited to it (`--toggle-collect=*run_pages*`).
#[inline(never)]
fn run_pages(
    rt: &tokio::runtime::Runtime,
    gateway: &Gateway,
    variables: &async_graphql::Variables,
    pages: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let filtered = variables
        .get("filter")
        .is_some_and(|f| *f != async_graphql::Value::Null);
    let query = if variables.get("v").is_some() {
        VIEW_PAGE_QUERY.to_string()
    } else {
        query(filtered)
    };
    for _ in 0..pages + 3 {
        let request = async_graphql::Request::new(query.as_str()).variables(variables.clone());
        // As the HTTP handler runs it: rows stay the JSON text they were written as.
        let response = rt.block_on(gateway.execute_encoded(request));
        if !response.errors.is_empty() {
            return Err(format!("{:?}", response.errors).into());
        }
        std::hint::black_box(response);
    }
    Ok(())
}
