//! Promotion: denials graduate into corpora that later test runs replay.
//!
//! `promote_to_fixtures` keeps only Deny outcomes, as `chio.arena.fixture/v1`
//! descriptors, behind [`PromotionGate`]: `CHIO_BLESS` exactly `1`,
//! `BLESS_REASON` exactly `arena:<scenario-id>`, and `CI` unset or falsy
//! (empty, `0`, `false`, `no`, `off`). At most [`ARENA_PROMOTE_CAP_DEFAULT`]
//! fixtures are written per call unless the caller passes another cap.
//! `promote_to_adversarial_suite` keeps Deny and Rewrite outcomes as
//! `chio.arena.adversarial-case/v1` cases, filed by class, with no gate.
//!
//! Each promoted case carries the scenario (by path relative to the folder
//! the case is written to), the whole action and the receipt the kernel
//! signed, so a replay evaluates the action alone in a fresh world and
//! compares verdict and receipt byte for byte. This module builds and checks
//! cases; writing them is the caller's.

use chio_kernel::receipt::SignedReceipt;
use chio_kernel::verdict::{ProjectedVerdict, Verdict};
use serde::{Deserialize, Serialize};

use crate::action::AdversaryAction;
use crate::fitness::ActionOutcome;
use chio_arena::adversaries::class::AdversaryClass;
use chio_arena::error::ArenaError;

/// Schema id of a promoted fixture.
pub const FIXTURE_SCHEMA: &str = "chio.arena.fixture/v1";
/// Schema id of a promoted adversarial case.
pub const ADVERSARIAL_CASE_SCHEMA: &str = "chio.arena.adversarial-case/v1";
/// Fixtures one promotion writes unless told otherwise.
pub const ARENA_PROMOTE_CAP_DEFAULT: usize = 5;

/// The environment the bless gate reads, captured so it can be tested.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromotionGate {
    /// `CHIO_BLESS`.
    pub chio_bless: Option<String>,
    /// `BLESS_REASON`.
    pub bless_reason: Option<String>,
    /// `CI`.
    pub ci: Option<String>,
}

impl PromotionGate {
    /// Reads `CHIO_BLESS`, `BLESS_REASON` and `CI` from the process environment.
    pub fn from_env() -> Self {
        Self {
            chio_bless: std::env::var("CHIO_BLESS").ok(),
            bless_reason: std::env::var("BLESS_REASON").ok(),
            ci: std::env::var("CI").ok(),
        }
    }

    /// Opens for `scenario_id` or names the first clause that keeps it shut.
    /// Values are never echoed: a reason could be anything.
    pub fn check(&self, scenario_id: &str) -> Result<(), ArenaError> {
        if self.chio_bless.as_deref() != Some("1") {
            return Err(ArenaError::PromotionGate {
                clause: "CHIO_BLESS must be exactly 1".to_string(),
            });
        }
        let want = format!("arena:{scenario_id}");
        if self.bless_reason.as_deref() != Some(want.as_str()) {
            return Err(ArenaError::PromotionGate {
                clause: format!("BLESS_REASON must be exactly {want}"),
            });
        }
        let ci_falsy = match self.ci.as_deref() {
            None => true,
            Some(v) => matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "" | "0" | "false" | "no" | "off"
            ),
        };
        if !ci_falsy {
            return Err(ArenaError::PromotionGate {
                clause: "CI must be unset or falsy (promotion is a local, reviewed act)"
                    .to_string(),
            });
        }
        Ok(())
    }
}

/// A promoted action with the decision the kernel signed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromotedCase {
    /// [`FIXTURE_SCHEMA`] or [`ADVERSARIAL_CASE_SCHEMA`].
    pub schema_version: String,
    /// The scenario attacked.
    pub scenario_id: String,
    /// The scenario file, relative to the folder holding this case.
    pub scenario: String,
    /// The adversary class, kebab-case.
    pub class: AdversaryClass,
    /// The action, whole, so a replay needs nothing else.
    pub action: AdversaryAction,
    /// The kernel's verdict.
    pub verdict: Verdict,
    /// The verdict on the scenario alphabet; a replay must reproduce it.
    pub projected: ProjectedVerdict,
    /// The kernel's reason.
    pub reason: Option<String>,
    /// The deciding guard, if any.
    pub guard: Option<String>,
    /// The signed receipt; a replay must reproduce it byte for byte.
    pub receipt: SignedReceipt,
}

/// A `chio.arena.fixture/v1` descriptor.
pub type FixtureDescriptor = PromotedCase;
/// A `chio.arena.adversarial-case/v1` case.
pub type AdversarialCase = PromotedCase;

impl PromotedCase {
    /// A fixture descriptor, for a Deny outcome a kernel decided only
    /// (an action no kernel reached has no receipt to promote).
    pub fn fixture(
        scenario_id: &str,
        scenario: &str,
        action: &AdversaryAction,
        outcome: &ActionOutcome,
    ) -> Option<Self> {
        if outcome.projected != ProjectedVerdict::Deny {
            return None;
        }
        Self::build(FIXTURE_SCHEMA, scenario_id, scenario, action, outcome)
    }

    /// An adversarial case, for a Deny or Rewrite outcome a kernel decided
    /// only.
    pub fn adversarial(
        scenario_id: &str,
        scenario: &str,
        action: &AdversaryAction,
        outcome: &ActionOutcome,
    ) -> Option<Self> {
        if !matches!(
            outcome.projected,
            ProjectedVerdict::Deny | ProjectedVerdict::Rewrite
        ) {
            return None;
        }
        Self::build(
            ADVERSARIAL_CASE_SCHEMA,
            scenario_id,
            scenario,
            action,
            outcome,
        )
    }

    /// The case of `outcome`, when a kernel signed a receipt for it.
    fn build(
        schema: &str,
        scenario_id: &str,
        scenario: &str,
        action: &AdversaryAction,
        outcome: &ActionOutcome,
    ) -> Option<Self> {
        let receipt = outcome.receipt.clone()?;
        Some(Self {
            schema_version: schema.to_string(),
            scenario_id: scenario_id.to_string(),
            scenario: scenario.to_string(),
            class: action.gene.class(),
            action: action.clone(),
            verdict: outcome.verdict,
            projected: outcome.projected,
            reason: outcome.reason.clone(),
            guard: outcome.guard.clone(),
            receipt,
        })
    }

    /// The case's file name: scenario id and action id, `/` made `_`.
    pub fn file_name(&self) -> String {
        format!(
            "{}__{}.json",
            self.scenario_id,
            self.action.id.replace('/', "_")
        )
    }

    /// Whether a replayed outcome reproduces this case exactly.
    pub fn reproduced_by(&self, outcome: &ActionOutcome) -> bool {
        outcome.verdict == self.verdict
            && outcome.projected == self.projected
            && outcome.reason == self.reason
            && outcome.receipt.as_ref() == Some(&self.receipt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(bless: Option<&str>, reason: Option<&str>, ci: Option<&str>) -> PromotionGate {
        PromotionGate {
            chio_bless: bless.map(str::to_string),
            bless_reason: reason.map(str::to_string),
            ci: ci.map(str::to_string),
        }
    }

    // The gate opens only with CHIO_BLESS=1, the exact reason, and CI unset or falsy; each shut clause is named.
    #[test]
    fn gate_clauses() {
        assert!(gate(Some("1"), Some("arena:s"), None).check("s").is_ok());
        assert!(gate(Some("1"), Some("arena:s"), Some("false"))
            .check("s")
            .is_ok());
        assert!(gate(Some("1"), Some("arena:s"), Some("0"))
            .check("s")
            .is_ok());
        let shut = |g: PromotionGate| g.check("s").unwrap_err().to_string();
        assert!(shut(gate(None, Some("arena:s"), None)).contains("CHIO_BLESS"));
        assert!(shut(gate(Some("true"), Some("arena:s"), None)).contains("CHIO_BLESS"));
        assert!(shut(gate(Some("1"), Some("arena:t"), None)).contains("BLESS_REASON"));
        assert!(shut(gate(Some("1"), None, None)).contains("BLESS_REASON"));
        assert!(shut(gate(Some("1"), Some("arena:s"), Some("true"))).contains("CI"));
        assert!(shut(gate(Some("1"), Some("arena:s"), Some("1"))).contains("CI"));
    }
}
