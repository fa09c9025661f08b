//! Call steps: the acting agent presents a capability to the kernel that
//! serves the target server.
//!
//! The controller's half: the step must present a capability that exists at
//! this point of the run; when the agent does not hold it, the step presents
//! the token as captured (the kernel must refuse a token proven by another
//! key, so a captured token is the attack, not a shortcut). The call is
//! routed to the kernel serving the server, and its request id is the step
//! id. The node's half signs and evaluates, or denies the call itself when
//! the kernel cannot be reached or the agent does not hold what it presents
//! (`crate::outage`); a released output is kept for messages that forward
//! it. A fault in effect (`super::fault`) may make the call reach its
//! kernel later over a delayed link; only when the agent's own node is
//! down does the controller answer the call, since nobody can make it.

use chio_arena::scenario::CallAction;
use chio_kernel::token::CapabilityToken;
use serde_json::Value;

use super::{canonical_sha256, Dispatcher, ReleasedOutput, StepExecutor};
use crate::actors::CallOutcome;
use crate::error::NodeError;
use crate::node::{CallAnswer, CallCommand};
use crate::world::World;

/// A call ready to dispatch.
#[derive(Debug, Clone)]
pub struct PreparedCall {
    /// The command for the acting agent's node.
    pub command: CallCommand,
    /// The kernel serving the server.
    pub kernel: String,
    /// The presented capability's fingerprint.
    pub token_sha256: String,
    /// The controller's deny when the agent's node is down (nobody can
    /// make the call, `super::fault`); the call is not dispatched then.
    pub blocked: Option<String>,
    /// How a delayed link changed the call's arrival, when one did.
    pub delayed: Option<String>,
}

impl PreparedCall {
    /// Whether the agent presents a token it does not hold.
    pub fn captured(&self) -> bool {
        self.command.captured.is_some()
    }
}

/// The controller's decisions for a call step.
pub(super) fn prepare(
    executor: &StepExecutor,
    world: &World,
    step_id: &str,
    call: &CallAction,
    agent: &str,
    now_ms: u64,
) -> Result<PreparedCall, NodeError> {
    let capability_id = call
        .capability
        .clone()
        .ok_or_else(|| NodeError::Scenario(format!("step {step_id} presents no capability")))?;
    let entry = executor.capability(&capability_id).ok_or_else(|| {
        NodeError::Scenario(format!(
            "step {step_id} presents capability {capability_id} before it exists"
        ))
    })?;
    let captured: Option<CapabilityToken> = (entry.holder != agent).then(|| entry.token.clone());
    let kernel = world
        .server_kernel(&call.server)
        .ok_or_else(|| NodeError::Unroutable(format!("server {}", call.server)))?
        .to_string();
    let mut command = CallCommand {
        request_id: step_id.to_string(),
        agent: agent.to_string(),
        capability_id,
        captured,
        server: call.server.clone(),
        tool: call.tool.clone(),
        arguments: call.arguments.clone(),
        now_ms,
    };
    let agent_node = world.agent_node(agent).unwrap_or_default();
    let kernel_node = world.kernel_node(&kernel).unwrap_or_default();
    let faults = &executor.faults;
    let blocked = faults.call_blocked(agent, agent_node);
    let delay = faults.delay(agent_node, kernel_node);
    if let Some((ms, _)) = &delay {
        command.now_ms = now_ms.saturating_add(*ms);
    }
    Ok(PreparedCall {
        command,
        kernel,
        token_sha256: entry.token_sha256.clone(),
        blocked,
        delayed: delay.map(|(_, note)| note),
    })
}

/// Dispatches the call: the kernel's decision or the node's own deny;
/// nothing of the run's ledger is read or written.
pub(super) async fn dispatch(
    dispatcher: &dyn Dispatcher,
    node: &str,
    prepared: &PreparedCall,
) -> Result<CallAnswer, NodeError> {
    dispatcher.call(node, prepared.command.clone()).await
}

/// Keeps the call's released output for later messages.
pub(super) fn fold(executor: &mut StepExecutor, step_id: &str, outcome: &CallOutcome) {
    if !executor.keeps_output(step_id) {
        return;
    }
    executor.outputs.insert(
        step_id.to_string(),
        ReleasedOutput {
            label: outcome.trace.output_label.clone(),
            content_sha256: canonical_sha256(outcome.output.as_ref().unwrap_or(&Value::Null)),
        },
    );
}
