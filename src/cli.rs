//! The command line: `serve`, `table create`, `seed`, `verify`, `reindex`, `export`, `schema`
//! and `token`, each flag also read from a `GRIDGATE_*` environment variable.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand};

use crate::app::{self, Settings};
use crate::auth::{AuthArgs, Authenticator};
use crate::config::StoreConfig;
use crate::export::{Export, ExportList, ExportOptions, ExportRequest, Format, Reader};
use crate::graphql::analysis::QueryLimits;
use crate::graphql::GatewayOptions;
use crate::http::admission::{Rate, Shares};
use crate::http::{ExportLimits, HttpLimits};
use crate::ids::{ProjectId, TenantId};
use crate::paging::{CursorKeys, Limits};
use crate::repo::verify;
use crate::seed::{self, Synthetic};
use crate::store::embedded::compact::WhenItPays;
use crate::telemetry::TelemetryOptions;

/// Default of `--max-filtered-reads` (the same as [`Limits::default`]).
const DEFAULT_MAX_FILTERED_READS: u32 = 1000;

#[derive(Debug, Parser)]
#[command(
    name = "gridgate",
    version,
    about = "GraphQL gateway serving sorted, paged grid views out of one DynamoDB table"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the GraphQL API (the default when no command is given).
    Serve(Box<ServeArgs>),
    /// Manage the table.
    Table {
        #[command(subcommand)]
        action: TableAction,
    },
    /// Load data into the store.
    Seed(SeedArgs),
    /// Re-derive every index row and GSI1SK from the source rows and print each mismatch;
    /// exits non-zero when there is any.
    Verify(CheckArgs),
    /// Rewrite the derived rows (index rows, GSI1SK) from the source rows; idempotent, so an
    /// interrupted run is finished by running it again.
    Reindex(CheckArgs),
    /// Compact the embedded store's file (with the server stopped) and report its size before
    /// and after, beside the size of the items it holds.
    Compact(CompactArgs),
    /// Write a project's issues (an order and a filter, or a saved view) as CSV or NDJSON,
    /// the same bytes as `GET /export`, read with unrestricted access.
    Export(ExportArgs),
    /// Print the GraphQL schema (SDL).
    Schema,
    /// Mint an HS256 token for development, signed with --jwt-secret (GRIDGATE_JWT_SECRET).
    Token(TokenArgs),
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    /// The tenant the caller belongs to (`tenant-…`).
    #[arg(long)]
    pub tenant: String,
    /// Space-separated scopes: grid:read, grid:write, grid:admin.
    #[arg(long, default_value = "grid:read grid:write")]
    pub scope: String,
    /// The token's subject.
    #[arg(long, default_value = "developer")]
    pub subject: String,
    /// Lifetime in seconds.
    #[arg(long, default_value_t = 3600)]
    pub ttl: u64,
    #[arg(long, env = "GRIDGATE_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: String,
    #[arg(long, env = "GRIDGATE_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,
    #[arg(long, env = "GRIDGATE_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub store: StoreConfig,
    /// Only this project (default: the whole table).
    #[arg(long)]
    pub project: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    #[command(flatten)]
    pub store: StoreConfig,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub store: StoreConfig,
    /// The project (`project-…`).
    #[arg(long)]
    pub project: String,
    /// A saved view of the project (`xview-…`): its order, filter and columns.
    #[arg(long, conflicts_with_all = ["order", "filter"])]
    pub view: Option<String>,
    /// The order, as the JSON of `Project.issues`'s `orderBy` (an `IssueOrder`), e.g.
    /// '{"field": "NAME", "direction": "DESC"}'.
    #[arg(long, alias = "order-by")]
    pub order: Option<String>,
    /// The filter, as the JSON of `Project.issues`'s `filter` (an `IssueFilter`).
    #[arg(long)]
    pub filter: Option<String>,
    /// `csv` or `ndjson`.
    #[arg(long, default_value = "csv", value_parser = ["csv", "ndjson"])]
    pub format: String,
    /// Where to write: a file (written beside as `<file>.partial` and renamed once the export
    /// is whole), or standard output (the default).
    #[arg(long)]
    pub output: Option<std::path::PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum TableAction {
    /// Create the table and GSI1 if missing, and wait until they are active.
    Create(TableArgs),
}

#[derive(Debug, Args)]
pub struct TableArgs {
    #[command(flatten)]
    pub store: StoreConfig,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "GRIDGATE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub store: StoreConfig,
    /// Do not load the demo data into an empty store (the variable takes true/false, 1/0,
    /// yes/no, on/off).
    #[arg(long, env = "GRIDGATE_NO_DEMO", value_parser = BoolishValueParser::new())]
    pub no_demo: bool,
    /// The most items one request may read to find issues without a value (custom-field
    /// sorts) before its lists return shorter pages.
    #[arg(long, env = "GRIDGATE_MAX_FILTERED_READS", default_value_t = DEFAULT_MAX_FILTERED_READS, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_filtered_reads: u32,
    #[command(flatten)]
    pub auth: AuthArgs,
    /// The key that signs cursors (at least 32 bytes); give every instance behind a load
    /// balancer the same one. Default: a random key per process.
    #[arg(long, env = "GRIDGATE_CURSOR_KEY", hide_env_values = true)]
    pub cursor_key: Option<String>,
    /// The previous cursor key, still accepted while clients hold cursors signed with it.
    #[arg(long, env = "GRIDGATE_CURSOR_PREVIOUS_KEY", hide_env_values = true)]
    pub cursor_previous_key: Option<String>,
    /// Answer introspection queries (GraphiQL and codegen need them).
    #[arg(long, env = "GRIDGATE_INTROSPECTION", default_value_t = true, action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub introspection: bool,
    /// Record Prometheus metrics and serve them at /metrics on the listen address, without
    /// authentication (an operator endpoint: aggregate counts only; keep it off the public
    /// path). `--metrics false` turns both off.
    #[arg(long, env = "GRIDGATE_METRICS", default_value_t = true, action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub metrics: bool,
    /// Say in each response how its filtered pages were read (`extensions.plan`: partitions,
    /// key conditions, rows read against rows returned). For debugging: it shows the layout's
    /// partition names.
    #[arg(long, env = "GRIDGATE_EXPLAIN_PLANS", default_value_t = false, action = clap::ArgAction::Set, value_parser = BoolishValueParser::new())]
    pub explain_plans: bool,
    /// Export tracing spans (requests, and their DynamoDB calls) to this OTLP/HTTP collector,
    /// e.g. http://127.0.0.1:4318. Needs a build with `--features otlp`; refused otherwise.
    #[arg(long, env = "GRIDGATE_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Abuse limits; the defaults are explained in ARCHITECTURE.md ("Hostile input").
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Most estimated cost of a query (fields, times page sizes and id counts).
    #[arg(long, env = "GRIDGATE_MAX_QUERY_COST")]
    pub max_query_cost: Option<u64>,
    /// Deepest field nesting.
    #[arg(long, env = "GRIDGATE_MAX_DEPTH")]
    pub max_depth: Option<usize>,
    /// Most aliased fields per request.
    #[arg(long, env = "GRIDGATE_MAX_ALIASES")]
    pub max_aliases: Option<usize>,
    /// Most root fields per request.
    #[arg(long, env = "GRIDGATE_MAX_ROOT_FIELDS")]
    pub max_root_fields: Option<usize>,
    /// Most directives per request.
    #[arg(long, env = "GRIDGATE_MAX_DIRECTIVES")]
    pub max_directives: Option<usize>,
    /// Most lexical tokens in a document.
    #[arg(long, env = "GRIDGATE_MAX_TOKENS")]
    pub max_tokens: Option<usize>,
    /// Most DynamoDB calls per request.
    #[arg(long, env = "GRIDGATE_MAX_CALLS", default_value_t = crate::graphql::DEFAULT_MAX_CALLS)]
    pub max_calls: u64,
    /// Most read capacity units per request.
    #[arg(long, env = "GRIDGATE_MAX_READ_UNITS", default_value_t = crate::graphql::DEFAULT_MAX_READ_UNITS)]
    pub max_read_units: f64,
    /// Per-request timeout, in milliseconds.
    #[arg(long, env = "GRIDGATE_REQUEST_TIMEOUT_MS")]
    pub request_timeout_ms: Option<u64>,
    /// GraphQL requests in flight before 503.
    #[arg(long, env = "GRIDGATE_MAX_IN_FLIGHT")]
    pub max_in_flight: Option<usize>,
    /// Requests one caller (a tenant; the unauthenticated traffic counts as one more) may have
    /// in flight before it gets 429.
    #[arg(long, env = "GRIDGATE_TENANT_MAX_IN_FLIGHT", default_value_t = crate::http::admission::DEFAULT_CALLER_IN_FLIGHT)]
    pub tenant_max_in_flight: usize,
    /// Requests per second one caller may sustain before it gets 429 (0: no rate limit).
    #[arg(long, env = "GRIDGATE_TENANT_RATE", default_value_t = crate::http::admission::DEFAULT_RATE_PER_SECOND)]
    pub tenant_rate: u32,
    /// Requests one caller may send at once beyond its rate (the bucket's size).
    #[arg(long, env = "GRIDGATE_TENANT_BURST", default_value_t = crate::http::admission::DEFAULT_BURST,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub tenant_burst: u32,
    /// Estimated query cost one caller may spend per second, sustained (0: no limit); a query
    /// is charged the cost `--max-query-cost` judges.
    #[arg(long, env = "GRIDGATE_TENANT_COST_RATE", default_value_t = crate::http::admission::DEFAULT_COST_PER_SECOND)]
    pub tenant_cost_rate: u32,
    /// Query cost one caller may spend at once beyond its cost rate (the bucket's size); keep
    /// it above `--max-query-cost`, or the costliest admitted queries can never run.
    #[arg(long, env = "GRIDGATE_TENANT_COST_BURST", default_value_t = crate::http::admission::DEFAULT_COST_BURST,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub tenant_cost_burst: u32,
    /// Largest request body, in bytes.
    #[arg(long, env = "GRIDGATE_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// How long requests in flight may finish after SIGTERM, in milliseconds.
    #[arg(long, env = "GRIDGATE_SHUTDOWN_GRACE_MS")]
    pub shutdown_grace_ms: Option<u64>,
    /// Exports (`GET /export`) one caller may run at once before it gets 429.
    #[arg(long, env = "GRIDGATE_TENANT_MAX_EXPORTS", default_value_t = crate::http::DEFAULT_EXPORTS_PER_CALLER)]
    pub tenant_max_exports: usize,
    /// Exports the server runs at once before it answers 503.
    #[arg(long, env = "GRIDGATE_MAX_EXPORTS", default_value_t = crate::http::DEFAULT_EXPORTS)]
    pub max_exports: usize,
    /// How long one export may take, in milliseconds; one that takes longer is stopped.
    #[arg(long, env = "GRIDGATE_EXPORT_TIMEOUT_MS", default_value_t = crate::http::DEFAULT_EXPORT_TIME_LIMIT.as_millis() as u64)]
    pub export_timeout_ms: u64,
}

impl LimitArgs {
    fn query_limits(&self) -> QueryLimits {
        let d = QueryLimits::default();
        QueryLimits {
            max_cost: self.max_query_cost.unwrap_or(d.max_cost),
            max_depth: self.max_depth.unwrap_or(d.max_depth),
            max_aliases: self.max_aliases.unwrap_or(d.max_aliases),
            max_root_fields: self.max_root_fields.unwrap_or(d.max_root_fields),
            max_directives: self.max_directives.unwrap_or(d.max_directives),
            max_tokens: self.max_tokens.unwrap_or(d.max_tokens),
        }
    }

    fn http_limits(&self) -> HttpLimits {
        let d = HttpLimits::default();
        let ms = |v: Option<u64>, default| v.map_or(default, Duration::from_millis);
        HttpLimits {
            request_timeout: ms(self.request_timeout_ms, d.request_timeout),
            max_in_flight: self.max_in_flight.unwrap_or(d.max_in_flight).max(1),
            shares: Shares {
                caller_in_flight: self.tenant_max_in_flight.max(1),
                rate: Rate::per_second(self.tenant_rate, self.tenant_burst),
                cost_rate: Rate::per_second(self.tenant_cost_rate, self.tenant_cost_burst),
            },
            max_body_bytes: self.max_body_bytes.unwrap_or(d.max_body_bytes),
            shutdown_grace: ms(self.shutdown_grace_ms, d.shutdown_grace),
            exports: ExportLimits {
                per_caller: self.tenant_max_exports,
                total: self.max_exports,
                time_limit: Duration::from_millis(self.export_timeout_ms),
                ..d.exports.clone()
            },
            ..d
        }
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("kind").required(true).args(["demo", "synthetic"])))]
pub struct SeedArgs {
    #[command(flatten)]
    pub store: StoreConfig,
    /// Load the design's demo data.
    #[arg(long, env = "GRIDGATE_SEED_DEMO", value_parser = BoolishValueParser::new())]
    pub demo: bool,
    /// Generate synthetic projects; prints one JSON line per project.
    #[arg(long, env = "GRIDGATE_SEED_SYNTHETIC", value_parser = BoolishValueParser::new())]
    pub synthetic: bool,
    /// Synthetic: number of projects.
    #[arg(long, env = "GRIDGATE_SEED_PROJECTS", default_value_t = 1)]
    pub projects: u32,
    /// Synthetic: issues per project.
    #[arg(long, env = "GRIDGATE_SEED_ISSUES", default_value_t = 1000)]
    pub issues: u32,
    /// Synthetic: custom fields per project.
    #[arg(long, env = "GRIDGATE_SEED_FIELDS", default_value_t = 8)]
    pub fields: u32,
    /// Synthetic: random seed (same seed, same data and ids).
    #[arg(long, env = "GRIDGATE_SEED", default_value_t = 1)]
    pub seed: u64,
}

impl Cli {
    /// Where to export spans (`serve --otlp-endpoint`), for `main` to set tracing up before
    /// anything runs. Without a command, `serve`'s from the environment.
    pub fn otlp_endpoint(&self) -> Option<String> {
        match &self.command {
            Some(Command::Serve(args)) => args.otlp_endpoint.clone(),
            Some(_) => None,
            None => match Cli::try_parse_from(["gridgate", "serve"]) {
                Ok(Cli {
                    command: Some(Command::Serve(args)),
                }) => args.otlp_endpoint,
                _ => None,
            },
        }
    }
}

/// Errors that end a command; printed by `main`.
pub type CliError = Box<dyn std::error::Error + Send + Sync>;

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> Result<(), CliError> {
    let command = match cli.command {
        Some(command) => command,
        // No subcommand: serve with flags from the environment and defaults.
        None => match Cli::try_parse_from(["gridgate", "serve"])?.command {
            Some(command) => command,
            None => return Err("no command".into()),
        },
    };
    match command {
        Command::Serve(args) => serve(*args).await,
        Command::Table {
            action: TableAction::Create(args),
        } => {
            let store = args.store.open().await?;
            create_table_when_reachable(store.as_ref()).await?;
            eprintln!("table {} is ready", args.store.table);
            Ok(())
        }
        Command::Seed(args) => seed_command(args).await,
        Command::Verify(args) => {
            let (store, project) = check_target(&args).await?;
            let found = verify::verify(&store, project.as_ref()).await?;
            for mismatch in &found {
                println!("{mismatch}");
            }
            eprintln!("{} mismatches", found.len());
            if found.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{} derived rows do not match their source rows",
                    found.len()
                )
                .into())
            }
        }
        Command::Reindex(args) => {
            let (store, project) = check_target(&args).await?;
            let fixed = verify::reindex(&store, project.as_ref()).await?;
            for mismatch in &fixed {
                println!("repaired {mismatch}");
            }
            eprintln!("{} derived rows repaired", fixed.len());
            Ok(())
        }
        Command::Compact(args) => compact_command(args).await,
        Command::Export(args) => export_command(args).await,
        Command::Schema => {
            print!("{}", crate::graphql::sdl());
            Ok(())
        }
        Command::Token(args) => {
            TenantId::parse(&args.tenant).map_err(|e| format!("--tenant: {e}"))?;
            let token = crate::auth::mint_hs256(
                &args.jwt_secret,
                &args.subject,
                &args.tenant,
                &args.scope,
                Duration::from_secs(args.ttl),
                args.jwt_issuer.as_deref(),
                args.jwt_audience.as_deref(),
            )?;
            println!("{token}");
            Ok(())
        }
    }
}

/// `gridgate compact`: the embedded store's file compacted, with what it holds and its size
/// before and after (in MB, and per item).
async fn compact_command(args: CompactArgs) -> Result<(), CliError> {
    args.store.check_flags()?;
    if args.store.store != crate::config::StoreKind::Embedded {
        return Err(
            "compact applies to the embedded store; DynamoDB manages its own storage".into(),
        );
    }
    let (dir, table) = (args.store.data_dir.clone(), args.store.table.clone());
    let cache_mb = args.store.cache_mb();
    let done = tokio::task::spawn_blocking(move || {
        crate::store::embedded::compact::compact(&dir, &table, cache_mb)
    })
    .await??;
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let c = &done.contents;
    println!(
        "items: {} ({:.1} MB as DynamoDB sizes them); index rows: {} ({:.1} MB); stored keys and rows: {:.1} MB",
        c.items,
        mb(c.item_bytes),
        c.index_rows,
        mb(c.index_bytes),
        mb(c.stored_bytes)
    );
    for (when, size) in [("before", done.before), ("after", done.after)] {
        println!(
            "file {when}: {:.1} MB on disk, {:.1} MB apparent; on disk {:.2} x the items and index rows",
            mb(size.on_disk),
            mb(size.apparent),
            size.on_disk as f64 / (c.item_bytes + c.index_bytes).max(1) as f64
        );
    }
    eprintln!("compacted ({} passes)", done.passes);
    Ok(())
}

/// How long `table create` keeps trying to reach a store that is still starting (DynamoDB
/// Local in a compose stack starts alongside it).
const TABLE_CREATE_ATTEMPTS: u32 = 30;

async fn create_table_when_reachable(store: &dyn crate::store::Store) -> Result<(), CliError> {
    let mut attempt = 1;
    loop {
        match store.ensure_table().await {
            Ok(()) => return Ok(()),
            Err(crate::store::StoreError::Unavailable(e)) if attempt < TABLE_CREATE_ATTEMPTS => {
                eprintln!(
                    "store not reachable yet ({e}); retrying ({attempt}/{TABLE_CREATE_ATTEMPTS})"
                );
                // Waiting on an external service that is starting up, not synchronising code.
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                attempt += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

async fn check_target(
    args: &CheckArgs,
) -> Result<(crate::store::DynStore, Option<ProjectId>), CliError> {
    let project = args
        .project
        .as_deref()
        .map(ProjectId::parse)
        .transpose()
        .map_err(|e| format!("--project: {e}"))?;
    let store = args.store.open().await?;
    if let Some(id) = &project {
        let repo = crate::repo::Repo::new(store.clone(), Limits::default());
        if repo.load_project(id, true).await?.is_none() {
            return Err(format!("--project: project {id} does not exist").into());
        }
    }
    Ok((store, project))
}

async fn serve(args: ServeArgs) -> Result<(), CliError> {
    let auth = Authenticator::from_args(&args.auth)?;
    if !auth.is_enabled() {
        if !args.listen.ip().is_loopback() && !args.auth.allow_unauthenticated {
            return Err(format!(
                "refusing to serve without authentication on {}: every caller would see every \
                 tenant. Use --auth jwt, listen on a loopback address, or pass \
                 --allow-unauthenticated for a trusted network",
                args.listen
            )
            .into());
        }
        tracing::warn!(
            "authentication is off (--auth none): every caller sees every tenant; for local \
             development only"
        );
    }
    let cursor_keys = match &args.cursor_key {
        Some(key) if key.len() < 32 => {
            return Err("--cursor-key must be at least 32 bytes".into());
        }
        Some(key) => CursorKeys::new(
            key.as_bytes().to_vec(),
            args.cursor_previous_key
                .as_ref()
                .map(|k| k.as_bytes().to_vec()),
        ),
        None => {
            if auth.is_enabled() {
                tracing::warn!(
                    "no --cursor-key: cursors are signed with a random key of this process \
                     and will not work on other instances or after a restart"
                );
            }
            CursorKeys::random()
        }
    };
    let max_cost = args.limits.query_limits().max_cost;
    if args.limits.tenant_cost_rate > 0 && u64::from(args.limits.tenant_cost_burst) < max_cost {
        return Err(format!(
            "--tenant-cost-burst ({}) is below --max-query-cost ({max_cost}): the costliest \
             queries the cost limit admits could never run",
            args.limits.tenant_cost_burst
        )
        .into());
    }
    // Nothing has the file open yet: the one moment a server can compact it.
    compact_when_it_pays(
        &args.store,
        "at start-up",
        crate::store::embedded::compact::at_start_up,
    )
    .await;
    let store = args.store.open().await?;
    if !args.no_demo && seed::demo_if_missing(&store).await? {
        tracing::info!("loaded the demo data into the empty store");
    }
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, store = store.name(), "serving GraphQL at http://{addr}/graphql");
    // One write, so a script reading stderr never sees half of the address (`eprintln!`
    // writes its pieces separately).
    let line = format!("gridgate listening on http://{addr}/graphql\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
    let settings = Settings {
        gateway: GatewayOptions {
            limits: Limits {
                max_filtered_reads: args.max_filtered_reads as usize,
            },
            cursor_keys: Arc::new(cursor_keys),
            query_limits: args.limits.query_limits(),
            max_calls: args.limits.max_calls,
            max_read_units: args.limits.max_read_units,
            introspection: args.introspection,
            explain_plans: args.explain_plans,
            ..GatewayOptions::default()
        },
        http: args.limits.http_limits(),
        auth,
        telemetry: TelemetryOptions {
            metrics: args.metrics,
        },
        ..Settings::default()
    };
    app::build(store, settings)
        .serve(listener, shutdown_signal())
        .await?;
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM (what `docker stop` and orchestrators send), so in-flight
/// requests finish before the process exits.
async fn shutdown_signal() {
    // If a signal handler cannot be installed, that signal simply ends the process as usual.
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sigterm) => {
                sigterm.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
}

async fn seed_command(args: SeedArgs) -> Result<(), CliError> {
    let store = args.store.open().await?;
    if args.demo {
        seed::demo(&store).await?;
        eprintln!("loaded the demo data");
    }
    if args.synthetic {
        let params = Synthetic {
            projects: args.projects,
            issues: args.issues,
            fields: args.fields,
            seed: args.seed,
        };
        seed::synthetic(&store, params, |project| {
            if let Ok(line) = serde_json::to_string(project) {
                println!("{line}");
            }
        })
        .await?;
    }
    // A bulk load's rows replace pages: compact the embedded file now, once nothing else has
    // it open, if that pays.
    drop(store);
    if args.synthetic {
        compact_when_it_pays(
            &args.store,
            "after the bulk load",
            crate::store::embedded::compact::after_bulk_load,
        )
        .await;
    }
    Ok(())
}

/// A compaction of the embedded store's file when it pays (`compact::after_bulk_load` or
/// `compact::at_start_up`), on the blocking pool. It is never worth failing a command for: a
/// failure is logged, and the file is used as it is.
async fn compact_when_it_pays(config: &StoreConfig, when: &'static str, compact: WhenItPays) {
    if config.store != crate::config::StoreKind::Embedded {
        return;
    }
    let (dir, table, cache_mb) = (
        config.data_dir.clone(),
        config.table.clone(),
        config.cache_mb(),
    );
    let done = tokio::task::spawn_blocking(move || compact(&dir, &table, cache_mb))
        .await
        .map_err(|e| e.to_string())
        .and_then(|done| done.map_err(|e| e.to_string()));
    match done {
        Ok(Some((before, after))) => tracing::info!(
            before_on_disk = before.on_disk,
            after_on_disk = after.on_disk,
            "compacted the file {when}"
        ),
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(error = %e, "could not compact the file {when}; it is used as it is")
        }
    }
}

/// `gridgate export`: the export module's bytes, read through a gateway over the store with
/// unrestricted access, to a file or standard output. An export that fails part-way exits
/// non-zero: on standard output NDJSON ends with its error line (as over HTTP) and CSV is cut
/// short; a file is written as `<file>.partial` and renamed only once the export is whole.
async fn export_command(args: ExportArgs) -> Result<(), CliError> {
    use std::io::Write;

    let json = |flag: &str, text: Option<&String>| -> Result<Option<serde_json::Value>, CliError> {
        text.map(|t| {
            serde_json::from_str(t).map_err(|e| format!("--{flag} is not JSON: {e}").into())
        })
        .transpose()
    };
    let list = ExportList::new(
        args.view.clone(),
        json("order", args.order.as_ref())?,
        json("filter", args.filter.as_ref())?,
    )
    .map_err(|e| format!("{e} ({})", e.code().as_str()))?;
    let format = Format::parse(&args.format).ok_or("--format must be csv or ndjson")?;
    let store = args.store.open().await?;
    let gateway = Arc::new(crate::graphql::Gateway::new(
        store,
        GatewayOptions::default(),
        None,
    ));
    let reader = Reader {
        gateway,
        access: crate::auth::Access::Unrestricted,
        cost_gate: None,
    };
    let request = ExportRequest {
        project: args.project.clone(),
        list,
        format,
    };
    let mut export = Export::start(reader, request, ExportOptions::default())
        .await
        .map_err(|e| format!("{e} ({})", e.code().as_str()))?;
    let partial = args.output.as_ref().map(|path| {
        let mut name = path.as_os_str().to_owned();
        name.push(".partial");
        std::path::PathBuf::from(name)
    });
    let mut out: Box<dyn Write + Send> = match &partial {
        Some(path) => Box::new(std::io::BufWriter::new(std::fs::File::create(path)?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout())),
    };
    let failure = loop {
        match export.next().await {
            None => break None,
            Some(Ok(chunk)) => out.write_all(&chunk)?,
            Some(Err(error)) => {
                if let Some(line) = format.error_line(&error, None) {
                    out.write_all(&line)?;
                }
                break Some(error);
            }
        }
    };
    out.flush()?;
    drop(out);
    if let (Some(partial), Some(path)) = (&partial, &args.output) {
        if failure.is_none() {
            std::fs::rename(partial, path)?;
        } else {
            std::fs::remove_file(partial)?;
        }
    }
    match failure {
        None => Ok(()),
        Some(error) => {
            Err(format!("the export stopped: {error} ({})", error.code().as_str()).into())
        }
    }
}
