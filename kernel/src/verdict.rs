//! Verdicts and their projection onto the scenario alphabet.
//!
//! The kernel answers Allow, Deny or PendingApproval; an allow whose output
//! a post-invocation guard rewrote is a sanitized allow. Scenarios and
//! bundles speak the projected alphabet `allow | deny | rewrite`: a
//! sanitized allow projects to `rewrite`, a plain allow to `allow`, and Deny
//! and PendingApproval both to `deny` (nothing ran).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The kernel's answer to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The call may run (or ran) and its output is released.
    Allow,
    /// The call is refused.
    Deny,
    /// The call waits for a human decision and did not run.
    PendingApproval,
}

impl Verdict {
    /// The snake_case name, as receipts carry it.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Deny => "deny",
            Verdict::PendingApproval => "pending_approval",
        }
    }

    /// Projects onto the scenario alphabet.
    pub fn project(&self, sanitized: bool) -> ProjectedVerdict {
        match (self, sanitized) {
            (Verdict::Allow, true) => ProjectedVerdict::Rewrite,
            (Verdict::Allow, false) => ProjectedVerdict::Allow,
            (Verdict::Deny | Verdict::PendingApproval, _) => ProjectedVerdict::Deny,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A verdict as scenarios expect it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProjectedVerdict {
    /// A plain allow.
    Allow,
    /// Deny or pending approval.
    Deny,
    /// A sanitized allow.
    Rewrite,
}

impl ProjectedVerdict {
    /// The lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            ProjectedVerdict::Allow => "allow",
            ProjectedVerdict::Deny => "deny",
            ProjectedVerdict::Rewrite => "rewrite",
        }
    }

    /// Parses `allow`, `deny` or `rewrite`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(ProjectedVerdict::Allow),
            "deny" => Some(ProjectedVerdict::Deny),
            "rewrite" => Some(ProjectedVerdict::Rewrite),
            _ => None,
        }
    }
}

impl fmt::Display for ProjectedVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The projection onto the scenario alphabet (`docs/scenario-schema.md`):
    // a sanitized allow is `rewrite`, Deny and PendingApproval are `deny`.
    #[test]
    fn projection() {
        assert_eq!(Verdict::Allow.project(false), ProjectedVerdict::Allow);
        assert_eq!(Verdict::Allow.project(true), ProjectedVerdict::Rewrite);
        assert_eq!(Verdict::Deny.project(false), ProjectedVerdict::Deny);
        assert_eq!(
            Verdict::PendingApproval.project(false),
            ProjectedVerdict::Deny
        );
        assert_eq!(
            serde_json::to_string(&ProjectedVerdict::Rewrite).unwrap(),
            "\"rewrite\""
        );
    }
}
