//! Determinism gate of the pipelined run driver: every reference scenario
//! (`scenarios/*.toml` that declare a world and `scenarios/agentdojo/*.toml`)
//! run with steps in flight together and with `--one-at-a-time` writes
//! byte-identical bundles and exits alike, in the embedded topology and
//! across real node processes (`--topology local`).
//!
//! The whole gate is `--ignored` in the default run (it starts four
//! processes per scenario, some two minutes of the suite on a 2-core
//! machine) and `.ci/run` runs it after the default run; the default run
//! holds every [`SAMPLE_EVERY`]th scenario of the same list in both
//! topologies.

use std::path::{Path, PathBuf};

use chio_tests::*;

/// Every reference scenario file the gate runs, sorted.
fn gate_scenarios() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = reference_scenarios()
        .iter()
        .map(|name| repo_path(&format!("scenarios/{name}.toml")))
        .collect();
    let mut agentdojo: Vec<PathBuf> = entries(&repo_path("scenarios/agentdojo"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    agentdojo.sort();
    files.extend(agentdojo);
    files
}

/// The default run's sample takes every this-many-th gate scenario.
const SAMPLE_EVERY: usize = 4;

/// Every [`SAMPLE_EVERY`]th gate scenario, from the first.
fn sampled_scenarios() -> Vec<PathBuf> {
    gate_scenarios().into_iter().step_by(SAMPLE_EVERY).collect()
}

/// Asserts `files` (more than `at_least` of them) write the same bundles in
/// both modes with `extra` arguments; a reference scenario has no mismatch.
fn assert_gate(files: &[PathBuf], at_least: usize, extra: &[&str], label: &str) {
    let tmp = tempfile::tempdir().unwrap();
    assert!(
        files.len() > at_least,
        "the gate found only {} scenarios",
        files.len()
    );
    for file in files {
        // No reference scenario has a mismatch, and `--keep-going` changes a
        // run only from its first mismatch on: the planted mismatch below
        // runs with it.
        assert_eq!(
            assert_modes_agree(tmp.path(), file, extra, label),
            Some(0),
            "{} has a mismatch: run it with --keep-going here too",
            file.display()
        );
    }
}

/// Runs `file` once per dispatch mode with `extra` arguments, asserts the
/// exit codes and every file of the two bundles are equal, and returns the
/// exit code.
fn assert_modes_agree(tmp: &Path, file: &Path, extra: &[&str], label: &str) -> Option<i32> {
    let name = file.file_stem().unwrap().to_string_lossy().into_owned();
    let mut bundles = Vec::new();
    let mut codes = Vec::new();
    for (mode, flag) in [
        ("pipelined", None),
        ("one-at-a-time", Some("--one-at-a-time")),
    ] {
        let out_dir = tmp.join(label).join(mode).join(&name);
        let mut args = vec![
            "arena",
            "run",
            file.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        args.extend(flag);
        let out = run_chio(tmp, &args);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            explain(&args, &out)
        );
        codes.push(out.status.code());
        bundles.push(tree(&out_dir));
    }
    assert_eq!(codes[0], codes[1], "{label} {name}: exit codes differ");
    let (left, right) = (&bundles[0], &bundles[1]);
    assert!(!left.is_empty(), "{label} {name}: empty bundle");
    assert_eq!(
        left.keys().collect::<Vec<_>>(),
        right.keys().collect::<Vec<_>>(),
        "{label} {name}: file lists differ"
    );
    for (path, bytes) in left {
        assert!(
            bytes == &right[path],
            "{label} {name}: {path} differs between pipelined and one-at-a-time"
        );
    }
    codes[0]
}

// Proves every reference scenario writes the same bundle bytes pipelined and one at a time in the embedded topology.
#[test]
#[ignore = "the whole gate, about a minute: .ci/run runs it; the default run holds its sample"]
fn embedded_pipelined_bundles_match_one_at_a_time() {
    assert_gate(&gate_scenarios(), 20, &[], "embedded");
}

// Proves every reference scenario writes the same bundle bytes pipelined and one at a time across real node processes and trust-control.
#[test]
#[ignore = "the whole gate, about a minute: .ci/run runs it; the default run holds its sample"]
fn local_topology_pipelined_bundles_match_one_at_a_time() {
    assert_gate(&gate_scenarios(), 20, &["--topology", "local"], "local");
}

// Proves a sample of the reference scenarios (every fourth) writes the same bundle bytes pipelined and one at a time in the embedded topology.
#[test]
fn sampled_scenarios_match_one_at_a_time_embedded() {
    assert_gate(&sampled_scenarios(), 10, &[], "sample-embedded");
}

// Proves the same sample writes the same bundle bytes pipelined and one at a time across real node processes and trust-control.
#[test]
fn sampled_scenarios_match_one_at_a_time_local() {
    assert_gate(
        &sampled_scenarios(),
        10,
        &["--topology", "local"],
        "sample-local",
    );
}

// Proves a run that stops at a mismatch while later independent steps are already in flight, and one that keeps going past it, record exactly what one step at a time records, embedded and across node processes.
#[test]
fn stop_at_a_mismatch_records_the_same_steps_in_both_modes() {
    let tmp = tempfile::tempdir().unwrap();
    // Step s-000017 expects a deny but is allowed: the run stops there.
    let text = many_agent_scenario(3, 4, 40).replacen(
        "id = \"s-000017\"\nagent = \"agent-2-1\"\nserver = \"ws-0\"\ntool = \"read_file\"\narguments = { path = \"/workspace/notes.txt\" }\nexpect_verdict = \"allow\"",
        "id = \"s-000017\"\nagent = \"agent-2-1\"\nserver = \"ws-0\"\ntool = \"read_file\"\narguments = { path = \"/workspace/notes.txt\" }\nexpect_verdict = \"deny\"",
        1,
    );
    assert!(
        text.contains("expect_verdict = \"deny\""),
        "the mismatch was planted"
    );
    let file = write_scenario(
        &tmp.path().join("scenario"),
        &text,
        &[("fixtures/ws/notes.txt", "notes\n")],
    );
    for (extra, label) in [
        (&[][..], "stop"),
        (&["--topology", "local"][..], "stop-local"),
        (&["--keep-going"][..], "keep-going"),
        (
            &["--keep-going", "--topology", "local"][..],
            "keep-going-local",
        ),
    ] {
        assert_eq!(assert_modes_agree(tmp.path(), &file, extra, label), Some(1));
    }
}
