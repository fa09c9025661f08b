//! What the order of the schedule implies: a delegation hands on only what
//! its agent holds at that point, a presented capability exists by then, a
//! call without `capability` resolves to its agent's only capability for the
//! server, and a message forwards an earlier call step of its own sender.

use std::collections::{BTreeMap, BTreeSet};

use super::checks::check_instant;
use super::Validator;
use crate::error::ArenaError;
use crate::scenario::{Action, MessageAction};
use crate::scheduler::ScheduledAction;

impl Validator<'_> {
    /// Walks the schedule in execution order: a delegation may hand on only
    /// what its agent holds at that point, a presented delegation must exist
    /// by then, and a call without `capability` resolves to the agent's only
    /// capability for the server.
    pub(super) fn holdings(
        &self,
        mut actions: Vec<Action>,
        schedule: &[ScheduledAction],
        has_world: bool,
        start_ms: u64,
    ) -> Result<Vec<Action>, ArenaError> {
        if !has_world {
            return Ok(actions);
        }
        let f = self.file;
        // capability id -> server it covers, for capabilities that exist so far.
        let mut server_of: BTreeMap<String, String> = f
            .grants
            .iter()
            .map(|g| (g.id.clone(), g.server.clone()))
            .collect();
        // agent id -> capabilities it holds so far (declaration order kept by BTreeSet on id).
        let mut held: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for grant in &f.grants {
            held.entry(grant.agent.clone())
                .or_default()
                .insert(grant.id.clone());
        }
        for entry in schedule {
            let i = entry.step_index;
            let agent = &f.steps[i].agent;
            match &mut actions[i] {
                Action::Delegate(delegate) => {
                    if let Some(ms) = delegate.expires_after_ms {
                        // The child expires `ms` after the delegation's own instant.
                        check_instant(start_ms, entry.evaluation_ms.saturating_add(ms), || {
                            format!("steps[{i}].expires_after_ms")
                        })?;
                    }
                    let holds = held
                        .get(agent)
                        .is_some_and(|set| set.contains(&delegate.capability));
                    if !holds {
                        return Err(ArenaError::CapabilityNotHeld {
                            field: format!("steps[{i}].capability"),
                            agent: agent.clone(),
                            capability: delegate.capability.clone(),
                        });
                    }
                    let server = server_of
                        .get(&delegate.capability)
                        .cloned()
                        .unwrap_or_default();
                    server_of.insert(delegate.delegation.clone(), server);
                    held.entry(delegate.to.clone())
                        .or_default()
                        .insert(delegate.delegation.clone());
                }
                Action::Call(call) => match &call.capability {
                    Some(capability) => {
                        if !server_of.contains_key(capability) {
                            return Err(ArenaError::UndeclaredReference {
                                kind: "capability (not yet delegated at this point)",
                                id: capability.clone(),
                                field: format!("steps[{i}].capability"),
                            });
                        }
                    }
                    None => {
                        let candidates: Vec<&String> = held
                            .get(agent)
                            .into_iter()
                            .flatten()
                            .filter(|c| server_of.get(*c) == Some(&call.server))
                            .collect();
                        match candidates.as_slice() {
                            [only] => call.capability = Some((*only).clone()),
                            [] => {
                                return Err(ArenaError::NoCapability {
                                    field: format!("steps[{i}]"),
                                    agent: agent.clone(),
                                    server: call.server.clone(),
                                })
                            }
                            _ => {
                                return Err(ArenaError::AmbiguousCapability {
                                    field: format!("steps[{i}]"),
                                    agent: agent.clone(),
                                    server: call.server.clone(),
                                })
                            }
                        }
                    }
                },
                Action::Revoke(_) | Action::Message(_) | Action::Advance(_) | Action::Fault(_) => {}
            }
        }
        Ok(actions)
    }

    /// A message forwards the output of an earlier call step of its own
    /// sender, ordered before it in execution order; anything else would
    /// forward what the sender never received.
    pub(super) fn messages(
        &self,
        actions: &[Action],
        schedule: &[ScheduledAction],
    ) -> Result<(), ArenaError> {
        let f = self.file;
        // Each step's place in execution order, by declaration index.
        let mut position = vec![usize::MAX; actions.len()];
        for (order, entry) in schedule.iter().enumerate() {
            if let Some(slot) = position.get_mut(entry.step_index) {
                *slot = order;
            }
        }
        // The declaration index of each step a message forwards from, found
        // in one pass (the first step with the id, as ids are unique).
        let mut sources: BTreeMap<&str, Option<usize>> = actions
            .iter()
            .filter_map(|action| match action {
                Action::Message(MessageAction {
                    from_step: Some(source),
                    ..
                }) => Some((source.as_str(), None)),
                _ => None,
            })
            .collect();
        if !sources.is_empty() {
            for (j, step) in f.steps.iter().enumerate() {
                if let Some(slot @ None) = sources.get_mut(step.id.as_str()) {
                    *slot = Some(j);
                }
            }
        }
        for (i, action) in actions.iter().enumerate() {
            let Action::Message(MessageAction {
                from_step: Some(source),
                ..
            }) = action
            else {
                continue;
            };
            let field = format!("steps[{i}].from_step");
            let Some(j) = sources.get(source.as_str()).copied().flatten() else {
                return Err(ArenaError::UndeclaredReference {
                    kind: "step",
                    id: source.clone(),
                    field,
                });
            };
            let reason = if !matches!(actions[j], Action::Call(_)) {
                Some("it is not a call step")
            } else if f.steps[j].agent != f.steps[i].agent {
                Some("it is another agent's step")
            } else if position.get(j) >= position.get(i) {
                Some("it is not ordered before the message")
            } else {
                None
            };
            if let Some(reason) = reason {
                return Err(ArenaError::MessageSource {
                    field,
                    step: source.clone(),
                    reason,
                });
            }
        }
        Ok(())
    }
}
