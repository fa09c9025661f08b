//! A recorded answer that reads a sealed file is served where the
//! scenario was read from its folder (the controller, and the embedded
//! topology it runs), and refused by a node sent the world's bytes alone,
//! which never reads a sealed file: the refusal names the answer and the
//! file, never the value.

use std::path::Path;

use chio_arena::{load_scenario, parse_world_with_fixtures, world_bytes};
use chio_node::{FixtureSet, World};

// Proves the controller's world answers the sealed text while a node's world of the same bytes is refused without quoting it.
#[test]
fn a_sealed_answer_is_served_only_where_it_was_read() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../arena/tests/valid/recorded_answer_values.toml");
    let scenario = load_scenario(&path).expect("loads");
    let secret = scenario.sealed()["fixtures/secrets/answer.txt"]
        .text()
        .to_string();
    let fixtures = FixtureSet::load(&scenario).expect("fixtures");
    let world = World::resolve(&scenario, &fixtures).expect("the controller's world");
    let git = format!("{:?}", world.servers["git"].config);
    assert!(
        git.contains(&secret),
        "the recorded server answers the sealed text"
    );

    let bytes = std::fs::read(&path).unwrap();
    let sent = world_bytes(&scenario, &bytes);
    let on_node = parse_world_with_fixtures(&sent, Path::new("."), &fixtures).expect("validates");
    let refused = World::resolve_with(&on_node, &fixtures, &[]).expect_err("a node refuses it");
    let message = refused.to_string();
    assert!(
        message.contains("answers[1]") && message.contains("fixtures/secrets/answer.txt"),
        "{message}"
    );
    assert!(!message.contains(&secret), "{message}");
}
