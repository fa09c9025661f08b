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
//!
//! A server may change a definition while a run goes on, as a live server
//! can between two `tools/list` calls ([`Redefinition`]). The catalog keeps
//! every version of a tool with the instant it takes effect, and a call is
//! checked against the version in force at its decision instant: its
//! schema, and its digest for a capability that pins definitions
//! ([`crate::scope`], `tool_digests`). What a tool touches is read over
//! every version, the widest answer winning (a tool that is read-only in
//! one version and not in another is not read-only), so a redefinition can
//! never take a tool out of a guard's consequential set.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::to_canonical_vec;
use crate::error::KernelError;
use crate::guards::prompt_injection::{scan_definition_remembered, DefinitionFinding};
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
    /// Keywords whose value maps names to schemas: a key there is a name
    /// (a property may be called `$ref`), its value a schema.
    const NAME_MAPS: &[&str] = &[
        "properties",
        "patternProperties",
        "$defs",
        "definitions",
        "dependentSchemas",
    ];
    /// Keywords whose value is data, never a schema.
    const DATA: &[&str] = &["enum", "const", "default", "examples"];
    fn walk(value: &Value, at: &mut String, names: bool) -> Option<String> {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    if !names && DATA.contains(&key.as_str()) {
                        continue;
                    }
                    let len = at.len();
                    at.push('/');
                    at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    let is_ref = !names && (key == "$ref" || key == "$dynamicRef");
                    if is_ref && !child.as_str().is_some_and(|r| r.starts_with('#')) {
                        return Some(at.clone());
                    }
                    let child_names = !names && NAME_MAPS.contains(&key.as_str());
                    if let Some(found) = walk(child, at, child_names) {
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
                    if let Some(found) = walk(child, at, false) {
                        return Some(found);
                    }
                    at.truncate(len);
                }
                None
            }
            _ => None,
        }
    }
    walk(schema, &mut String::new(), false)
}

/// The tools of every server a kernel serves: server id to tool name to
/// contract.
pub type ToolCatalog = BTreeMap<String, BTreeMap<String, ToolContract>>;

/// A definition a server puts in force from an instant on, replacing the
/// tool's earlier one (or declaring a tool it did not have).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Redefinition {
    /// The instant it takes effect, in Unix milliseconds of virtual time:
    /// a call decided at or after it is checked against it.
    pub at_ms: u64,
    /// Its place in the order the run applies redefinitions: the position
    /// of its step in the schedule's total order. Of two redefinitions of
    /// one tool taking effect at one instant, the one placed later is in
    /// force, whatever order the list gives them in.
    pub position: u64,
    /// The server that changes its definition.
    pub server: String,
    /// The new definition; its `name` is the tool it replaces.
    pub contract: ToolContract,
}

/// `catalog` with every tool that `redefinitions` declare, each tool's
/// annotations the widest over all its versions: read-only and idempotent
/// only when every version says so, destructive and open-world when any
/// does. The guards that take their tools from effects read this, so a
/// redefinition never takes a tool out of their sets.
pub fn widest_effects(catalog: &ToolCatalog, redefinitions: &[Redefinition]) -> ToolCatalog {
    let mut widest = catalog.clone();
    for r in redefinitions {
        let Some(tools) = widest.get_mut(&r.server) else {
            continue;
        };
        let new = r.contract.annotations;
        tools
            .entry(r.contract.name.clone())
            .and_modify(|known| {
                let old = &mut known.annotations;
                old.read_only_hint &= new.read_only_hint;
                old.idempotent_hint &= new.idempotent_hint;
                old.destructive_hint |= new.destructive_hint;
                old.open_world_hint |= new.open_world_hint;
            })
            .or_insert_with(|| r.contract.clone());
    }
    widest
}

/// A flagged definition of a kernel's catalog, as a kernel's policy
/// records it: which tool, from when, and what the injection reader found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoisonedDefinition {
    /// The server that publishes the tool.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The instant the flagged definition takes effect (0 for one loaded
    /// with the catalog).
    pub from_ms: u64,
    /// Where in the definition, and which pattern and rule fired.
    pub finding: DefinitionFinding,
}

/// Every flagged definition of `catalog` and of the `redefinitions` of its
/// servers, in the order the catalog holds them (server, tool) and then
/// the redefinitions in the order they are declared; the same reading the
/// kernel's catalog makes when it is compiled.
pub fn poisoned_definitions(
    catalog: &ToolCatalog,
    redefinitions: &[Redefinition],
) -> Vec<PoisonedDefinition> {
    let initial = catalog.iter().flat_map(|(server, tools)| {
        tools
            .values()
            .map(move |contract| (0, server.as_str(), contract))
    });
    let later = redefinitions
        .iter()
        .filter(|r| catalog.contains_key(&r.server))
        .map(|r| (r.at_ms, r.server.as_str(), &r.contract));
    initial
        .chain(later)
        .filter_map(|(from_ms, server, contract)| {
            scan_definition_remembered(contract).map(|finding| PoisonedDefinition {
                server: server.to_string(),
                tool: contract.name.clone(),
                from_ms,
                finding,
            })
        })
        .collect()
}

/// One version of a tool, as the catalog checks calls against it.
struct Version {
    /// The instant it takes effect (0 for the definition loaded first).
    from_ms: u64,
    /// Its redefinition's place in the schedule (`None` for the definition
    /// loaded first, which every redefinition follows).
    position: Option<u64>,
    /// The compiled input schema.
    validator: jsonschema::Validator,
    /// The definition's digest, which a pinning capability must match.
    digest: String,
    /// What the injection reader found in the definition, if anything.
    poisoning: Option<DefinitionFinding>,
}

/// A catalog with each schema compiled, as a kernel holds it.
pub struct CompiledCatalog {
    /// Server to tool to its versions, in order of taking effect.
    servers: BTreeMap<String, BTreeMap<String, Vec<Version>>>,
    /// The tools declared read-only, as `(server, tool)`.
    read_only: BTreeSet<(String, String)>,
    /// The tools declared to reach an open world, as `(server, tool)`.
    open_world: BTreeSet<(String, String)>,
    /// Every version's output schema (`None` where one declares none), by
    /// `(server, tool)`.
    output_schemas: BTreeMap<(String, String), Vec<Option<Value>>>,
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
    /// Compiles every schema of `catalog`, and of every redefinition of one
    /// of its servers' tools.
    pub fn compile(
        catalog: &ToolCatalog,
        redefinitions: &[Redefinition],
    ) -> Result<Self, KernelError> {
        let mut servers: BTreeMap<String, BTreeMap<String, Vec<Version>>> = BTreeMap::new();
        let mut read_only = BTreeSet::new();
        let mut not_read_only = BTreeSet::new();
        let mut open_world = BTreeSet::new();
        let mut output_schemas: BTreeMap<(String, String), Vec<Option<Value>>> = BTreeMap::new();
        let initial = catalog.iter().flat_map(|(server, tools)| {
            tools
                .iter()
                .map(move |(name, contract)| ((0, None), server, name, contract))
        });
        // A redefinition of a server the kernel does not serve is not this
        // kernel's to check against.
        let later = redefinitions
            .iter()
            .filter(|r| catalog.contains_key(&r.server))
            .map(|r| {
                let key = (r.at_ms, Some(r.position));
                (key, &r.server, &r.contract.name, &r.contract)
            });
        for server in catalog.keys() {
            servers.entry(server.clone()).or_default();
        }
        for ((from_ms, position), server, name, contract) in initial.chain(later) {
            let version = Version {
                from_ms,
                position,
                validator: compile_schema(server, name, &contract.input_schema)?,
                digest: contract.digest()?,
                poisoning: scan_definition_remembered(contract),
            };
            let versions = servers
                .entry(server.clone())
                .or_default()
                .entry(name.clone())
                .or_default();
            versions.push(version);
            // The order the schedule applies them: by instant, and at one
            // instant by place in the schedule, so the version in force is
            // the one the run applied last, never the one declared last.
            versions.sort_by_key(|v| (v.from_ms, v.position));
            let key = (server.clone(), name.clone());
            output_schemas
                .entry(key.clone())
                .or_default()
                .push(contract.output_schema.clone());
            if contract.annotations.read_only_hint {
                read_only.insert(key.clone());
            } else {
                not_read_only.insert(key.clone());
            }
            if contract.annotations.open_world_hint {
                open_world.insert(key);
            }
        }
        let read_only = read_only.difference(&not_read_only).cloned().collect();
        Ok(Self {
            servers,
            read_only,
            open_world,
            output_schemas,
        })
    }

    /// The version of `tool` on `server` in force at `now_ms`, or why there
    /// is none.
    fn in_force(&self, server: &str, tool: &str, now_ms: u64) -> Result<&Version, DenyReason> {
        let tools = self
            .servers
            .get(server)
            .ok_or_else(|| DenyReason::ServerNotServed {
                server: server.to_string(),
            })?;
        tools
            .get(tool)
            .and_then(|versions| versions.iter().rev().find(|v| v.from_ms <= now_ms))
            .ok_or_else(|| DenyReason::ToolNotDeclared {
                tool: tool.to_string(),
                server: server.to_string(),
            })
    }

    /// The digest of the definition of `tool` on `server` in force at
    /// `now_ms`, when the tool is declared then.
    pub fn digest_in_force(&self, server: &str, tool: &str, now_ms: u64) -> Option<&str> {
        self.in_force(server, tool, now_ms)
            .ok()
            .map(|v| v.digest.as_str())
    }

    /// What the injection reader found in the definition of `tool` on
    /// `server` in force at `now_ms`, when it is declared then and flagged.
    pub fn poisoning_in_force(
        &self,
        server: &str,
        tool: &str,
        now_ms: u64,
    ) -> Option<&DefinitionFinding> {
        self.in_force(server, tool, now_ms)
            .ok()
            .and_then(|v| v.poisoning.as_ref())
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

    /// Whether an answer of `tool` on `server` holds an object key that
    /// some definition of the tool does not name in its output schema
    /// (`crate::provenance::holds_undeclared_key`): such a key may be text
    /// its server was sent. An undeclared tool names none.
    pub fn holds_undeclared_key(&self, server: &str, tool: &str, output: &Value) -> bool {
        match self
            .output_schemas
            .get(&(server.to_string(), tool.to_string()))
        {
            Some(schemas) => schemas
                .iter()
                .any(|schema| crate::provenance::holds_undeclared_key(output, schema.as_ref())),
            None => crate::provenance::holds_undeclared_key(output, None),
        }
    }

    /// Whether `tool` on `server` has an effect: not declared read-only, or
    /// declared to reach an open world (the `integrity` guard's default
    /// consequential set). An undeclared tool has.
    pub fn has_effects(&self, server: &str, tool: &str) -> bool {
        !self.reads_only(server, tool) || self.reaches_open_world(server, tool)
    }

    /// Whether `tool` on `server` is declared at `now_ms` and `arguments`
    /// satisfy the schema of its definition in force then; the deny reason
    /// otherwise.
    pub fn check(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
        now_ms: u64,
    ) -> Result<(), DenyReason> {
        let version = self.in_force(server, tool, now_ms)?;
        match schema_failure(&version.validator, arguments) {
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

/// Why `output`, an answer of `contract` on `server` that the server
/// carried out, may not be released as such, if it may not: the tool
/// declares an output schema and the answer breaks it (naming the pointer
/// and keyword, never the value), or the schema does not compile. The one
/// check of a tool's answer against its declared output, wherever the
/// answer comes from: a scenario's recorded answer, a live server's answer
/// being recorded, or a recording read back.
pub fn output_refusal(server: &str, contract: &ToolContract, output: &Value) -> Option<String> {
    let schema = contract.output_schema.as_ref()?;
    let validator = match compile_output_schema(server, &contract.name, schema) {
        Ok(validator) => validator,
        Err(e) => return Some(e.to_string()),
    };
    schema_failure(&validator, output).map(|why| {
        format!(
            "the output of tool {} fails its output schema at {}: {}",
            contract.name, why.pointer, why.keyword
        )
    })
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
#[path = "contract_tests.rs"]
mod tests;
