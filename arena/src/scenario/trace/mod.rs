//! Recorded agent traces turned into a scenario (`chio import trace`).
//!
//! The input is untrusted: a session some client, server or model
//! produced. Each format has its reader, which walks the input once and
//! gives a [`Trace`]: the tools it defines, the tool calls in the order
//! they were made, each matched with its result, and the prompt the
//! conversation opened with. [`import_trace`] then writes the scenario
//! ([`write`]): one recorded server answering every call as the trace
//! recorded it, one step per call. Whatever the reader or the writer
//! refuses is a [`TraceError`] naming the place (a line of a log, a JSON
//! pointer of a transcript) and the fix, never a value of the input: a
//! trace may carry secrets. What this module leaves to others: the rules a
//! tool definition satisfies ([`super::tools`], shared with `chio import
//! mcp` through [`super::mcp`]) and the validation the written scenario
//! passes before anything is written ([`super::load`]).
//!
//! Module map:
//! - [`mcp_log`]: an MCP JSON-RPC session log, one message per line;
//! - [`openai`]: an OpenAI Chat Completions or Responses transcript;
//! - [`anthropic`]: an Anthropic Messages transcript;
//! - [`write`]: the scenario text, the schema of a tool called but never
//!   defined, and JSON values written as TOML.

use std::fmt;

use serde_json::{Map, Value};

use super::mcp::ImportedTool;
use super::tools::{is_tool_name, TOOL_NAME_RULE};

pub mod anthropic;
pub mod mcp_log;
pub mod openai;
pub mod write;

/// The formats `chio import trace --format` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TraceFormat {
    /// An MCP JSON-RPC session log, one message per line.
    Mcp,
    /// An OpenAI Chat Completions or Responses transcript.
    OpenAi,
    /// An Anthropic Messages transcript.
    Anthropic,
}

impl TraceFormat {
    /// Every format, in the order the help lists them.
    pub const ALL: [TraceFormat; 3] = [
        TraceFormat::Mcp,
        TraceFormat::OpenAi,
        TraceFormat::Anthropic,
    ];

    /// The format a `--format` word names, if any.
    pub fn parse(word: &str) -> Option<TraceFormat> {
        TraceFormat::ALL.into_iter().find(|f| f.as_str() == word)
    }

    /// The word `--format` takes for this format.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::Mcp => "mcp",
            TraceFormat::OpenAi => "openai",
            TraceFormat::Anthropic => "anthropic",
        }
    }

    /// What the format's input is, for the scenario's title and comments.
    pub fn describe(self) -> &'static str {
        match self {
            TraceFormat::Mcp => "an MCP session log",
            TraceFormat::OpenAi => "an OpenAI transcript",
            TraceFormat::Anthropic => "an Anthropic Messages transcript",
        }
    }
}

/// What kind of refusal a [`TraceError`] is; each has its own error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFault {
    /// The input is not JSON (or not JSON lines), or ends before its JSON does.
    Syntax,
    /// The input is JSON of another shape than the format's.
    Shape,
    /// A result without its call, or a call without its result.
    Unmatched,
    /// Two calls, or two requests, carry one id; or a call is answered twice.
    DuplicateId,
    /// A tool call's arguments are not a JSON object.
    Arguments,
    /// A tool name outside MCP's grammar, or a definition the scenario refuses.
    Tool,
    /// A value a scenario cannot write (`null`, an integer past 2^53).
    Value,
    /// The written scenario does not validate.
    Refused,
}

/// Why a trace is refused: the kind, the place and the fix, never a value
/// of the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {reason}")]
pub struct TraceError {
    /// Which refusal it is, which picks its error code.
    pub fault: TraceFault,
    /// Where: `line 7`, `/messages/3/tool_calls/0`, `the input`.
    pub place: String,
    /// What is wrong and how to fix it.
    pub reason: String,
}

impl TraceError {
    /// A refusal of `fault` at `place`.
    pub fn new(fault: TraceFault, place: impl fmt::Display, reason: impl Into<String>) -> Self {
        TraceError {
            fault,
            place: place.to_string(),
            reason: reason.into(),
        }
    }
}

/// One tool call of a trace with its recorded result.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceCall {
    /// The tool called (MCP's tool-name grammar, checked).
    pub tool: String,
    /// The arguments it was called with.
    pub arguments: Map<String, Value>,
    /// Whether the tool carried the call out (`false` for an MCP `isError`
    /// result, a JSON-RPC error, an Anthropic `is_error`).
    pub ok: bool,
    /// What the tool answered.
    pub output: Value,
    /// Where the call is in the input, for a later refusal to name.
    pub place: String,
}

/// A trace as its reader found it.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The format it was read as.
    pub format: TraceFormat,
    /// The tools the trace defines (`tools/list`, a transcript's `tools`),
    /// in the order they were defined, each checked.
    pub tools: Vec<ImportedTool>,
    /// The tool calls in the order they were made.
    pub calls: Vec<TraceCall>,
    /// The first user message's text, when the trace has one.
    pub prompt: Option<String>,
}

/// What `chio import trace` writes: the scenario and its prompt file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedTrace {
    /// The text of `scenario.toml`.
    pub scenario: String,
    /// The prompt file's path, relative to the scenario (its
    /// `seed_prompt_ref`).
    pub prompt_ref: String,
    /// The prompt file's text.
    pub prompt: String,
    /// The tools the trace defines whose definition the prompt-injection
    /// reader flags (tool poisoning), in definition order, with what it
    /// found; each is still declared, with a comment above it.
    pub flagged: Vec<(
        String,
        chio_kernel::guards::prompt_injection::DefinitionFinding,
    )>,
}

/// Reads `bytes` as `format` and writes the scenario `id` that replays it,
/// checked by the same validation `chio arena validate` runs.
pub fn import_trace(
    bytes: &[u8],
    format: TraceFormat,
    id: &str,
) -> Result<ImportedTrace, TraceError> {
    let trace = read_trace(bytes, format)?;
    write::scenario(&trace, id)
}

/// Reads `bytes` as `format`, without writing anything.
pub fn read_trace(bytes: &[u8], format: TraceFormat) -> Result<Trace, TraceError> {
    let trace = match format {
        TraceFormat::Mcp => mcp_log::read(bytes)?,
        TraceFormat::OpenAi => openai::read(bytes)?,
        TraceFormat::Anthropic => anthropic::read(bytes)?,
    };
    if trace.calls.is_empty() {
        return Err(TraceError::new(
            TraceFault::Shape,
            "the input",
            format!(
                "holds no tool call: a scenario replays at least one; pass {} that calls a tool",
                format.describe()
            ),
        ));
    }
    Ok(trace)
}

/// One JSON document of a trace, read as `chio import mcp` and `chio eval`
/// read theirs: an object holding a key twice is refused, since readers
/// differ on which of the two they keep, and the call replayed could then
/// differ from the call the server acted on.
fn read_json(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    chio_kernel::canonical::from_slice_unique(bytes)
}

/// The one JSON document of a transcript, or a refusal naming the line and
/// column (never the text).
fn parse_json(bytes: &[u8], place: &str, what: &str) -> Result<Value, TraceError> {
    let value = read_json(bytes).map_err(|e| json_refusal(&e, place, what))?;
    exact_numbers(bytes, place)?;
    Ok(value)
}

/// Refuses JSON text (already parsed) holding a number whose fraction
/// rounds away when read (`100.000000000000001` reads as `100`): the
/// scenario would hold the whole number the call never carried.
fn exact_numbers(bytes: &[u8], place: &str) -> Result<(), TraceError> {
    let text = String::from_utf8_lossy(bytes);
    match chio_kernel::canonical::first_rounded_whole(&text) {
        None => Ok(()),
        Some(offset) => {
            let line = 1 + text[..offset].matches('\n').count();
            Err(TraceError::new(
                TraceFault::Syntax,
                place,
                format!(
                    "holds a number whose fraction rounds away when it is read (line {line}): it would be imported as a whole number; record the exact value"
                ),
            ))
        }
    }
}

/// A `serde_json` error as a refusal at `place`.
fn json_refusal(e: &serde_json::Error, place: &str, what: &str) -> TraceError {
    use serde_json::error::Category;
    let (line, column) = (e.line(), e.column());
    let reason = match e.classify() {
        Category::Eof => format!(
            "ends before its JSON does (line {line}, column {column}): the file is truncated; save the whole {what} again"
        ),
        Category::Io => "could not be read".to_string(),
        // serde_json refuses nesting past 128 levels with this message.
        _ if e.to_string().starts_with("recursion limit exceeded") => format!(
            "nests deeper than 128 levels (line {line}, column {column}): the importer reads at most 128; record the {what} with flatter values"
        ),
        _ if chio_kernel::canonical::is_duplicate_key(e) => format!(
            "is not JSON with each key once per object (line {line}, column {column}): a key appears twice in one object, and readers differ on which one they keep; record the {what} again with each key once"
        ),
        _ => format!("is not JSON (line {line}, column {column}): pass the {what} as it was recorded"),
    };
    TraceError::new(TraceFault::Syntax, place, reason)
}

/// The JSON object at `place`, or the `fault` that it is not one.
fn object(
    value: &Value,
    fault: TraceFault,
    place: impl fmt::Display,
) -> Result<&Map<String, Value>, TraceError> {
    value
        .as_object()
        .ok_or_else(|| TraceError::new(fault, place, "is not a JSON object"))
}

/// The JSON array at `place`, or the shape fault that it is not one.
fn array<'a>(value: &'a Value, place: &str) -> Result<&'a Vec<Value>, TraceError> {
    value
        .as_array()
        .ok_or_else(|| TraceError::new(TraceFault::Shape, place, "is not an array"))
}

/// A JSON pointer one step below `at`.
fn below(at: &str, key: impl fmt::Display) -> String {
    let key = key.to_string().replace('~', "~0").replace('/', "~1");
    format!("{at}/{key}")
}

/// The called tool's name at `place`, checked by the tool-name rule
/// ([`is_tool_name`], which also makes it a scenario id).
fn called_name(name: Option<&Value>, place: &str) -> Result<String, TraceError> {
    match name {
        Some(Value::String(name)) if is_tool_name(name) => Ok(name.clone()),
        Some(Value::String(_)) => Err(TraceError::new(
            TraceFault::Tool,
            place,
            format!(
                "the tool name breaks MCP's tool-name grammar ({TOOL_NAME_RULE}): rename the tool where it is defined and record the trace again"
            ),
        )),
        Some(_) => Err(TraceError::new(TraceFault::Tool, place, "the tool name is not a string")),
        None => Err(TraceError::new(TraceFault::Tool, place, "names no tool: every tool call names the tool it calls")),
    }
}

/// An id a call or a result carries at `place`: a string, or for JSON-RPC
/// also an integer; its canonical text keys the matching.
fn id_key(id: Option<&Value>, place: &str, numbers: bool) -> Result<String, TraceError> {
    match id {
        Some(Value::String(s)) => Ok(format!("s:{s}")),
        Some(Value::Number(n)) if numbers && (n.is_i64() || n.is_u64()) => Ok(format!("n:{n}")),
        Some(_) => Err(TraceError::new(
            TraceFault::Shape,
            place,
            if numbers {
                "the id is neither a string nor an integer: JSON-RPC ids are one or the other"
            } else {
                "the id is not a string"
            },
        )),
        None => Err(TraceError::new(
            TraceFault::Shape,
            place,
            "has no id: a tool call and its result are matched by id",
        )),
    }
}

/// The text of a message's content: a string, or the `text` of its text
/// parts (`text`, `input_text`, `output_text`), joined; `None` when it has
/// no text.
fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    matches!(
                        p.get("type").and_then(Value::as_str),
                        Some("text" | "input_text" | "output_text")
                    )
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// A result's output: a string stays a string; an array of text parts
/// becomes their text; any other content is kept as it is.
fn output_of(content: Option<&Value>) -> Value {
    match content {
        None | Some(Value::Null) => Value::String(String::new()),
        Some(Value::Array(parts))
            if parts.iter().all(|p| {
                matches!(
                    p.get("type").and_then(Value::as_str),
                    Some("text" | "input_text" | "output_text")
                ) && p.get("text").is_some_and(Value::is_string)
            }) =>
        {
            Value::String(content_text(content).unwrap_or_default())
        }
        Some(other) => other.clone(),
    }
}

/// A transcript's tool definition as a checked tool: `name`,
/// `description` and the input schema at `schema_key`, written at `place`.
fn defined_tool(
    name: Option<&Value>,
    description: Option<&Value>,
    schema: Option<&Value>,
    place: &str,
    schema_key: &str,
) -> Result<ImportedTool, TraceError> {
    let name = called_name(name, &below(place, "name"))?;
    let description = match description {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(_) => {
            return Err(TraceError::new(
                TraceFault::Tool,
                below(place, "description"),
                "the description is not a string",
            ))
        }
    };
    let input_schema = match schema {
        None | Some(Value::Null) => serde_json::json!({"type": "object"}),
        Some(Value::Object(schema)) => Value::Object(schema.clone()),
        Some(_) => {
            return Err(TraceError::new(
                TraceFault::Tool,
                below(place, schema_key),
                "the schema is not a JSON object: a tool's parameters are a JSON Schema object such as {\"type\": \"object\"}",
            ))
        }
    };
    let contract = chio_kernel::contract::ToolContract {
        name,
        description,
        input_schema,
        output_schema: None,
        annotations: super::tools::annotations_of(None),
    };
    let digest = super::tools::check_contract(write::SERVER, &contract).map_err(|problem| {
        let key = if problem.key == "name" {
            "name"
        } else {
            schema_key
        };
        TraceError::new(
            TraceFault::Tool,
            below(place, key),
            format!("is refused: {}", problem.reason),
        )
    })?;
    Ok(ImportedTool {
        contract,
        hints: Default::default(),
        digest,
    })
}

/// Adds `tool` to `tools` unless a tool of its name is there: the same
/// definition again is kept once, another one is refused.
fn define(
    tools: &mut Vec<ImportedTool>,
    tool: ImportedTool,
    place: &str,
) -> Result<(), TraceError> {
    match tools.iter().find(|t| t.contract.name == tool.contract.name) {
        None => {
            tools.push(tool);
            Ok(())
        }
        Some(first) if first.digest == tool.digest => Ok(()),
        Some(_) => Err(TraceError::new(
            TraceFault::Tool,
            place,
            "defines a tool an earlier definition of the trace already defines otherwise: keep one definition per tool name",
        )),
    }
}

/// Calls waiting for their results, by id, in the order they were made.
#[derive(Debug, Default)]
struct Pending {
    /// Every call, in order, with its result once it has one.
    calls: Vec<(TraceCall, Option<(bool, Value)>)>,
    /// The index of each call by its id key (a `BTreeMap`: nothing
    /// iterates it into output, but lookups stay ordered and cheap).
    by_id: std::collections::BTreeMap<String, usize>,
}

impl Pending {
    /// Records a call under `key`; an id used before is refused.
    fn call(&mut self, key: String, call: TraceCall) -> Result<(), TraceError> {
        if let Some(&first) = self.by_id.get(&key) {
            return Err(TraceError::new(
                TraceFault::DuplicateId,
                &call.place,
                format!(
                    "repeats the id of the tool call at {}: each call carries its own id; record the trace again or give the call a new id",
                    self.calls[first].0.place
                ),
            ));
        }
        self.by_id.insert(key, self.calls.len());
        self.calls.push((call, None));
        Ok(())
    }

    /// Records the result of the call `key` names.
    fn result(
        &mut self,
        key: &str,
        place: &str,
        ok: bool,
        output: Value,
    ) -> Result<(), TraceError> {
        let Some(&index) = self.by_id.get(key) else {
            return Err(TraceError::new(
                TraceFault::Unmatched,
                place,
                "is a result whose id no earlier tool call carries: the trace lost the call, or the result came first; record the whole session again",
            ));
        };
        let (call, answer) = &mut self.calls[index];
        if answer.is_some() {
            return Err(TraceError::new(
                TraceFault::DuplicateId,
                place,
                format!(
                    "is a second result for the tool call at {}: each call is answered once; keep one result",
                    call.place
                ),
            ));
        }
        *answer = Some((ok, output));
        Ok(())
    }

    /// The calls with their results, or the first call left unanswered.
    fn finish(self, what: &str) -> Result<Vec<TraceCall>, TraceError> {
        self.calls
            .into_iter()
            .map(|(mut call, answer)| match answer {
                Some((ok, output)) => {
                    call.ok = ok;
                    call.output = output;
                    Ok(call)
                }
                None => Err(TraceError::new(
                    TraceFault::Unmatched,
                    &call.place,
                    format!("is a tool call with no result: the trace is cut short; record it until {what} answers every call"),
                )),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
