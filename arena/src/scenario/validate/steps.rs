//! The steps of a scenario: ids, the keys each action takes, references to
//! declared agents, servers and capabilities, and the typed action each
//! step becomes. What depends on the schedule's order is `super::schedule`.

use std::collections::{BTreeMap, BTreeSet};

use super::checks::{
    check_id, check_invocations, check_offset, check_path_prefix, check_share, check_tools,
    resolve, table_to_json, toml_to_json,
};
use super::faults::{fault_action, FAULT_KEYS};
use super::monetary::check_monetary;
use super::{Built, StepSource, Validator};
use crate::error::ArenaError;
use crate::model::{StepDecl, StepHead};
use crate::scenario::{
    Action, ActionKind, AdvanceAction, CallAction, DelegateAction, ExpectedVerdict, HandOverAction,
    MessageAction, RedefineAction, RevokeAction, Step, StepExpectation,
};
use crate::scheduler::MAX_OFFSET_MS;

/// The ids a step may refer to.
struct Declared<'s> {
    agents: Names<'s>,
    servers: Names<'s>,
    capabilities: Names<'s>,
    nodes: Names<'s>,
}

/// One namespace of ids a step may refer to.
#[derive(Clone, Copy)]
pub(super) enum Names<'s> {
    /// Ids declared by the world.
    Borrowed(&'s BTreeSet<&'s str>),
    /// Ids gathered from the steps.
    Owned(&'s BTreeSet<String>),
    /// Any id: the step was validated before and is only being rebuilt.
    Any,
}

impl Names<'_> {
    /// Whether the namespace declares `id` (never, for [`Names::Any`]).
    pub(super) fn declares(&self, id: &str) -> bool {
        match self {
            Names::Borrowed(set) => set.contains(id),
            Names::Owned(set) => set.contains(id),
            Names::Any => false,
        }
    }

    /// Refuses an id this namespace does not hold.
    pub(super) fn resolve(
        &self,
        kind: &'static str,
        id: &str,
        field: impl FnOnce() -> String,
    ) -> Result<(), ArenaError> {
        if matches!(self, Names::Any) || self.declares(id) {
            Ok(())
        } else {
            resolve(&BTreeSet::new(), kind, id, field)
        }
    }
}

/// The path of one key of one step, such as `steps[3].agent`.
type At<'f> = &'f dyn Fn(&str) -> String;

/// What the steps' pass gathers for the schedule and its walks.
pub(super) struct StepsPass {
    /// Each step's agent, as its rank among the agent ids in ascending order.
    pub agents: Vec<u32>,
    /// Each step's kind.
    pub kinds: Vec<ActionKind>,
    /// The explicit offsets, by step index.
    pub at: BTreeMap<usize, u64>,
    /// The advances, by step index.
    pub advances: BTreeMap<usize, u64>,
    /// What the scenario keeps.
    pub steps: Built,
}

impl<'a> Validator<'a> {
    /// The agent ids in ascending order: a step's agent is its rank here.
    pub(super) fn ranked_agents(&self) -> Vec<&'a str> {
        let mut ids: Vec<&str> = self.file.agents.iter().map(|a| a.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Checks every step in declaration order: ids, delegation ids, then
    /// each step's keys, references and typed action.
    pub(super) fn steps(&self, has_world: bool) -> Result<StepsPass, ArenaError> {
        let f = self.file;
        let count = self.source.len();
        let capabilities = self.step_and_capability_ids()?;
        let agents = self.agent_ids();
        let servers: BTreeSet<&str> = f.servers.iter().map(|s| s.id.as_str()).collect();
        let nodes: BTreeSet<&str> = f.nodes.iter().map(|n| n.id.as_str()).collect();
        let declared = Declared {
            agents: Names::Borrowed(&agents),
            servers: Names::Borrowed(&servers),
            capabilities: Names::Owned(&capabilities),
            nodes: Names::Borrowed(&nodes),
        };
        let ranked = self.ranked_agents();
        let keep = matches!(self.source, StepSource::Held(_)) || count <= self.held_limit;
        let mut pass = StepsPass {
            agents: Vec::with_capacity(count),
            kinds: Vec::with_capacity(count),
            at: BTreeMap::new(),
            advances: BTreeMap::new(),
            steps: Built {
                held: keep.then(|| Vec::with_capacity(count)),
                ..Built::default()
            },
        };
        for i in 0..count {
            let decl = self.source.decl(i)?;
            resolve(&agents, "agent", &decl.agent, || {
                format!("steps[{i}].agent")
            })?;
            check_offset(decl.at, || format!("steps[{i}].at"))?;
            let action = step_action(i, &decl, has_world, &declared)?;
            let rank = ranked.binary_search(&decl.agent.as_str()).map_err(|_| {
                ArenaError::UndeclaredReference {
                    kind: "agent",
                    id: decl.agent.clone(),
                    field: format!("steps[{i}].agent"),
                }
            })?;
            pass.agents.push(rank as u32);
            pass.kinds.push(action.kind());
            if let Some(at) = decl.at {
                pass.at.insert(i, at);
            }
            if let Some(ms) = decl.advance_ms {
                pass.advances.insert(i, ms);
            }
            record_action(i, &decl.id, &action, &mut pass.steps)?;
            if i > 0 {
                pass.steps.witness_ids.push(',');
            }
            pass.steps
                .witness_ids
                .push_str(&chio_kernel::canonical::to_canonical_string(&decl.id)?);
            if let Some(held) = &mut pass.steps.held {
                held.push(Step {
                    head: StepHead::of(&decl),
                    action,
                });
            }
        }
        Ok(pass)
    }

    /// Checks the step ids (well formed, none twice) and the delegation
    /// ids; the capability namespace, which grants and delegations share.
    fn step_and_capability_ids(&self) -> Result<BTreeSet<String>, ArenaError> {
        let count = self.source.len();
        // Step ids: every id well formed, then no id twice. Ids are compared
        // by a 64-bit hash, and equal hashes by their ids.
        let mut hashes: Vec<(u64, u32)> = Vec::with_capacity(count);
        let mut delegations: Vec<(usize, String)> = Vec::new();
        for i in 0..count {
            let decl = self.source.decl(i)?;
            check_id(&decl.id, format!("steps[{i}].id"))?;
            hashes.push((id_hash(&decl.id), i as u32));
            if let (Some("delegate"), Some(id)) = (decl.action.as_deref(), &decl.delegation) {
                delegations.push((i, id.clone()));
            }
        }
        self.unique_step_ids(hashes)?;
        // Capability ids: grants and delegations share one namespace.
        let mut capabilities: BTreeSet<String> =
            self.file.grants.iter().map(|g| g.id.clone()).collect();
        for (i, id) in &delegations {
            check_id(id, format!("steps[{i}].delegation"))?;
            if !capabilities.insert(id.clone()) {
                return Err(ArenaError::DuplicateId {
                    kind: "capability",
                    id: id.clone(),
                    field: format!("steps[{i}].delegation"),
                });
            }
        }
        Ok(capabilities)
    }

    /// Refuses a step id declared twice, naming the later declaration of
    /// the first id repeated (the one a set of ids in declaration order
    /// meets first).
    fn unique_step_ids(&self, mut hashes: Vec<(u64, u32)>) -> Result<(), ArenaError> {
        hashes.sort_unstable();
        let mut first: Option<(usize, String)> = None;
        let mut group = 0;
        while group < hashes.len() {
            let end = group
                + hashes[group..]
                    .iter()
                    .take_while(|(h, _)| *h == hashes[group].0)
                    .count();
            if end - group > 1 {
                // Equal hashes: compare the ids themselves.
                let mut seen: BTreeSet<String> = BTreeSet::new();
                for (_, index) in &hashes[group..end] {
                    let index = *index as usize;
                    let id = self.source.decl(index)?.id.clone();
                    if !seen.insert(id.clone()) && first.as_ref().is_none_or(|(at, _)| index < *at)
                    {
                        first = Some((index, id));
                    }
                }
            }
            group = end;
        }
        match first {
            Some((index, id)) => Err(ArenaError::DuplicateId {
                kind: "step",
                id,
                field: format!("steps[{index}].id"),
            }),
            None => Ok(()),
        }
    }
}

/// A 64-bit hash of a step id (equal hashes are compared by their ids).
fn id_hash(id: &str) -> u64 {
    crate::rng::fnv1a64(id.as_bytes())
}

mod actions;

pub(crate) use actions::rebuild_action;
use actions::step_action;

/// Records what step `i`'s action means for the later passes: its fault,
/// delegation or redefinition, the steps whose answers it reads and the
/// sealed files its arguments read.
fn record_action(i: usize, id: &str, action: &Action, steps: &mut Built) -> Result<(), ArenaError> {
    match action {
        Action::Fault(fault) => steps.faults.push((i, fault.clone())),
        Action::Message(MessageAction {
            from_step: Some(source),
            ..
        }) => {
            steps.forwarded.insert(source.clone());
        }
        Action::Message(MessageAction {
            handover: Some(handover),
            ..
        }) => {
            record_handover_references(i, &handover.value, steps)?;
            // A planner's call may take values from the hand-over.
            steps.forwarded.insert(id.to_string());
        }
        Action::Delegate(_) => steps.delegations.push(i),
        Action::Redefine(_) => steps.redefinitions.push(i),
        Action::Call(call) => {
            // The grammar was checked when the step was read.
            for placed in crate::scenario::value::references(&call.arguments).unwrap_or_default() {
                match placed.reference {
                    crate::scenario::value::Reference::Step { step, .. } => {
                        steps.forwarded.insert(step.clone());
                        steps
                            .references
                            .push((i, format!("arguments{}", placed.at), step));
                    }
                    crate::scenario::value::Reference::Fixture { path } => {
                        let field = format!("steps[{i}].arguments{}", placed.at);
                        steps.sealed.entry(path).or_insert(field);
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Records the steps a hand-over's value reads, refusing a sealed file in
/// it.
fn record_handover_references(
    i: usize,
    value: &serde_json::Value,
    steps: &mut Built,
) -> Result<(), ArenaError> {
    // The grammar was checked when the step was read.
    for placed in crate::scenario::value::references(value).unwrap_or_default() {
        match placed.reference {
            crate::scenario::value::Reference::Step { step, .. } => {
                steps.forwarded.insert(step.clone());
                steps
                    .references
                    .push((i, format!("value{}", placed.at), step));
            }
            // A sealed value is sent by a call's arguments
            // only: a hand-over's value reaches a planner.
            crate::scenario::value::Reference::Fixture { path } => {
                return Err(ArenaError::SealedFixture {
                    field: format!("steps[{i}].value{}", placed.at),
                    path,
                    problem: "a hand-over's value may not read a sealed file; sealed values are sent by call arguments only".to_string(),
                });
            }
        }
    }
    Ok(())
}
