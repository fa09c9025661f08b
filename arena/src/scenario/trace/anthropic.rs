//! An Anthropic Messages transcript: a request body with `messages` and
//! optional `tools`.
//!
//! Assistant messages carry `tool_use` content blocks (`id`, `name`,
//! `input`), user messages answer them with `tool_result` blocks
//! (`tool_use_id`, `content` as a string or an array of text blocks,
//! optional `is_error`, which records a call the tool did not carry out).
//! Tools are `{"name", "description", "input_schema"}`; a tool with a
//! `type` other than `custom` (a server or client tool Anthropic defines,
//! such as web search) has no schema to declare and is skipped. Places are
//! JSON pointers.

use serde_json::Value;

use crate::scenario::mcp::ImportedTool;

use super::{
    below, called_name, content_text, define, defined_tool, id_key, object, output_of, parse_json,
    Pending, Trace, TraceCall, TraceError, TraceFault, TraceFormat,
};

/// Reads a transcript.
pub fn read(bytes: &[u8]) -> Result<Trace, TraceError> {
    let value = parse_json(bytes, "the input", "transcript")?;
    let Value::Object(top) = &value else {
        return Err(TraceError::new(
            TraceFault::Shape,
            "the input",
            "is not a JSON object: pass a Messages request body {\"messages\": [...], \"tools\": [...]}",
        ));
    };
    let tools = read_tools(top.get("tools"))?;
    let Some(Value::Array(messages)) = top.get("messages") else {
        return Err(TraceError::new(
            TraceFault::Shape,
            "/messages",
            "is missing or not an array: pass the request body that holds the conversation",
        ));
    };
    let mut calls = Pending::default();
    let mut prompt = None;
    for (i, message) in messages.iter().enumerate() {
        let place = below("/messages", i);
        let message = object(message, TraceFault::Shape, &place)?;
        let role = message.get("role").and_then(Value::as_str);
        if role == Some("user") && prompt.is_none() {
            prompt = content_text(message.get("content"));
        }
        let Some(Value::Array(blocks)) = message.get("content") else {
            continue;
        };
        for (k, block) in blocks.iter().enumerate() {
            let at = below(&below(&place, "content"), k);
            read_block(role, block, at, &mut calls)?;
        }
    }
    Ok(Trace {
        format: TraceFormat::Anthropic,
        tools,
        calls: calls.finish("a tool_result block")?,
        prompt,
    })
}

/// The `tools` of the request body: each custom tool defined once; a tool
/// Anthropic defines (a `type` other than `custom`) is skipped.
fn read_tools(listed: Option<&Value>) -> Result<Vec<ImportedTool>, TraceError> {
    let mut tools = Vec::new();
    match listed {
        None | Some(Value::Null) => {}
        Some(Value::Array(defined)) => {
            for (k, tool) in defined.iter().enumerate() {
                let place = below("/tools", k);
                let tool = object(tool, TraceFault::Tool, &place)?;
                if tool
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t != "custom")
                {
                    continue;
                }
                let defined = defined_tool(
                    tool.get("name"),
                    tool.get("description"),
                    Some(tool.get("input_schema").unwrap_or(&Value::Null)),
                    &place,
                    "input_schema",
                )?;
                define(&mut tools, defined, &place)?;
            }
        }
        Some(_) => {
            return Err(TraceError::new(
                TraceFault::Shape,
                "/tools",
                "is not an array",
            ))
        }
    }
    Ok(tools)
}

/// One content block at `at` of a message of `role`: an assistant's
/// `tool_use` opens a call, a user's `tool_result` answers one; any other
/// block is not a tool call.
fn read_block(
    role: Option<&str>,
    block: &Value,
    at: String,
    calls: &mut Pending,
) -> Result<(), TraceError> {
    match (role, block.get("type").and_then(Value::as_str)) {
        (Some("assistant"), Some("tool_use")) => {
            let key = id_key(block.get("id"), &below(&at, "id"), false)?;
            let tool = called_name(block.get("name"), &below(&at, "name"))?;
            let arguments = match block.get("input") {
                Some(Value::Object(input)) => input.clone(),
                _ => {
                    return Err(TraceError::new(
                        TraceFault::Arguments,
                        below(&at, "input"),
                        "the input is not a JSON object: a tool is called with an object of named arguments",
                    ))
                }
            };
            calls.call(
                key,
                TraceCall {
                    tool,
                    arguments,
                    ok: true,
                    output: Value::Null,
                    place: at,
                },
            )
        }
        (Some("user"), Some("tool_result")) => {
            let key = id_key(block.get("tool_use_id"), &below(&at, "tool_use_id"), false)?;
            let ok = match block.get("is_error") {
                None | Some(Value::Null) => true,
                Some(Value::Bool(is_error)) => !is_error,
                Some(_) => {
                    return Err(TraceError::new(
                        TraceFault::Shape,
                        below(&at, "is_error"),
                        "is not a boolean",
                    ))
                }
            };
            calls.result(&key, &at, ok, output_of(block.get("content")))
        }
        _ => Ok(()),
    }
}
