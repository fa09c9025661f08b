//! What the order of the schedule implies: a delegation hands on only what
//! its agent holds at that point, a presented capability exists by then, a
//! call without `capability` resolves to its agent's only capability for the
//! server, and a message forwards an earlier call step of its own sender.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::checks::check_instant;
use super::steps::rebuild_action;
use super::{Validator, UNRESOLVED};
use crate::error::ArenaError;
use crate::model::ScenarioFile;
use crate::scenario::{Action, ActionKind, CallAction, DelegateAction, MessageAction, Step};
use crate::scheduler::ScheduledStep;

/// A step that reads another: its declaration index, the field naming the
/// source, the source's id, and whether the reader is a message.
type Reader = (usize, String, String, bool);

/// What a walk of the schedule reads: the order, and each step's agent
/// and kind; a step's action is the held one or is parsed again.
pub(super) struct Walk<'w> {
    pub schedule: &'w [ScheduledStep],
    /// Each step's agent rank (see `Validator::ranked_agents`).
    pub agents: &'w [u32],
    /// The agent ids in ascending order.
    pub ranked: &'w [&'w str],
    pub kinds: &'w [ActionKind],
    /// Every step, when the scenario keeps them in memory.
    pub held: Option<&'w [Step]>,
    /// Each call argument that takes its value from a step
    /// (`Built::references`).
    pub references: &'w [(usize, String, String)],
    pub has_world: bool,
}

impl Walk<'_> {
    /// Step `i`'s agent id.
    pub(super) fn agent(&self, i: usize) -> &str {
        self.agents
            .get(i)
            .and_then(|rank| self.ranked.get(*rank as usize))
            .copied()
            .unwrap_or_default()
    }
}

impl<'a> Validator<'a> {
    /// Step `i`'s typed action, as the steps' pass built it.
    pub(super) fn action_at<'w>(
        &self,
        walk: &'w Walk<'_>,
        i: usize,
    ) -> Result<Cow<'w, Action>, ArenaError> {
        if let Some(step) = walk.held.and_then(|held| held.get(i)) {
            return Ok(Cow::Borrowed(&step.action));
        }
        let decl = self.source.decl(i)?;
        rebuild_action(i, &decl, walk.has_world).map(Cow::Owned)
    }

    /// Walks the schedule in execution order: a delegation may hand on only
    /// what its agent holds at that point, a presented delegation must exist
    /// by then, and a call without `capability` resolves to the agent's only
    /// capability for the server. Returns each step's resolution (an index
    /// into the names returned, or `UNRESOLVED`).
    pub(super) fn holdings(
        &self,
        walk: &Walk<'_>,
        start_ms: u64,
    ) -> Result<(Vec<u32>, Vec<String>), ArenaError> {
        if !walk.has_world {
            return Ok((vec![UNRESOLVED; walk.kinds.len()], Vec::new()));
        }
        let mut holdings = Holdings::of_grants(self.file, walk.kinds.len());
        for entry in walk.schedule {
            let i = entry.step_index;
            if !matches!(
                walk.kinds.get(i),
                Some(ActionKind::Delegate | ActionKind::Call)
            ) {
                continue;
            }
            let agent = walk.agent(i);
            let action = self.action_at(walk, i)?;
            match action.as_ref() {
                Action::Delegate(delegate) => {
                    if let Some(ms) = delegate.expires_after_ms {
                        // The child expires `ms` after the delegation's own instant.
                        check_instant(start_ms, entry.evaluation_ms.saturating_add(ms), || {
                            format!("steps[{i}].expires_after_ms")
                        })?;
                    }
                    holdings.delegate(i, agent, delegate)?;
                }
                Action::Call(call) => holdings.call(i, agent, call)?,
                Action::Revoke(_)
                | Action::Message(_)
                | Action::Advance(_)
                | Action::Fault(_)
                | Action::Redefine(_) => {}
            }
        }
        Ok((holdings.resolved, holdings.names))
    }

    /// A message forwards the output of an earlier call step of its own
    /// sender, and a call's argument takes a value from one, ordered before
    /// it in execution order; anything else would read what the agent never
    /// received.
    pub(super) fn messages(&self, walk: &Walk<'_>) -> Result<(), ArenaError> {
        let (forwards, handovers) = self.readers(walk)?;
        if forwards.is_empty() {
            return Ok(());
        }
        // Each step's place in execution order, by declaration index.
        let mut position = vec![usize::MAX; walk.kinds.len()];
        for (order, entry) in walk.schedule.iter().enumerate() {
            if let Some(slot) = position.get_mut(entry.step_index) {
                *slot = order;
            }
        }
        let found = self.source_indices(walk, &forwards)?;
        for (i, field, source, message) in forwards {
            let Some(j) = found.get(source.as_str()).copied().flatten() else {
                return Err(ArenaError::UndeclaredReference {
                    kind: "step",
                    id: source,
                    field,
                });
            };
            let reason = source_refusal(walk, &position, &handovers, (i, j), message);
            if let Some(reason) = reason {
                return Err(if message {
                    ArenaError::MessageSource {
                        field,
                        step: source,
                        reason,
                    }
                } else {
                    ArenaError::ValueSource {
                        field,
                        step: source,
                        reason,
                    }
                });
            }
        }
        Ok(())
    }

    /// The steps that read another step: each message forwarding one (and
    /// each call argument taking a value from one), as (declaration index,
    /// field naming the source, the source's id, whether the reader is a
    /// message); and the hand-overs by declaration index, with their
    /// receivers, each refused unless its receiver is a planner.
    fn readers(
        &self,
        walk: &Walk<'_>,
    ) -> Result<(Vec<Reader>, BTreeMap<usize, String>), ArenaError> {
        let mut forwards: Vec<Reader> = Vec::new();
        let mut handovers: BTreeMap<usize, String> = BTreeMap::new();
        for i in (0..walk.kinds.len()).filter(|i| walk.kinds[*i] == ActionKind::Message) {
            match self.action_at(walk, i)?.as_ref() {
                Action::Message(MessageAction {
                    from_step: Some(source),
                    ..
                }) => {
                    forwards.push((i, format!("steps[{i}].from_step"), source.clone(), true));
                }
                Action::Message(MessageAction {
                    to,
                    handover: Some(_),
                    ..
                }) => {
                    let planner = self
                        .file
                        .agents
                        .iter()
                        .any(|a| a.id == *to && a.planner == Some(true));
                    if !planner {
                        return Err(ArenaError::HandOverReceiver {
                            field: format!("steps[{i}].to"),
                            agent: to.clone(),
                        });
                    }
                    handovers.insert(i, to.clone());
                }
                _ => {}
            }
        }
        for (i, at, source) in walk.references {
            forwards.push((*i, format!("steps[{i}].{at}"), source.clone(), false));
        }
        Ok((forwards, handovers))
    }

    /// The declaration index of each step read by another, found in one
    /// pass (the first step with the id, as ids are unique); `None` for an
    /// id no step has.
    fn source_indices(
        &self,
        walk: &Walk<'_>,
        forwards: &[Reader],
    ) -> Result<BTreeMap<String, Option<usize>>, ArenaError> {
        let mut sources: BTreeMap<&str, Option<usize>> = forwards
            .iter()
            .map(|(_, _, source, _)| (source.as_str(), None))
            .collect();
        for j in 0..walk.kinds.len() {
            let id = match walk.held.and_then(|held| held.get(j)) {
                Some(step) => Cow::Borrowed(step.head.id.as_str()),
                None => Cow::Owned(self.source.decl(j)?.id.clone()),
            };
            if let Some(slot @ None) = sources.get_mut(id.as_ref()) {
                *slot = Some(j);
            }
        }
        Ok(sources
            .into_iter()
            .map(|(id, j)| (id.to_string(), j))
            .collect())
    }
}

/// Why step `i` may not read step `j` (a message forwarding it when
/// `message`, else a value taken from it), or `None` when it may.
fn source_refusal(
    walk: &Walk<'_>,
    position: &[usize],
    handovers: &BTreeMap<usize, String>,
    (i, j): (usize, usize),
    message: bool,
) -> Option<&'static str> {
    // A call may take a value from a hand-over made to its agent.
    let handed = !message && walk.kinds.get(i) == Some(&ActionKind::Call);
    if handed && handovers.contains_key(&j) {
        if handovers.get(&j).map(String::as_str) != Some(walk.agent(i)) {
            Some("it is a hand-over to another agent")
        } else if position.get(j) >= position.get(i) {
            Some("it is not ordered before the call")
        } else {
            None
        }
    } else if walk.kinds.get(j) != Some(&ActionKind::Call) {
        Some(if handed {
            "it is not a call step or a hand-over to this agent"
        } else {
            "it is not a call step"
        })
    } else if walk.agent(j) != walk.agent(i) {
        Some("it is another agent's step")
    } else if position.get(j) >= position.get(i) {
        Some(if message {
            "it is not ordered before the message"
        } else if walk.kinds.get(i) == Some(&ActionKind::Message) {
            "it is not ordered before the hand-over"
        } else {
            "it is not ordered before the call"
        })
    } else {
        None
    }
}

/// What the walk of the schedule knows at one point: which capabilities
/// exist, who holds them, and the calls resolved so far.
struct Holdings {
    /// Capability id -> the server it covers, for capabilities that exist so far.
    server_of: BTreeMap<String, String>,
    /// Agent id -> the capabilities it holds so far.
    held: BTreeMap<String, BTreeSet<String>>,
    /// Each step's resolution: an index into `names`, or `UNRESOLVED`.
    resolved: Vec<u32>,
    /// The capabilities calls resolved to, in order of first resolution.
    names: Vec<String>,
    /// Each name's index in `names`.
    name_index: BTreeMap<String, u32>,
}

impl Holdings {
    /// What exists before the first step: the world's grants.
    fn of_grants(file: &ScenarioFile, steps: usize) -> Holdings {
        let server_of = file
            .grants
            .iter()
            .map(|g| (g.id.clone(), g.server.clone()))
            .collect();
        let mut held: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for grant in &file.grants {
            held.entry(grant.agent.clone())
                .or_default()
                .insert(grant.id.clone());
        }
        Holdings {
            server_of,
            held,
            resolved: vec![UNRESOLVED; steps],
            names: Vec::new(),
            name_index: BTreeMap::new(),
        }
    }

    /// Step `i` delegates: its agent must hold the capability it hands on;
    /// the child then covers the same server and is held by its receiver.
    fn delegate(
        &mut self,
        i: usize,
        agent: &str,
        delegate: &DelegateAction,
    ) -> Result<(), ArenaError> {
        let holds = self
            .held
            .get(agent)
            .is_some_and(|set| set.contains(&delegate.capability));
        if !holds {
            return Err(ArenaError::CapabilityNotHeld {
                field: format!("steps[{i}].capability"),
                agent: agent.to_string(),
                capability: delegate.capability.clone(),
            });
        }
        let server = self
            .server_of
            .get(&delegate.capability)
            .cloned()
            .unwrap_or_default();
        self.server_of.insert(delegate.delegation.clone(), server);
        self.held
            .entry(delegate.to.clone())
            .or_default()
            .insert(delegate.delegation.clone());
        Ok(())
    }

    /// Step `i` calls: a named capability must exist by now; without one,
    /// the call resolves to its agent's only capability for the server.
    fn call(&mut self, i: usize, agent: &str, call: &CallAction) -> Result<(), ArenaError> {
        let Some(capability) = &call.capability else {
            return self.resolve_call(i, agent, call);
        };
        if !self.server_of.contains_key(capability) {
            return Err(ArenaError::UndeclaredReference {
                kind: "capability (not yet delegated at this point)",
                id: capability.clone(),
                field: format!("steps[{i}].capability"),
            });
        }
        Ok(())
    }

    /// Resolves a call without `capability` to the one capability its
    /// agent holds for the server, refusing none and more than one.
    fn resolve_call(&mut self, i: usize, agent: &str, call: &CallAction) -> Result<(), ArenaError> {
        let candidates: Vec<&String> = self
            .held
            .get(agent)
            .into_iter()
            .flatten()
            .filter(|c| self.server_of.get(*c) == Some(&call.server))
            .collect();
        match candidates.as_slice() {
            [only] => {
                let next = self.names.len() as u32;
                let slot = *self.name_index.entry((*only).clone()).or_insert(next);
                if slot == next {
                    self.names.push((*only).clone());
                }
                if let Some(out) = self.resolved.get_mut(i) {
                    *out = slot;
                }
                Ok(())
            }
            [] => Err(ArenaError::NoCapability {
                field: format!("steps[{i}]"),
                agent: agent.to_string(),
                server: call.server.clone(),
            }),
            _ => Err(ArenaError::AmbiguousCapability {
                field: format!("steps[{i}]"),
                agent: agent.to_string(),
                server: call.server.clone(),
            }),
        }
    }
}
