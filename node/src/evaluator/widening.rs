//! A scope escape's widened link: the holder delegates to an accomplice a
//! scope wider than its parent's.

use chio_adversary::action::{MonetaryWidening, WideningPlan};
use chio_arena::adversaries::class::WideningKind;
use chio_arena::ArenaError;
use chio_kernel::keys::public_key_hex;
use chio_kernel::token::{CapabilityToken, MonetaryLimit, ScopeGrant};

use super::instance::WorldInstance;
use super::{failure, Instance};

/// Milliseconds a scope escape's expiry widening adds past the parent's expiry.
const EXPIRY_WIDENING_MS: u64 = 86_400_000;

/// Milliseconds a scope escape's start widening moves the start before the parent's.
const START_WIDENING_MS: u64 = 86_400_000;

/// The share a widening link claims when it does not widen the share.
const MIN_SHARE_BPS: u32 = 1;

impl<I: WorldInstance> Instance<'_, I> {
    /// The holder signs a link handing the accomplice a scope wider than the parent's.
    pub(super) fn widened_child(
        &self,
        plan: &WideningPlan,
        accomplice: &str,
        child_id: &str,
        tool: &str,
        now_ms: u64,
    ) -> Result<CapabilityToken, ArenaError> {
        let parent = self.token(&plan.parent)?;
        let mut state = parent.state();
        // Every dimension the plan does not widen attenuates: the scope,
        // window and budget stay the parent's, and the share is the
        // smallest the schema allows, so the parent's other children
        // never refuse the link before the widened dimension is judged.
        let parent_bps = state.share_bps;
        state.share_bps = parent_bps.min(MIN_SHARE_BPS);
        for widening in plan.dimensions() {
            widen(&mut state, widening, plan, tool, parent_bps);
        }
        let delegatee = public_key_hex(&self.key_of(accomplice));
        parent
            .delegate_state(
                &self.key_of(&plan.delegator),
                &delegatee,
                state,
                child_id,
                now_ms,
            )
            .map_err(failure)
    }
}

/// Applies one widening to a link's state (`parent_bps`: the parent's share).
fn widen(
    state: &mut chio_kernel::token::GrantState,
    widening: WideningKind,
    plan: &WideningPlan,
    tool: &str,
    parent_bps: u32,
) {
    {
        match widening {
            WideningKind::Tool => {
                if let Some(extra) = &plan.extra_tool {
                    for grant in &mut state.scope {
                        grant.tools.push(extra.clone());
                    }
                }
            }
            WideningKind::Path => {
                for grant in &mut state.scope {
                    grant.constraints.remove("path_prefix");
                }
            }
            WideningKind::Server => {
                if let Some(extra) = &plan.extra_server {
                    state.scope.push(ScopeGrant::new(extra, &[tool]));
                }
            }
            WideningKind::Expiry => state.expires_at_ms += EXPIRY_WIDENING_MS,
            WideningKind::AnyTool => {
                for grant in &mut state.scope {
                    grant.tools.push(chio_kernel::token::ANY_TOOL.to_string());
                }
            }
            WideningKind::Start => {
                state.not_before_ms = state.not_before_ms.saturating_sub(START_WIDENING_MS)
            }
            WideningKind::Share => state.share_bps = parent_bps.saturating_add(1),
            WideningKind::Budget => state.max_invocations = plan.raised_invocations,
            WideningKind::Monetary => {
                if let Some(form) = &plan.monetary {
                    widen_monetary(state, form);
                }
            }
        }
    }
}

/// Widens the monetary constraint of every grant of `state` that carries
/// one, the one way `form` names (a constraint the kernel cannot read is
/// left as it is: the kernel refuses it whatever the link).
fn widen_monetary(state: &mut chio_kernel::token::GrantState, form: &MonetaryWidening) {
    for grant in &mut state.scope {
        let parent: Option<MonetaryLimit> = grant
            .constraints
            .get("monetary")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let Some(parent) = parent else {
            continue;
        };
        match form.widen(&parent) {
            Some(child) => {
                grant
                    .constraints
                    .insert("monetary".into(), child.to_constraint());
            }
            None => {
                grant.constraints.remove("monetary");
            }
        }
    }
}
