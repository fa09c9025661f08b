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
//!
//! Each such answer is a [`NodeReason`] with a stable [`NodeCode`] (the
//! controller's answers for a node that is down are among them); it
//! travels as a [`Refusal`], its code beside its message, over the wire and
//! into the step record, as a kernel's code travels in its decision trace.

use chio_trust::TrustError;

pub use in_flight::Arrival;

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

chio_kernel::code_enum! {
    /// The stable code of a node's (or the controller's) answer, one per
    /// reason template; never one of the kernel's
    /// ([`chio_kernel::reason::ReasonCode`]).
    pub enum NodeCode;
    /// The serving kernel's node cannot be reached from the agent's.
    KernelUnreachable => "kernel-unreachable",
    /// The agent does not hold the capability it presents.
    CapabilityNotHeld => "capability-not-held",
    /// The acting agent's node is down, so nobody can make the call.
    AgentNodeDown => "agent-node-down",
    /// The kernel's node is down, so it decides nothing.
    KernelNodeDown => "kernel-node-down",
    /// The kernel's node crashed while the call was on its way to it.
    KernelCrashedInFlight => "kernel-crashed-in-flight",
    /// The agent's node crashed while its call was on its way.
    AgentCrashedInFlight => "agent-crashed-in-flight",
    /// The link to the kernel's node was cut while the call was on its
    /// way, and carried again before it would have arrived.
    LinkCutInFlight => "link-cut-in-flight",
    /// The run stopped while the call was on its way, before it arrived.
    RunStoppedBeforeArrival => "run-stopped-before-arrival",
    /// The delegator does not hold the parent.
    DelegationNotHeld => "delegation-not-held",
    /// The delegator's node is down.
    DelegatorNodeDown => "delegator-node-down",
    /// The child's labels cannot be recorded in trust-control.
    DelegationUnrecorded => "delegation-unrecorded",
    /// The child cannot be handed to the delegatee's node.
    DelegationUndelivered => "delegation-undelivered",
    /// The delegator's capability is still in flight to it over a delayed
    /// link.
    DelegationInFlight => "delegation-in-flight",
    /// The capability presented is still in flight to its holder over a
    /// delayed link.
    CapabilityInFlight => "capability-in-flight",
    /// A hand-over's value cannot be handed to the receiver's node.
    HandOverUndelivered => "hand-over-undelivered",
    /// A call argument takes a handed-over value still in flight to the
    /// caller over a delayed link.
    ReferenceInFlight => "reference-in-flight",
    /// The revoker may not revoke the target.
    RevokerNotAuthorized => "revoker-not-authorized",
    /// The revoked capability does not exist yet.
    RevocationTargetUnknown => "revocation-target-unknown",
    /// The revoking agent is not placed on a node.
    RevokerNotPlaced => "revoker-not-placed",
    /// The revoker's node is down.
    RevokerNodeDown => "revoker-node-down",
    /// The revocation cannot be recorded in trust-control.
    RevocationUnrecorded => "revocation-unrecorded",
    /// A call argument takes its value from a step that released none.
    ReferenceUnresolved => "reference-unresolved",
    /// A call argument is a reference object the value grammar refuses.
    ReferenceMalformed => "reference-malformed",
    /// A call argument takes a sealed file's text that was not read.
    SealedUnresolved => "sealed-unresolved",
}

/// A node that a fault step crashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDown {
    /// The node.
    pub node: String,
    /// The step that crashed it.
    pub step: String,
}

impl std::fmt::Display for NodeDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "node {} is down (crashed at step {})",
            self.node, self.step
        )
    }
}

impl NodeDown {
    /// The crash as a call in flight met it.
    fn in_flight(&self) -> String {
        format!(
            "node {} crashed at step {} while the call was in flight",
            self.node, self.step
        )
    }
}

/// What a node (or the controller, for an agent whose node is down)
/// answers for a step it carries no further; see the module doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeReason {
    /// A call whose serving kernel (on `kernel_node`) cannot be reached
    /// from `from_node`.
    KernelUnreachable {
        /// The kernel.
        kernel: String,
        /// Its node.
        kernel_node: String,
        /// The agent's node.
        from_node: String,
        /// What happened on the link.
        outage: Outage,
    },
    /// A call presenting a capability its agent does not hold.
    NotHeld {
        /// The agent.
        agent: String,
        /// The capability.
        capability: String,
    },
    /// A call whose agent's node is down.
    AgentDown {
        /// The agent.
        agent: String,
        /// Its node.
        down: NodeDown,
    },
    /// An action sent to a kernel whose node is down.
    KernelDown {
        /// The kernel.
        kernel: String,
        /// Its node.
        down: NodeDown,
    },
    /// A call whose kernel's node crashed while the call was in flight.
    KernelCrashedInFlight {
        /// The kernel.
        kernel: String,
        /// Its node and the crash.
        down: NodeDown,
    },
    /// A call whose agent's node crashed while the call was in flight.
    AgentCrashedInFlight {
        /// The agent.
        agent: String,
        /// Its node and the crash.
        down: NodeDown,
    },
    /// A call whose link to its kernel's node was cut at `step` while the
    /// call was in flight (the cut dropped it, whatever carried after).
    LinkCutInFlight {
        /// The kernel.
        kernel: String,
        /// Its node.
        kernel_node: String,
        /// The agent's node.
        from_node: String,
        /// The partition step.
        step: String,
    },
    /// A call still in flight when the run stopped at `step`, before the
    /// call's arrival: no kernel decides it.
    RunStopped {
        /// The step that stopped the run.
        step: String,
    },
    /// A delegation of a parent the delegator does not hold.
    DelegationNotHeld {
        /// The delegator.
        agent: String,
        /// The parent.
        capability: String,
    },
    /// A delegation whose delegator's node is down.
    DelegatorDown(NodeDown),
    /// A delegation whose child's labels cannot be recorded.
    DelegationUnrecorded(Outage),
    /// A delegation whose child cannot be handed over.
    DelegationUndelivered {
        /// The delegatee.
        to: String,
        /// Its node.
        to_node: String,
        /// The delegator's node.
        from_node: String,
        /// What happened on the link.
        outage: Outage,
    },
    /// A delegation of a capability still in flight to the delegator.
    DelegationInFlight {
        /// The delegator.
        agent: String,
        /// The parent.
        capability: String,
        /// When and how it arrives.
        arrival: Arrival,
    },
    /// A call presenting a capability still in flight to its agent.
    CapabilityInFlight {
        /// The agent.
        agent: String,
        /// The capability.
        capability: String,
        /// When and how it arrives.
        arrival: Arrival,
    },
    /// A hand-over whose value cannot reach the receiver's node.
    HandOverUndelivered {
        /// The receiver.
        to: String,
        /// Its node.
        to_node: String,
        /// The sender's node.
        from_node: String,
    },
    /// A call whose argument takes a handed-over value still in flight to
    /// the caller, so it is never sent.
    ReferenceInFlight {
        /// The JSON pointer of the argument (empty: the whole arguments).
        argument: String,
        /// The hand-over step named.
        step: String,
        /// The pointer into its value.
        pointer: String,
        /// When and how it arrives.
        arrival: Arrival,
    },
    /// A revocation by a key that may not revoke the target.
    RevokerNotAuthorized {
        /// The target.
        capability: String,
    },
    /// A revocation of a capability that does not exist yet.
    RevocationTargetUnknown {
        /// The target.
        capability: String,
    },
    /// A revocation by an agent placed on no node.
    RevokerNotPlaced {
        /// The agent.
        agent: String,
    },
    /// A revocation sent through a node that is down.
    RevokerDown(NodeDown),
    /// A revocation that cannot be recorded.
    RevocationUnrecorded(Outage),
    /// A call whose argument takes its value from a step that released
    /// none, so it is never sent.
    ReferenceUnresolved {
        /// The JSON pointer of the argument (empty: the whole arguments).
        argument: String,
        /// The step named.
        step: String,
        /// The pointer into its output.
        pointer: String,
        /// Why there is no value.
        why: chio_arena::scenario::value::Unresolved,
    },
    /// A hand-over whose value takes a value from a step that released
    /// none, so nothing is handed over.
    HandOverUnresolved {
        /// The JSON pointer of the reference within the value.
        at: String,
        /// The step named.
        step: String,
        /// The pointer into its output.
        pointer: String,
        /// Why there is no value.
        why: chio_arena::scenario::value::Unresolved,
    },
    /// A call whose argument is a reference object the grammar refuses
    /// (a loaded scenario holds none; a hand-built call may).
    ReferenceMalformed {
        /// The JSON pointer of the object.
        argument: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A call whose argument takes a sealed file's text, when the file was
    /// not read for the run (a run resolves values where it read the
    /// scenario from its folder).
    SealedUnresolved {
        /// The JSON pointer of the argument.
        argument: String,
        /// The file, as the scenario writes it.
        path: String,
        /// Why there is no value.
        why: chio_arena::scenario::value::Unresolved,
    },
}

impl NodeReason {
    /// The reason's stable code.
    pub fn code(&self) -> NodeCode {
        match self {
            NodeReason::KernelUnreachable { .. } => NodeCode::KernelUnreachable,
            NodeReason::NotHeld { .. } => NodeCode::CapabilityNotHeld,
            NodeReason::AgentDown { .. } => NodeCode::AgentNodeDown,
            NodeReason::KernelDown { .. } => NodeCode::KernelNodeDown,
            NodeReason::KernelCrashedInFlight { .. } => NodeCode::KernelCrashedInFlight,
            NodeReason::LinkCutInFlight { .. } => NodeCode::LinkCutInFlight,
            NodeReason::AgentCrashedInFlight { .. } => NodeCode::AgentCrashedInFlight,
            NodeReason::RunStopped { .. } => NodeCode::RunStoppedBeforeArrival,
            NodeReason::DelegationNotHeld { .. } => NodeCode::DelegationNotHeld,
            NodeReason::DelegatorDown(_) => NodeCode::DelegatorNodeDown,
            NodeReason::DelegationUnrecorded(_) => NodeCode::DelegationUnrecorded,
            NodeReason::DelegationUndelivered { .. } => NodeCode::DelegationUndelivered,
            NodeReason::DelegationInFlight { .. } => NodeCode::DelegationInFlight,
            NodeReason::CapabilityInFlight { .. } => NodeCode::CapabilityInFlight,
            NodeReason::HandOverUndelivered { .. } => NodeCode::HandOverUndelivered,
            NodeReason::ReferenceInFlight { .. } => NodeCode::ReferenceInFlight,
            NodeReason::RevokerNotAuthorized { .. } => NodeCode::RevokerNotAuthorized,
            NodeReason::RevocationTargetUnknown { .. } => NodeCode::RevocationTargetUnknown,
            NodeReason::RevokerNotPlaced { .. } => NodeCode::RevokerNotPlaced,
            NodeReason::RevokerDown(_) => NodeCode::RevokerNodeDown,
            NodeReason::RevocationUnrecorded(_) => NodeCode::RevocationUnrecorded,
            NodeReason::ReferenceUnresolved { .. } | NodeReason::HandOverUnresolved { .. } => {
                NodeCode::ReferenceUnresolved
            }
            NodeReason::ReferenceMalformed { .. } => NodeCode::ReferenceMalformed,
            NodeReason::SealedUnresolved { .. } => NodeCode::SealedUnresolved,
        }
    }

    /// The answer as it travels: its code and its message.
    pub fn refusal(&self) -> Refusal {
        Refusal {
            code: self.code(),
            message: self.to_string(),
        }
    }
}

impl std::fmt::Display for NodeReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeReason::KernelUnreachable {
                kernel,
                kernel_node,
                from_node,
                outage,
            } => write!(
                f,
                "kernel {kernel} on node {kernel_node} is unreachable from node {from_node}: {}",
                outage.link_cause()
            ),
            NodeReason::NotHeld { agent, capability } => {
                write!(f, "agent {agent} does not hold capability {capability}")
            }
            NodeReason::AgentDown { agent, down } => write!(f, "agent {agent} cannot call: {down}"),
            NodeReason::KernelDown { kernel, down } => {
                write!(f, "kernel {kernel} cannot decide: {down}")
            }
            NodeReason::KernelCrashedInFlight { kernel, down } => write!(
                f,
                "kernel {kernel} cannot decide: {}",
                down.in_flight()
            ),
            NodeReason::AgentCrashedInFlight { agent, down } => {
                write!(f, "agent {agent} cannot call: {}", down.in_flight())
            }
            NodeReason::LinkCutInFlight {
                kernel,
                kernel_node,
                from_node,
                step,
            } => write!(
                f,
                "kernel {kernel} on node {kernel_node} is unreachable from node {from_node}: the link was cut at step {step} while the call was in flight"
            ),
            NodeReason::RunStopped { step } => write!(
                f,
                "call refused: the run stopped at step {step} before this call arrived"
            ),
            NodeReason::DelegationNotHeld { agent, capability } => write!(
                f,
                "delegation refused: agent {agent} does not hold capability {capability}"
            ),
            NodeReason::DelegatorDown(down) => write!(f, "delegation refused: {down}"),
            NodeReason::DelegationUnrecorded(outage) => write!(
                f,
                "delegation refused: the child's labels cannot be recorded: {}",
                outage.trust_cause()
            ),
            NodeReason::DelegationUndelivered {
                to,
                to_node,
                from_node,
                outage,
            } => write!(
                f,
                "delegation refused: the child cannot be handed to agent {to} on node {to_node} from node {from_node}: {}",
                outage.link_cause()
            ),
            _ => self.fmt_value(f),
        }
    }
}

/// A node's answer as it travels (over the wire, into a step record): the
/// code and the message of a [`NodeReason`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The reason's code.
    pub code: NodeCode,
    /// The reason's message, exactly as recorded.
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<NodeReason> for Refusal {
    fn from(reason: NodeReason) -> Self {
        reason.refusal()
    }
}

/// The node's deny of a call whose serving kernel (on `kernel_node`)
/// cannot be reached from `from_node`.
pub fn kernel_unreachable(
    kernel: &str,
    kernel_node: &str,
    from_node: &str,
    outage: Outage,
) -> Refusal {
    NodeReason::KernelUnreachable {
        kernel: kernel.to_string(),
        kernel_node: kernel_node.to_string(),
        from_node: from_node.to_string(),
        outage,
    }
    .refusal()
}

/// What a node answers when signing a call fails with `error`: the deny
/// of a capability the agent does not hold, or `error` itself, which is no
/// answer of the node's.
pub fn call_refusal(error: NodeError) -> Result<Refusal, NodeError> {
    match error {
        NodeError::NotHeld { agent, capability } => {
            Ok(NodeReason::NotHeld { agent, capability }.refusal())
        }
        other => Err(other),
    }
}

/// What a node answers when signing a delegation fails with `error`: the
/// refusal of a parent the delegator does not hold, or `error` itself.
pub fn delegation_refusal(error: NodeError) -> Result<Refusal, NodeError> {
    match error {
        NodeError::NotHeld { agent, capability } => {
            Ok(NodeReason::DelegationNotHeld { agent, capability }.refusal())
        }
        other => Err(other),
    }
}

/// The node's refusal of a delegation whose child's labels cannot be
/// recorded in trust-control.
pub fn delegation_unrecorded(outage: Outage) -> Refusal {
    NodeReason::DelegationUnrecorded(outage).refusal()
}

/// The node's refusal of a delegation whose child cannot be handed to
/// agent `to` on `to_node` from `from_node`.
pub fn delegation_undelivered(to: &str, to_node: &str, from_node: &str, outage: Outage) -> Refusal {
    NodeReason::DelegationUndelivered {
        to: to.to_string(),
        to_node: to_node.to_string(),
        from_node: from_node.to_string(),
        outage,
    }
    .refusal()
}

/// The node's refusal of a revocation that cannot be recorded in
/// trust-control.
pub fn revocation_unrecorded(outage: Outage) -> Refusal {
    NodeReason::RevocationUnrecorded(outage).refusal()
}

mod in_flight;
mod messages;
#[cfg(test)]
mod tests;
