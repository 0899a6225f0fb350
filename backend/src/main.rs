//! The `tower` binary. All logic lives in the library; this only wires the CLI to it.

use clap::Parser;
use tracing_subscriber::EnvFilter;

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colours for a terminal only: log files and collectors get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = tower_backend::cli::Cli::parse();
    match tower_backend::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tower: {err:#}");
            std::process::ExitCode::from(2)
        }
    }
}
