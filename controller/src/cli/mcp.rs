//! `chio mcp ...`: the MCP edge's arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `chio mcp ...`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The MCP edge command to run.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// Commands under `chio mcp`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// The edge's authority key file.
    Authority(AuthorityArgs),
    /// Issue a capability for a client's Ed25519 key; prints the token.
    Grant(GrantArgs),
    /// Revoke a capability in trust-control.
    Revoke(RevokeArgs),
    /// Serve MCP in front of upstream MCP servers, every call admitted by the kernel.
    Serve(ServeArgs),
}

/// `chio mcp authority ...`.
#[derive(Debug, Args)]
pub struct AuthorityArgs {
    /// The authority command to run.
    #[command(subcommand)]
    pub command: AuthorityCommand,
}

/// Commands under `chio mcp authority`.
#[derive(Debug, Subcommand)]
pub enum AuthorityCommand {
    /// Create a new authority file (mode 0600); prints the public keys only.
    New {
        /// The file to create; an existing file is never overwritten.
        file: PathBuf,
    },
}

/// `chio mcp grant`.
#[derive(Debug, Args)]
pub struct GrantArgs {
    /// The edge's authority file (`chio mcp authority new`).
    #[arg(long, value_name = "FILE")]
    pub authority: PathBuf,
    /// The client's Ed25519 public key: 64 hex characters, or a file holding them.
    #[arg(long, value_name = "PUBKEY_HEX_OR_FILE")]
    pub client_key: String,
    /// The upstream id the capability covers (an `--upstream ID=...` of `chio mcp serve`).
    #[arg(long, value_name = "ID")]
    pub server: String,
    /// The tools granted, comma-separated (`*` for every tool of the server).
    #[arg(long, value_name = "A,B", value_delimiter = ',', required = true)]
    pub tools: Vec<String>,
    /// Invocation budget of the capability (unlimited when absent).
    #[arg(long, value_name = "N")]
    pub max_calls: Option<u64>,
    /// Seconds from now the capability stays valid.
    #[arg(long, value_name = "N", default_value_t = 86_400)]
    pub expires_in_secs: u64,
    /// The capability id (derived from the grant's content when absent).
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
}

/// Where trust-control is, for `serve` and `revoke`.
#[derive(Debug, Clone, Args)]
pub struct ControlArgs {
    /// Trust-control's URL (http://HOST:PORT).
    #[arg(long, value_name = "URL")]
    pub control_url: Option<String>,
    /// File holding trust-control's bearer token.
    #[arg(long, value_name = "FILE")]
    pub control_token_file: Option<PathBuf>,
    /// The namespace every id the edge writes to trust-control is prefixed with.
    #[arg(long, value_name = "NAME", default_value = "mcp-edge")]
    pub namespace: String,
}

/// `chio mcp revoke`.
#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// Trust-control and the edge's namespace.
    #[command(flatten)]
    pub control: ControlArgs,
    /// The capability id to revoke (printed by `chio mcp grant` on standard error).
    #[arg(long, value_name = "ID")]
    pub capability: String,
}

/// `chio mcp serve`: exactly one of `--stdio` and `--listen`.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("transport").required(true).multiple(false))]
pub struct ServeArgs {
    /// An upstream MCP server: `ID=CMD ARGS...` (split as a shell would, no shell runs it).
    #[arg(long, value_name = "ID=\"CMD ARGS...\"", required = true)]
    pub upstream: Vec<String>,
    /// The edge's authority file (`chio mcp authority new`).
    #[arg(long, value_name = "FILE")]
    pub authority: PathBuf,
    /// Trust-control and the edge's namespace.
    #[command(flatten)]
    pub control: ControlArgs,
    /// Serve MCP on standard input and output.
    #[arg(long, group = "transport")]
    pub stdio: bool,
    /// Serve MCP's streamable HTTP transport at http://ADDR/mcp (a loopback address unless --allow-non-loopback).
    #[arg(long, value_name = "ADDR:PORT", group = "transport")]
    pub listen: Option<std::net::SocketAddr>,
    /// Accept a --listen address that is not loopback.
    #[arg(long, requires = "listen")]
    pub allow_non_loopback: bool,
    /// A Host header the HTTP server accepts besides loopback's (repeatable), such as the name a proxy forwards.
    #[arg(long, value_name = "HOST", requires = "listen")]
    pub allowed_host: Vec<String>,
    /// The guards the edge's kernel runs and the labels of its upstreams' answers: a TOML file of [[guards]] and [[servers]] entries, as a scenario writes them.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Write the session (calls, verdicts, receipts, declared tools) to this new folder.
    #[arg(long, value_name = "DIR")]
    pub session_out: Option<PathBuf>,
    /// Oldest signed request accepted, in milliseconds of wall time.
    #[arg(long, value_name = "MS", default_value_t = 300_000)]
    pub max_request_age_ms: u64,
    /// Largest JSON-RPC message (stdio) or request body (HTTP) read, in bytes; a longer one is refused unread.
    #[arg(long, value_name = "BYTES", default_value_t = 1_048_576)]
    pub max_message_bytes: usize,
    /// Largest canonical size of one call's arguments, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 65_536)]
    pub max_argument_bytes: usize,
    /// Deadline of an upstream call and of an upstream's start, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    pub upstream_timeout_ms: u64,
}
