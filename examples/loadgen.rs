//! A small closed-loop load generator for a running gridgate: N workers POST one grid query
//! in a loop for a bounded time and count, then it reports throughput, latency percentiles and
//! the mean DynamoDB cost per request. Loopback targets only.
//!
//! ```sh
//! gridgate serve &      # demo data on 127.0.0.1:8080
//! cargo run --release --example loadgen -- --project project-35e9 --order NAME --concurrency 8 --seconds 10
//! ```
//!
//! With `--attack N`, N more workers send hostile requests in a loop meanwhile (fragment
//! doubling bombs, nested connections, a thousand aliases, oversized documents) and the report
//! adds how they were answered; `benches/attack.sh` compares the grid's latency and the
//! server's memory with and without them.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{json, Value};

#[derive(Parser, Debug)]
struct Args {
    /// GraphQL endpoint (must be a loopback address).
    #[arg(long, default_value = "http://127.0.0.1:8080/graphql")]
    url: String,
    /// Project whose grid is paged.
    #[arg(long, default_value = "project-35e9")]
    project: String,
    /// NUM, NAME, STATE, or a custom field id to sort by.
    #[arg(long, default_value = "NUM")]
    order: String,
    /// Page size.
    #[arg(long, default_value_t = 100)]
    first: u32,
    /// Concurrent workers.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// How long to run (at most 300 s).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=300))]
    seconds: u64,
    /// Stop after this many requests in all.
    #[arg(long, default_value_t = 1_000_000)]
    max_requests: usize,
    /// Hostile workers running alongside (0: none).
    #[arg(long, default_value_t = 0)]
    attack: usize,
}

/// Hostile documents, each refused by a different limit.
fn hostile_bodies(project: &str) -> Vec<Value> {
    let mut bomb = String::from("fragment F0 on Project { id name }\n");
    for i in 1..=30 {
        bomb.push_str(&format!(
            "fragment F{i} on Project {{ ...F{} ...F{} }}\n",
            i - 1,
            i - 1
        ));
    }
    bomb.push_str(&format!("{{ project(id: \"{project}\") {{ ...F30 }} }}"));
    let nested = format!(
        "{{ project(id: \"{project}\") {{ issues(first: 100) {{ nodes {{ project {{ issues(first: 100) {{ nodes {{ project {{ issues(first: 100) {{ nodes {{ id }} }} }} }} }} }} }} }} }} }}"
    );
    let aliases: String = (0..1000)
        .map(|i| format!("a{i}: project(id: \"{project}\") {{ issues {{ nodes {{ id }} }} }} "))
        .collect();
    let tokens = format!("{{ {} }}", "__typename ".repeat(20_000));
    [bomb, nested, format!("{{ {aliases} }}"), tokens]
        .into_iter()
        .map(|q| json!({ "query": q }))
        .collect()
}

struct Sample {
    latency: Duration,
    ok: bool,
    calls: f64,
    rcu: f64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let url = reqwest::Url::parse(&args.url)?;
    let host = url
        .host_str()
        .unwrap_or("")
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if !loopback {
        return Err("loadgen only targets loopback addresses".into());
    }
    let order = match args.order.as_str() {
        "NUM" | "NAME" | "STATE" => json!({"field": args.order}),
        field => json!({"field": "CUSTOM_FIELD", "customFieldId": field}),
    };
    let body = json!({"query": gridgate::seed::GRID_PAGE_QUERY, "variables": {"p": args.project, "first": args.first, "order": order}});
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(args.seconds);
    let budget = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(args.max_requests));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..args.concurrency.max(1) {
        let (client, body, url, budget) = (
            client.clone(),
            body.clone(),
            args.url.clone(),
            budget.clone(),
        );
        workers.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            while Instant::now() < deadline
                && budget
                    .fetch_update(
                        std::sync::atomic::Ordering::Relaxed,
                        std::sync::atomic::Ordering::Relaxed,
                        |n| n.checked_sub(1),
                    )
                    .is_ok()
            {
                let t = Instant::now();
                let result = client.post(&url).json(&body).send().await;
                let parsed: Option<Value> = match result {
                    Ok(r) => r.json().await.ok(),
                    Err(_) => None,
                };
                let latency = t.elapsed();
                let ok = parsed.as_ref().is_some_and(|v| v.get("errors").is_none());
                let cost = parsed
                    .as_ref()
                    .map(|v| v["extensions"]["cost"].clone())
                    .unwrap_or(Value::Null);
                samples.push(Sample {
                    latency,
                    ok,
                    calls: cost["dynamodbCalls"].as_f64().unwrap_or(0.0),
                    rcu: cost["readCapacityUnits"].as_f64().unwrap_or(0.0),
                });
            }
            samples
        }));
    }
    let mut attackers = Vec::new();
    for a in 0..args.attack {
        let (client, url, bodies) = (
            client.clone(),
            args.url.clone(),
            hostile_bodies(&args.project),
        );
        attackers.push(tokio::spawn(async move {
            let (mut refused, mut other, mut slowest) = (0usize, 0usize, Duration::ZERO);
            let mut i = a;
            while Instant::now() < deadline {
                let t = Instant::now();
                let response = client
                    .post(&url)
                    .json(&bodies[i % bodies.len()])
                    .send()
                    .await;
                let body: Option<Value> = match response {
                    Ok(r) => r.json().await.ok(),
                    Err(_) => None,
                };
                slowest = slowest.max(t.elapsed());
                let coded = body.as_ref().is_some_and(|b| {
                    b["errors"][0]["extensions"]["code"].is_string() && b.get("data").is_none()
                });
                if coded {
                    refused += 1;
                } else {
                    other += 1;
                }
                i += 1;
            }
            (refused, other, slowest)
        }));
    }
    let mut samples = Vec::new();
    for w in workers {
        samples.extend(w.await?);
    }
    let elapsed = started.elapsed();
    if !attackers.is_empty() {
        let (mut refused, mut other, mut slowest) = (0, 0, Duration::ZERO);
        for a in attackers {
            let (r, o, s) = a.await?;
            refused += r;
            other += o;
            slowest = slowest.max(s);
        }
        println!(
            "attack: {refused} hostile requests refused with a code, {other} answered otherwise; slowest refusal {slowest:?}"
        );
    }
    if samples.is_empty() {
        return Err("no requests were made".into());
    }
    let mut latencies: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    let n = samples.len() as f64;
    let errors = samples.iter().filter(|s| !s.ok).count();
    println!(
        "{} requests in {:.1}s: {:.0} req/s, {} errors; latency p50 {:?} p90 {:?} p99 {:?} max {:?}; per request {:.2} DynamoDB calls, {:.2} RCU",
        samples.len(),
        elapsed.as_secs_f64(),
        n / elapsed.as_secs_f64(),
        errors,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0),
        samples.iter().map(|s| s.calls).sum::<f64>() / n,
        samples.iter().map(|s| s.rcu).sum::<f64>() / n,
    );
    Ok(())
}
