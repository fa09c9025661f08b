//! The tools every built-in server kind publishes, as contracts: name,
//! description, input schema (draft 2020-12) and MCP annotations. One table
//! serves `validate` (a step, grant or delegation naming a tool its server
//! does not declare, or arguments its schema refuses), the kernels' catalogs
//! (the same checks at admission, for every call) and the reference table in
//! docs/scenario-schema.md, which a test compares with [`reference_table`].
//!
//! Each schema states what the simulated server needs and nothing more: a
//! workspace tool needs a string `path`, `http_post` a string `url`; other
//! properties are allowed, since the simulated sinks keep whatever they are
//! sent.
//!
//! A `recorded` server publishes no built-in tools: it declares its own
//! (`[[servers.tools]]`), each turned into the same contract here
//! ([`declared_contract`]) and checked by the one rule a declared
//! definition must satisfy, whether written in a scenario or imported from
//! an MCP server's `tools/list` ([`check_contract`]): MCP's tool-name
//! grammar, schemas that are JSON objects compiling as draft 2020-12 with
//! only local references, and a canonical form to digest.

use std::collections::BTreeMap;

use chio_kernel::contract::{
    compile_output_schema, compile_schema, ToolAnnotations, ToolCatalog, ToolContract,
};
use serde_json::{json, Value};

use super::ServerKind;
use crate::model::{AnnotationsDecl, ServerDecl, ToolDecl};

/// The longest tool name MCP's grammar allows.
pub const MAX_TOOL_NAME: usize = 128;

/// Annotations of a tool that changes nothing and reaches no open world.
const READS: ToolAnnotations = ToolAnnotations {
    read_only_hint: true,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

fn tool(
    name: &str,
    description: &str,
    input_schema: Value,
    annotations: ToolAnnotations,
) -> ToolContract {
    ToolContract {
        name: name.to_string(),
        description: description.to_string(),
        input_schema,
        output_schema: None,
        annotations,
    }
}

/// An object schema with `required` string properties and `optional` ones
/// of any type.
fn object(required: &[&str], optional: &[(&str, Value)]) -> Value {
    let mut properties = serde_json::Map::new();
    for name in required {
        properties.insert((*name).to_string(), json!({"type": "string"}));
    }
    for (name, schema) in optional {
        properties.insert((*name).to_string(), schema.clone());
    }
    json!({"type": "object", "properties": properties, "required": required})
}

impl ServerKind {
    /// Every kind that publishes its own tools, in the order the docs list
    /// them.
    pub const BUILT_IN: [ServerKind; 5] = [
        ServerKind::Workspace,
        ServerKind::Publish,
        ServerKind::TestRunner,
        ServerKind::Http,
        ServerKind::Bank,
    ];

    /// The kind as a scenario writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerKind::Workspace => "workspace",
            ServerKind::Publish => "publish",
            ServerKind::TestRunner => "test-runner",
            ServerKind::Http => "http",
            ServerKind::Recorded => "recorded",
            ServerKind::Mcp => "mcp",
            ServerKind::Bank => "bank",
        }
    }

    /// The tools a server of this kind publishes (none for `recorded`,
    /// whose tools its declaration gives: [`server_tools`]).
    pub fn tools(self) -> Vec<ToolContract> {
        let path = || object(&["path"], &[]);
        match self {
            ServerKind::Workspace => vec![
                tool("read_file", "Reads the file at path.", path(), READS),
                tool(
                    "write_file",
                    "Writes content (any JSON value; text as is) to the file at path, replacing it.",
                    object(&["path"], &[("content", json!({}))]),
                    ToolAnnotations {
                        read_only_hint: false,
                        destructive_hint: true,
                        idempotent_hint: true,
                        open_world_hint: false,
                    },
                ),
                tool("list_dir", "Lists the files under path.", path(), READS),
                tool(
                    "delete_file",
                    "Deletes the file at path.",
                    path(),
                    ToolAnnotations {
                        read_only_hint: false,
                        destructive_hint: true,
                        idempotent_hint: true,
                        open_world_hint: false,
                    },
                ),
            ],
            ServerKind::Publish => vec![tool(
                "publish",
                "Publishes its arguments to the outside world.",
                json!({"type": "object"}),
                ToolAnnotations {
                    read_only_hint: false,
                    destructive_hint: false,
                    idempotent_hint: false,
                    open_world_hint: true,
                },
            )],
            ServerKind::TestRunner => vec![tool(
                "run_tests",
                "Runs the named tests (all when tests is absent).",
                object(
                    &[],
                    &[("tests", json!({"type": "array", "items": {"type": "string"}}))],
                ),
                READS,
            )],
            ServerKind::Http => vec![tool(
                "http_post",
                "POSTs the other arguments to url.",
                object(&["url"], &[]),
                ToolAnnotations {
                    read_only_hint: false,
                    destructive_hint: true,
                    idempotent_hint: false,
                    open_world_hint: true,
                },
            )],
            ServerKind::Recorded | ServerKind::Mcp => Vec::new(),
            ServerKind::Bank => vec![tool(
                "send_money",
                "Transfers amount to the account recipient (an IBAN) from the user's own account.",
                object(&["recipient", "amount"], &[("subject", json!({}))]),
                ToolAnnotations {
                    read_only_hint: false,
                    destructive_hint: true,
                    idempotent_hint: false,
                    open_world_hint: false,
                },
            )],
        }
    }
}

/// Whether `name` is a tool name, one rule for a declaration, `chio import
/// mcp` and `chio import trace`: MCP's tool-name grammar (1 to 128
/// characters, each an ASCII letter, a digit, `_`, `-` or `.`), and never
/// `.` or `..`, which are no scenario id (so no grant could name it).
pub fn is_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The tool-name rule as a refusal states it.
pub const TOOL_NAME_RULE: &str = "1 to 128 characters of A-Z, a-z, 0-9, _, - and ., not . or ..";

/// What is wrong with a tool definition: the key at fault (`name`,
/// `input_schema`, `output_schema`, `digest`) and why, never a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractProblem {
    /// The key of the definition at fault.
    pub key: &'static str,
    /// What is wrong and how to fix it.
    pub reason: String,
}

fn problem(key: &'static str, reason: impl Into<String>) -> ContractProblem {
    ContractProblem {
        key,
        reason: reason.into(),
    }
}

/// Checks a tool definition as a recorded server declares it, written or
/// imported: its name, its schemas (JSON objects that compile as draft
/// 2020-12 with only local references) and its canonical form, and
/// answers its digest. `server` names the server in a compile error.
pub fn check_contract(server: &str, contract: &ToolContract) -> Result<String, ContractProblem> {
    let name = &contract.name;
    if !is_tool_name(name) {
        return Err(problem(
            "name",
            format!("a tool name is {TOOL_NAME_RULE} (MCP's tool-name grammar)"),
        ));
    }
    if !contract.input_schema.is_object() {
        return Err(problem(
            "input_schema",
            format!("the input schema of tool {name} is not a JSON object"),
        ));
    }
    compile_schema(server, name, &contract.input_schema)
        .map_err(|e| problem("input_schema", e.to_string()))?;
    if let Some(output) = &contract.output_schema {
        if !output.is_object() {
            return Err(problem(
                "output_schema",
                format!("the output schema of tool {name} is not a JSON object"),
            ));
        }
        compile_output_schema(server, name, output)
            .map_err(|e| problem("output_schema", e.to_string()))?;
    }
    contract.digest().map_err(|_| {
        problem(
            "input_schema",
            format!(
                "the definition of tool {name} has no canonical JSON form (an integer past 2^53)"
            ),
        )
    })
}

/// A schema written as JSON text, parsed with every key once per object;
/// the error gives the line and column of the first fault, never the text.
fn schema_text(key: &'static str, tool: &str, text: &str) -> Result<Value, ContractProblem> {
    // A key given twice would let the text a server lists (and a reader
    // scans) differ from the schema enforced and digested, which keeps the
    // last.
    chio_kernel::canonical::from_slice_unique(text.as_bytes()).map_err(|e| {
        problem(
            key,
            format!(
                "the {key} of tool {tool} is not JSON text with each key once per object (line {}, column {}): write the schema as a JSON object in a TOML string",
                e.line(),
                e.column()
            ),
        )
    })
}

/// The annotations a declaration gives, each absent hint taking MCP's
/// default.
pub fn annotations_of(decl: Option<&AnnotationsDecl>) -> ToolAnnotations {
    let defaults = ToolAnnotations::default();
    let decl = decl.copied().unwrap_or_default();
    ToolAnnotations {
        read_only_hint: decl.read_only_hint.unwrap_or(defaults.read_only_hint),
        destructive_hint: decl.destructive_hint.unwrap_or(defaults.destructive_hint),
        idempotent_hint: decl.idempotent_hint.unwrap_or(defaults.idempotent_hint),
        open_world_hint: decl.open_world_hint.unwrap_or(defaults.open_world_hint),
    }
}

/// The contract a `[[servers.tools]]` entry of server `server` declares,
/// checked ([`check_contract`]), with its digest; a `digest` it states must
/// be that one.
pub fn declared_contract(
    server: &str,
    decl: &ToolDecl,
) -> Result<(ToolContract, String), ContractProblem> {
    let name = &decl.name;
    let contract = ToolContract {
        name: name.clone(),
        description: decl.description.clone().unwrap_or_default(),
        input_schema: schema_text("input_schema", name, &decl.input_schema)?,
        output_schema: decl
            .output_schema
            .as_deref()
            .map(|text| schema_text("output_schema", name, text))
            .transpose()?,
        annotations: annotations_of(decl.annotations.as_ref()),
    };
    let digest = check_contract(server, &contract)?;
    match &decl.digest {
        Some(stated) if !stated.eq_ignore_ascii_case(&digest) => Err(problem(
            "digest",
            format!(
                "the definition of tool {name} digests to {digest}, not to the stated digest: the definition changed since it was recorded; check the change and state the new digest, or remove the key"
            ),
        )),
        _ => Ok((contract, digest)),
    }
}

/// The tools server `server` publishes: its built-in kind's, or for a
/// recorded server those it declares (a declaration validation refuses is
/// left out). `None` for a kind that is not known.
pub fn server_tools(server: &ServerDecl) -> Option<Vec<ToolContract>> {
    let kind = ServerKind::parse(&server.kind)?;
    Some(match kind {
        ServerKind::Recorded | ServerKind::Mcp => server
            .tools
            .iter()
            .flatten()
            .filter_map(|decl| declared_contract(&server.id, decl).ok())
            .map(|(contract, _)| contract)
            .collect(),
        built_in => built_in.tools(),
    })
}

/// The parts of a built-in tool's answer its server computes from what
/// the call sent, rather than reads from its records or echoes: whether
/// the call succeeded, a digest of the call, the length of what was
/// written, a test run's status and the failures among the tests asked for.
fn built_in_derived(kind: &str, tool: &str) -> &'static [&'static str] {
    match (ServerKind::parse(kind), tool) {
        (Some(ServerKind::Workspace), "write_file") => &["ok", "bytes"],
        (Some(ServerKind::Workspace), _) => &["ok"],
        (Some(ServerKind::TestRunner), _) => &["ok", "status", "failed"],
        (Some(ServerKind::Publish | ServerKind::Http | ServerKind::Bank), _) => &["ok", "digest"],
        _ => &[],
    }
}

/// What a server declares of its tools' outputs, by tool: for a recorded
/// or live MCP server, every declared tool, computed from what it is sent
/// (the arena does not know how such a server answers), with the labels
/// it declares per part (`[[servers.fields]]`) as rules over the released
/// value; an entry validation refuses is left out. For a built-in server,
/// whose answers the arena makes itself, every tool with the parts it
/// computes from what the call sent ([`built_in_derived`]).
pub fn output_rules(server: &ServerDecl) -> BTreeMap<String, chio_kernel::provenance::OutputRules> {
    let computed = matches!(
        ServerKind::parse(&server.kind),
        Some(ServerKind::Recorded | ServerKind::Mcp)
    );
    let tools: BTreeMap<String, ToolContract> = server_tools(server)
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.name.clone(), t))
        .collect();
    let mut out: BTreeMap<String, chio_kernel::provenance::OutputRules> = BTreeMap::new();
    for name in tools.keys() {
        let rules = out.entry(name.clone()).or_default();
        rules.computed = computed;
        rules.kept_with = server.shares_state_with.clone();
        rules.derived = built_in_derived(&server.kind, name)
            .iter()
            .map(|part| vec![part.to_string()])
            .collect();
    }
    for (j, field) in server.fields.iter().flatten().enumerate() {
        let at = format!("fields[{j}]");
        if let Ok(rule) = crate::scenario::validate::field_label(&at, &server.id, field, &tools) {
            let rules = out.entry(field.tool.clone()).or_default();
            rules.computed = computed;
            rules.fields.push(rule);
        }
    }
    out
}

/// The Markdown table of every built-in kind's tools, as
/// docs/scenario-schema.md carries it.
pub fn reference_table() -> String {
    let mut out = String::from(
        "| kind | tool | required arguments | readOnly | destructive | idempotent | openWorld | what it does |\n|---|---|---|---|---|---|---|---|\n",
    );
    let yes = |b: bool| if b { "yes" } else { "no" };
    for kind in ServerKind::BUILT_IN {
        for t in kind.tools() {
            let required: Vec<String> = t.input_schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|name| format!("`{name}`"))
                .collect();
            let a = t.annotations;
            out.push_str(&format!(
                "| `{}` | `{}` | {} | {} | {} | {} | {} | {} |\n",
                kind.as_str(),
                t.name,
                if required.is_empty() {
                    "none".to_string()
                } else {
                    required.join(", ")
                },
                yes(a.read_only_hint),
                yes(a.destructive_hint),
                yes(a.idempotent_hint),
                yes(a.open_world_hint),
                t.description
            ));
        }
    }
    out
}

/// The declared tool closest to `name` by edit distance, for a message
/// naming the fix.
pub fn closest<'a>(name: &str, declared: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    declared
        .into_iter()
        .min_by_key(|candidate| (edit_distance(name, candidate), *candidate))
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// The catalog of kernel `kernel` of `file`: the tools of every server it
/// serves, by server id ([`server_tools`]). The error names a server whose
/// kind is not known (which `validate` refuses).
pub fn catalog_of(file: &crate::model::ScenarioFile, kernel: &str) -> Result<ToolCatalog, String> {
    let mut catalog = ToolCatalog::new();
    for server in file.servers.iter().filter(|s| s.kernel == kernel) {
        let tools = server_tools(server)
            .ok_or_else(|| server.id.clone())?
            .into_iter()
            .map(|tool| (tool.name.clone(), tool))
            .collect();
        catalog.insert(server.id.clone(), tools);
    }
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every built-in schema compiles as draft 2020-12, and the closest tool of a typo is the one meant.
    #[test]
    fn builtin_schemas_compile_and_typos_find_their_tool() {
        for kind in ServerKind::BUILT_IN {
            for t in kind.tools() {
                chio_kernel::contract::compile_schema(kind.as_str(), &t.name, &t.input_schema)
                    .expect("compiles");
            }
        }
        let names = ["read_file", "write_file", "list_dir", "delete_file"];
        assert_eq!(closest("read_flie", names), Some("read_file"));
        assert_eq!(closest("writefile", names), Some("write_file"));
        assert_eq!(edit_distance("git_psuh", "git_push"), 2);
    }

    // No definition of a built-in kind is ever flagged by the injection reader (they are code, so this is the whole set).
    #[test]
    fn builtin_definitions_are_never_flagged_as_poisoned() {
        for kind in ServerKind::BUILT_IN {
            for t in kind.tools() {
                assert_eq!(
                    chio_kernel::guards::prompt_injection::scan_definition(&t),
                    None,
                    "{}/{}",
                    kind.as_str(),
                    t.name
                );
            }
        }
    }

    // The table in docs/scenario-schema.md is the one the code publishes; run with CHIO_WRITE_DOCS=1 to regenerate it.
    #[test]
    fn the_documented_tools_table_is_the_code_s() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenario-schema.md");
        let text = std::fs::read_to_string(path).expect("the schema doc");
        let (begin, end) = ("<!-- tools table: begin -->\n", "<!-- tools table: end -->");
        let start = text.find(begin).expect("the table's start marker") + begin.len();
        let stop = text.find(end).expect("the table's end marker");
        let table = reference_table();
        if std::env::var_os("CHIO_WRITE_DOCS").is_some() {
            let written = format!("{}{table}{}", &text[..start], &text[stop..]);
            std::fs::write(path, written).expect("written");
            return;
        }
        assert_eq!(
            &text[start..stop],
            table,
            "regenerate with CHIO_WRITE_DOCS=1"
        );
    }
}
