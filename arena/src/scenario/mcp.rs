//! MCP `tools/list` results turned into a recorded server's declaration
//! (`chio import mcp`).
//!
//! The input is untrusted: bytes some server produced. [`parse_tools_list`]
//! reads either the JSON-RPC response (`{"jsonrpc": ..., "result":
//! {"tools": [...]}}`) or the bare result (`{"tools": [...]}`), refuses
//! anything else with a message that names the place and the fix (never a
//! value from the input), and checks every definition with the one rule a
//! declared tool satisfies ([`super::tools::check_contract`]): MCP's
//! tool-name grammar, schemas that are JSON objects compiling as draft
//! 2020-12 with only local references, a canonical form to digest; and no
//! name twice. [`server_declaration`] prints the `[[servers]]` block, each
//! tool with its digest, so a later change of the server's definitions is
//! refused at validation until someone looks at it; [`checked_declaration`]
//! first passes it through the loader's inline-secret scan, as `chio import
//! trace` passes the scenario it writes, so a definition carrying a
//! credential is refused rather than printed.
//!
//! Every definition is also read by the kernel's prompt-injection reader
//! ([`ImportedTool::poisoning`]); a flagged one is still declared, with a
//! comment above it naming the pattern, rule and JSON pointer.
//!
//! Keys a scenario does not keep (a tool's `title`, `icons`, `_meta`, an
//! annotation's `title`) are ignored; a hint that is absent stays absent
//! and takes MCP's default, which is also what its digest covers.

use serde_json::{Map, Value};

use super::tools::{annotations_of, check_contract, is_tool_name, TOOL_NAME_RULE};
use crate::model::AnnotationsDecl;
use chio_kernel::contract::ToolContract;
use chio_kernel::guards::prompt_injection::{scan_definition, DefinitionFinding};

/// One tool of a `tools/list` result, with what its declaration prints.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedTool {
    /// The definition as a contract (absent hints at their defaults).
    pub contract: ToolContract,
    /// The hints the definition gave, to print only those.
    pub hints: AnnotationsDecl,
    /// The definition's digest.
    pub digest: String,
}

impl ImportedTool {
    /// The part of the definition its digest covers, as a recording keeps
    /// it: the name, the description (when not empty), the input and
    /// output schemas and the four hints it gave. A key no digest covers (a
    /// `title`, `_meta`, an annotation other than the hints) is left out,
    /// so a recording holds nothing its digest does not vouch for.
    pub fn hashed_definition(&self) -> Value {
        let mut definition = serde_json::Map::new();
        let c = &self.contract;
        definition.insert("name".into(), Value::String(c.name.clone()));
        if !c.description.is_empty() {
            definition.insert("description".into(), Value::String(c.description.clone()));
        }
        definition.insert("inputSchema".into(), c.input_schema.clone());
        if let Some(output) = &c.output_schema {
            definition.insert("outputSchema".into(), output.clone());
        }
        let h = &self.hints;
        let hints: serde_json::Map<String, Value> = [
            ("readOnlyHint", h.read_only_hint),
            ("destructiveHint", h.destructive_hint),
            ("idempotentHint", h.idempotent_hint),
            ("openWorldHint", h.open_world_hint),
        ]
        .into_iter()
        .filter_map(|(key, hint)| hint.map(|b| (key.to_string(), Value::Bool(b))))
        .collect();
        if !hints.is_empty() {
            definition.insert("annotations".into(), Value::Object(hints));
        }
        Value::Object(definition)
    }

    /// What the kernel's prompt-injection reader finds in the definition
    /// (tool poisoning), if anything: the same reading a kernel makes of it
    /// when it loads. An importer warns about it (or refuses it when told
    /// to) and the declaration says so above the tool.
    pub fn poisoning(&self) -> Option<DefinitionFinding> {
        scan_definition(&self.contract)
    }
}

/// Why a `tools/list` result is refused: where (a JSON-path-like place
/// such as `result.tools[2].inputSchema`) and what to do, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportProblem {
    /// What is wrong and how to fix it.
    pub message: String,
}

impl std::fmt::Display for ImportProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn refuse(message: impl Into<String>) -> ImportProblem {
    ImportProblem {
        message: message.into(),
    }
}

/// The tools of a `tools/list` result, in the order the server listed
/// them, each checked; `server` names the server in a schema's compile
/// error.
pub fn parse_tools_list(bytes: &[u8], server: &str) -> Result<Vec<ImportedTool>, ImportProblem> {
    // A key given twice (a description, a schema keyword) would let the
    // text the server listed differ from the definition read and digested.
    let value: Value = chio_kernel::canonical::from_slice_unique(bytes).map_err(|e| {
        use serde_json::error::Category;
        let (line, column) = (e.line(), e.column());
        refuse(match e.classify() {
            Category::Eof => format!(
                "the input ends before its JSON does (line {line}, column {column}): the file is truncated; save the whole tools/list response again"
            ),
            Category::Io => "the input could not be read".to_string(),
            // serde_json refuses nesting past 128 levels with this message.
            _ if e.to_string().starts_with("recursion limit exceeded") => format!(
                "the input nests deeper than 128 levels (line {line}, column {column}): the importer reads at most 128; have the server list flatter schemas"
            ),
            _ if e.to_string().starts_with("number out of range") => format!(
                "the input holds a number beyond the range of a JSON number (line {line}, column {column}): have the server list the number within range"
            ),
            _ if chio_kernel::canonical::is_duplicate_key(&e) => format!(
                "the input is not JSON with each key once per object (line {line}, column {column}): a key appears twice in one object; pass the tools/list response or its result as the server sent it"
            ),
            _ => format!(
                "the input is not JSON (line {line}, column {column}): pass the tools/list response or its result as the server sent it"
            ),
        })
    })?;
    let Value::Object(top) = &value else {
        return Err(refuse(
            "the input is not a JSON object: pass a JSON-RPC response {\"result\": {\"tools\": [...]}} or a result {\"tools\": [...]}",
        ));
    };
    let (result, at) = if top.contains_key("tools") {
        (top, String::new())
    } else if let Some(result) = top.get("result") {
        let Value::Object(result) = result else {
            return Err(refuse(
                "result is not a JSON object: a tools/list result is {\"tools\": [...]}",
            ));
        };
        (result, "result.".to_string())
    } else if top.contains_key("error") {
        return Err(refuse(
            "the input is a JSON-RPC error response, not a tools/list result: fix what the server reported and list its tools again",
        ));
    } else {
        return Err(refuse(
            "the input has neither tools nor result.tools: pass a JSON-RPC response {\"result\": {\"tools\": [...]}} or a result {\"tools\": [...]}",
        ));
    };
    if result.get("nextCursor").is_some_and(more_pages) {
        return Err(refuse(format!(
            "{at}nextCursor is set: the server has more tools than this page; ask for every page and merge their tools arrays into one result"
        )));
    }
    let tools = parse_tools_page(result, &at, server)?;
    if tools.is_empty() {
        return Err(refuse(format!(
            "{at}tools is empty: a recorded server declares at least one tool"
        )));
    }
    Ok(tools)
}

/// Whether a page's `nextCursor` asks for another page: MCP ends the
/// listing with no cursor, so a null or an empty one ends it too (an empty
/// cursor names no position to continue from).
pub fn more_pages(cursor: &Value) -> bool {
    !(cursor.is_null() || cursor.as_str() == Some(""))
}

/// The tools of one `tools/list` result object (`result`, written at
/// `at`, such as `result.`), each checked, none named twice; a page may be
/// empty and may carry `nextCursor` (a session log holds every page).
pub fn parse_tools_page(
    result: &Map<String, Value>,
    at: &str,
    server: &str,
) -> Result<Vec<ImportedTool>, ImportProblem> {
    let Some(Value::Array(listed)) = result.get("tools") else {
        return Err(refuse(format!(
            "{at}tools is not a JSON array: a tools/list result lists its tools as an array"
        )));
    };
    let mut tools: Vec<ImportedTool> = Vec::with_capacity(listed.len());
    for (k, entry) in listed.iter().enumerate() {
        let place = format!("{at}tools[{k}]");
        let tool = imported_tool(entry, &place, server)?;
        if let Some(first) = tools
            .iter()
            .position(|t| t.contract.name == tool.contract.name)
        {
            return Err(refuse(format!(
                "{place} repeats the name {} of {at}tools[{first}]: a server lists each tool once; keep one definition",
                tool.contract.name
            )));
        }
        tools.push(tool);
    }
    Ok(tools)
}

/// One listed tool, checked.
fn imported_tool(entry: &Value, place: &str, server: &str) -> Result<ImportedTool, ImportProblem> {
    let Value::Object(tool) = entry else {
        return Err(refuse(format!("{place} is not a JSON object")));
    };
    let name = match tool.get("name") {
        None => {
            return Err(refuse(format!(
                "{place} has no name: every tool of a tools/list result is named"
            )))
        }
        Some(Value::String(name)) => name,
        Some(_) => return Err(refuse(format!("{place}.name is not a string"))),
    };
    if !is_tool_name(name) {
        return Err(refuse(format!(
            "{place}.name breaks MCP's tool-name grammar ({TOOL_NAME_RULE}): rename the tool on the server"
        )));
    }
    let description = match tool.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(_) => return Err(refuse(format!("{place}.description is not a string"))),
    };
    let schema = |key: &str, required: bool| -> Result<Option<Value>, ImportProblem> {
        match tool.get(key) {
            None | Some(Value::Null) if !required => Ok(None),
            None => Err(refuse(format!(
                "{place} has no {key}: every tool states the JSON Schema of its arguments"
            ))),
            Some(Value::Object(schema)) => Ok(Some(Value::Object(schema.clone()))),
            Some(_) => Err(refuse(format!(
                "{place}.{key} is not a JSON object: a tool's schema is a JSON Schema object such as {{\"type\": \"object\"}}"
            ))),
        }
    };
    let input_schema = schema("inputSchema", true)?.unwrap_or_default();
    let output_schema = schema("outputSchema", false)?;
    let hints = match tool.get("annotations") {
        None | Some(Value::Null) => AnnotationsDecl::default(),
        Some(Value::Object(annotations)) => hints_of(annotations, place)?,
        Some(_) => return Err(refuse(format!("{place}.annotations is not a JSON object"))),
    };
    let contract = ToolContract {
        name: name.clone(),
        description,
        input_schema,
        output_schema,
        annotations: annotations_of(Some(&hints)),
    };
    let digest = check_contract(server, &contract).map_err(|problem| {
        let key = match problem.key {
            "output_schema" => "outputSchema",
            "name" => "name",
            _ => "inputSchema",
        };
        refuse(format!("{place}.{key} is refused: {}", problem.reason))
    })?;
    Ok(ImportedTool {
        contract,
        hints,
        digest,
    })
}

/// The four hints an annotations object gives, each a boolean when present.
fn hints_of(
    annotations: &Map<String, Value>,
    place: &str,
) -> Result<AnnotationsDecl, ImportProblem> {
    let hint = |key: &str| match annotations.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(refuse(format!(
            "{place}.annotations.{key} is not a boolean"
        ))),
    };
    Ok(AnnotationsDecl {
        read_only_hint: hint("readOnlyHint")?,
        destructive_hint: hint("destructiveHint")?,
        idempotent_hint: hint("idempotentHint")?,
        open_world_hint: hint("openWorldHint")?,
    })
}

/// A TOML string holding `text` exactly.
/// A TOML string of `text`: as the `toml` crate writes it, unless it holds
/// a control or a bidirectional control, which is then written as its
/// escape ([`super::trace::write::toml_string`]), so a declaration printed
/// for review shows on screen exactly what it declares.
fn toml_string(text: &str) -> String {
    if text
        .chars()
        .any(|c| c.is_control() || crate::report::is_bidi_control(c))
    {
        return super::trace::write::toml_string(text);
    }
    toml::Value::String(text.to_string()).to_string()
}

/// A schema's JSON text as a declaration writes it: every C1 control and
/// bidirectional control inside its strings written as a JSON escape
/// ([`crate::report::printable_json`]), so it parses to the same schema,
/// with the same digest.
fn schema_text(schema: &Value) -> String {
    crate::report::printable_json(&schema.to_string()).into_owned()
}

/// [`server_declaration`], once the scenario loader's inline-secret scan
/// ([`crate::secrets::scan_source`], the scan `chio import trace` passes
/// the scenario it writes through) has read it: a definition carrying a
/// credential (in its description, a schema, a name) gives a declaration no
/// scenario can hold, so it is refused, naming the field and the marker,
/// never the value, and nothing is printed.
pub fn checked_declaration(
    id: &str,
    kernel: &str,
    tools: &[ImportedTool],
) -> Result<String, ImportProblem> {
    let text = server_declaration(id, kernel, tools);
    let table: toml::Table = text.parse().map_err(|_| {
        refuse("the declaration written is not TOML: this is a defect, report it with the tools/list result's shape")
    })?;
    crate::secrets::scan_source(&text, &table).map_err(|e| {
        refuse(format!(
            "the declaration would not validate ({}: {}): a scenario never holds a credential; have the server drop it from the definition, then list the tools again",
            e.code(),
            e.summary()
        ))
    })?;
    Ok(text)
}

/// The `[[servers]]` block of a recorded server `id` served by `kernel`
/// declaring `tools`, ready to paste into a scenario (answers to add).
pub fn server_declaration(id: &str, kernel: &str, tools: &[ImportedTool]) -> String {
    let mut out = String::new();
    out.push_str(
        "# Imported from an MCP tools/list result (chio import mcp). Each digest pins its\n",
    );
    out.push_str(
        "# tool's definition: validation refuses the scenario once a definition changes.\n",
    );
    out.push_str("# Record the server's answers in [[servers.answers]] tables below.\n");
    out.push_str("[[servers]]\n");
    out.push_str(&format!("id = {}\n", toml_string(id)));
    out.push_str(&format!("kernel = {}\n", toml_string(kernel)));
    out.push_str("kind = \"recorded\"\n");
    for tool in tools {
        out.push_str(&tool_table(tool));
    }
    out
}

/// The `[[servers.tools]]` table of one tool (with its annotations table
/// when it gave hints), preceded by a blank line, and by a comment naming
/// the pattern, rule and place when the injection reader flags the
/// definition (never its text).
pub fn tool_table(tool: &ImportedTool) -> String {
    let mut out = String::new();
    let c = &tool.contract;
    out.push('\n');
    if let Some(found) = tool.poisoning() {
        out.push_str(&format!(
            "# Flagged as tool poisoning: the prompt-injection reader finds {found} in this\n# definition. Read it on the server before any agent sees it.\n"
        ));
    }
    out.push_str("[[servers.tools]]\n");
    out.push_str(&format!("name = {}\n", toml_string(&c.name)));
    out.push_str(&format!("description = {}\n", toml_string(&c.description)));
    out.push_str(&format!(
        "input_schema = {}\n",
        toml_string(&schema_text(&c.input_schema))
    ));
    if let Some(output) = &c.output_schema {
        out.push_str(&format!(
            "output_schema = {}\n",
            toml_string(&schema_text(output))
        ));
    }
    out.push_str(&format!("digest = {}\n", toml_string(&tool.digest)));
    let h = tool.hints;
    let given = [
        ("read_only_hint", h.read_only_hint),
        ("destructive_hint", h.destructive_hint),
        ("idempotent_hint", h.idempotent_hint),
        ("open_world_hint", h.open_world_hint),
    ];
    if given.iter().any(|(_, v)| v.is_some()) {
        out.push_str("\n[servers.tools.annotations]\n");
        for (key, value) in given {
            if let Some(value) = value {
                out.push_str(&format!("{key} = {value}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(text: &str) -> Result<Vec<ImportedTool>, String> {
        parse_tools_list(text.as_bytes(), "git").map_err(|e| e.message)
    }

    // Both shapes read the same tools; hints map to the scenario's keys with absent ones left to MCP's defaults.
    #[test]
    fn both_shapes_read_the_same_tools() {
        let bare = r#"{"tools": [{"name": "git_status", "description": "Shows status", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true, "title": "Status"}}]}"#;
        let rpc = format!(r#"{{"jsonrpc": "2.0", "id": 1, "result": {bare}}}"#);
        let a = tools(bare).unwrap();
        assert_eq!(a, tools(&rpc).unwrap());
        assert_eq!(a[0].hints.read_only_hint, Some(true));
        assert_eq!(a[0].hints.destructive_hint, None);
        assert!(a[0].contract.annotations.destructive_hint);
        let block = server_declaration("git", "kernel-a", &a);
        assert!(block.contains("read_only_hint = true\n"), "{block}");
        assert!(!block.contains("destructive_hint"), "{block}");
    }

    // A definition carrying a credential (its description, its schema) gives no declaration: the loader's inline-secret scan refuses it, naming the field and the marker, never the value; a clean one is the declaration printed.
    #[test]
    fn a_credential_in_a_definition_is_refused() {
        for (definition, field) in [
            (
                r#"{"name": "t", "description": "sign requests with AKIAIOSFODNN7EXAMPLE", "inputSchema": {"type": "object"}}"#,
                "servers[0].tools[0].description",
            ),
            (
                r#"{"name": "t", "inputSchema": {"type": "object", "default": {"k": "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}}"#,
                "servers[0].tools[0].input_schema",
            ),
        ] {
            let a = tools(&format!(r#"{{"tools": [{definition}]}}"#)).unwrap();
            let err = checked_declaration("srv", "kernel-a", &a)
                .unwrap_err()
                .message;
            assert!(err.contains("CHIO-SCENARIO-INLINE-SECRET"), "{err}");
            assert!(err.contains(field), "{err}");
            assert!(
                !err.contains("IOSFODNN7EXAMPLE") && !err.contains("ghp_aaa"),
                "{err}"
            );
        }
        let clean = tools(r#"{"tools": [{"name": "t", "description": "signs requests", "inputSchema": {"type": "object"}}]}"#).unwrap();
        assert_eq!(
            checked_declaration("srv", "kernel-a", &clean).unwrap(),
            server_declaration("srv", "kernel-a", &clean)
        );
    }

    // Hostile input is refused naming the place and the fix, never echoing a value from the input.
    #[test]
    fn hostile_input_is_refused_with_its_fix() {
        let secret = "sk-live-0123456789abcdefghij";
        for (text, wanted) in [
            (r#"{"tools": [{"name": "a", "inputSchema": {"#.to_string(), "truncated"),
            ("not json".to_string(), "is not JSON"),
            ("[1]".to_string(), "not a JSON object"),
            (r#"{"jsonrpc": "2.0", "error": {"code": -1}}"#.to_string(), "JSON-RPC error"),
            (format!(r#"{{"tools": [{{"description": "{secret}", "inputSchema": {{}}}}]}}"#), "tools[0] has no name"),
            (format!(r#"{{"tools": [{{"name": "bad name {secret}", "inputSchema": {{}}}}]}}"#), "tools[0].name breaks"),
            (format!(r#"{{"tools": [{{"name": "{}", "inputSchema": {{}}}}]}}"#, "a".repeat(129)), "tools[0].name breaks"),
            (r#"{"tools": [{"name": "a", "inputSchema": "object"}]}"#.to_string(), "tools[0].inputSchema is not a JSON object"),
            (r#"{"tools": [{"name": "a"}]}"#.to_string(), "tools[0] has no inputSchema"),
            (r#"{"tools": [{"name": "a", "inputSchema": {}}, {"name": "a", "inputSchema": {}}]}"#.to_string(), "tools[1] repeats the name a of tools[0]"),
            (r#"{"tools": [{"name": "a", "inputSchema": {"$ref": "https://example.test/x"}}]}"#.to_string(), "refers outside itself"),
            (r#"{"tools": [{"name": "a", "inputSchema": {"type": 7}}]}"#.to_string(), "does not compile"),
            (r#"{"tools": [{"name": "a", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}}]}"#.to_string(), "readOnlyHint is not a boolean"),
            (r#"{"tools": [], "nextCursor": "2"}"#.to_string(), "nextCursor"),
            (r#"{"tools": [{"name": ".", "inputSchema": {}}]}"#.to_string(), "not . or .."),
            (r#"{"tools": [{"name": "..", "inputSchema": {}}]}"#.to_string(), "not . or .."),
            (r#"{"tools": []}"#.to_string(), "tools is empty"),
            (r#"{"result": {"tools": {}}}"#.to_string(), "result.tools is not a JSON array"),
            (r#"{"tools": [{"name": "a", "inputSchema": {"maximum": 1e400}}]}"#.to_string(), "a number beyond the range of a JSON number"),
            (format!(r#"{{"tools": {}{}}}"#, "[".repeat(200), "]".repeat(200)), "nests deeper than 128 levels"),
            (r#"{"tools": [], "tools": []}"#.to_string(), "a key appears twice in one object"),
        ] {
            let err = tools(&text).expect_err(&text);
            assert!(err.contains(wanted), "{text}: {err}");
            assert!(!err.contains(secret), "{err}");
        }
    }

    // A page's nextCursor asks for another page unless it is absent, null or empty: an empty cursor names no position, so it ends the listing as MCP's absent one does.
    #[test]
    fn an_empty_cursor_ends_the_listing() {
        for ended in [
            r#"{"tools": [{"name": "a", "inputSchema": {}}]}"#,
            r#"{"tools": [{"name": "a", "inputSchema": {}}], "nextCursor": null}"#,
            r#"{"tools": [{"name": "a", "inputSchema": {}}], "nextCursor": ""}"#,
        ] {
            assert_eq!(tools(ended).expect(ended).len(), 1);
        }
        assert!(more_pages(&serde_json::json!("0")));
        assert!(more_pages(&serde_json::json!(7)));
        assert!(!more_pages(&serde_json::json!("")));
    }

    // A bidirectional or C1 control in a definition (its description or inside a schema's strings) is printed as its escape, never raw, and the declaration still reads back to the same definition and digest.
    #[test]
    fn hidden_characters_are_printed_escaped() {
        let listed = r#"{"tools": [{"name": "a", "description": "x\u202ey\u0085", "inputSchema": {"type": "object", "title": "\u202eevil\u2066"}, "outputSchema": {"type": "object", "description": "\u200f"}}]}"#;
        let imported = tools(listed).unwrap();
        let text = server_declaration("srv", "kernel-a", &imported);
        for hidden in ['\u{202e}', '\u{2066}', '\u{200f}', '\u{85}'] {
            assert!(!text.contains(hidden), "{hidden:?} printed raw: {text}");
        }
        let read: toml::Table = toml::from_str(&text).expect("the declaration parses");
        let tool = &read["servers"][0]["tools"][0];
        let c = &imported[0].contract;
        assert_eq!(tool["description"].as_str(), Some(c.description.as_str()));
        for (key, schema) in [
            ("input_schema", Some(&c.input_schema)),
            ("output_schema", c.output_schema.as_ref()),
        ] {
            let back: Value = serde_json::from_str(tool[key].as_str().unwrap()).unwrap();
            assert_eq!(Some(&back), schema, "{key}");
        }
        assert_eq!(tool["digest"].as_str(), Some(imported[0].digest.as_str()));
    }
}
