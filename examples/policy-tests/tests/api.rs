//! Assertions a scenario's own expectations cannot state, through the
//! library API: which guard refused, and that the evidence verifies.

use chio_controller::api::{load_scenario, Topology};

fn scenario(name: &str) -> String {
    format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

// The SSH key read is refused by the forbidden-path guard, not by scope, and every receipt verifies.
#[test]
fn ssh_keys_are_refused_by_the_path_guard() {
    let run = load_scenario(scenario("repo_reader"))
        .expect("scenario loads")
        .run(&Topology::Embedded)
        .expect("scenario runs");
    run.assert_passed();
    let refused = run
        .steps()
        .iter()
        .find(|s| s.step_id == "read-ssh-key")
        .expect("step recorded");
    assert_eq!(refused.guard.as_deref(), Some("no-secrets"));
    for receipt in run.receipts().expect("receipts parse") {
        receipt.verify().expect("receipt verifies");
    }
}

// The evidence bundle is written where the test asks, with its manifest.
#[test]
fn the_bundle_is_written() {
    let run = load_scenario(scenario("release_gate"))
        .expect("scenario loads")
        .run(&Topology::Embedded)
        .expect("scenario runs");
    run.assert_passed();
    let dir = std::env::temp_dir().join(format!("policy-tests-bundle-{}", std::process::id()));
    run.write_arena_bundle(&dir).expect("bundle written");
    assert!(dir.join("arena.json").is_file());
    std::fs::remove_dir_all(&dir).expect("cleanup");
}
