//! Benchmarks on the embedded store, through the gateway (in process, no HTTP: metering,
//! loaders, response order included): whole grid pages, the two commonest edits (a new issue
//! with 10 values, one cell), and on their own the reading of an issue row from DynamoDB JSON
//! and the sort-string encoders.
//!
//! `cargo bench --bench grid`; DynamoDB call counts are asserted exactly in the tests, this
//! measures time only.

use std::hint::black_box;
use std::str::FromStr;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};

/// The binary's allocator, so the figures are the server's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use gridgate::graphql::{Gateway, GatewayOptions};
use gridgate::seed::{self, Synthetic};
use gridgate::sortkey;
use gridgate::store::embedded::EmbeddedStore;
use gridgate::store::{DynStore, Store};

fn grid_pages(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, project, field) = rt.block_on(async {
        let store = EmbeddedStore::open(dir.path(), "bench").expect("open");
        store.ensure_table().await.expect("tables");
        let store: DynStore = Arc::new(store);
        let params = Synthetic {
            projects: 1,
            issues: 5000,
            fields: 8,
            seed: 1,
        };
        let created = seed::synthetic(&store, params, |_| {}).await.expect("seed");
        let project = created[0].project.clone();
        let gateway = Gateway::new(store.clone(), GatewayOptions::default(), None);
        let fields = gateway
            .execute(async_graphql::Request::new(format!(
                r#"{{ project(id: "{project}") {{ customFields {{ id }} }} }}"#
            )))
            .await;
        let json = serde_json::to_value(&fields.data).expect("json");
        let field = json["project"]["customFields"][1]["id"]
            .as_str()
            .expect("field")
            .to_string();
        (store, project, field)
    });
    let gateway = Gateway::new(store, GatewayOptions::default(), None);
    let orders = [
        ("NUM", serde_json::json!({"field": "NUM"})),
        ("NAME", serde_json::json!({"field": "NAME"})),
        (
            "CUSTOM_FIELD_INT_DESC",
            serde_json::json!({"field": "CUSTOM_FIELD", "customFieldId": field, "direction": "DESC"}),
        ),
    ];
    let mut group = c.benchmark_group("grid_page_100_rows_8_fields");
    for (name, order) in orders {
        let variables = async_graphql::Variables::from_json(
            serde_json::json!({"p": project, "first": 100, "order": order}),
        );
        group.bench_function(name, |b| {
            b.to_async(&rt).iter(|| async {
                let request =
                    async_graphql::Request::new(seed::GRID_PAGE_QUERY).variables(variables.clone());
                let response = gateway.execute(request).await;
                assert!(response.errors.is_empty(), "{:?}", response.errors);
                black_box(response)
            })
        });
    }
    group.finish();
}

fn edits(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let (gateway, project, fields, issue) = rt.block_on(async {
        let store = EmbeddedStore::open(dir.path(), "bench").expect("open");
        store.ensure_table().await.expect("tables");
        let store: DynStore = Arc::new(store);
        let params = Synthetic {
            projects: 1,
            issues: 1000,
            fields: 10,
            seed: 1,
        };
        let created = seed::synthetic(&store, params, |_| {}).await.expect("seed");
        let project = created[0].project.clone();
        let gateway = Gateway::new(store, GatewayOptions::default(), None);
        let run = |query: String| {
            let gateway = &gateway;
            async move {
                let response = gateway.execute(async_graphql::Request::new(query)).await;
                assert!(response.errors.is_empty(), "{:?}", response.errors);
                serde_json::to_value(&response.data).expect("json")
            }
        };
        let data = run(format!(
            r#"{{ project(id: "{project}") {{ customFields {{ id type }} issues(first: 1) {{ nodes {{ id }} }} }} }}"#
        ))
        .await;
        let fields: Vec<(String, String)> = data["project"]["customFields"]
            .as_array()
            .expect("fields")
            .iter()
            .map(|f| (f["id"].as_str().unwrap_or_default().to_string(), f["type"].as_str().unwrap_or_default().to_string()))
            .collect();
        let issue = data["project"]["issues"]["nodes"][0]["id"]
            .as_str()
            .expect("issue")
            .to_string();
        (gateway, project, fields, issue)
    });
    let value = |ty: &str, i: usize| match ty {
        "DATE" => format!("2024-01-{:02}", i % 28 + 1),
        "TEXT" => format!("text {i}"),
        _ => i.to_string(),
    };
    let values: Vec<serde_json::Value> = fields
        .iter()
        .enumerate()
        .map(|(i, (id, ty))| serde_json::json!({"fieldId": id, "value": value(ty, i)}))
        .collect();
    let mut group = c.benchmark_group("edits");
    let create =
        async_graphql::Variables::from_json(serde_json::json!({"p": project, "v": values}));
    group.bench_function("create_issue_10_values", |b| {
        b.to_async(&rt).iter(|| async {
            let request = async_graphql::Request::new(
                "mutation($p: ID!, $v: [FieldValueInput!]) { createIssue(input: {projectId: $p, name: \"Bench\", fieldValues: $v}) { issue { id num } } }",
            )
            .variables(create.clone());
            let response = gateway.execute(request).await;
            assert!(response.errors.is_empty(), "{:?}", response.errors);
            black_box(response)
        })
    });
    let int_field = fields
        .iter()
        .find(|(_, ty)| ty == "INT")
        .map(|(id, _)| id.clone())
        .expect("an INT field");
    let mut n = 0u64;
    group.bench_function("set_one_cell", |b| {
        b.to_async(&rt).iter(|| {
            n += 1;
            let variables = async_graphql::Variables::from_json(
                serde_json::json!({"i": issue, "f": int_field, "v": n.to_string()}),
            );
            let gateway = &gateway;
            async move {
                let request = async_graphql::Request::new(
                    "mutation($i: ID!, $f: ID!, $v: String) { setIssueFieldValues(input: {issueId: $i, values: [{fieldId: $f, value: $v}]}) { issue { version } } }",
                )
                .variables(variables);
                let response = gateway.execute(request).await;
                assert!(response.errors.is_empty(), "{:?}", response.errors);
                black_box(response)
            }
        })
    });
    group.finish();
}

/// Reading one issue row of a grid page from DynamoDB JSON (8 custom-field values), as both
/// stores receive it: serde_dynamo's own `Deserialize` (the generic path) against
/// `store::ddbjson`.
fn item_decoding(c: &mut Criterion) {
    let mut text = String::from(
        r#"{"PK":{"S":"issue-1cycthedv44q9pv3y1b8s4hjet"},"SK":{"S":"project-1cycthedv44q9pv3y1b8s4hjet"},"GSI1SK":{"S":"0000000042"},"Type":{"S":"Issue"},"Num":{"N":"42"},"Name":{"S":"Girder needs replacing near the \"north\" span"},"State":{"S":"open"},"Version":{"N":"3"},"Values":{"M":{"#,
    );
    for field in 0..8 {
        if field > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            r#""xattrib-{field}abcdefghijklmnopqrstuvw":{{"S":"value of field {field}"}}"#
        ));
    }
    text.push_str("}}}");
    let mut group = c.benchmark_group("item_decoding");
    group.bench_function("serde_dynamo", |b| {
        b.iter(|| serde_json::from_str::<gridgate::store::Item>(black_box(&text)).expect("item"))
    });
    group.bench_function("ddbjson", |b| {
        b.iter(|| gridgate::store::ddbjson::item(black_box(&text)).expect("item"))
    });
    group.finish();
}

fn sort_strings(c: &mut Criterion) {
    let mut group = c.benchmark_group("sortkey");
    let text = "Girder needs replacing: Zürich straße 日本語";
    group.bench_function("text_with_num", |b| {
        b.iter(|| sortkey::with_num(&sortkey::text(black_box(text)), black_box(1234)))
    });
    let number = bigdecimal::BigDecimal::from_str("-12345.678901").expect("decimal");
    group.bench_function("decimal_with_num", |b| {
        b.iter(|| sortkey::with_num(&sortkey::decimal(black_box(&number)), black_box(1234)))
    });
    group.bench_function("int", |b| {
        b.iter(|| sortkey::int(black_box(-9_876_543_210)))
    });
    group.finish();
}

criterion_group!(benches, grid_pages, edits, item_decoding, sort_strings);
criterion_main!(benches);
