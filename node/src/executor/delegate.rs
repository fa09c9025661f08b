//! Delegate steps: a holder hands an attenuated child of a capability to
//! another agent.
//!
//! The controller's half: only the holder of a capability may hand it on,
//! decided from the run's ledger before anything is dispatched, so every
//! topology refuses alike. The node's half signs the child with the
//! delegator's key, records what the delegator holds for the child, and
//! hands the child to the delegatee; the executor then records the
//! delegatee as its holder.

use chio_arena::scenario::DelegateAction;

use super::{Dispatcher, HeldCapability, StepExecutor};
use crate::error::NodeError;
use crate::node::{DelegateCommand, DelegateOutcome};
use crate::world::World;

/// A delegation ready to dispatch, or the controller's refusal of it.
#[derive(Debug, Clone)]
pub struct PreparedDelegate {
    /// The command, or why the controller refuses the delegation.
    pub command: Result<DelegateCommand, String>,
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
    delegate: &DelegateAction,
    agent: &str,
    now_ms: u64,
) -> PreparedDelegate {
    let held = executor
        .capability(&delegate.capability)
        .is_some_and(|entry| entry.holder == agent);
    let blocked = executor.faults.delegate_blocked(
        agent,
        world.agent_node(agent).unwrap_or_default(),
        &delegate.capability,
        &delegate.to,
        world.agent_node(&delegate.to).unwrap_or_default(),
        now_ms,
    );
    PreparedDelegate {
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
            Err(format!(
                "delegation refused: agent {agent} does not hold capability {}",
                delegate.capability
            ))
        },
    }
}

/// Dispatches the delegation and records the child's holder.
pub(super) async fn perform(
    executor: &mut StepExecutor,
    dispatcher: &dyn Dispatcher,
    node: &str,
    prepared: &PreparedDelegate,
) -> Result<Result<Box<DelegatedChild>, String>, NodeError> {
    let command = match &prepared.command {
        Ok(command) => command,
        Err(refusal) => return Ok(Err(refusal.clone())),
    };
    let DelegateOutcome { token, labels } = dispatcher.delegate(node, command.clone()).await?;
    let child = HeldCapability::new(&command.to, token);
    executor
        .ledger
        .insert(command.delegation_id.clone(), child.clone());
    Ok(Ok(Box::new(DelegatedChild { child, labels })))
}
