//! One node's handling of a call, a delegation, a message and a
//! revocation, written once over a [`NodePort`].
//!
//! Every decision a node makes about a step it is sent lives here: the
//! order of its checks, which refusal it answers when (`crate::outage`),
//! what it records in the authority state, and when a delegated child is
//! handed over (only once its labels are recorded, so no call through it can
//! precede its record). What differs between the places a node runs is only
//! how it reaches things, and that is the port's: an agent's holdings and
//! key (to sign a request or a child), a kernel (to decide a call), another
//! agent (to hand it a child), and the authority state (trust-control,
//! through which labels move and revocations are written). A port answers a
//! peer it cannot reach with [`NodeError::LinkDown`] and trust-control it
//! cannot reach with [`NodeError::ControlDown`], whatever the fault (real or
//! simulated by `crate::simulated_faults::FaultSwitch`); the handlers here
//! turn those into the node's fail-closed answers.
//!
//! Two ports exist: [`crate::node::Node`], asynchronous, over the node's
//! actors and links, and the direct dispatcher's
//! (`crate::executor::direct`), synchronous, over one process's kernels,
//! holdings and shared trust state. A synchronous port's futures are ready
//! at once, so a handler over it completes at its first poll
//! (`crate::executor::complete_now`).

use std::collections::BTreeMap;

use chio_kernel::handover::ValueSchema;
use chio_kernel::keys::public_key_hex;
use chio_kernel::label::LabelCarry;
use chio_kernel::provenance::AgentRole;
use chio_kernel::reason::DenyReason;
use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;

use crate::actors::agent::{CallIntent, ChildIntent};
use crate::actors::CallOutcome;
use crate::error::NodeError;
use crate::link::LinkFuture;
use crate::node::{
    AuthorityControl, CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand,
    MessageOutcome, StepRefusal,
};
use crate::outage::{self, Refusal};
use crate::world::World;

/// What every node knows of the run from its world: each agent's node,
/// public key and role, and the kernel serving each tool server.
#[derive(Debug, Clone, Default)]
pub struct Roster {
    agents: BTreeMap<String, Rostered>,
    routes: BTreeMap<String, String>,
}

/// One agent as the roster knows it.
#[derive(Debug, Clone)]
struct Rostered {
    node: String,
    key: String,
    role: AgentRole,
}

impl Roster {
    /// The roster of `world`.
    pub fn of(world: &World) -> Self {
        Self {
            agents: world
                .agents
                .values()
                .map(|a| {
                    let entry = Rostered {
                        node: a.node.clone(),
                        key: public_key_hex(&a.key),
                        role: a.role,
                    };
                    (a.id.clone(), entry)
                })
                .collect(),
            routes: world
                .servers
                .values()
                .map(|s| (s.id.clone(), s.kernel.clone()))
                .collect(),
        }
    }

    /// `Ok` when `agent` is hosted on `node`, the acting agent of a step
    /// sent there.
    fn hosted(&self, agent: &str, node: &str) -> Result<(), NodeError> {
        match self.agents.get(agent) {
            Some(entry) if entry.node == node => Ok(()),
            _ => Err(NodeError::Unroutable(format!(
                "agent {agent} is not on this node"
            ))),
        }
    }

    /// The public key of `agent`, on any node.
    fn key(&self, agent: &str) -> Result<&str, NodeError> {
        self.agents
            .get(agent)
            .map(|entry| entry.key.as_str())
            .ok_or_else(|| NodeError::Unroutable(format!("agent {agent}")))
    }

    /// The role of `agent` (ordinary when it is not known).
    fn role(&self, agent: &str) -> AgentRole {
        self.agents
            .get(agent)
            .map(|entry| entry.role)
            .unwrap_or_default()
    }

    /// The kernel serving each tool server, by server id.
    pub(crate) fn routes(&self) -> &BTreeMap<String, String> {
        &self.routes
    }

    /// The kernel serving `server`.
    fn serving_kernel(&self, server: &str) -> Result<&str, NodeError> {
        self.routes
            .get(server)
            .map(String::as_str)
            .ok_or_else(|| NodeError::Unroutable(format!("server {server}")))
    }
}

/// How one node reaches what a step needs (see the module doc). Every
/// method reaches; none decides.
pub trait NodePort: Send + Sync {
    /// The logical node id.
    fn node_id(&self) -> &str;

    /// What the node knows of the run.
    fn roster(&self) -> &Roster;

    /// Has `agent`, hosted here, sign a request for `intent` from what it
    /// holds ([`NodeError::NotHeld`] when it holds no such capability and
    /// presents no captured token).
    fn sign_call(&self, agent: &str, intent: CallIntent) -> LinkFuture<'_, ToolCallRequest>;

    /// Has `agent`, hosted here, sign the child `intent` asks for of a
    /// capability it holds ([`NodeError::NotHeld`] when it does not).
    fn sign_child(&self, agent: &str, intent: ChildIntent) -> LinkFuture<'_, CapabilityToken>;

    /// Has `kernel`, here or on another node, decide `request` at `now_ms`
    /// ([`NodeError::LinkDown`] when its node cannot be reached).
    fn evaluate(
        &self,
        kernel: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> LinkFuture<'_, CallOutcome>;

    /// Gives `token` to `agent`, here or on another node
    /// ([`NodeError::LinkDown`] when its node cannot be reached).
    fn hand_over(&self, agent: &str, token: CapabilityToken) -> LinkFuture<'_, ()>;

    /// The authority state as this node reaches it
    /// ([`NodeError::ControlDown`] when it cannot).
    fn authority(&self) -> &dyn AuthorityControl;
}

/// Handles a call: the agent signs, the serving kernel decides. The node
/// denies the call itself when the agent does not hold what it presents or
/// the serving kernel cannot be reached; any other failure is an error.
pub async fn call<P: NodePort + ?Sized>(
    port: &P,
    command: CallCommand,
) -> Result<CallAnswer, NodeError> {
    port.roster().hosted(&command.agent, port.node_id())?;
    let agent = command.agent.clone();
    let now_ms = command.now_ms;
    let request = match port.sign_call(&agent, command.into()).await {
        Ok(request) => request,
        Err(e) => return outage::call_refusal(e).map(CallAnswer::Refused),
    };
    let kernel = port.roster().serving_kernel(&request.server)?.to_string();
    match port.evaluate(&kernel, request, now_ms).await {
        Ok(outcome) => Ok(CallAnswer::Decided(Box::new(outcome))),
        Err(NodeError::LinkDown { node, outage }) => Ok(CallAnswer::Refused(
            outage::kernel_unreachable(&kernel, &node, port.node_id(), outage),
        )),
        Err(e) => Err(e),
    }
}

/// Handles a delegation: the delegator signs the child, what the delegator
/// holds now is recorded for the child, and only then is the child handed
/// to the delegatee. The node refuses the delegation itself
/// (`Ok(Err(reason))`) when the delegator does not hold the parent,
/// trust-control cannot be reached to record the child's labels, or the
/// delegatee's node cannot be reached.
pub async fn delegate<P: NodePort + ?Sized>(
    port: &P,
    command: DelegateCommand,
) -> Result<Result<DelegateOutcome, Refusal>, NodeError> {
    let roster = port.roster();
    roster.hosted(&command.agent, port.node_id())?;
    let intent = ChildIntent {
        capability_id: command.capability_id,
        delegatee: roster.key(&command.to)?.to_string(),
        attenuation: command.attenuation,
        child_id: command.delegation_id,
        now_ms: command.now_ms,
    };
    let child = match port.sign_child(&command.agent, intent).await {
        Ok(child) => child,
        Err(e) => return outage::delegation_refusal(e).map(Err),
    };
    let carry = delegation_carry(&command.agent, &child)?;
    let carried = match port.authority().carry_labels(carry.clone()).await {
        Ok(carried) => carried,
        Err(NodeError::ControlDown { outage, .. }) => {
            return Ok(Err(outage::delegation_unrecorded(outage)))
        }
        Err(e) => return Err(e),
    };
    match port.hand_over(&command.to, child.clone()).await {
        Ok(()) => {}
        Err(NodeError::LinkDown { node, outage }) => {
            let reason = outage::delegation_undelivered(&command.to, &node, port.node_id(), outage);
            return Ok(Err(reason));
        }
        Err(e) => return Err(e),
    }
    Ok(Ok(DelegateOutcome {
        token: child,
        labels: carry.reported(&carried),
    }))
}

/// Handles a message from an agent of this node: the labels the sender's
/// principal holds now, plus the forwarded output's label, are joined into
/// the receiver's principal and session (an agent's session is its id); a
/// hand-over's value is checked against its schema first
/// ([`message_carry`]). What a message changes is what every kernel knows
/// about the receiver. Trust-control that cannot be reached is an error.
pub async fn message<P: NodePort + ?Sized>(
    port: &P,
    command: MessageCommand,
) -> Result<MessageOutcome, NodeError> {
    let roster = port.roster();
    roster.hosted(&command.agent, port.node_id())?;
    roster.key(&command.to)?;
    let (sender, receiver) = (roster.role(&command.agent), roster.role(&command.to));
    let carry = match message_carry(&command, sender, receiver) {
        Ok(carry) => carry,
        Err(refusal) => {
            return Ok(MessageOutcome {
                labels: Vec::new(),
                refusal: Some(refusal),
            })
        }
    };
    let carried = match port.authority().carry_labels(carry.clone()).await {
        Ok(carried) => carried,
        // A source whose hand-over record holds nothing: its labels are
        // unknown, so the message is refused and carries nothing.
        Err(NodeError::MessageUnrecorded(unrecorded)) => {
            let reason = DenyReason::MessageUnrecorded {
                pointer: unrecorded.pointer,
                record: unrecorded.record,
            };
            return Ok(MessageOutcome {
                labels: Vec::new(),
                refusal: Some(StepRefusal {
                    code: reason.code().as_str().to_string(),
                    message: reason.to_string(),
                }),
            });
        }
        Err(e) => return Err(e),
    };
    Ok(MessageOutcome {
        labels: carry.reported(&carried),
        refusal: None,
    })
}

/// Handles a revocation of a capability or delegation id through the
/// authority state; answers the node's refusal when trust-control cannot be
/// reached to record it.
pub async fn revoke<P: NodePort + ?Sized>(
    port: &P,
    target: &str,
    at_ms: u64,
) -> Result<Option<Refusal>, NodeError> {
    match port.authority().revoke(target, at_ms).await {
        Ok(()) => Ok(None),
        Err(NodeError::ControlDown { outage, .. }) => {
            Ok(Some(outage::revocation_unrecorded(outage)))
        }
        Err(e) => Err(e),
    }
}

/// The label move a message makes, or why a hand-over is refused.
///
/// A message of content or of a forwarded output carries the sender's
/// labels, and what the forwarded output carries (its sources), to the
/// receiver ([`LabelCarry::message`]). A hand-over's value is
/// checked against its schema by the kernel's rule
/// ([`chio_kernel::handover::ValueSchema`]) first: a value it refuses is
/// refused with `hand-over-refused` and carries nothing. A value it admits
/// is recorded with its labels, every source's included (the records of
/// earlier hand-overs it was built from, read as a call reads them; one
/// that holds nothing refuses the message, `message-unrecorded`)
/// ([`LabelCarry::handover`]); the receiver's
/// principal and session stay trusted only when a quarantined reader hands
/// over to a planner, and are tainted as by any message otherwise, with
/// every label the sender's principal holds, whether the value was written
/// or taken by reference.
pub(crate) fn message_carry(
    command: &MessageCommand,
    sender: AgentRole,
    receiver: AgentRole,
) -> Result<LabelCarry, StepRefusal> {
    let Some(handover) = &command.handover else {
        return Ok(
            LabelCarry::message(&command.agent, &command.to, &command.to, None)
                .with_sources(&command.sources),
        );
    };
    let refuse = |reason: DenyReason| StepRefusal {
        code: reason.code().as_str().to_string(),
        message: reason.to_string(),
    };
    let schema = ValueSchema::parse(&handover.schema).map_err(|refused| {
        refuse(DenyReason::HandOverRefused {
            pointer: refused.at,
            keyword: "schema".to_string(),
        })
    })?;
    schema.check(&handover.value).map_err(|refused| {
        refuse(DenyReason::HandOverRefused {
            keyword: refused.refused_by(),
            pointer: refused.pointer,
        })
    })?;
    let endorsed = sender == AgentRole::Quarantined && receiver == AgentRole::Planner;
    Ok(LabelCarry::handover(
        &command.agent,
        &command.to,
        &handover.step,
        &[],
        endorsed,
        !handover.by_reference,
    )
    .with_sources(&command.sources))
}

/// The label move a delegation makes: what the delegator holds, recorded
/// for the child's link (`chio_kernel::label::LabelCarry`).
fn delegation_carry(delegator: &str, child: &CapabilityToken) -> Result<LabelCarry, NodeError> {
    let link = child.delegation_chain.last().ok_or(NodeError::Internal(
        "a delegated capability carries no link",
    ))?;
    LabelCarry::delegation(delegator, link).map_err(NodeError::LabelRecord)
}

#[cfg(test)]
mod tests;
