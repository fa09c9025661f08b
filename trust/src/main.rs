//! The `chio-trust` binary: parses arguments, sets up tracing, and runs the
//! trust-control service until SIGTERM or ctrl-c.
//!
//! Exit codes: 0 after a clean shutdown; 2 for invalid input (arguments, a
//! missing, empty or short token, a database that is not trust-control's);
//! 3 for an infrastructure failure (the address cannot be bound, the disk
//! fails). Errors go to stderr as `error: ...`; logs follow `RUST_LOG`.
//!
//! Module map: everything lives in the `chio_trust` library; see `daemon::run`.

#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use chio_trust::daemon::{run, ServeOptions, TOKEN_ENV};
use chio_trust::TrustError;
use clap::{Parser, Subcommand};

/// Trust-control for Chio Arena: shared issuer keys, revocations, budgets,
/// sibling shares, receipts and retained labels, over authenticated gRPC.
#[derive(Debug, Parser)]
#[command(name = "chio-trust", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve trust-control over a SQLite database until SIGTERM or ctrl-c.
    Serve {
        /// SQLite database file (created when absent; WAL, synchronous=FULL).
        #[arg(long, value_name = "FILE")]
        db: PathBuf,
        /// Address to listen on; port 0 picks a free port.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// File holding the bearer token (at least 16 printable characters);
        /// CHIO_TRUST_TOKEN may carry it instead.
        #[arg(long, value_name = "FILE")]
        token_file: Option<PathBuf>,
        /// Print `listening on ADDR` on stdout once the socket is bound.
        #[arg(long)]
        print_addr: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let Command::Serve {
        db,
        listen,
        token_file,
        print_addr,
    } = cli.command;
    let options = ServeOptions {
        db,
        listen,
        token_file,
        env_token: std::env::var(TOKEN_ENV)
            .ok()
            .filter(|token| !token.is_empty()),
        print_addr,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: trust-control could not start its runtime: {error}");
            return ExitCode::from(3);
        }
    };
    match runtime.block_on(run(options, shutdown_signal())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(exit_code(&error))
        }
    }
}

/// 2 for what the operator must fix in the invocation, 3 for the machine.
fn exit_code(error: &TrustError) -> u8 {
    match error {
        TrustError::MissingToken
        | TrustError::WeakToken { .. }
        | TrustError::AmbiguousToken
        | TrustError::InvalidArgument { .. }
        | TrustError::ForeignDatabase { .. }
        | TrustError::UnsupportedSchema { .. } => 2,
        _ => 3,
    }
}

/// Completes on SIGTERM or ctrl-c, whichever comes first.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::warn!(%error, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("ctrl-c received; shutting down"),
        () = terminate => tracing::info!("SIGTERM received; shutting down"),
    }
}
