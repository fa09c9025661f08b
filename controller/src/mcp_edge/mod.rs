//! The MCP edge (`chio mcp ...`): the kernel deployed in front of real MCP
//! servers.
//!
//! `chio mcp serve` is an MCP server (the SDK's server role over standard
//! input and output, or over streamable HTTP) in front of upstream MCP servers, each started as a
//! child and spoken to with the SDK's client role. Every `tools/call` is
//! admitted by the same `chio_kernel::Kernel` a run's kernel actor drives
//! (admit, dispatch, complete), its stores bound to trust-control by the
//! node's adapter (`chio_node::trust_stores`), remote with
//! `--control-url`, trust-control's in-memory store otherwise: the edge
//! adds no admission rule of its own. `chio mcp authority new`, `chio mcp
//! grant` and `chio mcp revoke` make the authority key, issue a client's
//! capability and revoke one in trust-control.
//!
//! Module map: `authority` (the authority file), `grant` (issuing,
//! revoking, the token string), `present` (what a client puts in a
//! request's `_meta`, read as untrusted input), `kernel` (the kernel's own
//! thread), `upstream` (the upstream children and their tools), `server`
//! (the MCP server role), `session` (the session folder), `scenario` (its equivalent scenario), `http` (the streamable HTTP
//! transport), `policy` (the guards and upstream labels of `--policy`),
//! `bundle` (the folder made a bundle at the session's end), `verify` (what
//! replay checks of a session folder), `serve` (start-up).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::cli::mcp::{
    AuthorityCommand, ControlArgs, GrantArgs, McpArgs, McpCommand, RevokeArgs, ServeArgs,
};
use crate::error::CliError;

pub mod authority;
pub mod budgets;
pub mod bundle;
pub(crate) mod frames;
pub mod grant;
mod http;
mod kernel;
pub mod policy;
pub mod present;
pub mod scenario;
mod serve;
mod server;
pub mod session;
mod upstream;
pub mod values;
pub mod verify;

/// The edge's one clock: the wall clock in Unix milliseconds, read once
/// per admission (and once per grant, whose window starts at its issue)
/// and recorded with the call in the session folder. It is the only clock
/// read on a path that decides, and the edge is the only such path: a run
/// reads virtual time.
pub(crate) fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Runs `chio mcp ...`.
pub fn run(args: &McpArgs, out: &mut dyn std::io::Write) -> Result<(), CliError> {
    match &args.command {
        McpCommand::Authority(a) => match &a.command {
            AuthorityCommand::New { file } => authority::run_new(file, out),
        },
        McpCommand::Grant(g) => grant::run_grant(g, out),
        McpCommand::Revoke(r) => grant::run_revoke(r, out),
        McpCommand::Serve(s) => serve::run(s),
    }
}
