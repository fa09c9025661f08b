//! Lint: what a validated scenario says that is probably not what its
//! author meant.
//!
//! Validation refuses what cannot run; lint reads a scenario validation
//! already accepted (a [`Scenario`], so there is one loader) and warns about
//! what runs but proves less than it seems to: a deny step that does not say
//! why, a grant, a server or an agent the schedule never touches, a guard
//! that only observes. Each warning has a stable code from [`LINT_RULES`]
//! (documented under "Lint warnings" in `docs/errors.md`), the field path it
//! is about, why it is probably wrong and how to fix it. Lint never fails a
//! scenario itself; the command decides what warnings mean for its exit.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::error::ArenaError;
use crate::model::ScenarioFile;
use crate::scenario::{Action, ExpectedVerdict, Scenario};

/// One lint rule: its stable code and what it looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LintRule {
    /// The stable code, such as `CHIO-LINT-DENY-WITHOUT-REASON`.
    pub code: &'static str,
    /// What the rule looks for, in a few words.
    pub summary: &'static str,
}

/// A deny step without `expect_reason`.
pub const DENY_WITHOUT_REASON: LintRule = LintRule {
    code: "CHIO-LINT-DENY-WITHOUT-REASON",
    summary: "a call step expects deny without saying why",
};
/// A grant no step presents, delegates or revokes.
pub const UNUSED_GRANT: LintRule = LintRule {
    code: "CHIO-LINT-UNUSED-GRANT",
    summary: "a grant no step uses",
};
/// A server no step calls.
pub const UNCALLED_SERVER: LintRule = LintRule {
    code: "CHIO-LINT-UNCALLED-SERVER",
    summary: "a server no step calls",
};
/// An agent that is the agent of no step.
pub const IDLE_AGENT: LintRule = LintRule {
    code: "CHIO-LINT-IDLE-AGENT",
    summary: "an agent that never acts",
};
/// A guard in `observe` mode.
pub const OBSERVE_GUARD: LintRule = LintRule {
    code: "CHIO-LINT-OBSERVE-GUARD",
    summary: "a guard that observes and never stops a call",
};

/// An `exceed-budget` search with no budget it can exceed.
pub const BURST_CAPPED: LintRule = LintRule {
    code: "CHIO-LINT-BURST-CAPPED",
    summary: "an exceed-budget search whose budgets are all too large to exceed",
};

/// Two mcp servers that start one command in one folder, sharing no store.
pub const SPLIT_STORE: LintRule = LintRule {
    code: "CHIO-LINT-SPLIT-STORE",
    summary: "two mcp servers over one store that do not share it",
};

/// Every lint rule, in the order its warnings are reported; each code has
/// a heading in `docs/errors.md` ([`lint_anchor`]).
pub const LINT_RULES: &[LintRule] = &[
    OBSERVE_GUARD,
    UNCALLED_SERVER,
    IDLE_AGENT,
    UNUSED_GRANT,
    DENY_WITHOUT_REASON,
    BURST_CAPPED,
    SPLIT_STORE,
];

/// The heading of a lint code in `docs/errors.md`: `CHIO-LINT-IDLE-AGENT`
/// becomes `lint-idle-agent` (error codes take `error-`, so the two lists
/// never collide).
pub fn lint_anchor(code: &str) -> String {
    let rest = code.strip_prefix("CHIO-").unwrap_or(code);
    rest.to_ascii_lowercase()
}

/// One warning about one place of the scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintWarning {
    /// The rule's stable code.
    pub code: &'static str,
    /// The entry the warning is about, such as `steps[3]` or `grants[1]`.
    pub field: String,
    /// The key of that entry to point at in the file (`id`, `mode`,
    /// `expect_verdict`), so a reader lands on the line.
    #[serde(skip)]
    pub key: &'static str,
    /// Why the entry is probably wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

impl LintWarning {
    /// The path of the value to point at: the entry and its key.
    pub fn pointer(&self) -> String {
        format!("{}.{}", self.field, self.key)
    }
}

/// The warnings of a validated scenario, in [`LINT_RULES`] order and, within
/// a rule, in declaration order.
pub fn lint(scenario: &Scenario) -> Result<Vec<LintWarning>, ArenaError> {
    let file = scenario.file();
    let Uses {
        acting,
        called,
        used,
        unexplained,
    } = uses(scenario)?;
    let mut warnings = Vec::new();
    observe_guards(file, &mut warnings);
    for (index, server) in file.servers.iter().enumerate() {
        if !called.contains(&server.id) {
            warnings.push(LintWarning {
                code: UNCALLED_SERVER.code,
                field: format!("servers[{index}]"),
                key: "id",
                message: format!(
                    "server {:?} is called by no step, so nothing the scenario proves involves it",
                    server.id
                ),
                help: format!(
                    "add a call step with `server = {:?}`, or remove the server and what names it",
                    server.id
                ),
            });
        }
    }
    for (index, agent) in file.agents.iter().enumerate() {
        if !acting.contains(&agent.id) {
            warnings.push(LintWarning {
                code: IDLE_AGENT.code,
                field: format!("agents[{index}]"),
                key: "id",
                message: format!(
                    "agent {:?} never acts: no step has `agent = {:?}`, so what it may do is never tried",
                    agent.id, agent.id
                ),
                help: format!(
                    "add a step with `agent = {:?}`, or remove the agent",
                    agent.id
                ),
            });
        }
    }
    for (index, grant) in file.grants.iter().enumerate() {
        if !used.contains(&grant.id) {
            warnings.push(LintWarning {
                code: UNUSED_GRANT.code,
                field: format!("grants[{index}]"),
                key: "id",
                message: format!(
                    "grant {:?} is used by no step: no call presents it and no delegate or revoke step names it, so the scenario never tests what it admits",
                    grant.id
                ),
                help: format!(
                    "add a call by {:?} to {:?} (or a delegation of it), or remove the grant",
                    grant.agent, grant.server
                ),
            });
        }
    }
    denies_without_reason(unexplained, &mut warnings);
    bursts_capped(file, &mut warnings);
    split_stores(file, &mut warnings);
    Ok(warnings)
}

/// Warns of every `exceed-budget` block when no invocation budget the
/// scenario declares (on a grant or in `[[budgets]]`) is below the most
/// copies a burst makes: the search then makes no such action.
fn bursts_capped(file: &ScenarioFile, warnings: &mut Vec<LintWarning>) {
    use crate::adversaries::MAX_BURST;
    let tightest = file
        .grants
        .iter()
        .filter_map(|g| g.max_invocations)
        .chain(file.budgets.iter().filter_map(|b| b.max_invocations))
        .min();
    if tightest.is_some_and(|limit| limit < MAX_BURST) {
        return;
    }
    for (index, block) in file.adversaries.iter().enumerate() {
        if block.goal.as_deref() == Some("exceed-budget") {
            warnings.push(LintWarning {
                code: BURST_CAPPED.code,
                field: format!("adversaries[{index}]"),
                key: "goal",
                message: format!(
                    "population {:?} seeks to exceed a budget, but no invocation budget is below {MAX_BURST}, the most copies a burst makes, so the search makes no such action",
                    block.population
                ),
                help: format!("declare a budget of fewer than {MAX_BURST} calls over the block's base calls, or another goal"),
            });
        }
    }
}

/// Warns of every mcp server that starts the same command, in the same
/// folder with the same environment, as an earlier one while neither
/// shares the other's store (`shares_state_with`): both then serve one
/// store, and what one is sent would not reach the other's readers.
fn split_stores(file: &ScenarioFile, warnings: &mut Vec<LintWarning>) {
    let owner = |s: &crate::model::ServerDecl| s.shares_state_with.clone().unwrap_or(s.id.clone());
    let mcp: Vec<(usize, &crate::model::ServerDecl)> = file
        .servers
        .iter()
        .enumerate()
        .filter(|(_, s)| s.kind == "mcp")
        .collect();
    for (later, (index, server)) in mcp.iter().enumerate() {
        let same = mcp[..later].iter().find(|(_, earlier)| {
            (started_as(earlier), &earlier.env) == (started_as(server), &server.env)
                && owner(earlier) != owner(server)
        });
        if let Some((_, earlier)) = same {
            warnings.push(LintWarning {
                code: SPLIT_STORE.code,
                field: format!("servers[{index}]"),
                key: "id",
                message: format!(
                    "mcp servers {:?} and {:?} start the same command in the same folder, so they likely serve one store, but the arena keeps what each is sent apart",
                    earlier.id, server.id
                ),
                help: format!(
                    "add `shares_state_with = {:?}` to server {:?}, or declare one server",
                    owner(earlier),
                    server.id
                ),
            });
        }
    }
}

/// How an mcp server is started, as far as which store it serves goes:
/// its folder and every path-like argument (one holding `/`, or `.`)
/// lexically normalised, so `mcp`, `./mcp`, `mcp/` and `mcp/.` are one
/// folder and no folder is the scenario's own, `.`.
fn started_as(server: &crate::model::ServerDecl) -> (String, Vec<String>) {
    let lexical = |path: &str| match chio_kernel::path::normalize_path(path) {
        Ok(normal) if normal.is_empty() => ".".to_string(),
        Ok(normal) => normal,
        Err(_) => path.to_string(),
    };
    let cwd = lexical(server.cwd.as_deref().unwrap_or("."));
    let args = server
        .command
        .iter()
        .flatten()
        .map(|arg| {
            if arg == "." || arg.contains('/') {
                lexical(arg)
            } else {
                arg.clone()
            }
        })
        .collect();
    (cwd, args)
}

/// Warns of every guard in observe mode.
fn observe_guards(file: &ScenarioFile, warnings: &mut Vec<LintWarning>) {
    for (index, guard) in file.guards.iter().enumerate() {
        if guard.mode.as_deref() == Some("observe") {
            warnings.push(LintWarning {
                code: OBSERVE_GUARD.code,
                field: format!("guards[{index}]"),
                key: "mode",
                message: format!(
                    "guard {:?} is in observe mode: it records what it finds and never stops a call, so no step can show it refusing anything",
                    guard.id
                ),
                help: "remove `mode = \"observe\"` (enforce is the default), or keep it only while measuring what the guard would refuse".into(),
            });
        }
    }
}

/// Warns of every call step expecting deny without `expect_reason`.
fn denies_without_reason(unexplained: Vec<(usize, String)>, warnings: &mut Vec<LintWarning>) {
    for (index, id) in unexplained {
        warnings.push(LintWarning {
            code: DENY_WITHOUT_REASON.code,
            field: format!("steps[{index}]"),
            key: "expect_verdict",
            message: format!(
                "step {id:?} expects deny without `expect_reason`: any deny passes it, also one for another reason than the one it is about"
            ),
            help: "add `expect_reason` with the deny's reason code or words of its reason (docs/errors.md, \"Deny reasons\"); a run prints the reason of every deny".into(),
        });
    }
}

/// What the steps use: the agents that act, the servers called, the grants
/// presented, delegated or revoked, and the deny expectations without a
/// reason.
struct Uses {
    /// Agents with at least one step.
    acting: BTreeSet<String>,
    /// Servers some call step calls.
    called: BTreeSet<String>,
    /// Grants a step presents, delegates or revokes.
    used: BTreeSet<String>,
    /// Index and id of each call step expecting deny without
    /// `expect_reason`.
    unexplained: Vec<(usize, String)>,
}

/// Walks the steps once, collecting what they use.
fn uses(scenario: &Scenario) -> Result<Uses, ArenaError> {
    let mut acting = BTreeSet::new();
    let mut called = BTreeSet::new();
    let mut used = BTreeSet::new();
    let mut unexplained = Vec::new();
    for (index, step) in scenario.steps().enumerate() {
        let step = step?;
        acting.insert(step.head.agent.clone());
        match &step.action {
            Action::Call(call) => {
                called.insert(call.server.clone());
                used.extend(call.capability.clone());
                if call.expect_verdict == ExpectedVerdict::Deny && step.head.expect_reason.is_none()
                {
                    unexplained.push((index, step.head.id.clone()));
                }
            }
            Action::Delegate(delegate) => {
                used.insert(delegate.capability.clone());
            }
            Action::Revoke(revoke) => {
                used.insert(revoke.target.clone());
            }
            Action::Message(_) | Action::Advance(_) | Action::Fault(_) | Action::Redefine(_) => {}
        }
    }

    Ok(Uses {
        acting,
        called,
        used,
        unexplained,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lint world (`tests/fixtures/lint_world.toml`: one kernel with an
    /// observed guard, two servers, two agents, two grants) and the given
    /// steps.
    fn scenario(steps: &str) -> Scenario {
        let text = format!(
            "{}{steps}",
            include_str!("../../tests/fixtures/lint_world.toml")
        );
        crate::parse_scenario(&text, std::path::Path::new("."))
            .expect("the lint scenario validates")
    }

    fn codes(warnings: &[LintWarning]) -> Vec<(&str, &str)> {
        warnings
            .iter()
            .map(|w| (w.code, w.field.as_str()))
            .collect()
    }

    // Each rule fires on its entry, in rule order, naming the field path of the entry.
    #[test]
    fn every_rule_names_its_entry() {
        let s = scenario(
            r#"
[[steps]]
id = "post"
agent = "alice"
server = "web"
tool = "http_post"
arguments = { url = "https://x.test" }
expect_verdict = "deny"
"#,
        );
        let warnings = lint(&s).expect("lint");
        assert_eq!(
            codes(&warnings),
            vec![
                ("CHIO-LINT-OBSERVE-GUARD", "guards[0]"),
                ("CHIO-LINT-UNCALLED-SERVER", "servers[1]"),
                ("CHIO-LINT-IDLE-AGENT", "agents[1]"),
                ("CHIO-LINT-UNUSED-GRANT", "grants[1]"),
                ("CHIO-LINT-DENY-WITHOUT-REASON", "steps[0]"),
            ]
        );
        assert_eq!(warnings[4].pointer(), "steps[0].expect_verdict");
    }

    // An exceed-budget search is warned of when every invocation budget is at least the most copies a burst makes (64), and is quiet when one is below it.
    #[test]
    fn an_exceed_budget_search_with_no_budget_to_exceed_is_warned_of() {
        let text = include_str!("../../../scenarios/adversaries-two-nodes.toml");
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let burst = |text: &str| {
            let s = crate::parse_scenario(text, &base).expect("the scenario validates");
            lint(&s)
                .expect("lint")
                .into_iter()
                .filter(|w| w.code == BURST_CAPPED.code)
                .map(|w| w.field)
                .collect::<Vec<_>>()
        };
        assert!(burst(text).is_empty(), "budgets of 6 and 3 can be exceeded");
        let large = text
            .replace("max_invocations = 6", "max_invocations = 64")
            .replace("max_invocations = 3", "max_invocations = 100");
        let warned = burst(&large);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].starts_with("adversaries["), "{warned:?}");
    }

    // Two mcp servers that start one command in one folder, in any spelling of it, are warned of unless the second shares the first's store; another folder is quiet.
    #[test]
    fn two_mcp_servers_over_one_store_are_warned_of() {
        let text = include_str!("../../../scenarios/mcp_git.toml");
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let second = |extra: &str, cwd: &str| {
            let twin = format!(
                "\n[[servers]]\nid = \"git-log\"\nkernel = \"kernel-a\"\nkind = \"mcp\"\ncommand = [\"python3\", \"-m\", \"mcp_server_git\", \"--repository\", \".\"]\ncwd = \"{cwd}\"\ntimeout_ms = 10000\n{extra}[[servers.tools]]\nname = \"git_log\"\ninput_schema = '{{\"type\":\"object\"}}'\n"
            );
            let s = crate::parse_scenario(&format!("{text}{twin}"), &base)
                .expect("the scenario validates");
            lint(&s)
                .expect("lint")
                .into_iter()
                .filter(|w| w.code == SPLIT_STORE.code)
                .map(|w| w.field)
                .collect::<Vec<_>>()
        };
        let repo = "fixtures/mcp-git/repo";
        assert_eq!(second("", repo).len(), 1);
        // One folder in any spelling is one folder.
        for spelling in [
            "./fixtures/mcp-git/repo",
            "fixtures/mcp-git/repo/",
            "fixtures//mcp-git/./repo/.",
        ] {
            assert_eq!(second("", spelling).len(), 1, "{spelling}");
        }
        assert!(second("shares_state_with = \"git\"\n", repo).is_empty());
        assert!(second("", "fixtures").is_empty());
    }

    // A grant named only by a delegation or a revocation counts as used, and a deny with its reason is quiet.
    #[test]
    fn delegated_grants_and_explained_denies_are_quiet() {
        let s = scenario(
            r#"
[[steps]]
id = "post"
agent = "alice"
server = "web"
tool = "http_post"
arguments = { url = "https://x.test" }
expect_verdict = "allow"

[[steps]]
id = "hand-on"
agent = "bob"
action = "delegate"
capability = "bob-blog"
to = "alice"
delegation = "alice-blog"

[[steps]]
id = "publish"
agent = "alice"
server = "blog"
tool = "publish"
capability = "alice-blog"
expect_verdict = "deny"
expect_reason = "x"
"#,
        );
        let warnings = lint(&s).expect("lint");
        assert_eq!(
            codes(&warnings),
            vec![("CHIO-LINT-OBSERVE-GUARD", "guards[0]")]
        );
    }

    // Anchors are the code's lower-case rest, outside the `error-` namespace of error headings.
    #[test]
    fn anchors_stay_out_of_the_error_namespace() {
        assert_eq!(lint_anchor(IDLE_AGENT.code), "lint-idle-agent");
        for rule in LINT_RULES {
            assert!(lint_anchor(rule.code).starts_with("lint-"));
        }
    }
}
