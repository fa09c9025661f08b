//! `chio import ...`: the importers' arguments.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Subcommand};

/// A flag value that is a scenario id.
fn scenario_id(text: &str) -> Result<String, String> {
    if chio_arena::scenario::is_valid_id(text) {
        Ok(text.to_string())
    } else {
        Err("an id has 1 to 128 characters, uses only A-Z, a-z, 0-9, _, . and -, and is not . or ..".into())
    }
}

/// `chio import ...`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// What to import.
    #[command(subcommand)]
    pub command: ImportCommand,
}

/// Commands under `chio import`.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Print a recorded server's declaration from an MCP tools/list result, saved or listed live.
    Mcp(ImportMcpArgs),
    /// Write a scenario replaying a recorded trace's tool calls.
    Trace(ImportTraceArgs),
}

/// `chio import mcp`: exactly one of TOOLS.json and `--command` says where
/// the tools come from.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["tools", "command"])))]
pub struct ImportMcpArgs {
    /// The tools/list result: a JSON-RPC response or its result object.
    #[arg(value_name = "TOOLS.json")]
    pub tools: Option<PathBuf>,
    /// Start this MCP server over stdio and list its tools (split like a
    /// shell would, run without one).
    #[arg(long, value_name = "CMD ARGS...")]
    pub command: Option<String>,
    /// The id of the server to declare.
    #[arg(long, value_name = "SERVER", value_parser = scenario_id)]
    pub id: String,
    /// The kernel that serves the server.
    #[arg(long, value_name = "K", default_value = "kernel-a", value_parser = scenario_id)]
    pub kernel: String,
    /// Write the declaration to FILE instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// With --command: the wall time, in milliseconds, the server has to
    /// answer the handshake and list every tool (1 to 600000; default 10000).
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "tools",
        value_parser = clap::value_parser!(u64).range(1..=600_000)
    )]
    pub timeout_ms: Option<u64>,
    /// Refuse (exit 2) instead of warning when a definition is flagged as
    /// tool poisoning.
    #[arg(long)]
    pub deny_poisoned: bool,
}

/// `chio import trace`.
#[derive(Debug, Args)]
pub struct ImportTraceArgs {
    /// The trace: an MCP session log (one JSON-RPC message per line), or an
    /// OpenAI or Anthropic transcript (one JSON request body).
    #[arg(value_name = "FILE")]
    pub trace: PathBuf,
    /// The trace's format: mcp, openai or anthropic.
    #[arg(long, value_name = "FORMAT")]
    pub format: String,
    /// The folder to write scenario.toml and its prompt into (made if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The scenario's id.
    #[arg(long, value_name = "ID", default_value = "imported_trace", value_parser = scenario_id)]
    pub id: String,
    /// Refuse (exit 2) instead of warning when a definition is flagged as
    /// tool poisoning.
    #[arg(long)]
    pub deny_poisoned: bool,
}
