//! The upstream MCP servers: each `--upstream ID=CMD ARGS...` started as a
//! child (its command split as a shell would, no shell runs it; its
//! standard error discarded, since a server may log secrets there) and
//! spoken to with the SDK's client role over its pipes, for the life of
//! the edge. At start the edge lists each upstream's tools once and reads
//! them with the one parser of a `tools/list` result
//! (`chio_arena::scenario::mcp::parse_tools_list`, the parser behind `chio
//! import mcp`), which becomes the kernel's tool catalog: a call is checked
//! against the definition the edge read, and a tool name two upstreams
//! declare is refused, since a call names a tool and the edge must know
//! which upstream serves it.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use chio_arena::scenario::mcp::{parse_tools_list, ImportedTool};
use chio_kernel::contract::{ToolCatalog, ToolContract};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, Tool,
};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::process::{Child, Command};

/// One running upstream.
pub struct Upstream {
    /// Its id: the scope grants' server.
    pub id: String,
    /// Its tools as it listed them, to answer `tools/list`.
    pub tools: Vec<Tool>,
    /// Its tools as the kernel's contracts.
    pub declared: Vec<ImportedTool>,
    client: RunningService<RoleClient, ClientConfig>,
    _child: Child,
}

/// Why an upstream is refused at start.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// `--upstream` is not `ID=CMD ARGS...`.
    #[error("--upstream {0:?} is not ID=\"CMD ARGS...\" with an id of letters, digits, - and _")]
    Spec(String),
    /// Two upstreams share an id.
    #[error("two --upstream flags share the id {0}")]
    DuplicateId(String),
    /// The program could not start.
    #[error("upstream {id}: cannot start {program}: {kind}")]
    Start {
        /// The upstream.
        id: String,
        /// Its program.
        program: String,
        /// The kind of failure.
        kind: std::io::ErrorKind,
    },
    /// The handshake or `tools/list` failed or timed out.
    #[error("upstream {id}: {what}")]
    Protocol {
        /// The upstream.
        id: String,
        /// What failed.
        what: String,
    },
    /// Two upstreams declare one tool name.
    #[error("upstreams {first} and {second} both declare the tool {tool}")]
    SharedTool {
        /// The tool.
        tool: String,
        /// The first upstream declaring it.
        first: String,
        /// The second.
        second: String,
    },
}

/// Splits `ID=CMD ARGS...`.
pub fn parse_spec(spec: &str) -> Result<(String, Vec<String>), UpstreamError> {
    let refuse = || UpstreamError::Spec(spec.chars().take(80).collect());
    let (id, command) = spec.split_once('=').ok_or_else(refuse)?;
    if id.is_empty()
        || id.len() > 64
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(refuse());
    }
    let argv = shell_words::split(command).map_err(|_| refuse())?;
    if argv.is_empty() {
        return Err(refuse());
    }
    Ok((id.to_string(), argv))
}

impl Upstream {
    /// Starts the upstream and lists its tools within `timeout`.
    pub async fn start(
        id: &str,
        argv: &[String],
        timeout: Duration,
    ) -> Result<Self, UpstreamError> {
        let protocol = |what: String| UpstreamError::Protocol {
            id: id.to_string(),
            what,
        };
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| UpstreamError::Start {
                id: id.to_string(),
                program: argv[0].clone(),
                kind: e.kind(),
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(protocol("started without its pipes".to_string()));
        };
        let started = tokio::time::timeout(timeout, async {
            let info = ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new("chio-mcp-edge", env!("CARGO_PKG_VERSION")),
            );
            let client = info
                .serve(super::frames::upstream_gate(stdout, stdin))
                .await
                .map_err(|e| protocol(handshake_failure(&e).to_string()))?;
            let tools = client
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| protocol(listing_failure(&e).to_string()))?;
            Ok::<_, UpstreamError>((client, tools))
        })
        .await
        .map_err(|_| {
            protocol(format!(
                "no answer to the handshake and tools/list within {} ms",
                timeout.as_millis()
            ))
        })??;
        let (client, tools) = started;
        let listed = serde_json::to_vec(&json!({ "tools": tools }))
            .map_err(|e| protocol(format!("its tools cannot be written as JSON: {e}")))?;
        let declared = parse_tools_list(&listed, id)
            .map_err(|e| protocol(format!("its tools/list result is refused: {e}")))?;
        Ok(Upstream {
            id: id.to_string(),
            tools,
            declared,
            client,
            _child: child,
        })
    }

    /// Calls `tool` with `arguments` within `timeout`; the error names
    /// what failed, never the upstream's text, and whether the request had
    /// been sent (only a failure to send it leaves the call surely undone).
    pub async fn call(
        &self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
    ) -> Result<CallToolResult, CallFailure> {
        use rmcp::service::ServiceError as E;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map.clone());
        }
        let sent = |reason: String| CallFailure { reason, sent: true };
        // An upstream whose connection is known closed (its process has
        // exited) is sent nothing: the call surely was not carried out.
        if self.client.peer().is_transport_closed() {
            return Err(CallFailure {
                reason: format!(
                    "upstream {} has closed its connection; the call was not sent",
                    self.id
                ),
                sent: false,
            });
        }
        match tokio::time::timeout(timeout, self.client.peer().call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(E::McpError(data))) if data.code.0 == super::frames::UNREADABLE_ANSWER => {
                Err(sent(format!(
                    "upstream {} wrote an answer that cannot be read (not JSON, a key given twice, a number that rounds when read, or over {} bytes); it may have carried the call out",
                    self.id,
                    super::frames::UPSTREAM_LINE_BYTES
                )))
            }
            Ok(Err(E::McpError(data))) => Err(sent(format!(
                "upstream {} answered the JSON-RPC error {}; it may have carried the call out",
                self.id, data.code.0
            ))),
            Ok(Err(E::TransportSend(_))) => Err(CallFailure {
                reason: format!("upstream {} could not be sent the call", self.id),
                sent: false,
            }),
            Ok(Err(_)) => Err(sent(format!(
                "upstream {} did not answer the call; it may have carried it out",
                self.id
            ))),
            Err(_) => Err(sent(format!(
                "upstream {} did not answer within {} ms; it may have carried the call out",
                self.id,
                timeout.as_millis()
            ))),
        }
    }
}

/// Why a forwarded call has no answer, and whether the upstream received
/// it: a call it received may have been carried out, so its budget is spent.
#[derive(Debug, Clone)]
pub struct CallFailure {
    /// What failed, never the upstream's text.
    pub reason: String,
    /// Whether the request was sent to the upstream.
    pub sent: bool,
}

/// What failed in the handshake, by kind: never a text the upstream sent,
/// which may hold anything.
fn handshake_failure(e: &rmcp::service::ClientInitializeError) -> &'static str {
    use rmcp::service::ClientInitializeError as E;
    match e {
        E::JsonRpcError(_) => "it answered the initialize handshake with a JSON-RPC error",
        E::ConnectionClosed(_) | E::TransportError { .. } => {
            "it closed its standard output during the initialize handshake"
        }
        _ => "it answered the initialize handshake with something the protocol does not allow",
    }
}

/// What failed in `tools/list`, by kind.
fn listing_failure(e: &rmcp::service::ServiceError) -> &'static str {
    use rmcp::service::ServiceError as E;
    match e {
        E::McpError(_) => "it answered tools/list with a JSON-RPC error",
        E::TransportSend(_) | E::TransportClosed => {
            "it closed its standard output during tools/list"
        }
        _ => "it answered tools/list with something other than a tools/list result",
    }
}

/// The upstreams by id, and which upstream serves each tool.
pub struct Upstreams {
    /// By id.
    pub by_id: BTreeMap<String, Upstream>,
    /// The upstream id serving each tool name.
    pub route: BTreeMap<String, String>,
}

impl Upstreams {
    /// Indexes `upstreams`, refusing a shared id or tool name.
    pub fn new(upstreams: Vec<Upstream>) -> Result<Self, UpstreamError> {
        let mut by_id = BTreeMap::new();
        let mut route: BTreeMap<String, String> = BTreeMap::new();
        for upstream in upstreams {
            if by_id.contains_key(&upstream.id) {
                return Err(UpstreamError::DuplicateId(upstream.id.clone()));
            }
            for tool in &upstream.declared {
                if let Some(first) = route.get(&tool.contract.name) {
                    return Err(UpstreamError::SharedTool {
                        tool: tool.contract.name.clone(),
                        first: first.clone(),
                        second: upstream.id.clone(),
                    });
                }
                route.insert(tool.contract.name.clone(), upstream.id.clone());
            }
            by_id.insert(upstream.id.clone(), upstream);
        }
        Ok(Upstreams { by_id, route })
    }

    /// The kernel's tool catalog: every upstream's declared tools.
    pub fn catalog(&self) -> ToolCatalog {
        self.by_id
            .iter()
            .map(|(id, u)| {
                let tools = u
                    .declared
                    .iter()
                    .map(|t| (t.contract.name.clone(), t.contract.clone()))
                    .collect();
                (id.clone(), tools)
            })
            .collect()
    }

    /// The declared tool `tool` of upstream `server`, as the kernel checks
    /// calls and answers against it.
    pub fn contract(&self, server: &str, tool: &str) -> Option<&ToolContract> {
        self.by_id
            .get(server)?
            .declared
            .iter()
            .map(|t| &t.contract)
            .find(|c| c.name == tool)
    }

    /// The arguments of a call as the kernel reads them: the object given,
    /// or `{}` when absent.
    pub fn arguments(given: Option<&Map<String, Value>>) -> Value {
        Value::Object(given.cloned().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // An upstream spec needs an id of letters, digits, - and _ and a command; the command splits as a shell would.
    #[test]
    fn specs_split_or_are_refused() {
        let (id, argv) = parse_spec("git=python3 -m mcp_server_git --repository 'a b'").unwrap();
        assert_eq!(id, "git");
        assert_eq!(
            argv,
            ["python3", "-m", "mcp_server_git", "--repository", "a b"]
        );
        for bad in ["python3 -m x", "=x", "g it=x", "git=", "git='x"] {
            assert!(parse_spec(bad).is_err(), "{bad}");
        }
    }
}
