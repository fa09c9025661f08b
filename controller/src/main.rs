//! The `chio` binary: parse arguments, set up tracing (`RUST_LOG`, on
//! standard error), run the command, print a failure as the documented
//! `error[CODE]` block and exit with its documented code.
//!
//! Module map: everything lives in the `chio_controller` library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = chio_controller::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match chio_controller::run(&cli, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprint!("{}", err.render());
            ExitCode::from(err.exit.code())
        }
    }
}
