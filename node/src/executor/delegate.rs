//! Delegate steps: a holder hands an attenuated child of a capability to
//! another agent.
//!
//! The controller's half: only the holder of a capability may hand it on,
//! decided from the run's ledger before anything is dispatched, so every
//! topology refuses alike; and a delegator whose node is down cannot act.
//! The node's half signs the child with the delegator's key, records what
//! the delegator holds for the child, and hands the child to the delegatee,
//! refusing the delegation itself when the delegator no longer holds the
//! parent, trust-control or the delegatee's node cannot be reached
//! (`crate::outage`); the executor then records the delegatee as its
//! holder. Over a delayed link the child is in flight until its arrival,
//! `delay_ms` after the delegation: the delegatee neither presents nor
//! delegates it before then (`NodeReason::CapabilityInFlight`,
//! `NodeReason::DelegationInFlight`), as a call over the link reaches its
//! kernel only then.

use chio_arena::scenario::DelegateAction;

use super::{Dispatcher, HeldCapability, StepExecutor};
use crate::error::NodeError;
use crate::node::{DelegateCommand, DelegateOutcome};
use crate::outage::{Arrival, NodeReason, Refusal};
use crate::world::World;

/// A delegation ready to dispatch, or the controller's refusal of it.
#[derive(Debug, Clone)]
pub struct PreparedDelegate {
    /// The command, or why the controller refuses the delegation.
    pub command: Result<DelegateCommand, Refusal>,
    /// When the child reaches the delegatee, when it crosses a delayed
    /// link: the delegatee holds it from then on.
    pub arrival: Option<Arrival>,
}

/// What a delegation produced.
#[derive(Debug, Clone)]
pub struct DelegatedChild {
    /// The child as the run now knows it (held by the delegatee).
    pub child: HeldCapability,
    /// The delegator's labels recorded for the child.
    pub labels: Vec<String>,
}

/// The controller's decisions for a delegate step.
pub(super) fn prepare(
    executor: &StepExecutor,
    world: &World,
    step_id: &str,
    delegate: &DelegateAction,
    agent: &str,
    now_ms: u64,
) -> PreparedDelegate {
    let held = executor
        .capability(&delegate.capability)
        .is_some_and(|entry| entry.holder == agent);
    let agent_node = world.agent_node(agent).unwrap_or_default();
    // A parent still on its way to the delegator cannot be handed on yet.
    let blocked = executor.faults.delegate_blocked(agent_node).or_else(|| {
        let arrival = executor.capability_in_flight(&delegate.capability, now_ms)?;
        Some(
            NodeReason::DelegationInFlight {
                agent: agent.to_string(),
                capability: delegate.capability.clone(),
                arrival: arrival.clone(),
            }
            .refusal(),
        )
    });
    // The child crosses the link to the delegatee's node: a cut one is the
    // delegator's node's to meet; a delayed one holds it in flight.
    let to_node = world.agent_node(&delegate.to).unwrap_or_default();
    let arrival = executor
        .faults
        .arrival(agent_node, to_node, step_id, now_ms);
    PreparedDelegate {
        arrival,
        command: if let (true, Some(refusal)) = (held, blocked) {
            Err(refusal)
        } else if held {
            Ok(DelegateCommand {
                agent: agent.to_string(),
                capability_id: delegate.capability.clone(),
                to: delegate.to.clone(),
                delegation_id: delegate.delegation.clone(),
                attenuation: delegate.attenuation(now_ms),
                now_ms,
            })
        } else {
            Err(NodeReason::DelegationNotHeld {
                agent: agent.to_string(),
                capability: delegate.capability.clone(),
            }
            .refusal())
        },
    }
}

/// What a node answered for a delegation, before the run's ledger takes it in.
#[derive(Debug, Clone)]
pub struct DelegationAnswer {
    /// The delegatee, who holds the child once folded.
    pub to: String,
    /// The child's id in the ledger.
    pub delegation_id: String,
    /// The node's answer: the child token and the labels recorded for it.
    pub outcome: DelegateOutcome,
}

/// Dispatches the delegation, answering the child or the node's refusal;
/// answers the controller's refusal without dispatching. Nothing of the
/// run's ledger is read or written.
pub(super) async fn dispatch(
    dispatcher: &dyn Dispatcher,
    node: &str,
    prepared: &PreparedDelegate,
) -> Result<Result<Box<DelegationAnswer>, Refusal>, NodeError> {
    let command = match &prepared.command {
        Ok(command) => command,
        Err(refusal) => return Ok(Err(refusal.clone())),
    };
    let outcome = match dispatcher.delegate(node, command.clone()).await? {
        Ok(outcome) => outcome,
        Err(refusal) => return Ok(Err(refusal)),
    };
    Ok(Ok(Box::new(DelegationAnswer {
        to: command.to.clone(),
        delegation_id: command.delegation_id.clone(),
        outcome,
    })))
}

/// Records the child's holder in the run's ledger; a refusal passes
/// through, and a child that cannot be fingerprinted fails the run.
pub(super) fn fold(
    executor: &mut StepExecutor,
    prepared: &PreparedDelegate,
    answer: Result<Box<DelegationAnswer>, Refusal>,
) -> Result<Result<Box<DelegatedChild>, Refusal>, NodeError> {
    let answer = match answer {
        Ok(answer) => answer,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let DelegateOutcome { token, labels } = answer.outcome;
    let child = HeldCapability::new(&answer.to, token)?;
    if let Some(arrival) = &prepared.arrival {
        executor
            .arriving_capabilities
            .insert(answer.delegation_id.clone(), arrival.clone());
    }
    executor.ledger.insert(answer.delegation_id, child.clone());
    Ok(Ok(Box::new(DelegatedChild { child, labels })))
}
