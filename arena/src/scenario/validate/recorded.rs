//! Recorded servers at validation: the tools a `recorded` server declares
//! (each a contract `crate::scenario::tools` checks, names unique, a stated
//! digest matched) and its answers. An answer's own keys are checked with
//! the world, so a node that loads only the world checks them too: an
//! answer names either a step or an agent, a declared tool and arguments
//! the tool's schema admits, never both. What needs the schedule is checked
//! with the steps: a step answer names a call step of this server, once,
//! and an `ok` output satisfies the output schema of the tool's definition
//! in force at each step the answer is for (`super::in_force`): a
//! redefinition may change it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use chio_kernel::contract::{compile_schema, output_refusal, schema_failure, ToolContract};
use serde_json::Value;

use super::checks::{check_id, resolve, table_to_json, toml_to_json};
use super::in_force::InForce;
use super::schedule::Walk;
use super::Validator;
use crate::error::ArenaError;
use crate::model::{AnswerDecl, ServerDecl};
use crate::scenario::tools::{closest, declared_contract};
use crate::scenario::{Action, ServerKind};

impl Validator<'_> {
    /// Checks recorded server `i`: its declared tools and its answers' own
    /// keys.
    pub(super) fn recorded(&self, i: usize, server: &ServerDecl) -> Result<(), ArenaError> {
        let tools = self.declared_tools(i, server)?;
        for (j, field) in server.fields.iter().flatten().enumerate() {
            field_label(
                &format!("servers[{i}].fields[{j}]"),
                &server.id,
                field,
                &tools,
            )?;
        }
        let agents = self.agent_ids();
        for (j, answer) in server.answers.iter().flatten().enumerate() {
            let at = |key: &str| format!("servers[{i}].answers[{j}].{key}");
            // The grammar and bounds of the output; its schema needs the
            // schedule (`call_answers`).
            let output = toml_to_json(&answer.output, &at("output"))?;
            answer_output(output, answer.ok.unwrap_or(true), &at("output"))?;
            let Some(step) = &answer.step else {
                let agent = answer
                    .agent
                    .as_ref()
                    .ok_or_else(|| ArenaError::MissingKey { field: at("agent") })?;
                resolve(&agents, "agent", agent, || at("agent"))?;
                let tool = answer
                    .tool
                    .as_ref()
                    .ok_or_else(|| ArenaError::MissingKey { field: at("tool") })?;
                let contract = declared(&tools, &server.id, tool, at("tool"))?;
                let arguments = match &answer.arguments {
                    Some(table) => table_to_json(table, &at("arguments"))?,
                    None => Value::Object(Default::default()),
                };
                let validator = compile_schema(&server.id, tool, &contract.input_schema)
                    .map_err(|e| refused(at("arguments"), &server.id, tool, e.to_string()))?;
                if let Some(why) = schema_failure(&validator, &arguments) {
                    return Err(refused(at("arguments"), &server.id, tool, why.to_string()));
                }
                continue;
            };
            check_id(step, at("step"))?;
            for (key, present) in [
                ("agent", answer.agent.is_some()),
                ("tool", answer.tool.is_some()),
                ("arguments", answer.arguments.is_some()),
            ] {
                if present {
                    return Err(ArenaError::KeyNotAllowed {
                        field: at(key),
                        context: "an answer with step matches that step's call, whatever its agent, tool and arguments",
                    });
                }
            }
        }
        Ok(())
    }

    /// Server `i`'s declared tools by name, each checked, at least one and
    /// no name twice.
    fn declared_tools(
        &self,
        i: usize,
        server: &ServerDecl,
    ) -> Result<BTreeMap<String, ToolContract>, ArenaError> {
        let decls = server
            .tools
            .as_ref()
            .ok_or_else(|| ArenaError::MissingKey {
                field: format!("servers[{i}].tools"),
            })?;
        if decls.is_empty() {
            return Err(ArenaError::EmptyList {
                field: format!("servers[{i}].tools"),
            });
        }
        let mut tools = BTreeMap::new();
        for (j, decl) in decls.iter().enumerate() {
            let (contract, _) = declared_contract(&server.id, decl).map_err(|problem| {
                let field = format!("servers[{i}].tools[{j}].{}", problem.key);
                if problem.key == "digest" {
                    ArenaError::ToolDigest {
                        field,
                        reason: problem.reason,
                    }
                } else {
                    ArenaError::ToolDeclaration {
                        field,
                        reason: problem.reason,
                    }
                }
            })?;
            if tools.insert(contract.name.clone(), contract).is_some() {
                return Err(ArenaError::DuplicateId {
                    kind: "tool",
                    id: decl.name.clone(),
                    field: format!("servers[{i}].tools[{j}].name"),
                });
            }
        }
        Ok(tools)
    }

    /// Refuses a step answer that names no step, a step that is not a call
    /// of its server, a step answered twice on the server, and an `ok`
    /// output the output schema in force at the step refuses; then the
    /// answers naming an agent, tool and arguments (`call_answers`).
    pub(super) fn recorded_answers(&self, walk: &Walk<'_>) -> Result<(), ArenaError> {
        let in_force = self.in_force(walk)?;
        self.step_answers(walk, &in_force)?;
        self.call_answers(walk, &in_force)
    }

    /// Refuses an `ok` output of an answer naming an agent, tool and
    /// arguments that the output schema in force at a step it answers
    /// refuses: each call step of that agent and tool whose arguments it
    /// matches, or may match (they hold a reference), or the declaration
    /// when no step does.
    fn call_answers(&self, walk: &Walk<'_>, in_force: &InForce) -> Result<(), ArenaError> {
        let calls = self.redefined_calls(walk, in_force)?;
        for (i, server) in self.file.servers.iter().enumerate() {
            if ServerKind::parse(&server.kind) != Some(ServerKind::Recorded) {
                continue;
            }
            let tools = crate::scenario::tools::server_tools(server).unwrap_or_default();
            for (j, answer) in server.answers.iter().flatten().enumerate() {
                let (None, Some(agent), Some(tool)) = (&answer.step, &answer.agent, &answer.tool)
                else {
                    continue;
                };
                let Some(declared) = tools.iter().find(|t| &t.name == tool) else {
                    continue;
                };
                let at = |key: &str| format!("servers[{i}].answers[{j}].{key}");
                let output = toml_to_json(&answer.output, &at("output"))?;
                let Some(output) = answer_output(output, answer.ok.unwrap_or(true), &at("output"))?
                else {
                    continue;
                };
                let arguments = match &answer.arguments {
                    Some(table) => table_to_json(table, &at("arguments"))?,
                    None => Value::Object(Default::default()),
                };
                // Compared as the server compares them: canonical JSON.
                let arguments = chio_kernel::canonical::canonical_bytes(&arguments).ok();
                let mut met = false;
                for call in calls.iter().filter(|c| {
                    c.server == server.id
                        && &c.tool == tool
                        && &c.agent == agent
                        && (c.arguments.is_none() || c.arguments == arguments)
                }) {
                    met = true;
                    let redefined = in_force.at_step(&server.id, tool, call.index);
                    let step = match redefined {
                        Some(_) => Some(self.step_id(walk, call.index)?),
                        None => None,
                    };
                    let contract = redefined.unwrap_or(declared);
                    let field = at("output");
                    return_output(
                        &server.id,
                        contract,
                        answer,
                        &output,
                        &field,
                        step.as_deref(),
                    )?;
                }
                if !met {
                    return_output(&server.id, declared, answer, &output, &at("output"), None)?;
                }
            }
        }
        Ok(())
    }

    /// Step `j`'s id.
    fn step_id(&self, walk: &Walk<'_>, j: usize) -> Result<String, ArenaError> {
        Ok(match walk.held.and_then(|held| held.get(j)) {
            Some(step) => step.head.id.clone(),
            None => self.source.decl(j)?.id.clone(),
        })
    }

    /// The step answers' part of [`Self::recorded_answers`].
    fn step_answers(&self, walk: &Walk<'_>, in_force: &InForce) -> Result<(), ArenaError> {
        let f = self.file;
        let mut wanted: BTreeMap<&str, Option<usize>> = BTreeMap::new();
        for server in &f.servers {
            for answer in server.answers.iter().flatten() {
                if let Some(step) = &answer.step {
                    wanted.insert(step.as_str(), None);
                }
            }
        }
        if wanted.is_empty() {
            return Ok(());
        }
        for j in 0..walk.kinds.len() {
            let id = match walk.held.and_then(|held| held.get(j)) {
                Some(step) => Cow::Borrowed(step.head.id.as_str()),
                None => Cow::Owned(self.source.decl(j)?.id.clone()),
            };
            if let Some(slot @ None) = wanted.get_mut(id.as_ref()) {
                *slot = Some(j);
            }
        }
        for (i, server) in f.servers.iter().enumerate() {
            if ServerKind::parse(&server.kind) != Some(ServerKind::Recorded) {
                continue;
            }
            let tools = crate::scenario::tools::server_tools(server).unwrap_or_default();
            let mut answered = BTreeSet::new();
            for (j, answer) in server.answers.iter().flatten().enumerate() {
                let Some(step) = &answer.step else {
                    continue;
                };
                let at = |key: &str| format!("servers[{i}].answers[{j}].{key}");
                let index = wanted
                    .get(step.as_str())
                    .copied()
                    .flatten()
                    .ok_or_else(|| ArenaError::UndeclaredReference {
                        kind: "step",
                        id: step.clone(),
                        field: at("step"),
                    })?;
                let call = match self.action_at(walk, index)?.into_owned() {
                    Action::Call(call) => call,
                    _ => {
                        return Err(ArenaError::RecordedAnswer {
                            field: at("step"),
                            reason: format!("step {step} is not a call step"),
                        })
                    }
                };
                if call.server != server.id {
                    return Err(ArenaError::RecordedAnswer {
                        field: at("step"),
                        reason: format!(
                            "step {step} calls server {}, not this server {}",
                            call.server, server.id
                        ),
                    });
                }
                if !answered.insert(step.as_str()) {
                    return Err(ArenaError::DuplicateId {
                        kind: "step answer",
                        id: step.clone(),
                        field: at("step"),
                    });
                }
                // The step's tool is declared (the call step's check).
                if let Some(declared) = tools.iter().find(|t| t.name == call.tool) {
                    let redefined = in_force.at_step(&server.id, &call.tool, index);
                    let output = toml_to_json(&answer.output, &at("output"))?;
                    let ok = answer.ok.unwrap_or(true);
                    if let Some(output) = answer_output(output, ok, &at("output"))? {
                        let contract = redefined.unwrap_or(declared);
                        let step = redefined.map(|_| step.as_str());
                        return_output(&server.id, contract, answer, &output, &at("output"), step)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// An answer's output read by the value grammar, as a call's arguments
/// are: `{ literal = ... }` and `{ null = true }` are the values they
/// write, and a `{ fixture = ... }` is a sealed text read once the
/// scenario's folder is known (`None`: the output is then not known at
/// load and its schema is not checked, as for arguments). An answer reads
/// no step's output.
pub(crate) fn answer_output(
    output: Value,
    ok: bool,
    field: &str,
) -> Result<Option<Value>, ArenaError> {
    use crate::scenario::value::{references, resolve, Reference};
    let placed = references(&output).map_err(|m| ArenaError::ValueReference {
        field: format!("{field}{}", m.at),
        problem: m.problem,
    })?;
    if let Some(step) = placed
        .iter()
        .find(|p| matches!(p.reference, Reference::Step { .. }))
    {
        return Err(ArenaError::RecordedAnswer {
            field: format!("{field}{}", step.at),
            reason: "an answer reads no step's output: write the value, or { literal = { ... } } for an object with the key from_step".to_string(),
        });
    }
    if !placed.is_empty() {
        return Ok(None);
    }
    let mut lookup = |_: &Reference| Err::<Value, ()>(());
    let resolved = resolve(&output, &mut lookup).ok();
    // The bounds a recording's answers meet, on the answer as the node
    // gives it (`answer_content`), so a scenario's own answer is given
    // whole on every topology too.
    if let Some(why) = resolved.as_ref().and_then(|output| {
        crate::recording::answer_out_of_bounds(&crate::recording::answer_content(
            ok,
            output.clone(),
        ))
    }) {
        return Err(ArenaError::RecordedAnswer {
            field: field.to_string(),
            reason: why,
        });
    }
    Ok(resolved)
}

/// Each sealed file a recorded answer's output reads (`{ fixture = ...
/// }`), with the first output naming it.
pub(crate) fn answer_sealed_paths(file: &crate::model::ScenarioFile) -> BTreeMap<String, String> {
    use crate::scenario::value::{references, Reference};
    let mut paths = BTreeMap::new();
    for (i, server) in file.servers.iter().enumerate() {
        for (j, answer) in server.answers.iter().flatten().enumerate() {
            let field = format!("servers[{i}].answers[{j}].output");
            // The grammar was checked with the world.
            let output = toml_to_json(&answer.output, &field).unwrap_or_default();
            for placed in references(&output).unwrap_or_default() {
                if let Reference::Fixture { path } = placed.reference {
                    paths
                        .entry(path)
                        .or_insert_with(|| format!("{field}{}", placed.at));
                }
            }
        }
    }
    paths
}

/// The declared tool `tool` of `server`, or the refusal naming the closest.
fn declared<'t>(
    tools: &'t BTreeMap<String, ToolContract>,
    server: &str,
    tool: &str,
    field: String,
) -> Result<&'t ToolContract, ArenaError> {
    tools.get(tool).ok_or_else(|| ArenaError::UnknownTool {
        field,
        tool: tool.to_string(),
        server: server.to_string(),
        closest: closest(tool, tools.keys().map(String::as_str))
            .unwrap_or_default()
            .to_string(),
    })
}

fn refused(field: String, server: &str, tool: &str, why: String) -> ArenaError {
    ArenaError::ArgumentsRefused {
        field,
        server: server.to_string(),
        tool: tool.to_string(),
        why,
    }
}

/// Refuses an `ok` answer's output that `contract`'s output schema refuses
/// ([`output_refusal`], the one check of a tool's answer), naming the
/// pointer and keyword, never the value, and the step at which `contract`
/// is in force when a redefinition put it there (`redefined_at`).
fn return_output(
    server: &str,
    contract: &ToolContract,
    answer: &AnswerDecl,
    output: &Value,
    field: &str,
    redefined_at: Option<&str>,
) -> Result<(), ArenaError> {
    if answer.ok == Some(false) {
        return Ok(());
    }
    match output_refusal(server, contract, output) {
        None => Ok(()),
        Some(why) => Err(ArenaError::RecordedAnswer {
            field: field.to_string(),
            reason: match redefined_at {
                Some(step) => {
                    format!("{why} (the definition a redefine step puts in force at step {step})")
                }
                None => why,
            },
        }),
    }
}

/// Checks one `[[servers.fields]]` entry and answers the rule it gives the
/// released value (`{"ok": true, "output": ...}`, so its pattern starts
/// under `/output`).
pub(crate) fn field_label(
    at: &str,
    server: &str,
    field: &crate::model::FieldDecl,
    tools: &BTreeMap<String, ToolContract>,
) -> Result<chio_kernel::provenance::FieldLabel, ArenaError> {
    use chio_kernel::label::Integrity;
    if !tools.contains_key(&field.tool) {
        return Err(ArenaError::UnknownTool {
            field: format!("{at}.tool"),
            tool: field.tool.clone(),
            server: server.to_string(),
            closest: closest(&field.tool, tools.keys().map(String::as_str))
                .unwrap_or_default()
                .to_string(),
        });
    }
    let Some(rest) = field.pointer.strip_prefix('/') else {
        return Err(ArenaError::OutOfRange {
            field: format!("{at}.pointer"),
            rule: "pointer is an RFC 6901 JSON pointer into the tool's output: it starts with '/'",
        });
    };
    let mut pattern = vec!["output".to_string()];
    for segment in rest.split('/') {
        let mut decoded = String::new();
        let mut chars = segment.chars();
        while let Some(c) = chars.next() {
            match (c, c == '~') {
                (_, true) => match chars.next() {
                    Some('0') => decoded.push('~'),
                    Some('1') => decoded.push('/'),
                    _ => {
                        return Err(ArenaError::OutOfRange {
                            field: format!("{at}.pointer"),
                            rule: "in a JSON pointer '~' is written ~0 and '/' inside a key ~1",
                        })
                    }
                },
                (c, false) => decoded.push(c),
            }
        }
        pattern.push(decoded);
    }
    let integrity =
        Integrity::parse(&field.integrity).ok_or_else(|| ArenaError::UnsupportedValue {
            field: format!("{at}.integrity"),
            value: field.integrity.clone(),
            allowed: "trusted, untrusted",
        })?;
    Ok(chio_kernel::provenance::FieldLabel { pattern, integrity })
}

#[cfg(test)]
mod tests {
    use super::answer_output;
    use crate::recording::MAX_ANSWER_BYTES;
    use serde_json::json;

    // A scenario's own recorded answer meets the bounds a recording's answers meet, as the node gives it (`{"ok", "output"}`): over 4 MiB of canonical JSON it is refused at load, naming the field; at the bound it is read, with `ok` true and false alike.
    #[test]
    fn an_answer_past_the_bound_is_refused() {
        let field = "servers[0].answers[0].output";
        for (ok, wrapper) in [
            (true, r#"{"ok":true,"output":""}"#),
            (false, r#"{"ok":false,"output":""}"#),
        ] {
            let at = json!("a".repeat(MAX_ANSWER_BYTES - wrapper.len()));
            assert_eq!(answer_output(at.clone(), ok, field).unwrap(), Some(at));
            let over = json!("a".repeat(MAX_ANSWER_BYTES - wrapper.len() + 1));
            let err = answer_output(over, ok, field).unwrap_err();
            assert_eq!(err.code(), "CHIO-SCENARIO-RECORDED-ANSWER");
            assert!(err.to_string().contains("over the 4194304"), "{err}");
        }
    }
}
