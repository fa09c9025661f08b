//! What crosses a link between two nodes besides a call: a delegated
//! capability or a handed-over value meets the link as a call does. Over a
//! cut link a hand-over is refused (a delegation's child is refused by
//! the delegator's node, `NodeReason::DelegationUndelivered`); over a
//! delayed link either is in flight until its arrival ([`Arrival`]), and a
//! step that uses it before then is refused or denied naming the arrival.

use super::messages::{argument_name, pointer_name};
use super::NodeReason;

/// Something in flight over a delayed link between two nodes: what sent
/// it, the link and its delay, and the instant it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// The step that sent it (a delegation, a hand-over).
    pub sent_step: String,
    /// The link, as records name it (`node-a <-> node-b`).
    pub link: String,
    /// The link's delay, virtual ms.
    pub delay_ms: u64,
    /// The fault step that delayed the link.
    pub delay_step: String,
    /// The instant it arrives, Unix ms: usable from then on.
    pub arrival_ms: u64,
}

impl Arrival {
    /// Whether it has not arrived yet at `now_ms`.
    pub fn pending_at(&self, now_ms: u64) -> bool {
        now_ms < self.arrival_ms
    }
}

impl std::fmt::Display for Arrival {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "in flight over link {} until {} ms (sent at step {}, delayed {} ms at step {})",
            self.link, self.arrival_ms, self.sent_step, self.delay_ms, self.delay_step
        )
    }
}

impl NodeReason {
    /// The answers for what crosses a link besides a call.
    pub(super) fn fmt_in_flight(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeReason::DelegationInFlight {
                agent,
                capability,
                arrival,
            } => write!(
                f,
                "delegation refused: agent {agent} does not hold capability {capability} yet: it is {arrival}"
            ),
            NodeReason::CapabilityInFlight {
                agent,
                capability,
                arrival,
            } => write!(
                f,
                "agent {agent} does not hold capability {capability} yet: it is {arrival}"
            ),
            NodeReason::HandOverUndelivered {
                to,
                to_node,
                from_node,
            } => write!(
                f,
                "hand-over refused: the value cannot be handed to agent {to} on node {to_node} from node {from_node}: {}",
                super::Outage::Unavailable.link_cause()
            ),
            NodeReason::ReferenceInFlight {
                argument,
                step,
                pointer,
                arrival,
            } => write!(
                f,
                "call refused: {} takes its value from step {step} ({}), but the hand-over is {arrival}",
                argument_name(argument),
                pointer_name(pointer)
            ),
            _ => unreachable!("every other reason is printed by Display"),
        }
    }
}
