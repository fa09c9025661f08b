//! The search finds the planted tool-definition weaknesses: with the scope
//! check's pinned-digest comparison skipped, a rug-pull lineage escapes
//! within a few generations; with the injection guard's definition scan
//! skipped, a poisoned-tool lineage does; with nothing planted, neither
//! does. One test, so no other test of this binary runs while a weakness
//! is selected.
//!
//! Run: `cargo test -p chio-node --features planted-weakness --test planted_definitions`.

use std::path::Path;

use chio_adversary::{evolve, EvolveConfig};
use chio_arena::load_scenario;
use chio_kernel::planted::{self, Weakness};
use chio_node::evaluator::KernelActionEvaluator;

/// The generation of the first escape in a short search of `name`.
fn first_escape(name: &str, weakness: Option<Weakness>) -> Option<u32> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name);
    let scenario = load_scenario(&path).expect("scenario loads");
    planted::select(weakness);
    let mut evaluator = KernelActionEvaluator::load(&scenario).expect("world");
    let config = EvolveConfig {
        generations: 3,
        ..EvolveConfig::default()
    };
    let result = evolve(&scenario, &config, &mut evaluator);
    planted::select(None);
    result.expect("evolution").first_escape_generation
}

// Each definition weakness is found within three generations in its own world, and the hardened kernel yields none there.
#[test]
fn definition_weaknesses_are_found() {
    for (name, weakness) in [
        ("adversaries-rug-pull.toml", Weakness::NoDefinitionPins),
        (
            "adversaries-tool-poisoning.toml",
            Weakness::NoDefinitionScan,
        ),
    ] {
        assert_eq!(first_escape(name, None), None, "{name} hardened");
        let found = first_escape(name, Some(weakness));
        assert!(
            found.is_some_and(|g| g < 3),
            "{} not found in {name}: {found:?}",
            weakness.as_str()
        );
        // The other definition weakness leaves this world's check intact.
        let other = match weakness {
            Weakness::NoDefinitionPins => Weakness::NoDefinitionScan,
            _ => Weakness::NoDefinitionPins,
        };
        assert_eq!(
            first_escape(name, Some(other)),
            None,
            "{name} under {}",
            other.as_str()
        );
    }
}
