//! The `exceed-budget` oracle: an independent count of admitted calls under
//! every budget the scenario declares.
//!
//! The kernel keeps its own budget accounting in the shared trust state;
//! an oracle that read it back would miss exactly the defects it exists to
//! find (a hold rule that lets one more through, budgets skipped). So the
//! evaluator counts for itself: every call a kernel admits, scheduled or
//! adversarial, counts once under the tool budget on the serving kernel of
//! every agent who authorised it (its principal and each delegator of its
//! chain, the kernel's one rule, `chio_kernel::kernel::Authorisers`) and
//! under each invocation limit along its capability's
//! chain (the root's and every link's). A call admitted while a count is
//! already at its limit is a budget exceeded.

use std::collections::BTreeMap;

use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;
use chio_kernel::verdict::Verdict;

use crate::world::World;

/// Admitted calls per budget key, counted by the evaluator.
#[derive(Debug, Default)]
pub(super) struct BudgetTally {
    admitted: BTreeMap<String, u64>,
}

/// The call a budget counts: who made it, to which tool, on which capability.
pub(super) struct Counted<'a> {
    /// The principal (the agent whose key proved the request).
    pub agent: &'a str,
    /// The server called.
    pub server: &'a str,
    /// The tool called.
    pub tool: &'a str,
    /// The capability presented.
    pub token: &'a CapabilityToken,
}

impl<'a> From<&'a ToolCallRequest> for Counted<'a> {
    fn from(request: &'a ToolCallRequest) -> Self {
        Counted {
            agent: &request.agent_id,
            server: &request.server,
            tool: &request.tool,
            token: &request.capability,
        }
    }
}

/// The budgets `call` falls under, with their limits.
fn budgets_of(world: &World, call: &Counted<'_>) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let serving = world
        .server_kernel(call.server)
        .and_then(|k| world.kernels.get(k));
    if let Some(plan) = serving {
        let delegators: Vec<String> = call
            .token
            .delegation_chain
            .iter()
            .map(|link| link.delegator.clone())
            .collect();
        let by = chio_kernel::kernel::Authorisers {
            principal: call.agent,
            delegators: &delegators,
            agent_keys: &plan.config.agent_keys,
        };
        for budget in plan
            .config
            .tool_budgets
            .iter()
            .filter(|b| by.include(&b.agent) && b.server == call.server && b.tool == call.tool)
        {
            out.push((
                format!("tool/{}/{}/{}", budget.agent, budget.server, budget.tool),
                budget.max_invocations,
            ));
        }
    }
    let token = call.token;
    let root = token.root_body();
    if let Some(max) = root.max_invocations {
        out.push((format!("capability/{}", root.id), max));
    }
    for link in &token.delegation_chain {
        if let Some(max) = link.attenuation.max_invocations {
            out.push((format!("capability/{}", link.child_id), max));
        }
    }
    out
}

impl BudgetTally {
    /// Counts `call` when a kernel's `verdict` admitted it; answers
    /// whether it was admitted past a limit.
    pub(super) fn record(&mut self, world: &World, call: Counted<'_>, verdict: Verdict) -> bool {
        if verdict != Verdict::Allow {
            return false;
        }
        let mut exceeded = false;
        for (key, limit) in budgets_of(world, &call) {
            let count = self.admitted.entry(key).or_insert(0);
            *count += 1;
            exceeded |= *count > limit;
        }
        exceeded
    }
}
