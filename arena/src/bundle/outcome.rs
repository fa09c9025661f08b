//! The closed vocabularies a bundle manifest records as words: how a run
//! ended ([`BundleStatus`]) and what a step was expected to do and did
//! ([`StepOutcome`]). Each serialises to exactly the word earlier bundles
//! carried, so typing them changes no byte of any manifest.

use std::fmt;

use chio_kernel::verdict::ProjectedVerdict;
use serde::{Deserialize, Serialize};

use crate::scenario::StepExpectation;

/// How a run ended, as `arena.json` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BundleStatus {
    /// Every step was dispatched.
    Completed,
    /// An unexpected verdict or outcome ended the run.
    Stopped,
    /// Infrastructure failed and the run could not continue.
    Failed,
}

impl BundleStatus {
    /// The lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            BundleStatus::Completed => "completed",
            BundleStatus::Stopped => "stopped",
            BundleStatus::Failed => "failed",
        }
    }
}

impl fmt::Display for BundleStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a step expected or did: a call's verdict on the scenario alphabet,
/// or whether a delegate or revoke step took effect. Recorded as the bare
/// word (`allow`, `deny`, `rewrite`, `done`, `refused`); the two alphabets
/// share no word, so reading one back is unambiguous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StepOutcome {
    /// A call's verdict.
    Verdict(ProjectedVerdict),
    /// A delegate or revoke step's effect.
    Effect(StepExpectation),
}

impl StepOutcome {
    /// The word the bundle records.
    pub fn as_str(&self) -> &'static str {
        match self {
            StepOutcome::Verdict(verdict) => verdict.as_str(),
            StepOutcome::Effect(effect) => effect.as_str(),
        }
    }
}

impl From<ProjectedVerdict> for StepOutcome {
    fn from(verdict: ProjectedVerdict) -> Self {
        StepOutcome::Verdict(verdict)
    }
}

impl From<StepExpectation> for StepOutcome {
    fn from(effect: StepExpectation) -> Self {
        StepOutcome::Effect(effect)
    }
}

impl fmt::Display for StepOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every outcome and status reads back from the word it writes, and the word is the one earlier bundles carried.
    #[test]
    fn words_round_trip() {
        for (outcome, word) in [
            (StepOutcome::from(ProjectedVerdict::Allow), "allow"),
            (StepOutcome::from(ProjectedVerdict::Deny), "deny"),
            (StepOutcome::from(ProjectedVerdict::Rewrite), "rewrite"),
            (StepOutcome::from(StepExpectation::Done), "done"),
            (StepOutcome::from(StepExpectation::Refused), "refused"),
        ] {
            let json = serde_json::to_string(&outcome).unwrap();
            assert_eq!(json, format!("\"{word}\""));
            assert_eq!(serde_json::from_str::<StepOutcome>(&json).unwrap(), outcome);
            assert_eq!(outcome.to_string(), word);
        }
        for status in [
            BundleStatus::Completed,
            BundleStatus::Stopped,
            BundleStatus::Failed,
        ] {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{status}\""));
            assert_eq!(serde_json::from_str::<BundleStatus>(&json).unwrap(), status);
        }
        assert!(serde_json::from_str::<StepOutcome>("\"maybe\"").is_err());
    }
}
