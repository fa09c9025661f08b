//! The two tool-definition goals build their actions where the attack
//! lives: `use-changed-definition` right after a redefinition of the tool a
//! pinned capability calls, `call-poisoned-tool` right after a redefinition
//! the definition scan flags on a kernel that refuses such calls; a world
//! without those preconditions yields no action.

use std::path::{Path, PathBuf};

use chio_adversary::{actions_for, populations_from_scenario, Mutation};
use chio_arena::{load_scenario, parse_scenario, Scenario};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join("scenarios")
}

fn scenario(name: &str) -> Scenario {
    load_scenario(scenarios_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The same scenario text with one substitution, parsed next to the originals.
fn variant(name: &str, from: &str, to: &str) -> Scenario {
    let text = std::fs::read_to_string(scenarios_dir().join(name)).expect("readable");
    assert!(text.contains(from), "{name} lacks {from:?}");
    parse_scenario(&text.replacen(from, to, 1), &scenarios_dir()).expect("variant loads")
}

/// (base step, step made after, evaluation offset) of every round-0 action.
fn placements(scenario: &Scenario) -> Vec<(String, String, u64)> {
    let populations = populations_from_scenario(scenario).expect("populations");
    populations
        .iter()
        .flat_map(|p| actions_for(scenario, p, 0).expect("actions"))
        .map(|a| {
            let after = match &a.mutation {
                Mutation::AfterRedefinition { redefine_step } => redefine_step.clone(),
                other => panic!("{}: not made after a redefinition: {other:?}", a.id),
            };
            assert!(!a.inside_grant, "{}", a.id);
            (a.base_step, after, a.call.evaluation_ms)
        })
        .collect()
}

// Each pinned call (the holder's and the delegate's) is made again at the instant of the next redefinition of its own tool; the unpinned CI agent's calls yield none.
#[test]
fn changed_definition_actions_follow_the_redefinition() {
    let got = placements(&scenario("adversaries-rug-pull.toml"));
    let want = [
        ("dev-status", "git-status-changes", 100),
        ("dev-log-unchanged", "git-log-changes", 200),
        ("reviewer-log", "git-log-changes", 200),
    ];
    let mut want: Vec<_> = want
        .iter()
        .map(|(b, r, at)| (b.to_string(), r.to_string(), *at))
        .collect();
    let mut sorted = got.clone();
    sorted.sort();
    sorted.dedup();
    want.sort();
    assert_eq!(sorted, want);
}

// Without pin_definitions the capability pins nothing, so the rug-pull goal has no action to make.
#[test]
fn changed_definition_needs_a_pinned_capability() {
    let unpinned = variant(
        "adversaries-rug-pull.toml",
        "pin_definitions = true",
        "pin_definitions = false",
    );
    assert!(placements(&unpinned).is_empty());
}

// The writer's translation is made again at the poisoning's instant; the wiki's poisoned search under an observing guard and the never-poisoned lookup yield none.
#[test]
fn poisoned_tool_actions_follow_the_poisoning() {
    let mut got = placements(&scenario("adversaries-tool-poisoning.toml"));
    got.dedup();
    assert_eq!(
        got,
        [(
            "writer-translate-just-before".to_string(),
            "translate-is-poisoned".to_string(),
            100
        )]
    );
}

// A kernel whose injection guard does not read definitions refuses no poisoned call, so the goal has no action to make.
#[test]
fn poisoned_tool_needs_a_guard_that_reads_definitions() {
    let off = variant(
        "adversaries-tool-poisoning.toml",
        "scan_definitions = true",
        "scan_definitions = false",
    );
    assert!(placements(&off).is_empty());
}
