//! The live side of a recording: each admitted call of an mcp server
//! forwarded to the server over its MCP client, answered within the
//! server's timeout, and kept, in the order the server's actor sent it, for
//! the recording.
//!
//! A `CallToolResult` becomes the step's answer by the one reading the MCP
//! edge shares ([`crate::mcp_answer`]): its structured content, text or
//! blocks, `isError` as a call not performed, an answer past the bounds a
//! replay carries or breaking the tool's declared output schema as a call
//! not performed naming why. A JSON-RPC error, a closed connection or no
//! answer within the timeout is a call not performed whose output says
//! which, never a text the server sent outside a result.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chio_arena::recording::RecordedCall;
use chio_kernel::contract::ToolContract;
use chio_node::tools::{LiveAnswer, LiveTools};
use rmcp::model::CallToolRequestParams;
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::Value;

use crate::mcp_answer::{not_performed, recorded_answer};

/// The calls of one live server, forwarded through `peer`.
pub(super) struct McpCalls {
    /// The client side of the server's connection.
    pub peer: Peer<RoleClient>,
    /// Wall time one call may take.
    pub timeout: Duration,
    /// Every call forwarded, in order, with its answer.
    pub log: Arc<Mutex<Vec<RecordedCall>>>,
    /// The server's id in the scenario.
    pub server: String,
    /// The tools the scenario declares for the server, by name.
    pub contracts: BTreeMap<String, ToolContract>,
}

impl LiveTools for McpCalls {
    fn call(
        &self,
        request_id: String,
        agent: String,
        tool: String,
        arguments: Value,
    ) -> Pin<Box<dyn Future<Output = LiveAnswer> + Send>> {
        let peer = self.peer.clone();
        let timeout = self.timeout;
        let log = Arc::clone(&self.log);
        let contract = self.contracts.get(&tool).cloned();
        let server = self.server.clone();
        Box::pin(async move {
            let mut params = CallToolRequestParams::new(tool.clone());
            if let Value::Object(map) = &arguments {
                params = params.with_arguments(map.clone());
            }
            let answer = match tokio::time::timeout(timeout, peer.call_tool(params)).await {
                Ok(Ok(result)) => {
                    let result = serde_json::to_value(&result).unwrap_or(Value::Null);
                    recorded_answer(&result, &server, contract.as_ref()).answer
                }
                Ok(Err(e)) => not_performed(service_error(&e)),
                Err(_elapsed) => not_performed(format!(
                    "the server did not answer within {} ms",
                    timeout.as_millis()
                )),
            };
            if let Ok(mut log) = log.lock() {
                log.push(RecordedCall {
                    request_id,
                    agent,
                    tool,
                    arguments,
                    ok: answer.ok,
                    output: answer.output.clone(),
                });
            }
            answer
        })
    }
}

/// What a failed `tools/call` request answers, by kind.
fn service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(data)
            if data.code.0 == crate::mcp_edge::frames::UNREADABLE_ANSWER =>
        {
            format!(
                "the server wrote an answer that cannot be read (not JSON, a key given twice, a number that rounds when read, or over {} bytes)",
                crate::mcp_edge::frames::UPSTREAM_LINE_BYTES
            )
        }
        ServiceError::McpError(data) => format!(
            "the server answered with the JSON-RPC error {}",
            data.code.0
        ),
        ServiceError::TransportSend(_) | ServiceError::TransportClosed => {
            "the connection to the server closed".to_string()
        }
        _ => "the server answered something other than a tools/call result".to_string(),
    }
}
