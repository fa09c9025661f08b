//! The tool-definition goals against the intact kernel: the search over the
//! rug-pull and tool-poisoning reference worlds finds no escape, every
//! action is refused for the reason its attack meets, and the same seed
//! gives the same leaderboard bytes.

use std::path::{Path, PathBuf};

use chio_adversary::{evolve, ActionResult, EvolveConfig, Leaderboard};
use chio_arena::{load_scenario, Scenario};
use chio_node::evaluator::KernelActionEvaluator;

fn scenario(name: &str) -> Scenario {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    load_scenario(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The leaderboard JSON and every action record of a short search.
fn search(scenario: &Scenario) -> (Vec<u8>, Vec<chio_adversary::ActionRecord>) {
    let mut evaluator = KernelActionEvaluator::load(scenario).expect("world");
    let config = EvolveConfig {
        generations: 4,
        ..EvolveConfig::default()
    };
    let result = evolve(scenario, &config, &mut evaluator).expect("evolution");
    assert_eq!(result.first_escape_generation, None, "{}", scenario.id());
    let board = Leaderboard::from_report(scenario.id(), &result.final_report());
    let records = result
        .trace
        .into_iter()
        .flat_map(|g| g.samples)
        .flat_map(|s| s.records)
        .collect();
    (board.to_json().expect("board prints"), records)
}

// Every rug-pull action is denied by the intact kernel (the changed definition, or a reused request id), none escapes.
#[test]
fn changed_definitions_are_refused_by_the_intact_kernel() {
    let (_, records) = search(&scenario("adversaries-rug-pull.toml"));
    assert!(!records.is_empty());
    for record in records {
        assert_eq!(record.result, ActionResult::Defeated, "{record:?}");
        let reason = record.reason.as_deref().unwrap_or("");
        assert!(
            reason.starts_with("tool definition changed") || reason.starts_with("request replayed"),
            "{record:?}"
        );
    }
}

// Every poisoned-tool action is denied by the intact kernel (the poisoned definition, or a reused request id), none escapes.
#[test]
fn poisoned_tools_are_refused_by_the_intact_kernel() {
    let (_, records) = search(&scenario("adversaries-tool-poisoning.toml"));
    assert!(!records.is_empty());
    for record in records {
        assert_eq!(record.result, ActionResult::Defeated, "{record:?}");
        let reason = record.reason.as_deref().unwrap_or("");
        assert!(
            reason.starts_with("tool poisoning") || reason.starts_with("request replayed"),
            "{record:?}"
        );
    }
}

// The same seed gives byte-identical leaderboards for both goals.
#[test]
fn definition_goal_searches_are_deterministic() {
    for name in [
        "adversaries-rug-pull.toml",
        "adversaries-tool-poisoning.toml",
    ] {
        let scenario = scenario(name);
        assert_eq!(search(&scenario).0, search(&scenario).0, "{name}");
    }
}
