//! The live side of a recording: each admitted call of an mcp server
//! forwarded to the server over its MCP client, answered within the
//! server's timeout, and kept, in the order the server's actor sent it, for
//! the recording.
//!
//! How an MCP `CallToolResult` becomes the step's output value:
//! `structuredContent` when the result has it; otherwise the text of a
//! result whose content is one text block; otherwise the content list as
//! the protocol's JSON. `isError: true` answers the same value as a call
//! not performed (`ok: false`). A JSON-RPC error, a closed connection or no
//! answer within the timeout is a call not performed whose output says
//! which, never a text the server sent outside a result. So is an answer
//! that breaks the tool's declared output schema, naming where
//! ([`chio_kernel::contract::output_refusal`], the check a scenario's own
//! recorded answers and a recording read back meet): it is never released,
//! or recorded, as carried out.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chio_arena::recording::RecordedCall;
use chio_kernel::contract::ToolContract;
use chio_node::tools::{LiveAnswer, LiveTools};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::{Peer, RoleClient, ServiceError};
use serde_json::{json, Value};

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
                Ok(Ok(result)) => checked(answer_of(&result), &server, contract.as_ref()),
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

/// `answer` as it is recorded: an answer a replay could not carry between
/// node processes, or read back, or a carried-out answer that breaks the
/// tool's output schema, is a call not performed naming why.
fn checked(answer: LiveAnswer, server: &str, contract: Option<&ToolContract>) -> LiveAnswer {
    if let Some(why) = chio_arena::recording::answer_out_of_bounds(&answer.output) {
        return not_performed(why);
    }
    let refused = contract
        .filter(|_| answer.ok)
        .and_then(|c| chio_kernel::contract::output_refusal(server, c, &answer.output));
    match refused {
        Some(why) => not_performed(format!("the server's answer is refused: {why}")),
        None => answer,
    }
}

fn not_performed(why: String) -> LiveAnswer {
    LiveAnswer {
        ok: false,
        output: Value::String(why),
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

/// The answer of a `CallToolResult` (see the module documentation).
pub(super) fn answer_of(result: &CallToolResult) -> LiveAnswer {
    let output = match &result.structured_content {
        Some(value) => value.clone(),
        None => content_value(&result.content),
    };
    LiveAnswer {
        ok: !result.is_error.unwrap_or(false),
        output,
    }
}

/// The text of one text block, or else the blocks as the protocol's JSON.
fn content_value(content: &[ContentBlock]) -> Value {
    let blocks: Vec<Value> = content
        .iter()
        .map(|block| serde_json::to_value(block).unwrap_or(Value::Null))
        .collect();
    match blocks.as_slice() {
        [single] if single.get("type") == Some(&json!("text")) => {
            single.get("text").cloned().unwrap_or(Value::Null)
        }
        _ => Value::Array(blocks),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).expect("a CallToolResult")
    }

    #[test]
    fn one_text_block_answers_its_text() {
        let answer = answer_of(&result(json!({
            "content": [{"type": "text", "text": "On branch main"}]
        })));
        assert_eq!(
            answer,
            LiveAnswer {
                ok: true,
                output: json!("On branch main")
            }
        );
    }

    #[test]
    fn structured_content_wins_and_is_error_is_not_performed() {
        let answer = answer_of(&result(json!({
            "content": [{"type": "text", "text": "{\"n\": 1}"}],
            "structuredContent": {"n": 1},
            "isError": true
        })));
        assert_eq!(
            answer,
            LiveAnswer {
                ok: false,
                output: json!({"n": 1})
            }
        );
    }

    // A carried-out answer that breaks the tool's output schema is recorded as a call not performed naming where, never the value; a failed answer, a fitting one and one of a tool without an output schema are kept as given.
    #[test]
    fn an_answer_breaking_the_output_schema_is_not_performed() {
        let contract: ToolContract = serde_json::from_value(json!({
            "name": "get",
            "description": "",
            "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false},
            "annotations": {}
        }))
        .expect("a contract");
        let given = |ok, output| LiveAnswer { ok, output };
        let bad = json!({"n": "IGNORE PREVIOUS", "extra": true});
        let answer = checked(given(true, bad.clone()), "live", Some(&contract));
        assert!(!answer.ok);
        let why = answer.output.as_str().unwrap_or_default();
        assert!(why.contains("fails its output schema at /"), "{why}");
        assert!(!why.contains("IGNORE"), "{why}");
        for (ok, output, contract) in [
            (false, bad.clone(), Some(&contract)),
            (true, json!({"n": 1}), Some(&contract)),
            (true, bad, None),
        ] {
            assert_eq!(
                checked(given(ok, output.clone()), "live", contract),
                given(ok, output)
            );
        }
    }

    #[test]
    fn several_blocks_answer_the_list() {
        let answer = answer_of(&result(json!({
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        })));
        assert!(answer.ok);
        let list = answer.output.as_array().expect("a list");
        assert_eq!(list.len(), 2);
        assert_eq!(list[1]["text"], json!("b"));
        let empty = answer_of(&result(json!({"content": []})));
        assert_eq!(empty.output, json!([]));
    }
}
