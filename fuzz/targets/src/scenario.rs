//! Target `scenario_loader`: a scenario document, validated by
//! `parse_scenario_bytes` against the repository's `scenarios/` folder (so
//! fixture and prompt references resolve against real files), and a
//! document that loads resolved into a world (keys, grants, guards,
//! placement) as a node would.
//!
//! Properties: nothing panics; every refusal carries a code listed in
//! `ERROR_CODES` and a message; a document that loads loads again to the
//! same scenario; resolving a loaded scenario answers a world or an error
//! that names its cause.

use std::path::PathBuf;

use chio_arena::{parse_scenario_bytes, ERROR_CODES};
use chio_node::{FixtureSet, World};

use crate::Reach;

/// The folder the reference scenarios live in; fixtures resolve against it.
pub fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// Runs one input (see the module doc).
pub fn scenario_loader(data: &[u8]) -> Reach {
    let base = scenarios_dir();
    let scenario = match parse_scenario_bytes(data, &base) {
        Ok(scenario) => scenario,
        Err(error) => {
            let code = error.code();
            assert!(ERROR_CODES.contains(&code), "unlisted error code {code}");
            assert!(
                !error.to_string().is_empty(),
                "a refusal must name its cause"
            );
            return if code == "CHIO-SCENARIO-SYNTAX" {
                Reach::Undecoded
            } else {
                Reach::Refused
            };
        }
    };
    match parse_scenario_bytes(data, &base) {
        Ok(again) => assert_eq!(
            format!("{scenario:?}"),
            format!("{again:?}"),
            "a document loaded to two different scenarios"
        ),
        Err(error) => panic!("a document that loaded was refused the second time: {error}"),
    }
    let fixtures = match FixtureSet::load(&scenario) {
        Ok(fixtures) => fixtures,
        Err(error) => {
            assert!(
                !error.to_string().is_empty(),
                "a refusal must name its cause"
            );
            return Reach::Refused;
        }
    };
    match World::resolve(&scenario, &fixtures) {
        Ok(_) => Reach::Accepted,
        Err(error) => {
            assert!(
                !error.to_string().is_empty(),
                "a refusal must name its cause"
            );
            Reach::Refused
        }
    }
}
