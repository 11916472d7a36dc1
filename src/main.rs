//! The `gridgate` binary: parses the command line, sets tracing up and hands over to the
//! library.

use clap::Parser;

/// mimalloc rather than glibc's malloc: a grid page allocates thousands of small objects and
/// frees them when the response is written, the pattern mimalloc's free lists are made for.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = gridgate::cli::Cli::parse();
    // Before the runtime: the OTLP exporter's blocking HTTP client must not be built inside it.
    let tracing = match gridgate::telemetry::init_tracing(cli.otlp_endpoint().as_deref()) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("gridgate: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the async runtime");
    let result = runtime.block_on(gridgate::cli::run(cli));
    drop(runtime);
    // Outside the runtime: flushing spans blocks.
    tracing.shutdown();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gridgate: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
