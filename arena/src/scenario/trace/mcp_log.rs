//! An MCP session log: the JSON-RPC messages of one session, one per line,
//! as the stdio transport carries them.
//!
//! Requests are matched to their responses by id. `tools/list` responses
//! give the tools (every page, merged; a tool listed again with the same
//! definition is kept once), `tools/call` requests the calls in the order
//! they were sent, and their responses what each answered: `isError: true`
//! or a JSON-RPC error records a call the server did not carry out. Other
//! requests (`initialize`, `ping`, ...) are matched but give nothing, and
//! notifications (no id) are skipped. Ids are one space for the session: a
//! log whose two directions reuse each other's ids is refused as a
//! repeated id. Places are line numbers, counted from 1.

use serde_json::{Map, Value};

use super::{
    called_name, define, id_key, json_refusal, Pending, Trace, TraceCall, TraceError, TraceFault,
    TraceFormat,
};
use crate::scenario::mcp::parse_tools_page;

/// What a request was, kept until its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    /// A `tools/list` request.
    ToolsList,
    /// A `tools/call` request.
    ToolsCall,
    /// Anything else.
    Other,
}

/// Reads a session log.
pub fn read(bytes: &[u8]) -> Result<Trace, TraceError> {
    let mut reader = Reader::default();
    for (n, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let place = format!("line {}", n + 1);
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let message: Value = super::read_json(line)
            .map_err(|e| json_refusal(&e, &place, "session log, one JSON-RPC message per line,"))?;
        super::exact_numbers(line, &place)?;
        match message {
            Value::Array(batch) => {
                for (k, message) in batch.iter().enumerate() {
                    reader.message(message, &format!("{place}, message {k}"))?;
                }
            }
            message => reader.message(&message, &place)?,
        }
    }
    let mut tools = Vec::new();
    for (page, place) in reader.pages {
        for tool in page {
            define(&mut tools, tool, &place)?;
        }
    }
    Ok(Trace {
        format: TraceFormat::Mcp,
        tools,
        calls: reader.calls.finish("the server")?,
        prompt: None,
    })
}

/// The state of one pass over the log.
#[derive(Debug, Default)]
struct Reader {
    /// Every request's id key, with what it asked, where, and whether it
    /// was answered (a `BTreeMap`: lookups only, nothing reaches output).
    requests: std::collections::BTreeMap<String, (Asked, String, bool)>,
    /// The `tools/call` requests and their results.
    calls: Pending,
    /// Each `tools/list` page's tools, with the line it came on.
    pages: Vec<(Vec<crate::scenario::mcp::ImportedTool>, String)>,
}

impl Reader {
    fn message(&mut self, message: &Value, place: &str) -> Result<(), TraceError> {
        let Value::Object(message) = message else {
            return Err(TraceError::new(
                TraceFault::Shape,
                place,
                "is not a JSON object: each line of the log is one JSON-RPC message",
            ));
        };
        let id = message.get("id").filter(|id| !id.is_null());
        match (message.get("method"), id) {
            (Some(Value::String(method)), Some(id)) => self.request(method, id, message, place),
            (Some(Value::String(_)), None) => Ok(()),
            (Some(_), _) => Err(TraceError::new(TraceFault::Shape, place, "the method is not a string")),
            (None, Some(id)) if message.contains_key("result") || message.contains_key("error") => {
                self.response(id, message, place)
            }
            _ => Err(TraceError::new(
                TraceFault::Shape,
                place,
                "is neither a request, a notification nor a response: pass the messages of one MCP session as JSON-RPC carries them",
            )),
        }
    }

    fn request(
        &mut self,
        method: &str,
        id: &Value,
        message: &Map<String, Value>,
        place: &str,
    ) -> Result<(), TraceError> {
        let key = id_key(Some(id), place, true)?;
        if let Some((_, first, _)) = self.requests.get(&key) {
            return Err(TraceError::new(
                TraceFault::DuplicateId,
                place,
                format!("repeats the id of the request at {first}: a session never reuses a request id; record the session again"),
            ));
        }
        let asked = match method {
            "tools/list" => Asked::ToolsList,
            "tools/call" => Asked::ToolsCall,
            _ => Asked::Other,
        };
        if asked == Asked::ToolsCall {
            let params = match message.get("params") {
                Some(Value::Object(params)) => params,
                _ => return Err(TraceError::new(
                    TraceFault::Shape,
                    place,
                    "is a tools/call request without params: a call names its tool in params.name",
                )),
            };
            let tool = called_name(params.get("name"), &format!("{place}, params.name"))?;
            let arguments = match params.get("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(arguments)) => arguments.clone(),
                Some(_) => {
                    return Err(TraceError::new(
                        TraceFault::Arguments,
                        format!("{place}, params.arguments"),
                        "the arguments are not a JSON object: a tool is called with an object of named arguments",
                    ))
                }
            };
            let call = TraceCall {
                tool,
                arguments,
                ok: true,
                output: Value::Null,
                place: place.to_string(),
            };
            self.calls.call(key.clone(), call)?;
        }
        self.requests.insert(key, (asked, place.to_string(), false));
        Ok(())
    }

    fn response(
        &mut self,
        id: &Value,
        message: &Map<String, Value>,
        place: &str,
    ) -> Result<(), TraceError> {
        let key = id_key(Some(id), place, true)?;
        let Some((asked, request, answered)) = self.requests.get_mut(&key) else {
            return Err(TraceError::new(
                TraceFault::Unmatched,
                place,
                "is a response whose id no earlier request carries: the log lost the request, or starts mid-session; record the whole session",
            ));
        };
        if *answered {
            return Err(TraceError::new(
                TraceFault::DuplicateId,
                place,
                format!("is a second response to the request at {request}: each request is answered once; keep one response"),
            ));
        }
        *answered = true;
        let asked = *asked;
        let result = match (message.get("result"), message.get("error")) {
            (Some(Value::Object(result)), None) => Ok(result),
            (None, Some(Value::Object(error))) => Err(error),
            _ => {
                return Err(TraceError::new(
                    TraceFault::Shape,
                    place,
                    "a response carries either a result object or an error object",
                ))
            }
        };
        match (asked, result) {
            (Asked::ToolsList, Ok(result)) => {
                let tools = parse_tools_page(result, "result.", super::write::SERVER)
                    .map_err(|problem| TraceError::new(TraceFault::Tool, place, problem.message))?;
                self.pages.push((tools, place.to_string()));
                Ok(())
            }
            (Asked::ToolsCall, Ok(result)) => {
                let ok = match result.get("isError") {
                    None | Some(Value::Null) => true,
                    Some(Value::Bool(is_error)) => !is_error,
                    Some(_) => {
                        return Err(TraceError::new(
                            TraceFault::Shape,
                            place,
                            "result.isError is not a boolean",
                        ))
                    }
                };
                let output = match (result.get("structuredContent"), result.get("content")) {
                    (Some(structured), _) if !structured.is_null() => structured.clone(),
                    (_, Some(content @ Value::Array(_))) => super::output_of(Some(content)),
                    _ => {
                        return Err(TraceError::new(
                            TraceFault::Shape,
                            place,
                            "the tools/call result has no content array: a call's result carries content (and may carry structuredContent)",
                        ))
                    }
                };
                self.calls.result(&key, place, ok, output)
            }
            (Asked::ToolsCall, Err(error)) => {
                let output = match error.get("message") {
                    Some(Value::String(text)) => Value::String(text.clone()),
                    _ => Value::String("JSON-RPC error".to_string()),
                };
                self.calls.result(&key, place, false, output)
            }
            (Asked::ToolsList, Err(_)) | (Asked::Other, _) => Ok(()),
        }
    }
}
