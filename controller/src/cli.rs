//! What the user typed: the `chio` command tree as clap derive types.
//!
//! The tree is `chio <group> <command>`; today the only group is `arena`
//! and its only command `validate`. A later command is one more variant in
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
