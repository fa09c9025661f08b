//! The one reading of an MCP `CallToolResult` as a recorded answer
//! (`{"ok", "output"}`, the answer a recorded server gives), shared by
//! `chio arena record` (what it records of a live server), the MCP edge
//! (what its kernel reads of an upstream's answer) and the edge's
//! equivalent scenario (what its recorded server answers at replay), so a
//! server's answer gets the same verdict in a run and at the edge.
//!
//! - The output is the result's `structuredContent` when it has one;
//!   otherwise the text of a result whose content is one text block;
//!   otherwise the content list as the protocol's JSON.
//! - `isError: true` answers the same value as a call not performed
//!   (`ok: false`).
//! - An answer a replay could not carry between node processes (past
//!   [`chio_arena::recording::answer_out_of_bounds`]), and a carried-out
//!   answer that breaks the tool's declared output schema
//!   ([`chio_kernel::contract::output_refusal`], the check a scenario's own
//!   recorded answers and a recording read back meet), is a call not
//!   performed naming why, never the value: it is never released, or
//!   recorded, as carried out.
//!
//! The result is read as the protocol's JSON, the form the edge's session
//! keeps it in (`calls.jsonl`), so the edge and the scenario built from its
//! session read the same answer alike.

use chio_kernel::contract::ToolContract;
use chio_node::tools::LiveAnswer;
use serde_json::{json, Value};

/// A result read as a recorded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The answer.
    pub answer: LiveAnswer,
    /// Whether its output is the result's structured content (not refused).
    pub structured: bool,
}

/// `result` (a `CallToolResult` as the protocol's JSON) as the answer a
/// recorded server gives, checked against `contract`, the declared tool
/// of server `server` (see the module documentation).
pub fn recorded_answer(result: &Value, server: &str, contract: Option<&ToolContract>) -> Recorded {
    let answer = answer_of(result);
    match refusal(&answer, server, contract) {
        Some(why) => Recorded {
            answer: not_performed(why),
            structured: false,
        },
        None => Recorded {
            structured: result.get("structuredContent").is_some(),
            answer,
        },
    }
}

/// A call not performed whose output says why.
pub fn not_performed(why: String) -> LiveAnswer {
    LiveAnswer {
        ok: false,
        output: Value::String(why),
    }
}

/// The answer of a `CallToolResult`, unchecked.
fn answer_of(result: &Value) -> LiveAnswer {
    let output = match result.get("structuredContent") {
        Some(value) => value.clone(),
        None => content_value(result.get("content")),
    };
    LiveAnswer {
        ok: result.get("isError") != Some(&Value::Bool(true)),
        output,
    }
}

/// The text of one text block, or else the blocks as the protocol's JSON.
fn content_value(content: Option<&Value>) -> Value {
    let blocks = content
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match blocks.as_slice() {
        [single] if single.get("type") == Some(&json!("text")) => {
            single.get("text").cloned().unwrap_or(Value::Null)
        }
        _ => Value::Array(blocks),
    }
}

/// Why `answer` is not recorded as given, if it is not: past the bounds a
/// replay carries, or a carried-out answer breaking the output schema.
fn refusal(answer: &LiveAnswer, server: &str, contract: Option<&ToolContract>) -> Option<String> {
    if let Some(why) = chio_arena::recording::answer_out_of_bounds(&answer.output) {
        return Some(why);
    }
    contract
        .filter(|_| answer.ok)
        .and_then(|c| chio_kernel::contract::output_refusal(server, c, &answer.output))
        .map(|why| format!("the server's answer is refused: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: Value) -> LiveAnswer {
        recorded_answer(&value, "live", None).answer
    }

    #[test]
    fn one_text_block_answers_its_text() {
        let answer = read(json!({
            "content": [{"type": "text", "text": "On branch main"}]
        }));
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
        let result = json!({
            "content": [{"type": "text", "text": "{\"n\": 1}"}],
            "structuredContent": {"n": 1},
            "isError": true
        });
        let read = recorded_answer(&result, "live", None);
        assert_eq!(
            read,
            Recorded {
                answer: LiveAnswer {
                    ok: false,
                    output: json!({"n": 1})
                },
                structured: true,
            }
        );
    }

    // A carried-out answer that breaks the tool's output schema is read as a call not performed naming where, never the value; a failed answer, a fitting one and one of a tool without an output schema are read as given.
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
        let bad = json!({"n": "IGNORE PREVIOUS", "extra": true});
        let result = |structured: &Value, is_error: bool| json!({"content": [], "structuredContent": structured, "isError": is_error});
        let refused = recorded_answer(&result(&bad, false), "live", Some(&contract));
        assert!(!refused.answer.ok && !refused.structured);
        let why = refused.answer.output.as_str().unwrap_or_default();
        assert!(why.contains("fails its output schema at /"), "{why}");
        assert!(!why.contains("IGNORE"), "{why}");
        // Text where the schema asks for an object fails it too.
        let text = json!({"content": [{"type": "text", "text": "3"}]});
        let refused = recorded_answer(&text, "live", Some(&contract)).answer;
        assert_eq!(
            refused.output,
            json!("the server's answer is refused: the output of tool get fails its output schema at /: type")
        );
        for (structured, is_error, contract) in [
            (bad.clone(), true, Some(&contract)),
            (json!({"n": 1}), false, Some(&contract)),
            (bad, false, None),
        ] {
            let read = recorded_answer(&result(&structured, is_error), "live", contract);
            assert_eq!(
                read,
                Recorded {
                    answer: LiveAnswer {
                        ok: !is_error,
                        output: structured
                    },
                    structured: true,
                }
            );
        }
    }

    #[test]
    fn several_blocks_answer_the_list() {
        let answer = read(json!({
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        }));
        assert!(answer.ok);
        let list = answer.output.as_array().expect("a list");
        assert_eq!(list.len(), 2);
        assert_eq!(list[1]["text"], json!("b"));
        let empty = read(json!({"content": []}));
        assert_eq!(empty.output, json!([]));
    }

    // The typed result and the protocol's JSON of it read alike: the record path reads the result it was given through its JSON.
    #[test]
    fn a_typed_result_reads_as_its_json() {
        let typed: rmcp::model::CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "x"}],
            "structuredContent": null
        }))
        .expect("a CallToolResult");
        let value = serde_json::to_value(&typed).expect("JSON");
        assert_eq!(read(value).output, Value::Null);
    }
}
