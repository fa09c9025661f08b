//! An OpenAI transcript: a Chat Completions conversation or a Responses
//! API exchange.
//!
//! A top-level `messages` array is Chat Completions: assistant messages
//! carry `tool_calls` (`id`, `function.name`, `function.arguments` as JSON
//! text) and `role: "tool"` messages answer them by `tool_call_id`; tools
//! are `{"type": "function", "function": {"name", "description",
//! "parameters"}}`. Otherwise `input` and `output` (both optional, read in
//! that order) are Responses items: `function_call` (`call_id`, `name`,
//! `arguments`) answered by `function_call_output` (`call_id`, `output`);
//! tools are `{"type": "function", "name", "description", "parameters"}`.
//! Tools of other types (hosted tools such as web search) are skipped: they
//! are not called through function calls. OpenAI records no failure of a
//! tool, so every answer is `ok`. Places are JSON pointers.

use serde_json::{Map, Value};

use super::{
    array, below, called_name, content_text, define, defined_tool, id_key, object, output_of,
    parse_json, Pending, Trace, TraceCall, TraceError, TraceFault, TraceFormat,
};

/// Reads a transcript.
pub fn read(bytes: &[u8]) -> Result<Trace, TraceError> {
    let value = parse_json(bytes, "the input", "transcript")?;
    let Value::Object(top) = &value else {
        return Err(TraceError::new(
            TraceFault::Shape,
            "the input",
            "is not a JSON object: pass a Chat Completions request body {\"messages\": [...]} or a Responses body {\"input\": [...]}",
        ));
    };
    let mut state = State::default();
    if let Some(tools) = top.get("tools") {
        let tools = array(tools, "/tools")?;
        for (k, tool) in tools.iter().enumerate() {
            state.tool(tool, &below("/tools", k))?;
        }
    }
    if let Some(messages) = top.get("messages") {
        let messages = array(messages, "/messages")?;
        for (i, message) in messages.iter().enumerate() {
            state.chat_message(message, &below("/messages", i))?;
        }
    } else if top.contains_key("input") || top.contains_key("output") {
        for key in ["input", "output"] {
            match top.get(key) {
                None => {}
                Some(Value::String(text)) if key == "input" => {
                    state.prompt.get_or_insert_with(|| text.clone());
                }
                Some(Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        state.item(item, &below(&format!("/{key}"), i))?;
                    }
                }
                Some(_) => {
                    return Err(TraceError::new(
                        TraceFault::Shape,
                        format!("/{key}"),
                        "is not an array of items",
                    ))
                }
            }
        }
    } else {
        return Err(TraceError::new(
            TraceFault::Shape,
            "the input",
            "has neither messages (Chat Completions) nor input or output (Responses): pass the request body with the conversation",
        ));
    }
    Ok(Trace {
        format: TraceFormat::OpenAi,
        tools: state.tools,
        calls: state.calls.finish("a tool message")?,
        prompt: state.prompt,
    })
}

/// What one pass over the transcript gathers.
#[derive(Debug, Default)]
struct State {
    tools: Vec<crate::scenario::mcp::ImportedTool>,
    calls: Pending,
    prompt: Option<String>,
}

impl State {
    /// One entry of `tools`, in either API's shape.
    fn tool(&mut self, tool: &Value, place: &str) -> Result<(), TraceError> {
        let tool = object(tool, TraceFault::Tool, place)?;
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            return Ok(());
        }
        let (definition, at) = match tool.get("function") {
            Some(Value::Object(function)) => (function, below(place, "function")),
            Some(_) => {
                return Err(TraceError::new(
                    TraceFault::Tool,
                    below(place, "function"),
                    "is not a JSON object",
                ))
            }
            None => (tool, place.to_string()),
        };
        let defined = defined_tool(
            definition.get("name"),
            definition.get("description"),
            definition.get("parameters"),
            &at,
            "parameters",
        )?;
        define(&mut self.tools, defined, place)
    }

    /// One Chat Completions message.
    fn chat_message(&mut self, message: &Value, place: &str) -> Result<(), TraceError> {
        let message = object(message, TraceFault::Shape, place)?;
        match message.get("role").and_then(Value::as_str) {
            Some("user") if self.prompt.is_none() => {
                self.prompt = content_text(message.get("content"))
            }
            Some("assistant") => match message.get("tool_calls") {
                None | Some(Value::Null) => {}
                Some(Value::Array(calls)) => {
                    for (k, call) in calls.iter().enumerate() {
                        self.chat_call(call, &below(&below(place, "tool_calls"), k))?;
                    }
                }
                Some(_) => {
                    return Err(TraceError::new(
                        TraceFault::Shape,
                        below(place, "tool_calls"),
                        "is not an array",
                    ))
                }
            },
            Some("tool") => {
                let key = id_key(
                    message.get("tool_call_id"),
                    &below(place, "tool_call_id"),
                    false,
                )?;
                self.calls
                    .result(&key, place, true, output_of(message.get("content")))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// One entry of an assistant message's `tool_calls`.
    fn chat_call(&mut self, call: &Value, place: &str) -> Result<(), TraceError> {
        let call = object(call, TraceFault::Shape, place)?;
        let key = id_key(call.get("id"), &below(place, "id"), false)?;
        let Some(Value::Object(function)) = call.get("function") else {
            return Err(TraceError::new(
                TraceFault::Shape,
                below(place, "function"),
                "is not a JSON object: a tool call names its function and its arguments",
            ));
        };
        let at = below(place, "function");
        let tool = called_name(function.get("name"), &below(&at, "name"))?;
        let arguments = arguments_text(function.get("arguments"), &below(&at, "arguments"))?;
        self.calls.call(
            key,
            TraceCall {
                tool,
                arguments,
                ok: true,
                output: Value::Null,
                place: place.to_string(),
            },
        )
    }

    /// One Responses item.
    fn item(&mut self, item: &Value, place: &str) -> Result<(), TraceError> {
        let item = object(item, TraceFault::Shape, place)?;
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let key = id_key(item.get("call_id"), &below(place, "call_id"), false)?;
                let tool = called_name(item.get("name"), &below(place, "name"))?;
                let arguments = arguments_text(item.get("arguments"), &below(place, "arguments"))?;
                self.calls.call(
                    key,
                    TraceCall {
                        tool,
                        arguments,
                        ok: true,
                        output: Value::Null,
                        place: place.to_string(),
                    },
                )
            }
            Some("function_call_output") => {
                let key = id_key(item.get("call_id"), &below(place, "call_id"), false)?;
                self.calls
                    .result(&key, place, true, output_of(item.get("output")))
            }
            Some("message") | None if item.get("role").and_then(Value::as_str) == Some("user") => {
                if self.prompt.is_none() {
                    self.prompt = content_text(item.get("content"));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// A call's `arguments`: JSON text holding an object.
fn arguments_text(
    arguments: Option<&Value>,
    place: &str,
) -> Result<Map<String, Value>, TraceError> {
    let Some(Value::String(text)) = arguments else {
        return Err(TraceError::new(
            TraceFault::Arguments,
            place,
            "the arguments are not JSON text: OpenAI writes a call's arguments as a string holding a JSON object",
        ));
    };
    match super::read_json(text.as_bytes()) {
        Ok(Value::Object(arguments)) => {
            super::exact_numbers(text.as_bytes(), place)?;
            Ok(arguments)
        }
        Ok(_) => Err(TraceError::new(
            TraceFault::Arguments,
            place,
            "the arguments are not a JSON object: a tool is called with an object of named arguments",
        )),
        Err(e) if chio_kernel::canonical::is_duplicate_key(&e) => Err(TraceError::new(
            TraceFault::Arguments,
            place,
            format!(
                "the arguments are not JSON with each key once per object (column {}): a key appears twice in one object, and readers differ on which one they keep; fix the call or drop it",
                e.column()
            ),
        )),
        Err(e) => Err(TraceError::new(
            TraceFault::Arguments,
            place,
            format!(
                "the arguments are not JSON (column {}): the model wrote arguments no tool could read; fix them or drop the call",
                e.column()
            ),
        )),
    }
}
