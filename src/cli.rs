//! The command line: `serve`, `table create`, `seed`, `verify`, `reindex` and `schema`, each
//! flag also read from a `GRIDGATE_*` environment variable.

use std::net::SocketAddr;

use clap::builder::BoolishValueParser;
use clap::{Args, Parser, Subcommand};

use crate::app::{self, Settings};
use crate::config::StoreConfig;
use crate::ids::ProjectId;
use crate::paging::Limits;
use crate::repo::verify;
use crate::seed::{self, Synthetic};

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
    Serve(ServeArgs),
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
    /// Print the GraphQL schema (SDL).
    Schema,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub store: StoreConfig,
    /// Only this project (default: the whole table).
    #[arg(long)]
    pub project: Option<String>,
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
        Command::Serve(args) => serve(args).await,
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
        Command::Schema => {
            print!("{}", crate::graphql::sdl());
            Ok(())
        }
    }
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
    let store = args.store.open().await?;
    if !args.no_demo && seed::demo_if_missing(&store).await? {
        tracing::info!("loaded the demo data into the empty store");
    }
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, store = store.name(), "serving GraphQL at http://{addr}/graphql");
    eprintln!("gridgate listening on http://{addr}/graphql");
    let settings = Settings {
        limits: Limits {
            max_filtered_reads: args.max_filtered_reads as usize,
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
    Ok(())
}
