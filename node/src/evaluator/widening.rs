//! A scope escape's widened link: the holder delegates to an accomplice a
//! scope wider than its parent's.

use chio_arena::adversary::action::WideningPlan;
use chio_arena::adversary::class::WideningKind;
use chio_arena::ArenaError;
use chio_kernel::keys::public_key_hex;
use chio_kernel::token::{CapabilityToken, ScopeGrant};

use super::instance::WorldInstance;
use super::{failure, Instance};

/// Seconds a scope escape's expiry widening adds past the parent's expiry.
const EXPIRY_WIDENING_MS: u64 = 86_400_000;

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
        for widening in std::iter::once(plan.widening).chain(plan.also.iter().copied()) {
            widen(&mut state, widening, plan, tool);
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

/// Applies one widening to a link's state.
fn widen(
    state: &mut chio_kernel::token::GrantState,
    widening: WideningKind,
    plan: &WideningPlan,
    tool: &str,
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
            WideningKind::Share => state.share_bps += 1,
        }
    }
}
