//! The physical floor of a grid page: exactly the DynamoDB calls gridgate makes for one page
//! (ARCHITECTURE.md, "Access patterns and their calls"), issued straight from
//! aws-sdk-dynamodb with no GraphQL, no HTTP in front and no gateway, in a closed loop by N
//! concurrent workers. Issue 7's P3 goal compares gridgate's p50 with this program's p50 at the
//! same concurrency against the same DynamoDB Local: whatever gridgate adds above this line is
//! gateway overhead (HTTP, parsing, validation, resolvers, loaders, metering, JSON).
//!
//! One page, sorted by `NUM` (2 calls):
//! - Query of table partition `project-X` (the project item and its custom fields), and
//!   concurrently Query of `GSI1` partition `project-X`, `Limit first+1` (the issue items).
//!
//! Sorted by a custom field `xattrib-F` (3 calls):
//! - the same project Query, concurrently with Query of `GSI1` partition `xvalue-F`,
//!   `Limit first+1` (value rows), then BatchGetItem of the page's `first` issue items
//!   (`PK` = issue id, `SK` = project id; unprocessed keys retried).
//!
//! Filtered by a range on the sorted custom field (`--range LO,HI`: `gte LO`, `lt HI`, whole
//! numbers, an INT field): the same 3 calls, the value rows' Query under the key condition
//! `GSI1SK BETWEEN` the range's sort strings (spelled by `gridgate::keys`, as the layout is).
//!
//! Every call asks for `ReturnConsumedCapacity=TOTAL`, as gridgate's do. Items are decoded
//! minimally (ids, num, name, state, cells as text; field definitions) so the work that any
//! client of the table must do is counted, and nothing more. Each page is checked (a full
//! page of issues, a project found) so a wrong id cannot produce a fast, empty benchmark.
//!
//! ```sh
//! cargo run --release --example raw_baseline -- --endpoint http://127.0.0.1:8000 \
//!     --project project-… --order NUM --first 50 --concurrency 4 --seconds 10
//! ```
//!
//! Prints one JSON line: `{"requests", "errors", "p50_ms", "p99_ms", "rps", ...}`.
//! `benches/compare.sh` runs it interleaved with gridgate and the Node gateway.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use aws_config::{BehaviorVersion, Region};
use aws_sdk_dynamodb::config::Credentials;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnConsumedCapacity};
use aws_sdk_dynamodb::Client;
use clap::Parser;
use serde_json::json;

#[derive(Parser, Debug)]
#[command(about = "Closed-loop raw aws-sdk-dynamodb baseline of one gridgate grid page")]
struct Args {
    /// DynamoDB endpoint (DynamoDB Local), e.g. http://127.0.0.1:8000.
    #[arg(long)]
    endpoint: String,
    /// Table name.
    #[arg(long, default_value = "gridgate")]
    table: String,
    /// Project whose grid is paged (`project-…`).
    #[arg(long)]
    project: String,
    /// `NUM`, or the id of a custom field (`xattrib-…`) to sort by.
    #[arg(long, default_value = "NUM")]
    order: String,
    /// With a custom-field `--order`: only values from LO (inclusive) to HI (exclusive),
    /// as `LO,HI`.
    #[arg(long)]
    range: Option<String>,
    /// Page size.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100))]
    first: u32,
    /// Concurrent workers, each with one page in flight at a time.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Measured seconds.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300))]
    seconds: u64,
    /// Unmeasured seconds first (connections opened, caches warm).
    #[arg(long, default_value_t = 1)]
    warmup: u64,
}

/// What a page decodes to; kept only to be consumed by `black_box`.
#[derive(Debug)]
#[allow(dead_code)]
struct IssueRow {
    id: String,
    num: u32,
    name: String,
    state: String,
    values: Vec<(String, String)>,
}

#[derive(Debug)]
#[allow(dead_code)]
struct FieldRow {
    id: String,
    name: String,
    field_type: String,
    position: i64,
}

type Item = HashMap<String, AttributeValue>;
type Error = Box<dyn std::error::Error + Send + Sync>;

fn s<'a>(item: &'a Item, name: &str) -> Result<&'a str, Error> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(format!("item has no string {name}").into()),
    }
}

fn n(item: &Item, name: &str) -> Result<i64, Error> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => Ok(v.parse()?),
        _ => Err(format!("item has no number {name}").into()),
    }
}

fn decode_issue(item: &Item) -> Result<IssueRow, Error> {
    let values = match item.get("Values") {
        Some(AttributeValue::M(m)) => m
            .iter()
            .filter_map(|(k, v)| match v {
                AttributeValue::S(t) | AttributeValue::N(t) => Some((k.clone(), t.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(IssueRow {
        id: s(item, "PK")?.to_string(),
        num: u32::try_from(n(item, "Num")?)?,
        name: s(item, "Name")?.to_string(),
        state: s(item, "State")?.to_string(),
        values,
    })
}

/// The grid page's reads, as gridgate spells them.
struct Page {
    client: Client,
    table: String,
    project: String,
    /// `None`: by num; `Some(partition)`: the field's `xvalue-…` partition.
    value_partition: Option<String>,
    /// The inclusive `GSI1SK` bounds of a range filter on the sorted field.
    range: Option<(String, String)>,
    first: u32,
}

impl Page {
    /// Query of the project's table partition (one page holds a project and its fields).
    async fn project(&self) -> Result<Vec<FieldRow>, Error> {
        let mut fields = Vec::new();
        let mut found = false;
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", "PK")
                .expression_attribute_values(":pk", AttributeValue::S(self.project.clone()))
                .set_exclusive_start_key(start)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await?;
            for item in out.items() {
                match s(item, "Type")? {
                    "Project" => found = true,
                    "CustomField" if !item.contains_key("Deleted") => fields.push(FieldRow {
                        id: s(item, "SK")?.to_string(),
                        name: s(item, "Name")?.to_string(),
                        field_type: s(item, "FieldType")?.to_string(),
                        position: n(item, "Position")?,
                    }),
                    _ => {}
                }
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        if !found {
            return Err(format!("project {} not found", self.project).into());
        }
        fields.sort_by(|a, b| (a.position, &a.id).cmp(&(b.position, &b.id)));
        Ok(fields)
    }

    /// The keyset Query of `GSI1`: `first + 1` rows, the extra one telling `hasNextPage`.
    async fn index(&self) -> Result<Vec<Item>, Error> {
        let partition = self.value_partition.as_deref().unwrap_or(&self.project);
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("GSI1")
            .expression_attribute_names("#pk", "SK")
            .expression_attribute_values(":pk", AttributeValue::S(partition.to_string()));
        query = match &self.range {
            None => query.key_condition_expression("#pk = :pk"),
            Some((lo, hi)) => query
                .key_condition_expression("#pk = :pk AND #sk BETWEEN :lo AND :hi")
                .expression_attribute_names("#sk", "GSI1SK")
                .expression_attribute_values(":lo", AttributeValue::S(lo.clone()))
                .expression_attribute_values(":hi", AttributeValue::S(hi.clone())),
        };
        let out = query
            .scan_index_forward(true)
            .limit(i32::try_from(self.first + 1)?)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await?;
        Ok(out.items.unwrap_or_default())
    }

    /// BatchGetItem of the page's issue items (up to 100 keys: one call), unprocessed keys
    /// retried.
    async fn issues(&self, rows: &[Item]) -> Result<Vec<Item>, Error> {
        let mut keys: Vec<Item> = rows
            .iter()
            .map(|row| {
                Ok(HashMap::from([
                    (
                        "PK".to_string(),
                        AttributeValue::S(s(row, "PK")?.to_string()),
                    ),
                    ("SK".to_string(), AttributeValue::S(self.project.clone())),
                ]))
            })
            .collect::<Result<_, Error>>()?;
        let mut items = Vec::with_capacity(keys.len());
        while !keys.is_empty() {
            let request = KeysAndAttributes::builder().set_keys(Some(keys)).build()?;
            let mut out = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await?;
            if let Some(found) = out.responses.as_mut().and_then(|r| r.remove(&self.table)) {
                items.extend(found);
            }
            keys = out
                .unprocessed_keys
                .as_mut()
                .and_then(|u| u.remove(&self.table))
                .map(|k| k.keys)
                .unwrap_or_default();
        }
        // BatchGetItem returns items in any order; the page's order is the index's.
        let order: HashMap<&str, usize> = rows
            .iter()
            .enumerate()
            .filter_map(|(i, row)| s(row, "PK").ok().map(|pk| (pk, i)))
            .collect();
        items.sort_by_key(|item| s(item, "PK").ok().and_then(|pk| order.get(pk).copied()));
        Ok(items)
    }

    /// One whole page: project and index concurrently, then the issue items if needed.
    async fn run(&self) -> Result<(), Error> {
        let (fields, mut rows) = tokio::try_join!(self.project(), self.index())?;
        let has_next = rows.len() > self.first as usize;
        rows.truncate(self.first as usize);
        let items = match self.value_partition {
            None => rows,
            Some(_) => self.issues(&rows).await?,
        };
        let issues = items
            .iter()
            .map(decode_issue)
            .collect::<Result<Vec<_>, _>>()?;
        if issues.len() != self.first as usize || !has_next {
            return Err(format!("short page: {} issues", issues.len()).into());
        }
        black_box((fields, issues, has_next));
        Ok(())
    }
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args = Args::parse();
    let value_partition = match args.order.as_str() {
        "NUM" => None,
        // A saved view's first index (generation 1): its rows, then their issues, as a
        // custom-field page reads them.
        view if view.starts_with("xview-") => Some(gridgate::view::partition(
            &gridgate::ids::ViewId::parse(view)?,
            1,
        )),
        field => {
            let part = field
                .strip_prefix("xattrib-")
                .ok_or("--order is NUM, a custom field id (xattrib-…) or a view id (xview-…)")?;
            Some(format!("xvalue-{part}"))
        }
    };
    // `value ␁` bounds every sort string of a value from below: `gte LO` starts at LO's, and
    // `lt HI` ends before HI's (inclusive bounds, for BETWEEN).
    let range = match &args.range {
        None => None,
        Some(range) => {
            let (lo, hi) = range.split_once(',').ok_or("--range is LO,HI")?;
            let bound = |n: &str| -> Result<String, Error> {
                let value = gridgate::model::FieldValue::Int(n.trim().parse()?);
                Ok(format!("{}\u{1}", gridgate::keys::plain_value_part(&value)))
            };
            Some((bound(lo)?, bound(hi)?))
        }
    };
    // The same SDK and defaults as gridgate's DynamoDB store; DynamoDB Local takes any
    // alphanumeric credentials.
    let sdk = aws_config::defaults(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "rawbaseline",
            "rawbaseline",
            None,
            None,
            "raw-baseline",
        ))
        .endpoint_url(&args.endpoint)
        .load()
        .await;
    let page = std::sync::Arc::new(Page {
        client: Client::new(&sdk),
        table: args.table.clone(),
        project: args.project.clone(),
        value_partition,
        range,
        first: args.first,
    });
    // Fail fast, with the cause, before any timing.
    page.run().await?;

    let warm_until = Instant::now() + Duration::from_secs(args.warmup);
    let measure = Duration::from_secs(args.seconds);
    let mut workers = Vec::new();
    for _ in 0..args.concurrency.max(1) {
        let page = page.clone();
        workers.push(tokio::spawn(async move {
            while Instant::now() < warm_until {
                let _ = page.run().await;
            }
            let (started, mut latencies, mut errors) = (Instant::now(), Vec::new(), 0usize);
            while started.elapsed() < measure {
                let t = Instant::now();
                match page.run().await {
                    Ok(()) => latencies.push(t.elapsed()),
                    Err(_) => errors += 1,
                }
            }
            (latencies, errors, started.elapsed())
        }));
    }
    let (mut latencies, mut errors, mut elapsed) = (Vec::new(), 0, Duration::ZERO);
    for worker in workers {
        let (l, e, d) = worker.await?;
        latencies.extend(l);
        errors += e;
        elapsed = elapsed.max(d);
    }
    if latencies.is_empty() {
        return Err("no page completed".into());
    }
    latencies.sort();
    let pct = |p: f64| {
        let rank = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len());
        latencies[rank - 1].as_secs_f64() * 1e3
    };
    println!(
        "{}",
        json!({
            "order": args.order,
            "first": args.first,
            "concurrency": args.concurrency,
            "seconds": elapsed.as_secs_f64(),
            "requests": latencies.len(),
            "errors": errors,
            "p50_ms": pct(0.50),
            "p99_ms": pct(0.99),
            "rps": latencies.len() as f64 / elapsed.as_secs_f64(),
        })
    );
    Ok(())
}
