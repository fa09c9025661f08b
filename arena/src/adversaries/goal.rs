//! Goals: what an adversary is trying to reach, which the policy means to
//! prevent.
//!
//! A goal is declared per `[[adversaries]]` block (`goal = "..."`, with
//! `goal_path` for a path goal) or defaults to its class's goal. It decides
//! which operator families may act on the block's actions and, through the
//! evaluator, the oracle of an escape: an escape is the goal reached with an
//! admitting verdict of the real kernel in the scenario's world. For
//! `smuggle-instruction` the instruction must still be there, as the kernel
//! crate's reference detector reads the admitted request or released output;
//! for `reach-forbidden-path` the admitted path, normalised by the kernel's
//! reference normaliser, must name the declared path; for
//! `outlive-revocation` the call is made right after the scenario revokes
//! its capability (or an ancestor), and for `leak-label` right after a read
//! the scenario's server labels mark, and it must be admitted; for
//! `exceed-budget` the base call is made again as a burst of one more copy
//! than its tightest declared budget allows, and the oracle counts the
//! admitted calls under each budget itself, independently of the kernel's
//! accounting; for `use-changed-definition` the base call is made again
//! right after the scenario redefines its tool under a capability that pins
//! definitions, and for `call-poisoned-tool` right after a redefinition that
//! the definition scan flags, on a kernel whose enforcing injection guard
//! reads definitions; either is an escape when admitted. For
//! `act-on-untrusted` the call is swapped for a tool the kernel's
//! `integrity` guard lists as consequential and one of the agent's grants
//! covers (the gene's choice picks which), made right after the agent's
//! first read that the scenario's server marks untrusted, at or after the
//! base step; it is an escape when admitted.

use serde::{Deserialize, Serialize};

/// The most copies an `exceed-budget` burst makes: a budget of this many
/// calls or more cannot be exceeded by the search, so such a base call is
/// not pursued (and `chio arena lint` warns when no budget is below it).
/// It is also the most calls `KernelLink.EvaluateTogether` takes at once.
pub const MAX_BURST: u64 = 64;

use crate::adversaries::class::AdversaryClass;
use crate::error::ArenaError;

/// What an adversary is trying to reach.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "goal", rename_all = "kebab-case")]
pub enum Goal {
    /// An instruction past the injection guard, still readable as one.
    SmuggleInstruction,
    /// A path the policy refuses, reached with an allow.
    ReachForbiddenPath {
        /// The forbidden path, as the policy names it.
        path: String,
        /// The tools the path is forbidden to (`goal_tools`; empty: every
        /// tool): only base steps calling one of them make actions.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<String>,
    },
    /// A call the presented capability does not cover, admitted.
    UseBeyondScope,
    /// A captured request or its nonce admitted a second time.
    ReplayRequest,
    /// A call admitted on a capability after the scenario revoked it (or an ancestor).
    OutliveRevocation,
    /// A call to a lower-clearance server admitted after a labelled read.
    LeakLabel,
    /// A delegation wider than its parent, used and admitted.
    WidenDelegation,
    /// More calls admitted under a budget (a tool budget or a capability's
    /// invocation limit) than it allows.
    ExceedBudget,
    /// A call under a capability that pins tool definitions, to a tool the
    /// scenario redefined since, admitted (a rug pull).
    UseChangedDefinition,
    /// A call to a tool whose definition in force the definition scan flags,
    /// on a kernel whose enforcing injection guard reads definitions, admitted.
    CallPoisonedTool,
    /// A consequential call (in the `integrity` guard's set, covered by the
    /// agent's grant) admitted right after the agent read untrusted content.
    ActOnUntrusted,
}

impl Goal {
    /// The goal a class pursues when its block declares none.
    pub fn default_for(class: AdversaryClass) -> Goal {
        match class {
            AdversaryClass::PromptInjection => Goal::SmuggleInstruction,
            AdversaryClass::CapabilityOverrequest => Goal::UseBeyondScope,
            AdversaryClass::ReplayAttempt => Goal::ReplayRequest,
            AdversaryClass::ScopeEscape => Goal::WidenDelegation,
        }
    }

    /// The kebab-case name a block declares.
    pub fn as_str(&self) -> &'static str {
        match self {
            Goal::SmuggleInstruction => "smuggle-instruction",
            Goal::ReachForbiddenPath { .. } => "reach-forbidden-path",
            Goal::UseBeyondScope => "use-beyond-scope",
            Goal::ReplayRequest => "replay-request",
            Goal::OutliveRevocation => "outlive-revocation",
            Goal::LeakLabel => "leak-label",
            Goal::WidenDelegation => "widen-delegation",
            Goal::ExceedBudget => "exceed-budget",
            Goal::UseChangedDefinition => "use-changed-definition",
            Goal::CallPoisonedTool => "call-poisoned-tool",
            Goal::ActOnUntrusted => "act-on-untrusted",
        }
    }

    /// Whether `class` may pursue this goal.
    fn fits(&self, class: AdversaryClass) -> bool {
        match class {
            AdversaryClass::PromptInjection => *self == Goal::SmuggleInstruction,
            AdversaryClass::CapabilityOverrequest => matches!(
                self,
                Goal::UseBeyondScope
                    | Goal::ReachForbiddenPath { .. }
                    | Goal::LeakLabel
                    | Goal::UseChangedDefinition
                    | Goal::CallPoisonedTool
                    | Goal::ActOnUntrusted
            ),
            AdversaryClass::ReplayAttempt => matches!(
                self,
                Goal::ReplayRequest | Goal::OutliveRevocation | Goal::ExceedBudget
            ),
            AdversaryClass::ScopeEscape => *self == Goal::WidenDelegation,
        }
    }

    /// The goals a class may declare, as the error message lists them.
    fn allowed(class: AdversaryClass) -> &'static str {
        match class {
            AdversaryClass::PromptInjection => "smuggle-instruction",
            AdversaryClass::CapabilityOverrequest => {
                "use-beyond-scope, reach-forbidden-path, leak-label, use-changed-definition, call-poisoned-tool or act-on-untrusted"
            }
            AdversaryClass::ReplayAttempt => "replay-request, outlive-revocation or exceed-budget",
            AdversaryClass::ScopeEscape => "widen-delegation",
        }
    }

    /// Validates a block's `goal` and `goal_path` for `class`; `field` is
    /// the block's path (such as `adversaries[0]`).
    pub fn from_block(
        class: AdversaryClass,
        goal: Option<&str>,
        goal_path: Option<&str>,
        field: &str,
    ) -> Result<Goal, ArenaError> {
        let refuse = |key: &str, reason: String| ArenaError::AdversaryParam {
            field: format!("{field}.{key}"),
            reason,
        };
        let goal = match goal {
            None => Goal::default_for(class),
            Some("smuggle-instruction") => Goal::SmuggleInstruction,
            Some("use-beyond-scope") => Goal::UseBeyondScope,
            Some("replay-request") => Goal::ReplayRequest,
            Some("outlive-revocation") => Goal::OutliveRevocation,
            Some("leak-label") => Goal::LeakLabel,
            Some("widen-delegation") => Goal::WidenDelegation,
            Some("exceed-budget") => Goal::ExceedBudget,
            Some("use-changed-definition") => Goal::UseChangedDefinition,
            Some("call-poisoned-tool") => Goal::CallPoisonedTool,
            Some("act-on-untrusted") => Goal::ActOnUntrusted,
            Some("reach-forbidden-path") => {
                let path = goal_path.ok_or_else(|| {
                    refuse(
                        "goal_path",
                        "reach-forbidden-path needs the path it tries to reach; add goal_path = \"/workspace/.env\"".to_string(),
                    )
                })?;
                if !path.starts_with('/') || path.contains('\0') {
                    return Err(refuse(
                        "goal_path",
                        format!("{path:?} is not an absolute path; write one such as /workspace/.env"),
                    ));
                }
                Goal::ReachForbiddenPath {
                    path: path.to_string(),
                    tools: Vec::new(),
                }
            }
            Some(other) => {
                return Err(refuse(
                    "goal",
                    format!(
                        "unknown goal {other:?}; use smuggle-instruction, reach-forbidden-path, use-beyond-scope, replay-request, outlive-revocation, leak-label, widen-delegation, exceed-budget, use-changed-definition, call-poisoned-tool or act-on-untrusted"
                    ),
                ))
            }
        };
        if !goal.fits(class) {
            return Err(refuse(
                "goal",
                format!(
                    "class {} cannot pursue {}; use {}",
                    class.as_str(),
                    goal.as_str(),
                    Goal::allowed(class)
                ),
            ));
        }
        if goal_path.is_some() && !matches!(goal, Goal::ReachForbiddenPath { .. }) {
            return Err(refuse(
                "goal_path",
                "only goal = \"reach-forbidden-path\" takes a path; remove goal_path".to_string(),
            ));
        }
        Ok(goal)
    }

    /// Applies a block's `goal_tools` (`None`: absent) to a validated
    /// goal: only `reach-forbidden-path` takes them, as a non-empty list of
    /// tool names (a path readable but not writable is a goal for the
    /// write tools only).
    pub fn with_tools(self, tools: Option<&[String]>, field: &str) -> Result<Goal, ArenaError> {
        let Some(tools) = tools else {
            return Ok(self);
        };
        let refuse = |reason: &str| ArenaError::AdversaryParam {
            field: format!("{field}.goal_tools"),
            reason: reason.to_string(),
        };
        match self {
            Goal::ReachForbiddenPath { path, .. } => {
                if tools.is_empty() || tools.iter().any(|t| t.is_empty()) {
                    return Err(refuse(
                        "list the tools the path is forbidden to, such as [\"write_file\"], or remove goal_tools for every tool",
                    ));
                }
                Ok(Goal::ReachForbiddenPath {
                    path,
                    tools: tools.to_vec(),
                })
            }
            _ => Err(refuse(
                "only goal = \"reach-forbidden-path\" takes tools; remove goal_tools",
            )),
        }
    }

    /// Whether the class gene shapes this goal's actions (a path goal names
    /// its own path, an outlived revocation, a changed or a poisoned
    /// definition its own moment).
    pub fn uses_gene(&self) -> bool {
        !matches!(
            self,
            Goal::ReachForbiddenPath { .. }
                | Goal::OutliveRevocation
                | Goal::LeakLabel
                | Goal::UseChangedDefinition
                | Goal::CallPoisonedTool
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A block without a goal gets its class's goal; a declared goal parses with its path.
    #[test]
    fn defaults_and_declared_goals() {
        assert_eq!(
            Goal::from_block(AdversaryClass::PromptInjection, None, None, "a").unwrap(),
            Goal::SmuggleInstruction
        );
        assert_eq!(
            Goal::from_block(
                AdversaryClass::CapabilityOverrequest,
                Some("reach-forbidden-path"),
                Some("/workspace/.env"),
                "a"
            )
            .unwrap(),
            Goal::ReachForbiddenPath {
                path: "/workspace/.env".into(),
                tools: Vec::new(),
            }
        );
    }

    // Unknown goals, goals of another class, a missing or stray goal_path are refused naming the field.
    #[test]
    fn refusals_name_the_field() {
        let field = |r: Result<Goal, ArenaError>| r.unwrap_err().field().map(str::to_string);
        use AdversaryClass::*;
        assert_eq!(
            field(Goal::from_block(PromptInjection, Some("win"), None, "a")).as_deref(),
            Some("a.goal")
        );
        assert_eq!(
            field(Goal::from_block(
                PromptInjection,
                Some("replay-request"),
                None,
                "a"
            ))
            .as_deref(),
            Some("a.goal")
        );
        assert_eq!(
            field(Goal::from_block(
                CapabilityOverrequest,
                Some("reach-forbidden-path"),
                None,
                "a"
            ))
            .as_deref(),
            Some("a.goal_path")
        );
        assert_eq!(
            field(Goal::from_block(
                PromptInjection,
                None,
                Some("/workspace/.env"),
                "a"
            ))
            .as_deref(),
            Some("a.goal_path")
        );
    }

    // goal_tools narrows a path goal to its tools; an empty list, an empty name or another goal is refused naming the key.
    #[test]
    fn goal_tools_narrow_a_path_goal_only() {
        use AdversaryClass::*;
        let path = Goal::from_block(
            CapabilityOverrequest,
            Some("reach-forbidden-path"),
            Some("/w/plan.md"),
            "a",
        )
        .unwrap();
        let write = vec!["write_file".to_string()];
        assert_eq!(
            path.clone().with_tools(Some(&write), "a").unwrap(),
            Goal::ReachForbiddenPath {
                path: "/w/plan.md".into(),
                tools: write.clone(),
            }
        );
        assert_eq!(path.clone().with_tools(None, "a").unwrap(), path);
        let field = |r: Result<Goal, ArenaError>| r.unwrap_err().field().map(str::to_string);
        for bad in [vec![], vec![String::new()]] {
            assert_eq!(
                field(path.clone().with_tools(Some(&bad), "a")).as_deref(),
                Some("a.goal_tools")
            );
        }
        assert_eq!(
            field(Goal::UseBeyondScope.with_tools(Some(&write), "a")).as_deref(),
            Some("a.goal_tools")
        );
    }

    // act-on-untrusted parses for capability-overrequest only, its gene choosing the consequential call.
    #[test]
    fn act_on_untrusted_fits_the_overrequest_class() {
        use AdversaryClass::*;
        let goal = Goal::from_block(CapabilityOverrequest, Some("act-on-untrusted"), None, "a");
        assert_eq!(goal.unwrap(), Goal::ActOnUntrusted);
        assert_eq!(Goal::ActOnUntrusted.as_str(), "act-on-untrusted");
        assert!(Goal::ActOnUntrusted.uses_gene());
        for other in [PromptInjection, ReplayAttempt, ScopeEscape] {
            let refused = Goal::from_block(other, Some("act-on-untrusted"), None, "a").unwrap_err();
            assert!(refused.to_string().contains("cannot pursue"), "{refused}");
        }
    }

    // The two tool-definition goals parse for capability-overrequest only, and take no gene.
    #[test]
    fn definition_goals_parse_and_fit_their_class() {
        use AdversaryClass::*;
        for (name, goal) in [
            ("use-changed-definition", Goal::UseChangedDefinition),
            ("call-poisoned-tool", Goal::CallPoisonedTool),
        ] {
            assert_eq!(
                Goal::from_block(CapabilityOverrequest, Some(name), None, "a").unwrap(),
                goal
            );
            assert_eq!(goal.as_str(), name);
            for other in [PromptInjection, ReplayAttempt, ScopeEscape] {
                let refused = Goal::from_block(other, Some(name), None, "a").unwrap_err();
                assert!(refused.to_string().contains("cannot pursue"), "{refused}");
            }
            assert!(!goal.uses_gene());
        }
        let unknown = Goal::from_block(CapabilityOverrequest, Some("rug-pull"), None, "a")
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("use-changed-definition") && unknown.contains("call-poisoned-tool")
        );
    }
}
