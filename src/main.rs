//! The `gridgate` binary: parses the command line and hands over to the library.

use clap::Parser;
use tracing_subscriber::EnvFilter;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,aws=warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = gridgate::cli::Cli::parse();
    match gridgate::cli::run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridgate: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
