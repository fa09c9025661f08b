//! What the user typed: the `chio` command tree as clap derive types.
//!
//! The tree is `chio <group> <command>`; today the only group is `arena`
//! with `validate`, `run`, `replay` and `diff`. A later command is one more variant in
//! [`ArenaCommand`] (or a new group in [`Command`]) plus its module; nothing
//! else changes shape.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// The `chio` command line.
#[derive(Debug, Parser)]
#[command(
    name = "chio",
    version,
    about = "Chio Arena: replayable authorization scenarios"
)]
pub struct Cli {
    /// The command group to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level command groups.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scenario commands.
    Arena(ArenaArgs),
    /// Evaluate a capability against a request from a JSON envelope (portable evaluation).
    Eval(EvalArgs),
}

/// `chio arena ...`.
#[derive(Debug, Args)]
pub struct ArenaArgs {
    /// The arena command to run.
    #[command(subcommand)]
    pub command: ArenaCommand,
}

/// Commands under `chio arena`.
#[derive(Debug, Subcommand)]
pub enum ArenaCommand {
    /// Load and validate a scenario and print its determinism witness.
    Validate(ValidateArgs),
    /// Run a scenario against the real kernel and write its evidence bundle.
    Run(RunArgs),
    /// Re-evaluate a bundle and report drift by step.
    Replay(ReplayArgs),
    /// Name the first step where two bundles differ and the input that changed.
    Diff(DiffArgs),
}

/// `chio arena validate FILE [--json]`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The scenario file; fixture folders resolve next to it.
    pub file: PathBuf,
    /// Print canonical JSON (`chio.arena.validate/v1`) instead of a summary.
    #[arg(long)]
    pub json: bool,
}

/// `chio arena run FILE [--json] [--out DIR] [--keep-going]`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file; fixture folders resolve next to it.
    pub file: PathBuf,
    /// Print canonical JSON (`chio.arena.run/v1`) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The bundle folder (default `target/arena/<scenario-id>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run every step and report all mismatches instead of stopping at the first.
    #[arg(long)]
    pub keep_going: bool,
}

/// `chio arena replay DIR [--json]`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The bundle folder a run wrote.
    pub dir: PathBuf,
    /// Print canonical JSON (`chio.arena.replay/v1`).
    #[arg(long)]
    pub json: bool,
}

/// `chio arena diff A B [--json]`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first bundle folder.
    pub left: PathBuf,
    /// The second bundle folder.
    pub right: PathBuf,
    /// Print canonical JSON (`chio.arena.diff/v1`).
    #[arg(long)]
    pub json: bool,
}

/// `chio eval [ENVELOPE.json | -] [--json] [--now-unix-secs N]`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The envelope file; `-` or nothing reads standard input.
    pub envelope: Option<String>,
    /// Print the answer as canonical JSON.
    #[arg(long)]
    pub json: bool,
    /// The clock, in Unix seconds, when the envelope has no `clock_override_unix_secs`.
    #[arg(long)]
    pub now_unix_secs: Option<u64>,
}
