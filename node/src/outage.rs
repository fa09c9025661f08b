//! Outages: a peer node or trust-control that cannot be reached, and the
//! fail-closed answers a node gives for the steps one reaches.
//!
//! A transport failure is one of two kinds ([`Outage`]): the other end is
//! unavailable (the connection is refused, reset or closed) or it did not
//! answer within the call's deadline. Every answer built here names the
//! kind and never the transport's own text (no OS error, no address, no
//! port, no deadline in milliseconds), so a simulated fault and a real one
//! give the same bytes; the transport's detail goes to the log where the
//! failure is met. What a kernel says when its store calls fail is the
//! kernel's own deny (`<store> store unavailable: <cause>`, with
//! [`Outage::trust_cause`] as the cause); what is written here is what the
//! acting agent's node says when it cannot carry a step: a call whose kernel
//! is unreachable or whose capability the agent does not hold, a delegation
//! whose child cannot be recorded or handed over, a revocation that cannot
//! be recorded.

use chio_trust::TrustError;

use crate::error::NodeError;

/// Why the other end of a call did not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outage {
    /// The connection was refused, reset or closed.
    Unavailable,
    /// Nothing came back within the call's deadline.
    DeadlineExceeded,
}

impl Outage {
    /// The kind of a trust-control failure, when it is a transport's
    /// (anything else is the service's own answer, not an outage).
    pub fn of_trust(error: &TrustError) -> Option<Outage> {
        match error {
            TrustError::Unavailable { .. } => Some(Outage::Unavailable),
            TrustError::DeadlineExceeded { .. } => Some(Outage::DeadlineExceeded),
            _ => None,
        }
    }

    /// The cause a store error names when trust-control cannot be reached.
    pub fn trust_cause(self) -> &'static str {
        match self {
            Outage::Unavailable => "trust-control unavailable",
            Outage::DeadlineExceeded => "trust-control deadline exceeded",
        }
    }

    /// What happened on a link between two nodes.
    pub fn link_cause(self) -> &'static str {
        match self {
            Outage::Unavailable => "the link is unavailable",
            Outage::DeadlineExceeded => "the link missed its deadline",
        }
    }
}

/// The node's deny of a call whose serving kernel (on `kernel_node`)
/// cannot be reached from `from_node`.
pub fn kernel_unreachable(
    kernel: &str,
    kernel_node: &str,
    from_node: &str,
    outage: Outage,
) -> String {
    format!(
        "kernel {kernel} on node {kernel_node} is unreachable from node {from_node}: {}",
        outage.link_cause()
    )
}

/// The node's deny of a call presenting a capability its agent does not
/// hold (and does not present as captured).
pub fn not_held(agent: &str, capability: &str) -> String {
    format!("agent {agent} does not hold capability {capability}")
}

/// The node's refusal of a delegation by an agent that does not hold the
/// parent.
pub fn delegation_not_held(agent: &str, capability: &str) -> String {
    format!("delegation refused: {}", not_held(agent, capability))
}

/// What a node answers when signing a call fails with `error`: the deny
/// of a capability the agent does not hold, or `error` itself, which is no
/// answer of the node's.
pub fn call_refusal(error: NodeError) -> Result<String, NodeError> {
    match error {
        NodeError::NotHeld { agent, capability } => Ok(not_held(&agent, &capability)),
        other => Err(other),
    }
}

/// What a node answers when signing a delegation fails with `error`: the
/// refusal of a parent the delegator does not hold, or `error` itself.
pub fn delegation_refusal(error: NodeError) -> Result<String, NodeError> {
    match error {
        NodeError::NotHeld { agent, capability } => Ok(delegation_not_held(&agent, &capability)),
        other => Err(other),
    }
}

/// The node's refusal of a delegation whose child's labels cannot be
/// recorded in trust-control.
pub fn delegation_unrecorded(outage: Outage) -> String {
    format!(
        "delegation refused: the child's labels cannot be recorded: {}",
        outage.trust_cause()
    )
}

/// The node's refusal of a delegation whose child cannot be handed to
/// agent `to` on `to_node` from `from_node`.
pub fn delegation_undelivered(to: &str, to_node: &str, from_node: &str, outage: Outage) -> String {
    format!(
        "delegation refused: the child cannot be handed to agent {to} on node {to_node} from node {from_node}: {}",
        outage.link_cause()
    )
}

/// The node's refusal of a revocation that cannot be recorded in
/// trust-control.
pub fn revocation_unrecorded(outage: Outage) -> String {
    format!(
        "revocation refused: the revocation cannot be recorded: {}",
        outage.trust_cause()
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    // Proves only the two transport failures are outages, and no answer carries the transport's text.
    #[test]
    fn only_transport_failures_are_outages_and_their_text_is_fixed() {
        let refused = TrustError::Unavailable {
            detail: "connecting to http://127.0.0.1:4242: Connection refused (os error 111)"
                .to_string(),
        };
        let late = TrustError::DeadlineExceeded {
            operation: "batch",
            deadline: Duration::from_millis(200),
        };
        assert_eq!(Outage::of_trust(&refused), Some(Outage::Unavailable));
        assert_eq!(Outage::of_trust(&late), Some(Outage::DeadlineExceeded));
        assert_eq!(Outage::of_trust(&TrustError::StoreClosed), None);
        let answers = [
            kernel_unreachable("k", "node-a", "node-b", Outage::Unavailable),
            delegation_unrecorded(Outage::DeadlineExceeded),
            delegation_undelivered("bob", "node-b", "node-a", Outage::Unavailable),
            revocation_unrecorded(Outage::Unavailable),
        ];
        for answer in answers {
            for leak in ["127.0.0.1", "os error", " ms", "4242"] {
                assert!(!answer.contains(leak), "{answer} leaks {leak}");
            }
        }
    }
}
