//! `chio arena promote` holds the scenario it writes cases for to its own
//! steps: a "fixed twin" that refuses the calls the adversaries mutate is
//! no fix.

use crate::util::{copy_tree, repo_path, run};

// A twin of the weakened scenario that keeps its injection guard observing and only narrows the grant, so its own step read-fixture (expected allow) is denied, stops every mutation at scope: promote refuses it with its own code, naming the step, the expected and the observed verdict, and writes nothing, from a trace and without one. The weakened scenario itself, which meets its steps, is promoted.
#[test]
fn promote_refuses_a_twin_that_fails_its_own_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_tree(&repo_path("scenarios"), &dir.join("scenarios"));
    let weak = std::fs::read_to_string(dir.join("scenarios/adversaries-weakened.toml")).unwrap();
    let twin = weak.replacen(
        "path_prefix = \"/workspace/\"",
        "path_prefix = \"/workspace/src/\"",
        1,
    );
    assert_ne!(twin, weak);
    std::fs::write(dir.join("scenarios/twin.toml"), twin).unwrap();
    run(
        dir,
        &[
            "arena",
            "evolve",
            "scenarios/adversaries-weakened.toml",
            "--generations",
            "1",
            "--population-size",
            "2",
            "--out",
            "search",
        ],
        0,
    );
    let from_trace = [
        "arena",
        "promote",
        "scenarios/twin.toml",
        "--to",
        "adversarial-suite",
        "--from-trace",
        "search/evolve-trace.json",
        "--searched",
        "scenarios/adversaries-weakened.toml",
        "--out",
        "promoted",
    ];
    let plain = [
        "arena",
        "promote",
        "scenarios/twin.toml",
        "--to",
        "adversarial-suite",
        "--out",
        "promoted",
    ];
    for args in [&from_trace[..], &plain[..]] {
        let output = run(dir, args, 2);
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(
            err.starts_with("error[CHIO-ARENA-PROMOTE-SCENARIO-FAILS]"),
            "{err}"
        );
        assert!(
            err.contains("step read-fixture expects allow, and a run of it gives deny"),
            "{err}"
        );
        assert!(!dir.join("promoted").exists(), "nothing is written");
    }
    run(
        dir,
        &[
            "arena",
            "promote",
            "scenarios/adversaries-weakened.toml",
            "--to",
            "adversarial-suite",
            "--out",
            "promoted",
        ],
        0,
    );
}
