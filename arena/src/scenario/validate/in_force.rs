//! The definition of a recorded server's tool in force at a step, as the
//! kernels apply redefinitions: every redefine step of the tool whose
//! evaluation instant is at or before the step's, the one the schedule
//! orders last winning (the order the kernels' catalogs keep). With none,
//! the server's declaration is in force. A recorded answer's output is
//! checked against the output schema in force at the steps it answers.

use std::collections::BTreeMap;

use chio_kernel::contract::ToolContract;
use serde_json::Value;

use super::schedule::Walk;
use super::Validator;
use crate::error::ArenaError;
use crate::scenario::{Action, ActionKind};

/// One call step of a redefined tool: what an answer naming an agent, a
/// tool and arguments is matched against.
pub(super) struct RedefinedCall {
    /// The step's declaration index.
    pub index: usize,
    /// The calling agent.
    pub agent: String,
    /// The server called.
    pub server: String,
    /// The tool called.
    pub tool: String,
    /// The arguments' canonical JSON, when known before the run (none
    /// holds a reference).
    pub arguments: Option<Vec<u8>>,
}

/// The redefinitions of a scenario by tool, in schedule order.
#[derive(Default)]
pub(super) struct InForce {
    /// `(server, tool)` to each redefinition's evaluation offset and
    /// definition, in schedule order.
    versions: BTreeMap<(String, String), Vec<(u64, ToolContract)>>,
    /// Each step's evaluation offset, by declaration index.
    instants: Vec<u64>,
}

impl InForce {
    /// Whether a redefine step changes `tool` of `server`.
    pub fn redefines(&self, server: &str, tool: &str) -> bool {
        self.versions
            .contains_key(&(server.to_string(), tool.to_string()))
    }

    /// The redefinition of `tool` of `server` in force at step `index`, or
    /// `None` when the declaration is.
    pub fn at_step(&self, server: &str, tool: &str, index: usize) -> Option<&ToolContract> {
        let instant = *self.instants.get(index)?;
        self.versions
            .get(&(server.to_string(), tool.to_string()))?
            .iter()
            .rev()
            .find(|(from, _)| *from <= instant)
            .map(|(_, contract)| contract)
    }
}

impl Validator<'_> {
    /// The scenario's redefinitions by tool, in schedule order.
    pub(super) fn in_force(&self, walk: &Walk<'_>) -> Result<InForce, ArenaError> {
        let mut in_force = InForce::default();
        if !walk.kinds.contains(&ActionKind::Redefine) {
            return Ok(in_force);
        }
        in_force.instants = vec![0; walk.kinds.len()];
        for entry in walk.schedule {
            if let Some(slot) = in_force.instants.get_mut(entry.step_index) {
                *slot = entry.evaluation_ms;
            }
            if walk.kinds.get(entry.step_index) != Some(&ActionKind::Redefine) {
                continue;
            }
            if let Action::Redefine(r) = self.action_at(walk, entry.step_index)?.as_ref() {
                in_force
                    .versions
                    .entry((r.server.clone(), r.tool.clone()))
                    .or_default()
                    .push((entry.evaluation_ms, r.contract.clone()));
            }
        }
        Ok(in_force)
    }

    /// Every call step of a tool `in_force` redefines, in declaration
    /// order.
    pub(super) fn redefined_calls(
        &self,
        walk: &Walk<'_>,
        in_force: &InForce,
    ) -> Result<Vec<RedefinedCall>, ArenaError> {
        let mut calls = Vec::new();
        if in_force.versions.is_empty() {
            return Ok(calls);
        }
        for (index, kind) in walk.kinds.iter().enumerate() {
            if *kind != ActionKind::Call {
                continue;
            }
            if let Action::Call(call) = self.action_at(walk, index)?.as_ref() {
                if !in_force.redefines(&call.server, &call.tool) {
                    continue;
                }
                calls.push(RedefinedCall {
                    index,
                    agent: walk.agent(index).to_string(),
                    server: call.server.clone(),
                    tool: call.tool.clone(),
                    arguments: known_arguments(&call.arguments),
                });
            }
        }
        Ok(calls)
    }
}

/// The canonical JSON of arguments known before the run: `None` when they
/// hold a reference (or a literal), whose value only the run knows.
pub(super) fn known_arguments(arguments: &Value) -> Option<Vec<u8>> {
    if crate::scenario::value::has_references(arguments) {
        return None;
    }
    chio_kernel::canonical::canonical_bytes(arguments).ok()
}
