//! Revoke steps: the issuing authority, or the holder of an ancestor of the
//! target, revokes a capability or delegation.
//!
//! The controller's half decides authority by key from the signed token
//! (`chio_kernel::revocation::check_revocation_authority`) before anything
//! is dispatched, and refuses for a revoker whose node is down; the node's
//! half writes the revocation to the authority state every kernel reads,
//! or refuses it when trust-control cannot be reached (`crate::outage`).

use chio_arena::scenario::RevokeAction;
use chio_kernel::keys::public_key_hex;
use chio_kernel::revocation::check_revocation_authority;

use super::{Dispatcher, StepExecutor};
use crate::error::NodeError;
use crate::outage::{NodeReason, Refusal};
use crate::world::World;

/// A revocation ready to dispatch, or the controller's refusal of it.
#[derive(Debug, Clone)]
pub struct PreparedRevoke {
    /// The capability or delegation id revoked.
    pub target: String,
    /// Virtual time of the revocation, Unix milliseconds.
    pub at_ms: u64,
    /// Why the controller refuses it, when it does.
    pub refusal: Option<Refusal>,
}

/// The controller's decisions for a revoke step.
pub(super) fn prepare(
    executor: &StepExecutor,
    world: &World,
    revoke: &RevokeAction,
    agent: &str,
    now_ms: u64,
) -> PreparedRevoke {
    let revoker = if revoke.by_authority {
        Some(public_key_hex(&world.authority))
    } else {
        world
            .agents
            .get(agent)
            .map(|plan| public_key_hex(&plan.key))
    };
    let permitted = match (executor.capability(&revoke.target), revoker) {
        (Some(entry), Some(revoker)) => check_revocation_authority(&entry.token, &revoker)
            .map(|_| ())
            .ok_or_else(|| NodeReason::RevokerNotAuthorized {
                capability: entry.token.id.clone(),
            }),
        (None, _) => Err(NodeReason::RevocationTargetUnknown {
            capability: revoke.target.clone(),
        }),
        (_, None) => Err(NodeReason::RevokerNotPlaced {
            agent: agent.to_string(),
        }),
    };
    let blocked = world
        .agent_node(agent)
        .and_then(|node| executor.faults.revoke_blocked(node));
    PreparedRevoke {
        target: revoke.target.clone(),
        at_ms: now_ms,
        refusal: permitted.err().map(Refusal::from).or(blocked),
    }
}

/// Dispatches a permitted revocation, answering the node's refusal if it
/// cannot record it; answers the controller's refusal otherwise.
pub(super) async fn dispatch(
    dispatcher: &dyn Dispatcher,
    node: &str,
    prepared: &PreparedRevoke,
) -> Result<Option<Refusal>, NodeError> {
    if let Some(refusal) = &prepared.refusal {
        return Ok(Some(refusal.clone()));
    }
    dispatcher
        .revoke(node, &prepared.target, prepared.at_ms)
        .await
}
