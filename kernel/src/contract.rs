//! Tool contracts: what each tool a server publishes is (its name, what it
//! does, the JSON Schema its arguments must satisfy, and the MCP tool
//! annotations saying what it touches), and the kernel's check that a call
//! names a declared tool with arguments its schema admits.
//!
//! The check runs at admission for every call, whatever sent it: a scripted
//! step, an adversary's action or a request built by hand. A kernel with a
//! catalog denies a call to a server it does not list, to a tool the server
//! does not declare, and a call whose arguments fail the tool's schema, each
//! with its own reason. A reason names the JSON pointer of the failing
//! argument and the schema keyword it breaks, never the value.
//!
//! Schemas are draft 2020-12 and compiled when the kernel is built; a
//! schema that does not compile, or that reaches outside itself (a `$ref`
//! or `$dynamicRef` that is not a fragment of the schema itself, `#...`),
//! is refused then.
//!
//! A contract's digest ([`ToolContract::digest`]) is the SHA-256 of the
//! canonical JSON (RFC 8785) of the definition as MCP's `tools/list` shapes
//! it: `name`, `description`, `inputSchema`, `outputSchema` when there is
//! one, and `annotations` with all four hints written out (absent ones take
//! the specification's defaults), so a definition imported from a server
//! and the same definition written in a scenario digest alike.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::to_canonical_vec;
use crate::error::KernelError;
use crate::reason::DenyReason;

/// What a tool touches, as the MCP specification's tool annotations say it,
/// with the specification's defaults when a definition leaves one out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool does not modify its environment (default `false`).
    #[serde(default)]
    pub read_only_hint: bool,
    /// A modification may be destructive (default `true`; meaningful only
    /// when not read-only).
    #[serde(default = "yes")]
    pub destructive_hint: bool,
    /// Calling twice with the same arguments has no further effect
    /// (default `false`).
    #[serde(default)]
    pub idempotent_hint: bool,
    /// The tool reaches an open world, such as the internet (default
    /// `true`).
    #[serde(default = "yes")]
    pub open_world_hint: bool,
}

fn yes() -> bool {
    true
}

impl Default for ToolAnnotations {
    /// The MCP specification's defaults.
    fn default() -> Self {
        Self {
            read_only_hint: false,
            destructive_hint: true,
            idempotent_hint: false,
            open_world_hint: true,
        }
    }
}

/// One declared tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolContract {
    /// The tool's name, as a call names it.
    pub name: String,
    /// What the tool does, for readers.
    pub description: String,
    /// The JSON Schema (draft 2020-12) a call's arguments must satisfy.
    pub input_schema: Value,
    /// The JSON Schema (draft 2020-12) of what the tool answers, when its
    /// definition gives one (MCP's `outputSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What the tool touches.
    pub annotations: ToolAnnotations,
}

impl ToolContract {
    /// The SHA-256 (lowercase hex) of the definition's canonical JSON (see
    /// the module doc); the error says the definition has no canonical
    /// form (an integer past 2^53), never its text.
    pub fn digest(&self) -> Result<String, KernelError> {
        use sha2::{Digest, Sha256};
        let bytes = to_canonical_vec(self)?;
        Ok(hex::encode(Sha256::digest(&bytes)))
    }
}

/// The JSON pointer of the first `$ref` or `$dynamicRef` of `schema` that
/// does not stay inside it (its value is not a string starting with `#`),
/// in document order; `None` when every reference is local.
pub fn remote_reference(schema: &Value) -> Option<String> {
    fn walk(value: &Value, at: &mut String) -> Option<String> {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    let len = at.len();
                    at.push('/');
                    at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    let is_ref = key == "$ref" || key == "$dynamicRef";
                    if is_ref && !child.as_str().is_some_and(|r| r.starts_with('#')) {
                        return Some(at.clone());
                    }
                    if let Some(found) = walk(child, at) {
                        return Some(found);
                    }
                    at.truncate(len);
                }
                None
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    let len = at.len();
                    at.push_str(&format!("/{i}"));
                    if let Some(found) = walk(child, at) {
                        return Some(found);
                    }
                    at.truncate(len);
                }
                None
            }
            _ => None,
        }
    }
    walk(schema, &mut String::new())
}

/// The tools of every server a kernel serves: server id to tool name to
/// contract.
pub type ToolCatalog = BTreeMap<String, BTreeMap<String, ToolContract>>;

/// A catalog with each schema compiled, as a kernel holds it.
pub struct CompiledCatalog {
    servers: BTreeMap<String, BTreeMap<String, jsonschema::Validator>>,
    /// The tools declared read-only, as `(server, tool)`.
    read_only: BTreeSet<(String, String)>,
    /// The tools declared to reach an open world, as `(server, tool)`.
    open_world: BTreeSet<(String, String)>,
}

impl std::fmt::Debug for CompiledCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.servers
                    .iter()
                    .map(|(server, tools)| (server, tools.keys().collect::<Vec<_>>())),
            )
            .finish()
    }
}

/// Compiles `schema` as draft 2020-12 with nothing fetched from outside it;
/// the error names the server and tool, and why, never the schema text.
pub fn compile_schema(
    server: &str,
    tool: &str,
    schema: &Value,
) -> Result<jsonschema::Validator, KernelError> {
    compile(server, tool, "input", schema)
}

/// [`compile_schema`] for a tool's output schema.
pub fn compile_output_schema(
    server: &str,
    tool: &str,
    schema: &Value,
) -> Result<jsonschema::Validator, KernelError> {
    compile(server, tool, "output", schema)
}

fn compile(
    server: &str,
    tool: &str,
    which: &str,
    schema: &Value,
) -> Result<jsonschema::Validator, KernelError> {
    if let Some(pointer) = remote_reference(schema) {
        return Err(KernelError::ToolSchema {
            detail: format!(
                "the {which} schema of tool {tool} on server {server} refers outside itself at {pointer}: only local references (#...) are followed"
            ),
        });
    }
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| KernelError::ToolSchema {
            detail: format!(
                "the {which} schema of tool {tool} on server {server} does not compile at {}: {}",
                e.schema_path(),
                keyword_of(e.schema_path().as_str())
            ),
        })
}

/// The keyword a schema path ends in (`/properties/path/type` is `type`).
fn keyword_of(schema_path: &str) -> &str {
    schema_path
        .rsplit('/')
        .find(|segment| !segment.is_empty())
        .unwrap_or("schema")
}

impl CompiledCatalog {
    /// Compiles every schema of `catalog`.
    pub fn compile(catalog: &ToolCatalog) -> Result<Self, KernelError> {
        let mut servers = BTreeMap::new();
        let mut read_only = BTreeSet::new();
        let mut open_world = BTreeSet::new();
        for (server, tools) in catalog {
            let mut compiled = BTreeMap::new();
            for (name, contract) in tools {
                compiled.insert(
                    name.clone(),
                    compile_schema(server, name, &contract.input_schema)?,
                );
                if contract.annotations.read_only_hint {
                    read_only.insert((server.clone(), name.clone()));
                }
                if contract.annotations.open_world_hint {
                    open_world.insert((server.clone(), name.clone()));
                }
            }
            servers.insert(server.clone(), compiled);
        }
        Ok(Self {
            servers,
            read_only,
            open_world,
        })
    }

    /// Whether `tool` on `server` is declared read-only: it changes
    /// nothing, so nothing it is sent is kept where a later call reads it.
    /// An undeclared tool is not.
    pub fn reads_only(&self, server: &str, tool: &str) -> bool {
        self.read_only
            .contains(&(server.to_string(), tool.to_string()))
    }

    /// Whether `tool` on `server` is declared to reach an open world
    /// (`openWorldHint`). An undeclared tool is not.
    pub fn reaches_open_world(&self, server: &str, tool: &str) -> bool {
        self.open_world
            .contains(&(server.to_string(), tool.to_string()))
    }

    /// Whether `tool` on `server` has an effect: not declared read-only, or
    /// declared to reach an open world (the `integrity` guard's default
    /// consequential set). An undeclared tool has.
    pub fn has_effects(&self, server: &str, tool: &str) -> bool {
        !self.reads_only(server, tool) || self.reaches_open_world(server, tool)
    }

    /// Whether `tool` on `server` is declared and `arguments` satisfy its
    /// schema; the deny reason otherwise.
    pub fn check(&self, server: &str, tool: &str, arguments: &Value) -> Result<(), DenyReason> {
        let tools = self
            .servers
            .get(server)
            .ok_or_else(|| DenyReason::ServerNotServed {
                server: server.to_string(),
            })?;
        let validator = tools.get(tool).ok_or_else(|| DenyReason::ToolNotDeclared {
            tool: tool.to_string(),
            server: server.to_string(),
        })?;
        match schema_failure(validator, arguments) {
            None => Ok(()),
            Some(failure) => Err(DenyReason::ArgumentsRefused {
                server: server.to_string(),
                tool: tool.to_string(),
                pointer: failure.pointer,
                keyword: failure.keyword,
            }),
        }
    }
}

/// Where arguments fail a schema: the JSON pointer of the failing value
/// (`/` for the whole) and the keyword it breaks, never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFailure {
    /// The failing value's JSON pointer.
    pub pointer: String,
    /// The schema keyword it breaks.
    pub keyword: String,
}

impl std::fmt::Display for SchemaFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "fail the tool's input schema at {}: {}",
            self.pointer, self.keyword
        )
    }
}

/// Why `arguments` fail `validator`, if they do: the first failure.
pub fn schema_failure(
    validator: &jsonschema::Validator,
    arguments: &Value,
) -> Option<SchemaFailure> {
    let error = validator.iter_errors(arguments).next()?;
    let pointer = error.instance_path().as_str().to_string();
    Some(SchemaFailure {
        pointer: if pointer.is_empty() {
            "/".to_string()
        } else {
            pointer
        },
        keyword: keyword_of(error.schema_path().as_str()).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog() -> CompiledCatalog {
        let contract = ToolContract {
            name: "read_file".into(),
            description: "reads".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
                "additionalProperties": false
            }),
            output_schema: None,
            annotations: ToolAnnotations::default(),
        };
        let mut tools = BTreeMap::new();
        tools.insert("read_file".to_string(), contract);
        let mut catalog = ToolCatalog::new();
        catalog.insert("workspace".to_string(), tools);
        CompiledCatalog::compile(&catalog).expect("compiles")
    }

    // A declared tool with admitted arguments passes; an unknown server, an undeclared tool, a missing, mistyped or extra argument is refused, naming the pointer and keyword, never the value.
    #[test]
    fn a_call_must_name_a_declared_tool_with_admitted_arguments() {
        let c = catalog();
        let text = |r: Result<(), DenyReason>| r.map_err(|e| e.to_string());
        assert_eq!(
            c.check("workspace", "read_file", &json!({"path": "/a"})),
            Ok(())
        );
        assert_eq!(
            text(c.check("other", "read_file", &json!({}))),
            Err("server other is not served by this kernel".into())
        );
        assert_eq!(
            text(c.check("workspace", "read_flie", &json!({"path": "/a"}))),
            Err("tool read_flie is not declared by server workspace".into())
        );
        assert_eq!(
            text(c.check("workspace", "read_file", &json!({}))),
            Err(
                "arguments of workspace/read_file fail the tool's input schema at /: required"
                    .into()
            )
        );
        let secret = "sk-very-secret";
        let typed = text(c.check("workspace", "read_file", &json!({"path": 7}))).unwrap_err();
        assert!(typed.ends_with("at /path: type"), "{typed}");
        let extra = text(c.check(
            "workspace",
            "read_file",
            &json!({"path": "/a", "token": secret}),
        ))
        .unwrap_err();
        assert!(extra.contains("additionalProperties"), "{extra}");
        assert!(!extra.contains(secret), "{extra}");
    }

    // A schema that does not compile is refused when the kernel is built, naming the tool.
    #[test]
    fn a_schema_that_does_not_compile_is_refused() {
        let err = compile_schema("s", "t", &json!({"type": 12})).unwrap_err();
        assert!(err.to_string().contains("tool t on server s"), "{err}");
    }

    // A remote reference, anywhere in a schema, is refused at compile time naming its pointer; a local one compiles.
    #[test]
    fn remote_references_are_refused() {
        let local =
            json!({"$defs": {"p": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/p"}}});
        assert!(compile_schema("s", "t", &local).is_ok());
        for (schema, pointer) in [
            (json!({"$ref": "https://example.test/s.json"}), "/$ref"),
            (
                json!({"properties": {"a": {"$ref": "other.json#/x"}}}),
                "/properties/a/$ref",
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"$dynamicRef": "file:///etc/x"}]}),
                "/anyOf/1/$dynamicRef",
            ),
            (
                json!({"properties": {"a/b": {"$ref": 7}}}),
                "/properties/a~1b/$ref",
            ),
        ] {
            assert_eq!(remote_reference(&schema).as_deref(), Some(pointer));
            let err = compile_schema("s", "t", &schema).unwrap_err().to_string();
            assert!(
                err.contains(pointer) && err.contains("outside itself"),
                "{err}"
            );
        }
    }

    // The digest covers every part of the definition, and absent annotations digest as their defaults written out.
    #[test]
    fn the_digest_covers_the_definition() {
        let base = ToolContract {
            name: "git_status".into(),
            description: "Shows the working tree status".into(),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: ToolAnnotations::default(),
        };
        let digest = base.digest().unwrap();
        assert_eq!(digest.len(), 64);
        let written = serde_json::to_value(&base).unwrap();
        assert_eq!(
            written,
            json!({"name": "git_status", "description": "Shows the working tree status", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}})
        );
        let mut changed = vec![
            base.clone(),
            base.clone(),
            base.clone(),
            base.clone(),
            base.clone(),
        ];
        changed[0].name = "git_diff".into();
        changed[1].description.push('.');
        changed[2].input_schema = json!({"type": "object", "required": []});
        changed[3].output_schema = Some(json!({"type": "object"}));
        changed[4].annotations.read_only_hint = true;
        for other in changed {
            assert_ne!(other.digest().unwrap(), digest, "{other:?}");
        }
    }

    // Absent annotations take the MCP specification's defaults.
    #[test]
    fn absent_annotations_take_the_specification_defaults() {
        let parsed: ToolAnnotations = serde_json::from_value(json!({})).unwrap();
        assert_eq!(parsed, ToolAnnotations::default());
        assert!(parsed.open_world_hint && parsed.destructive_hint);
        assert!(!parsed.read_only_hint && !parsed.idempotent_hint);
    }
}
