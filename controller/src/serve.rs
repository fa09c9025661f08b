//! `chio node serve` and `chio trust serve`: the serving processes of a
//! distributed arena, in the `chio` binary so one executable runs every role.
//!
//! Each command turns its flags into the options of the library that owns
//! the role (`chio_node::daemon`, `chio_trust::daemon`), runs it until
//! SIGTERM, ctrl-c or (for a node) the controller's `Shutdown`, and maps a
//! refusal of its configuration to exit 2 and any other failure to exit 3.
//! `chio trust serve` is the only way to run trust-control as a process: its
//! flags, exit codes, `error[CODE]` block and shutdown are the `chio`
//! binary's, like every other command.

use chio_node::daemon::NodeServeOptions;
use chio_node::NodeError;
use chio_trust::daemon::{ServeOptions, TOKEN_ENV};
use chio_trust::TrustError;

use crate::arena_run::runtime;
use crate::cli::{NodeServeArgs, TrustServeArgs};
use crate::error::{codes, CliError};

const NODE_COMMAND: &str = "node serve";
const TRUST_COMMAND: &str = "trust serve";

/// The error code of a serving process refused at start-up.
pub const SERVE_CONFIG: &str = codes::SERVE_CONFIG.code;

fn config_error(command: &'static str, message: String) -> CliError {
    CliError::new(
        codes::SERVE_CONFIG,
        command,
        message,
        "fix the flags or files the message names and start the process again",
    )
}

/// Runs `chio node serve` until shutdown.
pub fn node(args: &NodeServeArgs) -> Result<(), CliError> {
    let options = NodeServeOptions {
        name: args.name.clone(),
        listen: args.listen,
        cluster_token_file: args.cluster_token_file.clone(),
        control_url: args.control_url.clone(),
        control_token_file: args.control_token_file.clone(),
        state_dir: args.state_dir.clone(),
        receipt_deadline_ms: args.receipt_deadline_ms,
        store_deadline_ms: args.store_deadline_ms,
        link_deadline_ms: args.link_deadline_ms,
        print_addr: args.print_addr,
    };
    // Refuse a bad store choice before starting anything.
    options
        .store_choice()
        .map_err(|e| config_error(NODE_COMMAND, e.to_string()))?;
    runtime(NODE_COMMAND)?
        .block_on(chio_node::daemon::run(options, shutdown_signal()))
        .map_err(|e| match e {
            NodeError::Config { .. } => config_error(NODE_COMMAND, e.to_string()),
            other => CliError::infrastructure(NODE_COMMAND, other.to_string()),
        })
}

/// Runs `chio trust serve` until shutdown.
pub fn trust(args: &TrustServeArgs) -> Result<(), CliError> {
    let options = ServeOptions {
        db: args.db.clone(),
        listen: args.listen,
        token_file: args.token_file.clone(),
        env_token: std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()),
        print_addr: args.print_addr,
    };
    runtime(TRUST_COMMAND)?
        .block_on(chio_trust::daemon::run(options, shutdown_signal()))
        .map_err(|e| match e {
            TrustError::MissingToken
            | TrustError::WeakToken { .. }
            | TrustError::AmbiguousToken
            | TrustError::InvalidArgument { .. }
            | TrustError::ForeignDatabase { .. }
            | TrustError::UnsupportedSchema { .. }
            | TrustError::MigrationRefused { .. }
            | TrustError::UnusableFile { .. } => config_error(TRUST_COMMAND, e.to_string()),
            other => CliError::infrastructure(TRUST_COMMAND, other.to_string()),
        })
}

/// Completes on SIGTERM or ctrl-c, whichever comes first.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("ctrl-c received; shutting down"),
        () = terminate => tracing::info!("SIGTERM received; shutting down"),
    }
}
