//! Adversary actions that reach no kernel: the rule that a kernel whose
//! node is down decides nothing, and the outcome such an action gets.
//!
//! The rule is the evaluator's, decided from the faults the schedule has
//! declared so far (the step executor's [`FaultState`]), never from where
//! the world runs: in process a crashed node's kernel object would still
//! answer, while a killed node process answers nothing, so neither place
//! is asked and both give the same bytes. What a kernel that is up but cut
//! from trust-control or stalled decides stays its own (a deny naming its
//! store), as for any scheduled call.

use chio_adversary::action::{AdversaryAction, Mutation};
use chio_adversary::fitness::{ActionOutcome, Feedback, Stage};
use chio_kernel::verdict::{ProjectedVerdict, Verdict};

use crate::executor::FaultState;
use crate::world::World;

/// Why `action`, routed to `kernel`, reaches no kernel with `faults` in
/// effect, if it does not: the acting agent's node is down (nobody can
/// make the call, [`FaultState::call_blocked`], as for the scheduled call
/// it mutates); the node hosting `kernel` is down, or, for a fixture
/// injection, the node hosting the server whose file it edits; or the
/// link between the agent's node and the kernel's is cut (the agent's node
/// finds no link to send it over, [`FaultState::send`], as for a
/// scheduled call sent then).
pub(super) fn unreachable(
    world: &World,
    faults: &FaultState,
    kernel: &str,
    action: &AdversaryAction,
) -> Option<String> {
    let agent = action.call.agent.as_str();
    let agent_node = world.agent_node(agent).unwrap_or_default();
    let down = |kernel: &str| {
        faults
            .kernel_unreachable(kernel, world.kernel_node(kernel)?)
            .map(|refusal| refusal.message)
    };
    let cut = || {
        let kernel_node = world.kernel_node(kernel)?;
        faults
            .send(kernel, kernel_node, agent_node)
            .unreachable()
            .map(|refusal| refusal.message.clone())
    };
    faults
        .call_blocked(agent, agent_node)
        .map(|refusal| refusal.message)
        .or_else(|| down(kernel))
        .or_else(|| match &action.mutation {
            Mutation::Fixture { edit, .. } => down(world.server_kernel(&edit.server)?),
            _ => None,
        })
        .or_else(cut)
}

/// The outcome of an action no kernel decided: a deny with `reason`, no
/// receipt, no kernel evaluation, stopped at dispatch.
pub(super) fn unreached(kernel: String, reason: String) -> ActionOutcome {
    let projected = ProjectedVerdict::Deny;
    let stage = Stage::classify(projected, Some(&reason), None);
    ActionOutcome {
        verdict: Verdict::Deny,
        projected,
        reason: Some(reason),
        guard: None,
        kernel,
        receipt: None,
        evaluations: 0,
        feedback: Some(Feedback {
            stage,
            detail: None,
            closeness: 0,
            goal_reached: false,
            decided_stage: None,
        }),
    }
}
