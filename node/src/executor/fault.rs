//! Fault steps, and what a fault in effect means for every other step.
//!
//! A fault step changes the run's infrastructure: a node crashes or comes
//! back, a link is cut, slowed or healed, trust-control stalls. The
//! controller keeps the faults in effect ([`FaultState`]) and decides, before
//! dispatch, the fail-closed answer of every step a fault reaches, from the
//! declared fault alone:
//!
//! - a call whose agent's node is down, whose serving kernel's node is down
//!   or cut from the agent's node, or whose kernel cannot reach trust-control
//!   (its link cut, or trust-control stalled) is a deny;
//! - a delegation whose delegator's or delegatee's node is down, whose two
//!   nodes are cut apart, or whose delegator cannot record the child's
//!   labels in trust-control is refused; so is a revocation whose agent's
//!   node is down or cannot reach trust-control;
//! - a capability handed to an agent of a node restarted without its state
//!   is lost: presenting or delegating it is a deny or a refusal;
//! - a call crossing a delayed link is evaluated by its kernel `delay_ms`
//!   later than its step's instant.
//!
//! Such a step is not dispatched into the fault: a request sent into a
//! paused or dying process can be applied after it resumes, or half applied,
//! and that residue differs between an embedded and a real process. Its
//! reason is therefore the declared fault's, the same bytes on every
//! topology, and the topology's dispatcher inflicts the fault itself
//! ([`super::Dispatcher::fault`]): simulated in the embedded topology,
//! real processes killed, paused and cut in `--topology local`.

use std::collections::BTreeMap;

use chio_arena::scenario::{FaultAction, FaultLink, TRUST_CONTROL};
use chio_kernel::token::CapabilityToken;

use super::StepExecutor;
use crate::node::CallCommand;
use crate::world::World;

/// A fault step, ready for the dispatcher.
#[derive(Debug, Clone)]
pub struct PreparedFault {
    /// The fault as declared.
    pub fault: FaultAction,
    /// For a restart with its state: every capability handed to an agent of
    /// the node during the run (by agent), which the node holds again.
    pub restore: Vec<(String, CapabilityToken)>,
    /// For a restart without its state: the ids of those capabilities,
    /// which the node's agents no longer hold.
    pub lost: Vec<String>,
    /// The fault step's instant, Unix milliseconds.
    pub at_ms: u64,
}

/// What a dispatcher is asked to inflict.
#[derive(Debug, Clone)]
pub enum FaultEvent {
    /// A fault step's fault.
    Begin(PreparedFault),
    /// The stall in effect is over: trust-control answers again.
    EndStall,
}

/// The faults in effect at one point of a run, each with the step that
/// began it.
#[derive(Debug, Clone, Default)]
pub struct FaultState {
    down: BTreeMap<String, String>,
    cut: BTreeMap<FaultLink, String>,
    delayed: BTreeMap<FaultLink, (u64, String)>,
    /// The stall's end (Unix ms) and the step that began it.
    stall: Option<(u64, String)>,
    /// Capabilities lost by a restart without state, with that step.
    lost: BTreeMap<String, String>,
}

impl FaultState {
    /// Whether a stall is in effect and over by `now_ms`.
    pub fn stall_over(&self, now_ms: u64) -> bool {
        self.stall
            .as_ref()
            .is_some_and(|(until, _)| now_ms >= *until)
    }

    /// Forgets a stall that is over.
    pub fn end_stall(&mut self) {
        self.stall = None;
    }

    /// Applies fault step `step_id`.
    pub fn apply(&mut self, prepared: &PreparedFault, step_id: &str) {
        let step = step_id.to_string();
        let now_ms = prepared.at_ms;
        match &prepared.fault {
            FaultAction::Crash { node } => {
                self.down.insert(node.clone(), step);
            }
            FaultAction::Restart { node, .. } => {
                self.down.remove(node);
                for id in &prepared.lost {
                    self.lost.insert(id.clone(), step.clone());
                }
            }
            FaultAction::Partition { link } => {
                self.cut.insert(link.clone(), step);
            }
            FaultAction::Heal { link } => {
                self.cut.remove(link);
                self.delayed.remove(link);
            }
            FaultAction::Stall { duration_ms } => {
                self.stall = Some((now_ms.saturating_add(*duration_ms), step));
            }
            FaultAction::Delay { link, delay_ms } => {
                self.delayed.insert(link.clone(), (*delay_ms, step));
            }
        }
    }

    /// Why `node` is down, if it is.
    fn down(&self, node: &str) -> Option<String> {
        self.down
            .get(node)
            .map(|step| format!("node {node} is down (crashed at step {step})"))
    }

    /// Why nodes `a` and `b` cannot reach each other, if they cannot.
    fn apart(&self, a: &str, b: &str) -> Option<String> {
        if a == b {
            return None;
        }
        let link = FaultLink::new(a, b);
        self.cut
            .get(&link)
            .map(|step| format!("link {} is partitioned (at step {step})", link.describe()))
    }

    /// Why `node` cannot reach trust-control at `now_ms`, if it cannot.
    fn no_control(&self, node: &str, now_ms: u64) -> Option<String> {
        if let Some((until, step)) = &self.stall {
            if now_ms < *until {
                return Some(format!(
                    "trust-control is stalled (since step {step}, for {} ms more) and the store call missed its deadline",
                    until - now_ms
                ));
            }
        }
        let link = FaultLink::new(node, TRUST_CONTROL);
        self.cut
            .get(&link)
            .map(|step| format!("link {} is partitioned (at step {step})", link.describe()))
    }

    /// Why `capability` is no longer held, if a restart lost it.
    fn lost(&self, agent: &str, node: &str, capability: &str) -> Option<String> {
        self.lost.get(capability).map(|step| {
            format!(
                "agent {agent} no longer holds capability {capability}: node {node} restarted without its state at step {step}"
            )
        })
    }

    /// The deny reason of `command` (its agent on `agent_node`) to `kernel`
    /// (on `kernel_node`), when a fault reaches it.
    pub fn call_blocked(
        &self,
        command: &CallCommand,
        agent_node: &str,
        kernel: &str,
        kernel_node: &str,
    ) -> Option<String> {
        let agent = command.agent.as_str();
        let capability = command.capability_id.as_str();
        let captured = command.captured.is_some();
        let now_ms = command.now_ms;
        if let Some(why) = self.down(agent_node) {
            return Some(format!("agent {agent} cannot call: {why}"));
        }
        if !captured {
            if let Some(why) = self.lost(agent, agent_node, capability) {
                return Some(why);
            }
        }
        if let Some(why) = self
            .down(kernel_node)
            .or_else(|| self.apart(agent_node, kernel_node))
        {
            return Some(format!("kernel {kernel} is unreachable: {why}"));
        }
        self.no_control(kernel_node, now_ms)
            .map(|why| format!("kernel {kernel} cannot reach trust-control, so it denies: {why}"))
    }

    /// How late a call from `agent_node` reaches a kernel on `kernel_node`.
    pub fn delay(&self, agent_node: &str, kernel_node: &str) -> Option<(u64, String)> {
        if agent_node == kernel_node {
            return None;
        }
        let link = FaultLink::new(agent_node, kernel_node);
        self.delayed.get(&link).map(|(ms, step)| {
            (
                *ms,
                format!(
                    "arrived {ms} ms late over link {} (delayed at step {step})",
                    link.describe()
                ),
            )
        })
    }

    /// The refusal of a delegation of `capability` by `agent` (on
    /// `agent_node`) to an agent on `to_node`, when a fault reaches it.
    pub fn delegate_blocked(
        &self,
        agent: &str,
        agent_node: &str,
        capability: &str,
        to: &str,
        to_node: &str,
        now_ms: u64,
    ) -> Option<String> {
        let why = self
            .down(agent_node)
            .or_else(|| self.lost(agent, agent_node, capability))
            .or_else(|| {
                self.no_control(agent_node, now_ms)
                    .map(|why| format!("the child's labels cannot be recorded: {why}"))
            })
            .or_else(|| {
                self.down(to_node)
                    .or_else(|| self.apart(agent_node, to_node))
                    .map(|why| format!("the child cannot be handed to agent {to}: {why}"))
            })?;
        Some(format!("delegation refused: {why}"))
    }

    /// The refusal of a revocation sent through `agent_node`, when a fault
    /// reaches it.
    pub fn revoke_blocked(&self, agent_node: &str, now_ms: u64) -> Option<String> {
        let why = self.down(agent_node).or_else(|| {
            self.no_control(agent_node, now_ms)
                .map(|why| format!("the revocation cannot be recorded: {why}"))
        })?;
        Some(format!("revocation refused: {why}"))
    }
}

/// The controller's half of a fault step at `now_ms`: what a restart
/// restores or loses, decided from the run's ledger.
pub(super) fn prepare(
    executor: &StepExecutor,
    world: &World,
    fault: &FaultAction,
    now_ms: u64,
) -> PreparedFault {
    let (restore, lost) = match fault {
        FaultAction::Restart { node, keep_state } => {
            let handed = handed_to(executor, world, node);
            if *keep_state {
                let restore = handed.into_iter().map(|(_, h, t)| (h, t)).collect();
                (restore, Vec::new())
            } else {
                (
                    Vec::new(),
                    handed.into_iter().map(|(id, _, _)| id).collect(),
                )
            }
        }
        _ => (Vec::new(), Vec::new()),
    };
    PreparedFault {
        fault: fault.clone(),
        restore,
        lost,
        at_ms: now_ms,
    }
}

/// Every capability handed during the run (not a grant, which a node holds
/// from its world) to an agent of `node`: id, holder, token, in id order.
fn handed_to(
    executor: &StepExecutor,
    world: &World,
    node: &str,
) -> Vec<(String, String, CapabilityToken)> {
    executor
        .ledger
        .iter()
        .filter(|(id, held)| {
            !world.grants.contains_key(*id)
                && !executor.faults.lost.contains_key(*id)
                && world.agent_node(&held.holder) == Some(node)
        })
        .map(|(id, held)| (id.clone(), held.holder.clone(), held.token.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn begun(state: &mut FaultState, fault: FaultAction, step: &str, at_ms: u64) {
        let prepared = PreparedFault {
            fault,
            restore: Vec::new(),
            lost: vec!["bob-files".to_string()],
            at_ms,
        };
        state.apply(&prepared, step);
    }

    fn command(agent: &str, now_ms: u64) -> CallCommand {
        CallCommand {
            request_id: "r".to_string(),
            agent: agent.to_string(),
            capability_id: "bob-files".to_string(),
            captured: None,
            server: "ws".to_string(),
            tool: "read_file".to_string(),
            arguments: serde_json::json!({}),
            now_ms,
        }
    }

    // Proves each fault reaches exactly the calls it should, naming the fault step, and a stall ends at its instant.
    #[test]
    fn faults_reach_the_calls_they_cut_off_and_no_others() {
        let mut state = FaultState::default();
        let call =
            |s: &FaultState, now| s.call_blocked(&command("bob", now), "node-b", "k-a", "node-a");
        assert_eq!(call(&state, 0), None);
        begun(
            &mut state,
            FaultAction::Stall { duration_ms: 10 },
            "stall",
            100,
        );
        let stalled = call(&state, 105).expect("stalled");
        assert!(
            stalled.contains("since step stall, for 5 ms more"),
            "{stalled}"
        );
        assert!(state.stall_over(110) && !state.stall_over(109));
        assert_eq!(call(&state, 110), None);
        state.end_stall();
        let link = FaultLink::new("node-a", "node-b");
        begun(
            &mut state,
            FaultAction::Partition { link: link.clone() },
            "cut",
            0,
        );
        let cut = call(&state, 0).expect("partitioned");
        assert!(
            cut.starts_with("kernel k-a is unreachable: link node-a <-> node-b"),
            "{cut}"
        );
        assert_eq!(
            state.call_blocked(&command("alice", 0), "node-a", "k-a", "node-a"),
            None
        );
        begun(&mut state, FaultAction::Heal { link }, "heal", 0);
        assert_eq!(call(&state, 0), None);
        let node = "node-b".to_string();
        begun(
            &mut state,
            FaultAction::Crash { node: node.clone() },
            "crash",
            0,
        );
        assert!(call(&state, 0)
            .expect("down")
            .contains("agent bob cannot call"));
        let restart = FaultAction::Restart {
            node,
            keep_state: false,
        };
        begun(&mut state, restart, "fresh", 0);
        let lost = call(&state, 0).expect("lost");
        assert!(
            lost.contains("no longer holds capability bob-files"),
            "{lost}"
        );
    }
}
