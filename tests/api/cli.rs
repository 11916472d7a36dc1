//! The `gridgate` binary end to end, against both stores: `table create`, `seed --demo`,
//! `seed --synthetic` (one JSON line per project), `serve` on port 0, `verify`, `reindex`,
//! `schema` and `token`; the auth start-up rules and SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use crate::support::app::Backend;
use crate::support::dynamodb_local;
use serde_json::Value;

/// A command line and environment for one isolated store.
pub(crate) struct Cli {
    args: Vec<String>,
    store: gridgate::config::StoreConfig,
    _dir: tempfile::TempDir,
}

impl Cli {
    pub(crate) fn new(backend: Backend) -> Cli {
        let dir = tempfile::tempdir().unwrap();
        let mut store = gridgate::config::StoreConfig::embedded(dir.path());
        let args = match backend {
            Backend::Embedded => vec![
                "--store".into(),
                "embedded".into(),
                "--data-dir".into(),
                dir.path().to_string_lossy().into_owned(),
            ],
            Backend::Dynamodb => vec![
                "--store".into(),
                "dynamodb".into(),
                "--endpoint".into(),
                dynamodb_local::endpoint().into(),
                "--table".into(),
                format!(
                    "gridgate-cli-{}-{}",
                    std::process::id(),
                    dir.path().file_name().unwrap().to_string_lossy()
                ),
            ],
        };
        if backend == Backend::Dynamodb {
            store.store = gridgate::config::StoreKind::Dynamodb;
            store.endpoint = Some(args[3].clone());
            store.table = args[5].clone();
        }
        Cli {
            args,
            store,
            _dir: dir,
        }
    }

    /// Runs a command that must fail; returns its stdout and stderr.
    pub(crate) fn run_failing(&self, sub: &[&str]) -> (String, String) {
        let out = self.command(sub).output().expect("run gridgate");
        assert!(!out.status.success(), "gridgate {sub:?} succeeded");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    pub(crate) fn command(&self, sub: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_gridgate"));
        cmd.args(sub).args(&self.args);
        // Credentials for DynamoDB Local come from the endpoint fallback, not the environment.
        cmd.env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_PROFILE");
        cmd.env("RUST_LOG", "warn");
        cmd
    }

    /// Starts `serve` on a free port; returns the server and its GraphQL URL.
    pub(crate) fn serve(&self) -> (Server, String) {
        self.serve_with(&[], &[])
    }

    /// Starts `serve` with extra flags and environment variables.
    fn serve_with(&self, flags: &[&str], env: &[(&str, &str)]) -> (Server, String) {
        let mut sub = vec!["serve", "--listen", "127.0.0.1:0"];
        sub.extend(flags);
        let mut child = self
            .command(&sub)
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let stderr = child.stderr.take().unwrap();
        let server = Server(Some(child));
        let mut lines_in = BufReader::new(stderr).lines();
        loop {
            let line = lines_in
                .next()
                .expect("server exited before listening")
                .unwrap();
            if let Some(rest) = line.split("listening on ").nth(1) {
                return (server, rest.trim().to_string());
            }
        }
    }

    pub(crate) fn run(&self, sub: &[&str]) -> String {
        let out = self.command(sub).output().expect("run gridgate");
        assert!(
            out.status.success(),
            "gridgate {sub:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

/// POSTs a query to a served gateway and returns the response body.
async fn post_query(url: &str, query: &str) -> Value {
    reqwest::Client::new()
        .post(url)
        .json(&serde_json::json!({ "query": query }))
        .send()
        .await
        .expect("POST")
        .json()
        .await
        .expect("JSON body")
}

/// Kills the server when the test ends, however it ends (unless a test took it over).
pub(crate) struct Server(Option<Child>);

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

async fn seeds_and_serves(backend: Backend) {
    let cli = Cli::new(backend);
    cli.run(&["table", "create"]);
    cli.run(&["table", "create"]);

    let out = cli.run(&[
        "seed",
        "--synthetic",
        "--projects",
        "2",
        "--issues",
        "30",
        "--fields",
        "5",
        "--seed",
        "9",
    ]);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    for line in &lines {
        assert!(line["tenant"].as_str().unwrap().starts_with("tenant-"));
        assert!(line["project"].as_str().unwrap().starts_with("project-"));
        assert_eq!(line["issues"], 30);
        assert_eq!(line["fields"], 5);
    }
    assert_eq!(lines[0]["tenant"], lines[1]["tenant"]);

    // `serve` loads the demo data into a store that lacks it, on a free port.
    let (server, url) = cli.serve();
    let body = post_query(
        &url,
        &format!(
            "{{ tenant(id: \"tenant-0807\") {{ name }} synthetic: project(id: \"{}\") {{ issues(first: 100) {{ nodes {{ num }} }} }} }}",
            lines[1]["project"].as_str().unwrap()
        ),
    )
    .await;
    let client = reqwest::Client::new();
    assert_eq!(
        body["data"]["tenant"]["name"], "ACME Engineering",
        "{body:#}"
    );
    assert_eq!(
        body["data"]["synthetic"]["issues"]["nodes"]
            .as_array()
            .unwrap()
            .len(),
        30
    );
    let health = client
        .get(url.replace("/graphql", "/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    drop(server);

    // Seeding the demo twice is harmless.
    cli.run(&["seed", "--demo"]);
    cli.run(&["seed", "--demo"]);
}

/// `verify` is clean on seeded data; after rows are damaged it prints one line per
/// mismatch and fails; `reindex` repairs them and `verify` is clean again.
async fn verify_and_reindex_find_and_repair_drift(backend: Backend) {
    use gridgate::store::{AttrPath, AttributeValue, Key, UpdateAction, WriteOp};
    let cli = Cli::new(backend);
    cli.run(&["table", "create"]);
    cli.run(&["seed", "--demo"]);
    assert_eq!(cli.run(&["verify"]), "");
    {
        // Damage: lose a name row, and give an issue a wrong GSI1SK (written by "another tool").
        let store = cli.store.open().await.unwrap();
        store
            .transact_write(vec![
                WriteOp::Delete {
                    key: Key::new("issue-020e", "project-35e9#name"),
                    condition: None,
                },
                WriteOp::Update {
                    key: Key::new("issue-67d1", "project-35e9"),
                    actions: vec![UpdateAction::Set(
                        AttrPath::new(["GSI1SK"]),
                        AttributeValue::S("0000000009".into()),
                    )],
                    condition: None,
                },
            ])
            .await
            .unwrap();
    }
    let (out, err) = cli.run_failing(&["verify"]);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "missing (issue-020e, project-35e9#name): index row",
            "stale (issue-67d1, project-35e9): GSI1SK is \"0000000009\", expected \"0000000002\"",
        ],
        "{err}"
    );
    let (only, _) = cli.run_failing(&["verify", "--project", "project-35e9"]);
    assert_eq!(only, out);
    assert_eq!(cli.run(&["verify", "--project", "project-7b7e"]), "");
    let (_, err) = cli.run_failing(&["verify", "--project", "project-0000"]);
    assert!(err.contains("project project-0000 does not exist"), "{err}");
    let repaired = cli.run(&["reindex"]);
    assert_eq!(repaired.lines().count(), 2, "{repaired}");
    assert_eq!(cli.run(&["verify"]), "");
    assert_eq!(cli.run(&["reindex"]), "", "idempotent");
}

crate::both_stores!(seeds_and_serves, verify_and_reindex_find_and_repair_drift);

/// Store flags mean the same on every subcommand: a DynamoDB-only flag with the embedded
/// store is an error that says so.
#[test]
fn endpoint_with_the_embedded_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for sub in [
        &["serve"][..],
        &["verify"],
        &["reindex"],
        &["seed", "--demo"],
        &["table", "create"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_gridgate"))
            .args(sub)
            .args(["--store", "embedded", "--endpoint", "http://127.0.0.1:9"])
            .arg("--data-dir")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{sub:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--endpoint") && err.contains("--store dynamodb"),
            "{sub:?}: {err}"
        );
    }
}

/// `gridgate compact` shrinks the embedded store's file without changing what it holds: it
/// reports the items and the file's size before and after, the data reads the same and
/// `verify` finds nothing afterwards; with the server running (redb locks the file) it says
/// to stop it; with DynamoDB it says it does not apply.
#[tokio::test]
async fn compact_shrinks_the_file_and_keeps_the_data() {
    let cli = Cli::new(Backend::Embedded);
    cli.run(&["seed", "--synthetic", "--issues", "600", "--fields", "4"]);
    let (server, url) = cli.serve();
    let query = "{ tenants(first: 1) { nodes { projects(first: 1) { nodes { issues(first: 50, orderBy: {field: NAME, direction: DESC}) { totalCount nodes { num name fieldValues { fieldId value } } } } } } } }";
    let before = post_query(&url, query).await;
    assert!(before.get("errors").is_none(), "{before}");
    let (_, refused) = cli.run_failing(&["compact"]);
    assert!(refused.contains("stop it, then compact"), "{refused}");
    drop(server);

    let report = cli.run(&["compact"]);
    let number = |line: &str, after: &str| -> f64 {
        let rest = &line[line.find(after).expect(after) + after.len()..];
        rest.split_whitespace()
            .next()
            .expect("a number")
            .parse()
            .expect("a number")
    };
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines.len(), 3, "{report}");
    assert!(lines[0].starts_with("items: "), "{report}");
    assert!(number(lines[0], "items: ") > 600.0, "{report}");
    let (was, now) = (
        number(lines[1], "file before: "),
        number(lines[2], "file after: "),
    );
    assert!(now <= was && now > 0.0, "{report}");

    let (server, url) = cli.serve();
    assert_eq!(
        post_query(&url, query).await,
        before,
        "the data reads the same"
    );
    drop(server);
    assert_eq!(cli.run(&["verify"]), "");
    let dynamodb = Command::new(env!("CARGO_BIN_EXE_gridgate"))
        .args(["compact", "--store", "dynamodb", "--table", "unused"])
        .output()
        .expect("run gridgate");
    assert!(!dynamodb.status.success());
    assert!(String::from_utf8_lossy(&dynamodb.stderr).contains("applies to the embedded store"));
}

/// `--no-demo`, or its variable with any usual spelling of true, keeps an empty store empty.
#[tokio::test]
async fn no_demo_by_flag_or_variable() {
    for (flags, env) in [
        (&["--no-demo"][..], &[][..]),
        (&[][..], &[("GRIDGATE_NO_DEMO", "1")][..]),
        (&[][..], &[("GRIDGATE_NO_DEMO", "yes")][..]),
    ] {
        let cli = Cli::new(Backend::Embedded);
        let (server, url) = cli.serve_with(flags, env);
        let body = post_query(&url, "{ tenant(id: \"tenant-0807\") { name } }").await;
        assert!(body.get("errors").is_none(), "{body}");
        assert_eq!(
            body["data"]["tenant"],
            Value::Null,
            "{flags:?} {env:?}: {body}"
        );
        drop(server);
    }
}

/// Zero set-up: `serve` on an empty data directory creates the store and loads the demo.
#[tokio::test]
async fn serves_a_fresh_embedded_store_without_set_up() {
    let cli = Cli::new(Backend::Embedded);
    let (server, url) = cli.serve();
    let body = post_query(
        &url,
        "{ project(id: \"project-35e9\") { issues { nodes { num } } } }",
    )
    .await;
    assert_eq!(
        body["data"]["project"]["issues"]["nodes"],
        serde_json::json!([{"num": 1}, {"num": 2}, {"num": 3}])
    );
    drop(server);
}

#[test]
fn schema_command_prints_the_committed_sdl() {
    let out = Command::new(env!("CARGO_BIN_EXE_gridgate"))
        .arg("schema")
        .output()
        .unwrap();
    assert!(out.status.success());
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema.graphql")).unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), committed);
}

#[test]
fn seed_requires_a_kind() {
    let out = Command::new(env!("CARGO_BIN_EXE_gridgate"))
        .arg("seed")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--demo"));
}

/// Without authentication the server only listens on loopback, unless told otherwise (the
/// refusal comes before binding: tests never listen beyond loopback).
#[test]
fn unauthenticated_serving_is_loopback_only() {
    let cli = Cli::new(Backend::Embedded);
    let (_, stderr) = cli.run_failing(&["serve", "--listen", "0.0.0.0:0"]);
    assert!(stderr.contains("--allow-unauthenticated"), "{stderr}");
    assert!(stderr.contains("--auth jwt"), "{stderr}");
}

const SECRET: &str = "cli-test-secret-cli-test-secret-xx";

/// `gridgate token` mints a development token that `serve --auth jwt` accepts.
#[tokio::test]
async fn minted_tokens_authenticate() {
    let cli = Cli::new(Backend::Embedded);
    let out = Command::new(env!("CARGO_BIN_EXE_gridgate"))
        .args(["token", "--tenant", "tenant-0807", "--scope", "grid:read"])
        .env("GRIDGATE_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let (server, url) = cli.serve_with(&["--auth", "jwt"], &[("GRIDGATE_JWT_SECRET", SECRET)]);
    let query = serde_json::json!({ "query": "{ tenant(id: \"tenant-0807\") { name } }" });
    let client = reqwest::Client::new();
    let anonymous = client.post(&url).json(&query).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let body: Value = client
        .post(&url)
        .bearer_auth(&token)
        .json(&query)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["data"]["tenant"]["name"], "ACME Engineering", "{body}");
    // Its own tenant only.
    let other: Value = client
        .post(&url)
        .bearer_auth(&token)
        .json(&serde_json::json!({ "query": "{ tenant(id: \"tenant-3cc8\") { name } }" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(other["data"]["tenant"], Value::Null, "{other}");
    drop(server);
}

/// `--auth jwt` without a key, or with a short secret, does not start.
#[test]
fn jwt_needs_a_key() {
    let cli = Cli::new(Backend::Embedded);
    let (_, stderr) = cli.run_failing(&["serve", "--listen", "127.0.0.1:0", "--auth", "jwt"]);
    assert!(stderr.contains("--jwt-secret"), "{stderr}");
    let (_, stderr) = cli.run_failing(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--auth",
        "jwt",
        "--jwt-secret",
        "short",
    ]);
    assert!(stderr.contains("32 bytes"), "{stderr}");
}

/// SIGTERM: the server stops accepting, drains and exits 0 (within the grace period; the
/// loop below only guards against a hang).
#[cfg(unix)]
#[tokio::test]
async fn sigterm_stops_the_server() {
    let cli = Cli::new(Backend::Embedded);
    let (mut server, url) = cli.serve_with(&["--shutdown-grace-ms", "2000"], &[]);
    let body = post_query(&url, "{ __typename }").await;
    assert_eq!(body["data"]["__typename"], "Query");
    let mut child = server.0.take().expect("the server process");
    let pid = child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    // A hang guard, far above the 2 s grace period: the server must exit by itself.
    let Ok(exited) = rx.recv_timeout(std::time::Duration::from_secs(60)) else {
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
        panic!("the server did not exit after SIGTERM");
    };
    let status = exited.unwrap();
    assert!(status.success(), "{status:?}");
    // It no longer accepts connections.
    assert!(reqwest::Client::new().post(&url).send().await.is_err());
}

/// `serve` answers `/metrics` in the Prometheus text format, unless `--metrics false` (or its
/// variable) turns metrics off.
#[tokio::test]
async fn metrics_are_served_unless_turned_off() {
    let client = reqwest::Client::new();
    for (flags, env, status) in [
        (&[][..], &[][..], 200),
        (&["--metrics", "false"][..], &[][..], 404),
        (&[][..], &[("GRIDGATE_METRICS", "off")][..], 404),
    ] {
        let cli = Cli::new(Backend::Embedded);
        let (server, url) = cli.serve_with(flags, env);
        post_query(&url, "{ __typename }").await;
        let metrics_url = url.replace("/graphql", "/metrics");
        let response = client.get(&metrics_url).send().await.expect("GET /metrics");
        assert_eq!(response.status(), status, "{flags:?} {env:?}");
        if status == 200 {
            let text = response.text().await.unwrap();
            assert!(
                text.contains("gridgate_requests_total{code=\"ok\",type=\"query\"} 1\n"),
                "{text}"
            );
        }
        drop(server);
    }
}

/// Without the `otlp` feature, asking for OTLP export is refused with a reason, by flag or by
/// variable (a variable silently ignored would leave an operator without traces).
#[cfg(not(feature = "otlp"))]
#[test]
fn otlp_export_needs_the_feature() {
    for (flags, env) in [
        (&["--otlp-endpoint", "http://127.0.0.1:4318"][..], &[][..]),
        (
            &[][..],
            &[("GRIDGATE_OTLP_ENDPOINT", "http://127.0.0.1:4318")][..],
        ),
    ] {
        let cli = Cli::new(Backend::Embedded);
        let mut sub = vec!["serve", "--listen", "127.0.0.1:0"];
        sub.extend(flags);
        let out = cli
            .command(&sub)
            .envs(env.iter().copied())
            .output()
            .expect("run gridgate");
        assert!(!out.status.success(), "{flags:?} {env:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--features otlp"), "{stderr}");
    }
}
