//! Fault steps, and what a fault in effect means for every other step.
//!
//! A fault step changes the run's infrastructure: a node crashes or comes
//! back, a link is cut, slowed or healed, trust-control stalls. The
//! topology's dispatcher inflicts it ([`super::Dispatcher::fault`]):
//! simulated in the embedded topology, real processes killed, paused and
//! cut in `--topology local`. Every step a fault reaches is still
//! dispatched and answered by the nodes' and kernels' own fail-closed path,
//! so its answer is the one a real outage gives, the same bytes on every
//! topology:
//!
//! - a call whose serving kernel's node is down or cut from the agent's
//!   node is denied by the agent's node, which cannot reach the kernel
//!   (`crate::outage`); one whose kernel cannot reach trust-control (its
//!   link cut, or trust-control stalled) is denied by that kernel, whose
//!   store calls fail;
//! - a delegation whose delegator's node cannot record the child's labels
//!   in trust-control, or cannot reach the delegatee's node, is refused by
//!   that node; so is a revocation it cannot record;
//! - a capability handed to an agent of a node restarted without its state
//!   is no longer held there, so that node refuses to present or delegate
//!   it;
//! - a call crossing a delayed link is evaluated by its kernel `delay_ms`
//!   later than its step's instant.
//!
//! What the controller keeps ([`FaultState`]) is what only it can know: a
//! step whose acting agent's node is down is answered here (nobody can make
//! the call), a delayed link moves a call's instant and the controller holds
//! the call in flight until then, so it answers for what the call met on
//! its way: its kernel's node down when it was sent (the deny an undelayed
//! call sent then gets from its node, [`FaultState::send`]) or a crash of
//! either node, or a cut of the link between them, before it arrives
//! ([`FaultState::in_flight_lost`]); a
//! stall ends at the first step whose instant reaches its end, and a
//! restart with its state hands back what the node's agents held, less
//! what an earlier restart without state lost.

use std::collections::BTreeMap;

use chio_arena::scenario::{FaultAction, FaultLink};
use chio_kernel::token::CapabilityToken;

use super::StepExecutor;
use crate::outage::{Arrival, NodeDown, NodeReason, Refusal};
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

/// The faults in effect at one point of a run, as far as the controller
/// acts on them, each with the step that began it.
#[derive(Debug, Clone, Default)]
pub struct FaultState {
    /// Nodes down, with the step that crashed each.
    down: BTreeMap<String, String>,
    /// How many times each node has crashed, with the latest crash's step:
    /// a call in flight to a node that crashed meanwhile is lost, even if
    /// the node is back when the call would have arrived.
    crashes: BTreeMap<String, (u64, String)>,
    /// Delayed links: the delay and the step that began it.
    delayed: BTreeMap<FaultLink, (u64, String)>,
    /// How many times each link has been cut, with the latest cut's step,
    /// and whether it is cut now: a call in flight over a link cut
    /// meanwhile is lost, even if the link carries again when the call
    /// would have arrived.
    cuts: BTreeMap<FaultLink, (u64, String, bool)>,
    /// The stall's end (Unix ms) and the step that began it.
    stall: Option<(u64, String)>,
    /// Capabilities lost by a restart without state, with that step: a
    /// later restart with state does not hand them over again.
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
                let crashes = self.crashes.entry(node.clone()).or_default();
                *crashes = (crashes.0 + 1, step.clone());
                self.down.insert(node.clone(), step);
            }
            FaultAction::Restart { node, .. } => {
                self.down.remove(node);
                for id in &prepared.lost {
                    self.lost.insert(id.clone(), step.clone());
                }
            }
            // A call sent over a cut link is the nodes' to meet; the
            // controller counts the cut for the calls already in flight.
            FaultAction::Partition { link } => {
                let cuts = self.cuts.entry(link.clone()).or_default();
                *cuts = (cuts.0 + 1, step, true);
            }
            FaultAction::Heal { link } => {
                self.delayed.remove(link);
                if let Some(cut) = self.cuts.get_mut(link) {
                    cut.2 = false;
                }
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
    fn down(&self, node: &str) -> Option<NodeDown> {
        self.down.get(node).map(|step| NodeDown {
            node: node.to_string(),
            step: step.clone(),
        })
    }

    /// How many times `node` has crashed so far.
    fn crash_count(&self, node: &str) -> u64 {
        self.crashes.get(node).map_or(0, |(count, _)| *count)
    }

    /// How many times the link between two distinct nodes has been cut
    /// so far (none between a node and itself).
    fn cut_count(&self, agent_node: &str, kernel_node: &str) -> u64 {
        if agent_node == kernel_node {
            return 0;
        }
        let link = FaultLink::new(agent_node, kernel_node);
        self.cuts.get(&link).map_or(0, |(count, _, _)| *count)
    }

    /// The step that cut the link between two nodes after it had been cut
    /// `sent` times, when the link carries again now: a call sent before
    /// that cut was dropped with the link's open connections. A link still
    /// cut is the nodes' to meet, as for any call sent over it.
    fn cut_in_flight(&self, agent_node: &str, kernel_node: &str, sent: u64) -> Option<String> {
        if agent_node == kernel_node {
            return None;
        }
        let link = FaultLink::new(agent_node, kernel_node);
        let (count, step, cut_now) = self.cuts.get(&link)?;
        (*count != sent && !*cut_now).then(|| step.clone())
    }

    /// Why a call sent when `node` had crashed `sent` times is lost on
    /// its way, if it is: the node is down, or crashed since (the process
    /// the call was sent to is gone, whatever came back in its place).
    fn lost_in_flight(&self, node: &str, sent: u64) -> Option<Lost> {
        self.down(node).map(Lost::Down).or_else(|| {
            let (count, step) = self.crashes.get(node)?;
            (*count != sent).then(|| {
                Lost::Crashed(NodeDown {
                    node: node.to_string(),
                    step: step.clone(),
                })
            })
        })
    }

    /// What a call from `agent_node` to a kernel on `kernel_node` meets as
    /// it is sent now: the refusal of its kernel's node if that node is
    /// down or the link to it is cut (the agent's node finds no process,
    /// or no link, to take the call, and denies it as it denies any call
    /// sent then: the kernel is unreachable), and how many times each node
    /// has crashed and the link has been cut so far.
    pub fn send(&self, kernel: &str, kernel_node: &str, agent_node: &str) -> Sent {
        let cut_now = self.link_cut(agent_node, kernel_node);
        let unreachable = (self.down.contains_key(kernel_node) || cut_now).then(|| {
            crate::outage::kernel_unreachable(
                kernel,
                kernel_node,
                agent_node,
                crate::outage::Outage::Unavailable,
            )
        });
        Sent {
            unreachable,
            crashes: (self.crash_count(kernel_node), self.crash_count(agent_node)),
            cuts: self.cut_count(agent_node, kernel_node),
        }
    }

    /// Why a call in flight to kernel `kernel` on `kernel_node`, from
    /// `agent` on `agent_node`, never reaches a decision, if it does not:
    /// its kernel's node was down when it was sent ([`Sent`]), whatever
    /// happened since; or that node, or the agent's, is down now or
    /// crashed since it was sent; or the link between them was cut since
    /// it was sent and carries again (a link still cut denies the call
    /// where it is, as it denies any call sent over it).
    pub fn in_flight_lost(
        &self,
        (kernel, kernel_node): (&str, &str),
        (agent, agent_node): (&str, &str),
        sent: &Sent,
    ) -> Option<Refusal> {
        if let Some(refusal) = &sent.unreachable {
            return Some(refusal.clone());
        }
        let kernel = kernel.to_string();
        let agent = agent.to_string();
        self.lost_in_flight(kernel_node, sent.crashes.0)
            .map(|lost| match lost {
                Lost::Down(down) => NodeReason::KernelDown {
                    kernel: kernel.clone(),
                    down,
                },
                Lost::Crashed(down) => NodeReason::KernelCrashedInFlight {
                    kernel: kernel.clone(),
                    down,
                },
            })
            .or_else(|| {
                self.lost_in_flight(agent_node, sent.crashes.1)
                    .map(|lost| match lost {
                        Lost::Down(down) => NodeReason::AgentDown { agent, down },
                        Lost::Crashed(down) => NodeReason::AgentCrashedInFlight { agent, down },
                    })
            })
            .or_else(|| {
                self.cut_in_flight(agent_node, kernel_node, sent.cuts)
                    .map(|step| NodeReason::LinkCutInFlight {
                        kernel,
                        kernel_node: kernel_node.to_string(),
                        from_node: agent_node.to_string(),
                        step,
                    })
            })
            .map(|reason| reason.refusal())
    }

    /// Why kernel `kernel`, on node `node`, cannot decide anything, if it
    /// cannot: its node is down, so a call sent to it finds no process.
    pub fn kernel_unreachable(&self, kernel: &str, node: &str) -> Option<Refusal> {
        self.down(node).map(|down| {
            NodeReason::KernelDown {
                kernel: kernel.to_string(),
                down,
            }
            .refusal()
        })
    }

    /// The deny of a call by `agent`, whose node `agent_node` is down:
    /// nobody can make the call, so the controller answers it.
    pub fn call_blocked(&self, agent: &str, agent_node: &str) -> Option<Refusal> {
        self.down(agent_node).map(|down| {
            NodeReason::AgentDown {
                agent: agent.to_string(),
                down,
            }
            .refusal()
        })
    }

    /// How late a call from `agent_node` reaches a kernel on `kernel_node`.
    pub fn delay(&self, agent_node: &str, kernel_node: &str) -> Option<Delay> {
        if agent_node == kernel_node {
            return None;
        }
        let link = FaultLink::new(agent_node, kernel_node);
        self.delayed.get(&link).map(|(ms, step)| Delay {
            ms: *ms,
            link: link.describe(),
            step: step.clone(),
        })
    }

    /// Whether the link between two distinct nodes is cut now: what a
    /// step hands from one to the other cannot cross it.
    pub fn link_cut(&self, from_node: &str, to_node: &str) -> bool {
        from_node != to_node
            && self
                .cuts
                .get(&FaultLink::new(from_node, to_node))
                .is_some_and(|(_, _, cut)| *cut)
    }

    /// When what step `step` hands from `from_node` to `to_node` at
    /// `now_ms` arrives, when the link between them is delayed: it is in
    /// flight until then, as a call over the link is.
    pub fn arrival(
        &self,
        from_node: &str,
        to_node: &str,
        step: &str,
        now_ms: u64,
    ) -> Option<Arrival> {
        self.delay(from_node, to_node).map(|delay| Arrival {
            sent_step: step.to_string(),
            arrival_ms: now_ms.saturating_add(delay.ms),
            link: delay.link,
            delay_ms: delay.ms,
            delay_step: delay.step,
        })
    }

    /// The refusal of a delegation whose delegator's node `agent_node` is
    /// down.
    pub fn delegate_blocked(&self, agent_node: &str) -> Option<Refusal> {
        self.down(agent_node)
            .map(|down| NodeReason::DelegatorDown(down).refusal())
    }

    /// The refusal of a revocation sent through `agent_node` while it is
    /// down.
    pub fn revoke_blocked(&self, agent_node: &str) -> Option<Refusal> {
        self.down(agent_node)
            .map(|down| NodeReason::RevokerDown(down).refusal())
    }
}

/// What a call met when it was sent ([`FaultState::send`]): a call in
/// flight is lost to its kernel's node being down then, or to a crash of
/// either node before it arrives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sent {
    /// The deny of a call sent while its kernel's node was down.
    unreachable: Option<Refusal>,
    /// How many times the kernel's node and the agent's node had crashed.
    crashes: (u64, u64),
    /// How many times the link between the two nodes had been cut.
    cuts: u64,
}

impl Sent {
    /// The deny of a call sent while its kernel's node was down or the
    /// link to it cut: the agent's node found nothing to take it.
    pub fn unreachable(&self) -> Option<&Refusal> {
        self.unreachable.as_ref()
    }
}

/// The delayed link a call crosses: its delay and the step that began it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delay {
    /// How late the call reaches its kernel, in virtual ms.
    pub ms: u64,
    /// The link, as records name it.
    link: String,
    /// The fault step that delayed it.
    step: String,
}

impl Delay {
    /// A record's detail for a call that crossed the link and was decided
    /// by its kernel.
    pub fn arrived(&self) -> String {
        format!(
            "arrived {} ms late over link {} (delayed at step {})",
            self.ms, self.link, self.step
        )
    }

    /// A record's detail for a call sent over the link that no kernel
    /// decided: it never arrived (its reason says why).
    pub fn not_arrived(&self) -> String {
        format!(
            "sent over link {} (delayed {} ms at step {}); it never reached its kernel",
            self.link, self.ms, self.step
        )
    }
}

/// How a call in flight lost a node.
enum Lost {
    /// The node is down.
    Down(NodeDown),
    /// The node crashed since the call was sent (it may be up again).
    Crashed(NodeDown),
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

    // Proves the controller answers only for a node that is down, leaves cut links and stalls to the nodes, and ends a stall at its instant.
    #[test]
    fn the_controller_answers_only_for_a_node_that_is_down() {
        let mut state = FaultState::default();
        assert_eq!(state.call_blocked("bob", "node-b"), None);
        begun(
            &mut state,
            FaultAction::Stall { duration_ms: 10 },
            "stall",
            100,
        );
        assert_eq!(state.call_blocked("bob", "node-b"), None);
        assert_eq!(state.revoke_blocked("node-b"), None);
        assert!(state.stall_over(110) && !state.stall_over(109));
        state.end_stall();
        let cut = FaultLink::new("node-a", "node-b");
        begun(&mut state, FaultAction::Partition { link: cut }, "cut", 0);
        let control = FaultLink::new("node-b", chio_arena::scenario::TRUST_CONTROL);
        begun(
            &mut state,
            FaultAction::Partition { link: control },
            "off",
            0,
        );
        assert_eq!(state.call_blocked("bob", "node-b"), None);
        assert_eq!(state.delegate_blocked("node-b"), None);
        let node = "node-b".to_string();
        begun(
            &mut state,
            FaultAction::Crash { node: node.clone() },
            "crash",
            0,
        );
        let down = state.call_blocked("bob", "node-b").expect("down");
        assert_eq!(
            down.message,
            "agent bob cannot call: node node-b is down (crashed at step crash)"
        );
        assert_eq!(down.code.as_str(), "agent-node-down");
        assert!(state.delegate_blocked("node-b").is_some());
        assert!(state.revoke_blocked("node-b").is_some());
        assert_eq!(state.call_blocked("alice", "node-a"), None);
        let restart = FaultAction::Restart {
            node,
            keep_state: false,
        };
        begun(&mut state, restart, "fresh", 0);
        assert_eq!(state.call_blocked("bob", "node-b"), None);
        assert_eq!(
            state.lost.get("bob-files").map(String::as_str),
            Some("fresh")
        );
    }

    // Proves a delayed link moves only the calls crossing it, and a heal ends the delay.
    #[test]
    fn a_delay_reaches_only_calls_crossing_its_link() {
        let mut state = FaultState::default();
        let link = FaultLink::new("node-a", "node-b");
        begun(
            &mut state,
            FaultAction::Delay {
                link: link.clone(),
                delay_ms: 2000,
            },
            "slow",
            0,
        );
        let delay = state.delay("node-b", "node-a").expect("delayed");
        assert_eq!(delay.ms, 2000);
        assert_eq!(
            delay.arrived(),
            "arrived 2000 ms late over link node-a <-> node-b (delayed at step slow)"
        );
        assert_eq!(
            delay.not_arrived(),
            "sent over link node-a <-> node-b (delayed 2000 ms at step slow); it never reached its kernel"
        );
        assert_eq!(state.delay("node-c", "node-a"), None);
        assert_eq!(state.delay("node-a", "node-a"), None);
        begun(&mut state, FaultAction::Heal { link }, "heal", 0);
        assert_eq!(state.delay("node-b", "node-a"), None);
    }
}
