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

use chio_kernel::contract::{ToolAnnotations, ToolCatalog, ToolContract};
use serde_json::{json, Value};

use super::ServerKind;

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
    /// Every kind, in the order the docs list them.
    pub const ALL: [ServerKind; 5] = [
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
            ServerKind::Bank => "bank",
        }
    }

    /// The tools a server of this kind publishes.
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

/// The Markdown table of every built-in kind's tools, as
/// docs/scenario-schema.md carries it.
pub fn reference_table() -> String {
    let mut out = String::from(
        "| kind | tool | required arguments | readOnly | destructive | idempotent | openWorld | what it does |\n|---|---|---|---|---|---|---|---|\n",
    );
    let yes = |b: bool| if b { "yes" } else { "no" };
    for kind in ServerKind::ALL {
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
/// serves, by server id. The error names a server whose kind is not a
/// built-in one (which `validate` refuses).
pub fn catalog_of(file: &crate::model::ScenarioFile, kernel: &str) -> Result<ToolCatalog, String> {
    let mut catalog = ToolCatalog::new();
    for server in file.servers.iter().filter(|s| s.kernel == kernel) {
        let kind = ServerKind::parse(&server.kind).ok_or_else(|| server.id.clone())?;
        let tools = kind
            .tools()
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
        for kind in ServerKind::ALL {
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
