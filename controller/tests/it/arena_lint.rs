//! Tests for `chio arena lint`: every reference scenario's warnings are the
//! ones listed here as intended, the real binary prints warnings, their
//! count or `no warnings`, exits as documented, refuses an invalid file
//! with the validator's error, and every lint code is documented.

use crate::util;

use std::collections::BTreeSet;
use std::path::Path;

use chio_arena::scenario::lint::{lint, lint_anchor, LINT_RULES};
use util::{chio, entries, explain, repo_path};

/// The warnings each reference scenario is meant to have, as (file, code,
/// field); every other scenario under `scenarios/` lints clean. A new
/// warning fails the test until it is fixed or listed here with its reason.
///
/// Why these stay: the deny steps without `expect_reason` predate the key
/// and their files' bytes are pinned elsewhere (seed witnesses, quoted
/// receipt roots, benchmark figures); the adversary scenarios declare the
/// `releases` server and the observed `injection` guard for their
/// adversaries, not their steps; in `fault_stall_during_budget_hold` bob is
/// only the receiver of a delegation the stall refuses, and carol is never
/// used; and `labels_at_rest` issues its agents grants their steps do not
/// all use (grace writes through alice's delegation, not her own grant), so
/// that labels, never a missing capability, decide its steps; and
/// `tool_poisoning` keeps one guard in observe mode to show a flagged
/// definition recorded in a receipt without stopping the call, and
/// `adversaries-tool-poisoning` keeps that world so that the poisoned-tool
/// goal shows it makes no action against a guard that only observes.
const INTENDED: &[(&str, &str, &str)] = &[
    (
        "adversaries-during-faults.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[8]",
    ),
    (
        "adversaries-reference.toml",
        "CHIO-LINT-UNCALLED-SERVER",
        "servers[1]",
    ),
    (
        "adversaries-reference.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[1]",
    ),
    (
        "adversaries-two-nodes.toml",
        "CHIO-LINT-OBSERVE-GUARD",
        "guards[1]",
    ),
    (
        "adversaries-two-nodes.toml",
        "CHIO-LINT-UNCALLED-SERVER",
        "servers[1]",
    ),
    (
        "adversaries-two-nodes.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[1]",
    ),
    (
        "adversaries-weakened.toml",
        "CHIO-LINT-OBSERVE-GUARD",
        "guards[1]",
    ),
    (
        "adversaries-weakened.toml",
        "CHIO-LINT-UNCALLED-SERVER",
        "servers[1]",
    ),
    (
        "adversaries-weakened.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[1]",
    ),
    ("approval.toml", "CHIO-LINT-DENY-WITHOUT-REASON", "steps[1]"),
    (
        "fault_stall_during_budget_hold.toml",
        "CHIO-LINT-IDLE-AGENT",
        "agents[1]",
    ),
    (
        "fault_stall_during_budget_hold.toml",
        "CHIO-LINT-IDLE-AGENT",
        "agents[2]",
    ),
    (
        "information_flow.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[3]",
    ),
    ("labels_at_rest.toml", "CHIO-LINT-UNUSED-GRANT", "grants[1]"),
    ("labels_at_rest.toml", "CHIO-LINT-UNUSED-GRANT", "grants[6]"),
    ("labels_at_rest.toml", "CHIO-LINT-UNUSED-GRANT", "grants[8]"),
    (
        "labels_at_rest.toml",
        "CHIO-LINT-UNUSED-GRANT",
        "grants[12]",
    ),
    (
        "labels_at_rest.toml",
        "CHIO-LINT-UNUSED-GRANT",
        "grants[15]",
    ),
    (
        "labels_at_rest.toml",
        "CHIO-LINT-UNUSED-GRANT",
        "grants[16]",
    ),
    (
        "labels_at_rest.toml",
        "CHIO-LINT-UNUSED-GRANT",
        "grants[18]",
    ),
    (
        "labels_at_rest.toml",
        "CHIO-LINT-UNUSED-GRANT",
        "grants[21]",
    ),
    (
        "labels_at_rest.toml",
        "CHIO-LINT-UNUSED-GRANT",
        "grants[24]",
    ),
    (
        "pr-421-injection-scan.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[1]",
    ),
    (
        "pr-421-review-seed.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[1]",
    ),
    (
        "pr-421-review.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[1]",
    ),
    (
        "session_rule.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[0]",
    ),
    (
        "tool_poisoning.toml",
        "CHIO-LINT-OBSERVE-GUARD",
        "guards[1]",
    ),
    (
        "adversaries-tool-poisoning.toml",
        "CHIO-LINT-OBSERVE-GUARD",
        "guards[1]",
    ),
    (
        "three_agent_triangular_delegation.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[4]",
    ),
    (
        "three_agent_triangular_delegation.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[5]",
    ),
    (
        "three_agent_triangular_delegation.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[7]",
    ),
    (
        "three_agent_triangular_delegation.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[9]",
    ),
    (
        "two_agent_tool_exchange.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[2]",
    ),
    (
        "two_agent_tool_exchange.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[4]",
    ),
    (
        "value_references.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[6]",
    ),
    (
        "walking_skeleton.toml",
        "CHIO-LINT-DENY-WITHOUT-REASON",
        "steps[1]",
    ),
];

/// A world whose second agent, second server and second grant nothing
/// touches, with an observed guard and a deny step that gives no reason.
/// The lint world (`arena/tests/fixtures/lint_world.toml`, which the lint
/// rules' unit tests share) with one deny step that gives no reason: every
/// rule fires once.
fn warned() -> String {
    let world = std::fs::read_to_string(repo_path("arena/tests/fixtures/lint_world.toml"))
        .expect("the lint world reads");
    format!("{world}[[steps]]\nid = \"post\"\nagent = \"alice\"\nserver = \"web\"\ntool = \"http_post\"\narguments = {{ url = \"https://x.test\" }}\nexpect_verdict = \"deny\"\n")
}

/// Writes [`warned`] as `scenario.toml` under `dir` and returns its name.
fn write_warned(dir: &Path) -> &'static str {
    std::fs::write(dir.join("scenario.toml"), warned()).expect("write scenario");
    "scenario.toml"
}

// Every scenario under scenarios/ lints to exactly the warnings listed as intended: a new one fails, and so does a listed one that went away.
#[test]
fn reference_scenarios_have_only_intended_warnings() {
    let mut actual = BTreeSet::new();
    for path in entries(&repo_path("scenarios")) {
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let scenario = chio_arena::load_scenario(&path)
            .unwrap_or_else(|e| panic!("{name} does not validate: {e}"));
        for w in lint(&scenario).expect("lint") {
            actual.insert((name.clone(), w.code.to_string(), w.field));
        }
    }
    let intended: BTreeSet<(String, String, String)> = INTENDED
        .iter()
        .map(|(f, c, p)| (f.to_string(), c.to_string(), p.to_string()))
        .collect();
    let new: Vec<_> = actual.difference(&intended).collect();
    assert!(new.is_empty(), "unlisted lint warnings: {new:#?}");
    let gone: Vec<_> = intended.difference(&actual).collect();
    assert!(
        gone.is_empty(),
        "listed warnings no longer given: {gone:#?}"
    );
}

// Warnings print as blocks naming code, field path, line and help, with their count last, exit 0, and write nothing.
#[test]
fn warnings_print_with_their_place_and_exit_0() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = write_warned(tmp.path());
    let args = ["arena", "lint", file];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let stdout = String::from_utf8(output.stdout.clone()).expect("UTF-8");
    let heads: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("warning["))
        .map(|l| l.split(": ").take(2).collect::<Vec<_>>().join(": "))
        .collect();
    assert_eq!(
        heads,
        [
            "warning[CHIO-LINT-OBSERVE-GUARD]: guards[0]",
            "warning[CHIO-LINT-UNCALLED-SERVER]: servers[1]",
            "warning[CHIO-LINT-IDLE-AGENT]: agents[1]",
            "warning[CHIO-LINT-UNUSED-GRANT]: grants[1]",
            "warning[CHIO-LINT-DENY-WITHOUT-REASON]: steps[0]",
        ]
    );
    assert!(stdout.contains("  --> scenario.toml:24:8\n"), "{stdout}");
    assert!(
        stdout.contains("  docs: https://chio.computer/docs/reference/errors#lint-idle-agent\n")
    );
    assert!(
        stdout.ends_with("scenario warned: 5 warnings\n"),
        "{stdout}"
    );
    assert!(output.stderr.is_empty(), "{}", explain(&args, &output));
    assert_eq!(entries(tmp.path()).len(), 1, "lint wrote files");
}

// With --deny-warnings the same warnings are printed and the command exits 1 with its documented error block.
#[test]
fn deny_warnings_exits_1() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = write_warned(tmp.path());
    let args = ["arena", "lint", file, "--deny-warnings"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&args, &output));
    assert!(String::from_utf8_lossy(&output.stdout).ends_with("5 warnings\n"));
    assert!(String::from_utf8_lossy(&output.stderr)
        .starts_with("error[CHIO-CLI-LINT-WARNINGS]: arena lint: 5 lint warning(s)"));
}

// --json prints the canonical chio.arena.lint/v1 document with each warning's code, field and line.
#[test]
fn json_is_canonical() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = write_warned(tmp.path());
    let args = ["arena", "lint", file, "--json"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let stdout = String::from_utf8(output.stdout.clone()).expect("UTF-8");
    let doc: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(doc["schema_version"], "chio.arena.lint/v1");
    assert_eq!(doc["scenario_id"], "warned");
    let warnings = doc["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 5);
    assert_eq!(warnings[0]["code"], "CHIO-LINT-OBSERVE-GUARD");
    assert_eq!(warnings[0]["field"], "guards[0]");
    assert_eq!(warnings[0]["line"], 24);
    let canonical = chio_kernel::canonical::to_canonical_string(&doc).expect("canonical");
    assert_eq!(stdout, format!("{canonical}\n"));
}

// A clean scenario prints its one "no warnings" line and exits 0, even with --deny-warnings.
#[test]
fn clean_scenario_says_no_warnings() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = repo_path("scenarios/templates/triage/scenario.toml");
    let args = [
        "arena",
        "lint",
        file.to_str().expect("UTF-8"),
        "--deny-warnings",
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert_eq!(output.stdout, b"scenario triage: no warnings\n");
}

// A file that does not validate exits 2 with the validator's error block under the lint command, and nothing on stdout.
#[test]
fn invalid_file_exits_2_with_the_validate_error() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = repo_path("arena/tests/invalid/duplicate_agent.toml");
    let args = ["arena", "lint", file.to_str().expect("UTF-8")];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).starts_with(
        "error[CHIO-SCENARIO-DUPLICATE-ID]: arena lint: duplicate agent id \"alice\" at agents[1].id\n"
    ));
}

// docs/errors.md has a heading for every lint code, giving the code, and no lint heading for a code no rule declares.
#[test]
fn every_lint_code_is_documented() {
    let doc = std::fs::read_to_string(repo_path("docs/errors.md")).expect("docs/errors.md");
    let section = doc
        .split("\n## Lint warnings\n")
        .nth(1)
        .expect("a Lint warnings section");
    for rule in LINT_RULES {
        let heading = format!("### {}\n\n`{}`", lint_anchor(rule.code), rule.code);
        assert!(
            section.contains(&heading),
            "{} is not documented",
            rule.code
        );
    }
    let anchors: BTreeSet<String> = LINT_RULES.iter().map(|r| lint_anchor(r.code)).collect();
    let stale: Vec<&str> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("### lint-"))
        .filter(|rest| !anchors.contains(&format!("lint-{rest}")))
        .collect();
    assert!(
        stale.is_empty(),
        "documented lint codes no rule declares: {stale:?}"
    );
}
