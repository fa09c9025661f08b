//! The `chio` command-line interface: argument types, command dispatch and
//! the typed error every command reports with.
//!
//! The binary (`main.rs`) only parses arguments, sets up tracing and calls
//! [`run`]; each command lives in its own module and returns a
//! [`CliError`] that the binary renders and maps to an exit code.
//!
//! Module map:
//! - [`cli`] holds the clap command tree;
//! - [`error`] holds [`CliError`], [`Exit`] and the rendering;
//! - [`arena_validate`] holds `chio arena validate`.
#![deny(missing_docs)]

pub mod arena_validate;
pub mod cli;
pub mod error;

use std::io::Write;

pub use cli::Cli;
pub use error::{CliError, Exit};

/// Runs a parsed command line, printing its report to `out`.
pub fn run(cli: &Cli, out: &mut dyn Write) -> Result<(), CliError> {
    match &cli.command {
        cli::Command::Arena(arena) => match &arena.command {
            cli::ArenaCommand::Validate(args) => arena_validate::run(args, out),
        },
    }
}
