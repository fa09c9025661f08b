//! The live half of `chio import mcp --command "CMD ARGS..."`: it starts a
//! local MCP server over stdio, lists its tools through the official MCP
//! SDK's client (`rmcp`) and hands them back as the `{"tools": [...]}` result
//! the file form reads, so one parser and one writer
//! (`chio_arena::scenario::mcp`) make the declaration either way.
//!
//! The command is split as a shell would split it, without a shell, and
//! printed on standard error before it starts. The child gets its own pipes
//! for standard input and output (the MCP stdio transport) and no standard
//! error: what a server logs there may hold secrets, so this command never
//! shows it; the help of each failure says to run the command by itself to
//! read it. The child is spawned here rather than by the SDK's
//! child-process transport because that transport owns the child and kills
//! it when dropped, which hides the exit status a failure should report;
//! the SDK drives the protocol over the child's pipes all the same.
//!
//! One wall-clock deadline (`--timeout-ms`) covers the initialize handshake
//! and every `tools/list` page (following `nextCursor`, refusing a cursor
//! given twice). Then the client closes the connection, which closes the
//! server's standard input (MCP's stdio shutdown), waits a short grace for
//! the server to exit, and kills it otherwise; a failure kills it at once.
//! Wall time is fine here: an import is not a run and writes no evidence.
//!
//! `chio arena record` starts its servers through the same [`start`] and
//! stops them through the same [`stop`].

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams};
use rmcp::service::{ClientInitializeError, RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::error::{codes, CliError};

const COMMAND: &str = "import mcp";

/// How long a server that has answered may take to exit once its standard
/// input is closed, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// How long a failed exchange waits for the server's exit status, to tell a
/// server that exited from one that answered something else.
const EXIT_PROBE: Duration = Duration::from_millis(500);

/// The most `tools/list` pages one import follows.
const MAX_PAGES: usize = 1000;

/// What to tell the user about a server's standard error, which this
/// command never shows.
const SEE_STDERR: &str = "run the command by itself to read what the server reports";

/// The phase a failure happened in, for its message.
#[derive(Clone, Copy)]
enum Phase {
    Handshake,
    Listing,
}

impl Phase {
    fn as_str(self) -> &'static str {
        match self {
            Phase::Handshake => "the initialize handshake",
            Phase::Listing => "tools/list",
        }
    }
}

/// Why the exchange with the server stopped before every tool was listed.
enum Failure {
    /// The connection closed or the transport failed in `phase`.
    Closed(Phase),
    /// The server answered with a JSON-RPC error of this code.
    Error(Phase, i32),
    /// The server answered something the protocol does not allow.
    Protocol(Phase, &'static str),
}

/// Starts `command_line`, lists every tool of the MCP server it runs within
/// `timeout`, stops it, and returns the tools as one `{"tools": [...]}`
/// result in the JSON the protocol defines.
pub fn list_tools(command_line: &str, timeout: Duration) -> Result<Vec<u8>, CliError> {
    let argv = shell_words::split(command_line).map_err(|e| {
        CliError::new(
            codes::IMPORT_MCP_START,
            COMMAND,
            format!("--command is not a command line: {e}"),
            "quote the command as a shell would, for example --command \"python -m server --flag 'a b'\"",
        )
    })?;
    let Some((program, args)) = argv.split_first() else {
        return Err(CliError::new(
            codes::IMPORT_MCP_START,
            COMMAND,
            "--command is empty",
            "pass the command that starts the MCP server, for example --command \"python -m mcp_server_git --repository .\"",
        ));
    };
    let _ = writeln!(
        std::io::stderr(),
        "{COMMAND}: starting {}",
        shell_words::join(&argv)
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            CliError::infrastructure(COMMAND, format!("cannot start an async runtime: {e}"))
        })?;
    runtime.block_on(exchange(program, args, timeout))
}

/// Spawns the server, lists its tools and stops it.
async fn exchange(program: &str, args: &[String], timeout: Duration) -> Result<Vec<u8>, CliError> {
    let started = start(COMMAND, program, args, &Launch::default(), timeout).await?;
    let LiveServer {
        client,
        mut child,
        tools,
    } = started;
    stop(client, &mut child).await;
    let result = json!({ "tools": tools });
    serde_json::to_vec(&result).map_err(|e| {
        CliError::infrastructure(COMMAND, format!("cannot write the tools as JSON: {e}"))
    })
}

/// Where and with what environment a server starts, beside the command's
/// own.
#[derive(Debug, Clone, Default)]
pub(crate) struct Launch {
    /// Variables added to the environment the server inherits.
    pub env: BTreeMap<String, String>,
    /// The folder it starts in (default the current one).
    pub cwd: Option<PathBuf>,
}

/// A server that answered the handshake and listed its tools: the client
/// over its stdio, the process, and every tool it listed as the
/// protocol's JSON.
pub(crate) struct LiveServer {
    /// The MCP client connected to the server.
    pub client: RunningService<RoleClient, ClientConfig>,
    /// The server's process.
    pub child: Child,
    /// Every tool it listed, in its order.
    pub tools: Vec<Value>,
}

/// Spawns `program` with `args` as `launch` says, and within `timeout`
/// runs the initialize handshake and lists every tool; a failure kills
/// the server and names the phase, for `command`'s error.
pub(crate) async fn start(
    command: &'static str,
    program: &str,
    args: &[String],
    launch: &Launch,
    timeout: Duration,
) -> Result<LiveServer, CliError> {
    let mut spawn = Command::new(program);
    spawn
        .args(args)
        .envs(&launch.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Some(cwd) = &launch.cwd {
        // A missing folder would read as a missing program.
        if !cwd.is_dir() {
            return Err(CliError::new(
                codes::IMPORT_MCP_START,
                command,
                format!(
                    "cannot start {program}: its working folder {} is not a folder",
                    cwd.display()
                ),
                "create the folder, or fix the server's cwd",
            ));
        }
        spawn.current_dir(cwd);
    }
    let mut child = spawn
        .spawn()
        .map_err(|e| spawn_failure(command, program, &e))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill().await;
        return Err(CliError::infrastructure(
            command,
            format!("{program} started without the pipes it was given"),
        ));
    };
    let listed = tokio::time::timeout(timeout, async {
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("chio", env!("CARGO_PKG_VERSION")),
        );
        let client = info
            .serve(crate::mcp_edge::frames::upstream_gate(stdout, stdin))
            .await
            .map_err(|e| handshake_failure(&e))?;
        let tools = all_tools(&client).await;
        Ok::<_, Failure>((client, tools))
    })
    .await;
    match listed {
        Ok(Ok((client, Ok(tools)))) => Ok(LiveServer {
            client,
            child,
            tools,
        }),
        Ok(Ok((client, Err(failure)))) => {
            let error = failed(command, program, failure, &mut child).await;
            let _ = tokio::time::timeout(EXIT_GRACE, client.cancel()).await;
            Err(error)
        }
        Ok(Err(failure)) => Err(failed(command, program, failure, &mut child).await),
        Err(_elapsed) => {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(exited(command, program, status));
            }
            let _ = child.kill().await;
            Err(CliError::new(
                codes::IMPORT_MCP_TIMEOUT,
                command,
                format!(
                    "{program} did not answer the initialize handshake and tools/list within {} ms; it was stopped",
                    timeout.as_millis()
                ),
                format!(
                    "check that the command starts an MCP server on standard input and output, or give it more time ({}); {SEE_STDERR}",
                    if command == COMMAND { "--timeout-ms" } else { "the server's timeout_ms" }
                ),
            ))
        }
    }
}

/// The error of a server that could not be started, with help fitting why.
fn spawn_failure(command: &'static str, program: &str, e: &std::io::Error) -> CliError {
    let help = match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("check that {program} is installed and on PATH, or pass its full path")
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("check that {program} is an executable file you may run")
        }
        _ => "check the command and run it by itself".to_string(),
    };
    CliError::new(
        codes::IMPORT_MCP_START,
        command,
        format!("cannot start {program}: {}", e.kind()),
        help,
    )
}

/// Every tool the server lists, page after page, as the protocol's JSON.
async fn all_tools(
    client: &RunningService<RoleClient, ClientConfig>,
) -> Result<Vec<Value>, Failure> {
    let mut tools = Vec::new();
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = cursor
            .take()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = client
            .peer()
            .list_tools(params)
            .await
            .map_err(|e| service_failure(Phase::Listing, &e))?;
        for tool in &page.tools {
            tools.push(serde_json::to_value(tool).map_err(|_| {
                Failure::Protocol(Phase::Listing, "a tool that cannot be written as JSON")
            })?);
        }
        // An empty cursor ends the listing as an absent one does
        // (`more_pages`): it names no position to continue from.
        let next = page
            .next_cursor
            .filter(|c| chio_arena::scenario::mcp::more_pages(&Value::String(c.clone())));
        match next {
            None => return Ok(tools),
            Some(next) => {
                if !seen.insert(next.clone()) {
                    return Err(Failure::Protocol(
                        Phase::Listing,
                        "a nextCursor it had already given, which would list forever",
                    ));
                }
                cursor = Some(next);
            }
        }
    }
    Err(Failure::Protocol(
        Phase::Listing,
        "more pages than an import follows (1000)",
    ))
}

/// Closes the connection (the server's standard input), waits a short
/// grace for the server to exit and kills it otherwise.
pub(crate) async fn stop(client: RunningService<RoleClient, ClientConfig>, child: &mut Child) {
    let _ = tokio::time::timeout(EXIT_GRACE, client.cancel()).await;
    if tokio::time::timeout(EXIT_GRACE, child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}

/// The failure of the initialize handshake, by kind.
fn handshake_failure(e: &ClientInitializeError) -> Failure {
    match e {
        ClientInitializeError::JsonRpcError(data) => Failure::Error(Phase::Handshake, data.code.0),
        ClientInitializeError::ConnectionClosed(_)
        | ClientInitializeError::TransportError { .. } => Failure::Closed(Phase::Handshake),
        ClientInitializeError::NoCompatibleProtocolVersion { .. } => Failure::Protocol(
            Phase::Handshake,
            "a protocol version this client does not speak",
        ),
        _ => Failure::Protocol(
            Phase::Handshake,
            "something other than an initialize result",
        ),
    }
}

/// The failure of a request after the handshake, by kind.
fn service_failure(phase: Phase, e: &ServiceError) -> Failure {
    match e {
        ServiceError::McpError(data) => Failure::Error(phase, data.code.0),
        ServiceError::TransportSend(_) | ServiceError::TransportClosed => Failure::Closed(phase),
        _ => Failure::Protocol(phase, "something other than a tools/list result"),
    }
}

/// The error a failed exchange reports: the server's exit when it closed
/// the connection by exiting, otherwise what it answered; the server is
/// killed either way. Never a text the server sent, which may hold
/// anything.
async fn failed(
    command: &'static str,
    program: &str,
    failure: Failure,
    child: &mut Child,
) -> CliError {
    if let Failure::Closed(_) = failure {
        if let Ok(Ok(status)) = tokio::time::timeout(EXIT_PROBE, child.wait()).await {
            return exited(command, program, status);
        }
    }
    let _ = child.kill().await;
    let message = match failure {
        Failure::Closed(phase) => format!(
            "{program} closed its standard output during {}",
            phase.as_str()
        ),
        Failure::Error(phase, code) => format!(
            "{program} answered {} with the JSON-RPC error {code}",
            phase.as_str()
        ),
        Failure::Protocol(phase, what) => {
            format!("{program} answered {} with {what}", phase.as_str())
        }
    };
    CliError::new(
        codes::IMPORT_MCP_PROTOCOL,
        command,
        message,
        format!("check that the command starts an MCP server speaking MCP on standard input and output; {SEE_STDERR}"),
    )
}

/// The error of a server that exited before every tool was listed.
fn exited(command: &'static str, program: &str, status: ExitStatus) -> CliError {
    CliError::new(
        codes::IMPORT_MCP_EXITED,
        command,
        format!("{program} exited before it listed its tools ({status})"),
        format!("check the command's arguments; {SEE_STDERR}"),
    )
}
