//! `chio arena evolve` and `chio arena promote` as processes (issue 6,
//! acceptance item 4): the budget gate errors, the JSON summary, the
//! promotion gate clauses, the cap, and an unknown step refused with
//! nothing written; byte-identical outputs for the same flags with operator
//! sequences in the trace; escapes of a trace promoted as regression cases,
//! every trace searched again first and refused when it cannot be.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn chio(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chio"));
    command.current_dir(repo()).args(args);
    for key in ["CHIO_BLESS", "BLESS_REASON", "CI"] {
        command.env_remove(key);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let output = command.output().expect("chio runs");
    eprintln!(
        "chio {args:?} {env:?}\nstatus: {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn files_under(dir: &Path) -> usize {
    if !dir.exists() {
        return 0;
    }
    let mut count = 0;
    for entry in std::fs::read_dir(dir).expect("listable") {
        let path = entry.expect("entry").path();
        count += if path.is_dir() { files_under(&path) } else { 1 };
    }
    count
}

const SCENARIO: &str = "scenarios/adversaries-reference.toml";

// --generations 201 prints exactly the seed's block and exits 2.
#[test]
fn over_cap_generations_prints_the_seed_block() {
    let out = chio(
        &[
            "arena",
            "evolve",
            "scenarios/pr-421-review.toml",
            "--generations",
            "201",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error[CHIO-CLI-FLAG-OUT-OF-RANGE]: arena evolve: --generations must be at most 200\n  help: pass --generations 200 or fewer\n  code: urn:chio:error:cli:flag-out-of-range\n  docs: https://chio.computer/docs/reference/errors#error-cli-flag-out-of-range\n"
    );
    assert!(out.stdout.is_empty());
}

// Zero and over-cap values of both budget flags are refused as typed errors before anything is written.
#[test]
fn zero_and_over_cap_budgets_are_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("out");
    let dir_s = dir.to_string_lossy().to_string();
    for flags in [
        ["--generations", "0", "--wall-seconds", "10"],
        ["--generations", "2", "--wall-seconds", "0"],
        ["--generations", "2", "--wall-seconds", "1801"],
    ] {
        let mut args = vec!["arena", "evolve", SCENARIO, "--out", dir_s.as_str()];
        args.extend(flags);
        let out = chio(&args, &[]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr)
            .starts_with("error[CHIO-CLI-FLAG-OUT-OF-RANGE]: arena evolve: --"));
        assert!(!dir.exists(), "nothing may be written");
    }
}

// --json prints the seed's keys with the flags' values plus the results, and the four files are written.
#[test]
fn json_summary_has_the_seed_keys_and_results() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("evolve");
    let dir_s = dir.to_string_lossy().to_string();
    let out = chio(
        &[
            "arena",
            "evolve",
            SCENARIO,
            "--generations",
            "2",
            "--wall-seconds",
            "300",
            "--json",
            "--out",
            &dir_s,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        summary["budget_gate"],
        "bounded:200_generations_or_30_minutes"
    );
    assert_eq!(summary["generations"], 2);
    assert_eq!(summary["leaderboard_dir"], dir_s.as_str());
    assert_eq!(summary["scenario_id"], "adversaries_reference");
    assert_eq!(summary["schema_version"], "chio.arena.evolve/v1");
    assert_eq!(summary["wall_seconds"], 300);
    assert_eq!(summary["generations_completed"], 2);
    assert_eq!(summary["stopped_by"], "generations");
    assert_eq!(
        summary["leaderboard"]["schema_version"],
        "chio.arena.leaderboard/v2"
    );
    for file in [
        "leaderboard.json",
        "leaderboard.md",
        "evolve-trace.json",
        "survival.svg",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let board = std::fs::read(dir.join("leaderboard.json")).expect("board");
    let value: serde_json::Value = serde_json::from_slice(&board).expect("board json");
    assert_eq!(value, summary["leaderboard"]);
}

// Each bless-gate clause keeps fixture promotion shut with nothing written; the open gate writes at most the cap.
#[test]
fn promotion_gate_clauses_and_cap() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("promoted");
    let dir_s = dir.to_string_lossy().to_string();
    let args = [
        "arena", "promote", SCENARIO, "--to", "fixtures", "--out", &dir_s, "--json",
    ];
    let reason = "arena:adversaries_reference";
    for (env, clause) in [
        (vec![("BLESS_REASON", reason)], "CHIO_BLESS"),
        (
            vec![("CHIO_BLESS", "yes"), ("BLESS_REASON", reason)],
            "CHIO_BLESS",
        ),
        (vec![("CHIO_BLESS", "1")], "BLESS_REASON"),
        (
            vec![("CHIO_BLESS", "1"), ("BLESS_REASON", "arena:other")],
            "BLESS_REASON",
        ),
        (
            vec![
                ("CHIO_BLESS", "1"),
                ("BLESS_REASON", reason),
                ("CI", "true"),
            ],
            "CI",
        ),
    ] {
        let out = chio(&args, &env);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error[CHIO-ARENA-PROMOTE-GATE]"), "{err}");
        assert!(err.contains(clause), "{err}");
        assert_eq!(files_under(&dir), 0);
    }
    let open = [
        ("CHIO_BLESS", "1"),
        ("BLESS_REASON", reason),
        ("CI", "false"),
    ];
    let out = chio(&args, &open);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["written"].as_array().expect("list").len(), 5);
    assert!(report["skipped_by_cap"].as_u64().expect("count") > 0);
    assert_eq!(files_under(&dir.join("fixtures")), 5);
    let mut capped = args.to_vec();
    capped.extend(["--cap", "2", "--population", "replay"]);
    let out = chio(&capped, &open);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["written"].as_array().expect("list").len(), 2);
}

// An unknown step is refused (exit 2) with nothing written, even with the gate open; the suite needs no gate.
#[test]
fn unknown_step_is_refused_and_suite_needs_no_gate() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("promoted");
    let dir_s = dir.to_string_lossy().to_string();
    let open = [
        ("CHIO_BLESS", "1"),
        ("BLESS_REASON", "arena:adversaries_reference"),
    ];
    for target in ["fixtures", "adversarial-suite"] {
        let out = chio(
            &[
                "arena",
                "promote",
                SCENARIO,
                "--to",
                target,
                "--step",
                "no-such-step",
                "--out",
                &dir_s,
            ],
            &open,
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("error[CHIO-ARENA-UNKNOWN-STEP]"));
        assert!(!dir.exists(), "nothing may be written");
    }
    let out = chio(
        &[
            "arena",
            "promote",
            SCENARIO,
            "--to",
            "adversarial-suite",
            "--population",
            "escape",
            "--out",
            &dir_s,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(files_under(&dir.join("adversarial-suite/scope-escape")) > 0);
}

/// Runs `chio arena evolve` on `scenario` into `dir` and returns its four files.
fn evolve_files(scenario: &str, dir: &Path, extra: &[&str]) -> Vec<Vec<u8>> {
    let dir_s = dir.to_string_lossy().to_string();
    let mut args = vec!["arena", "evolve", scenario, "--out", dir_s.as_str()];
    args.extend(extra);
    let out = chio(&args, &[]);
    assert_eq!(out.status.code(), Some(0));
    [
        "leaderboard.json",
        "leaderboard.md",
        "evolve-trace.json",
        "survival.svg",
    ]
    .iter()
    .map(|f| std::fs::read(dir.join(f)).expect("written"))
    .collect()
}

// Two runs with the same flags write byte-identical leaderboards, traces and charts; the trace shows operator sequences and new actions in every generation.
#[test]
fn same_flags_give_byte_identical_outputs_with_operator_sequences() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let flags = ["--generations", "6", "--population-size", "6"];
    let first = evolve_files(
        "scenarios/pr-421-review.toml",
        &tmp.path().join("a"),
        &flags,
    );
    let second = evolve_files(
        "scenarios/pr-421-review.toml",
        &tmp.path().join("b"),
        &flags,
    );
    assert_eq!(first, second);
    let trace: serde_json::Value = serde_json::from_slice(&first[2]).expect("trace json");
    let generations = trace["generations"].as_array().expect("generations");
    assert_eq!(generations.len(), 6);
    for record in generations {
        assert!(
            record["new_actions"].as_u64().expect("count") > 0,
            "{record}"
        );
    }
    let with_operators = generations[1..]
        .iter()
        .flat_map(|g| g["samples"].as_array().expect("samples"))
        .flat_map(|s| s["records"].as_array().expect("records"))
        .filter(|r| r["operators"].as_array().is_some_and(|o| !o.is_empty()))
        .count();
    assert!(with_operators > 0, "no operator sequence in the trace");
    let chart = String::from_utf8_lossy(&first[3]);
    assert!(chart.contains("best fitness") && chart.contains("mean fitness"));
}

// An escape found against the weakened pipeline becomes a regression case of the reference one: promoted from the trace with the weakened scenario as the one it searched (its search run again and agreeing), denied, and it replays.
#[test]
fn promote_turns_trace_escapes_into_regression_cases() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let evolved = tmp.path().join("evolve");
    let files = evolve_files(
        "scenarios/adversaries-weakened.toml",
        &evolved,
        &["--generations", "2", "--population-size", "3"],
    );
    let board: serde_json::Value = serde_json::from_slice(&files[0]).expect("board");
    let causes = board["causes"].as_array().expect("causes listed");
    assert!(!causes.is_empty());
    assert!(causes
        .iter()
        .all(|c| !c["example_description"].as_str().unwrap_or("").is_empty()));
    let promoted = tmp.path().join("promoted");
    let trace = evolved.join("evolve-trace.json");
    let out = chio(
        &[
            "arena",
            "promote",
            SCENARIO,
            "--to",
            "adversarial-suite",
            "--from-trace",
            &trace.to_string_lossy(),
            "--searched",
            "scenarios/adversaries-weakened.toml",
            "--out",
            &promoted.to_string_lossy(),
            "--json",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["still_escaping"], 0);
    let written = report["written"].as_array().expect("written");
    assert!(!written.is_empty());
    let with_operators = written
        .iter()
        .filter_map(|p| p.as_str())
        .map(|p| std::fs::read_to_string(p).expect("case"))
        .filter(|text| text.contains("\"operators\""))
        .count();
    assert!(
        with_operators > 0,
        "no promoted escape carries its operators"
    );
    assert_eq!(
        files_under(&promoted.join("adversarial-suite")),
        written.len()
    );
}

// A trace promoted against another scenario is refused before anything is written, naming the trace's scenario: without --searched because its search cannot be run again, with it because that scenario's populations and steps cannot rebuild its escapes; promoted against a "fix" that still admits its escapes, the command counts them in its text line and exits 1.
#[test]
fn promote_refuses_a_foreign_trace_and_fails_while_escapes_remain() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let evolved = tmp.path().join("evolve");
    evolve_files(
        "scenarios/adversaries-weakened.toml",
        &evolved,
        &["--generations", "2", "--population-size", "3"],
    );
    let trace = evolved.join("evolve-trace.json");
    let promoted = tmp.path().join("promoted");
    let promote = |file: &str, extra: &[&str]| promote_text(file, &trace, &promoted, extra);
    let out = promote("scenarios/adversaries-rug-pull.toml", &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error[CHIO-ARENA-PROMOTE-TRACE]: arena promote: ")
            && stderr.contains("is a search of scenario \"adversaries_weakened\"")
            && stderr.contains("is another scenario (\"adversaries_rug_pull\"")
            && stderr.contains("--searched FILE"),
        "{stderr}"
    );
    assert!(!promoted.exists(), "a refused trace wrote cases");
    let searched = ["--searched", "scenarios/adversaries-weakened.toml"];
    let out = promote("scenarios/adversaries-rug-pull.toml", &searched);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error[CHIO-ARENA-PROMOTE-TRACE]: arena promote: ")
            && stderr.contains("is a search of scenario \"adversaries_weakened\"")
            && stderr.contains("cannot be rebuilt in \"adversaries_rug_pull\""),
        "{stderr}"
    );
    assert!(!promoted.exists(), "a refused trace wrote cases");
    let out = promote("scenarios/adversaries-weakened.toml", &[]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("promoted 0 case(s) of adversaries_weakened")
            && stdout.contains(" still escaping)"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error[CHIO-ARENA-PROMOTE-STILL-ESCAPING]: arena promote: ")
            && stderr.contains("the fix did not hold"),
        "{stderr}"
    );
}

// --population-size outside 1 to 64 is refused as a typed error before anything is written.
#[test]
fn population_size_out_of_range_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("out");
    for size in ["0", "65"] {
        let out = chio(
            &[
                "arena",
                "evolve",
                SCENARIO,
                "--population-size",
                size,
                "--out",
                &dir.to_string_lossy(),
            ],
            &[],
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr)
            .starts_with("error[CHIO-CLI-FLAG-OUT-OF-RANGE]: arena evolve: --population-size"));
        assert!(!dir.exists(), "nothing may be written");
    }
}

// A pool of one population still breeds every generation: each generation after the first evaluates actions never evaluated before, rather than keeping its one elite and trying nothing.
#[test]
fn a_pool_of_one_breeds_every_generation() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("evolve");
    let dir_s = dir.to_string_lossy().to_string();
    let out = chio(
        &[
            "arena",
            "evolve",
            SCENARIO,
            "--population-size",
            "1",
            "--generations",
            "3",
            "--json",
            "--out",
            &dir_s,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("evolve-trace.json")).unwrap()).unwrap();
    let generations = trace["generations"].as_array().expect("generations");
    assert_eq!(generations.len(), 3);
    for (g, generation) in generations.iter().enumerate() {
        let new = generation["new_actions"].as_u64().expect("new_actions");
        assert!(new > 0, "generation {g} tried nothing new");
    }
}

// A temporary directory that cannot hold the in-process store's receipt file stops a run and a search as infrastructure failures before anything is decided: never a bundle of denies, never "no escape found" against a weakened pipeline.
#[test]
fn an_unwritable_temporary_directory_stops_the_run_and_the_search() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("no-such-folder");
    let missing = missing.to_str().unwrap();
    let bundle = tmp.path().join("bundle");
    let run = chio(
        &[
            "arena",
            "run",
            "scenarios/walking_skeleton.toml",
            "--out",
            &bundle.to_string_lossy(),
        ],
        &[("TMPDIR", missing)],
    );
    assert_eq!(run.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.starts_with("error[CHIO-ARENA-INFRASTRUCTURE]"),
        "{stderr}"
    );
    assert!(stderr.contains("TMPDIR"), "{stderr}");
    assert_eq!(files_under(&bundle), 0, "a bundle was written");
    let evolved = tmp.path().join("evolve");
    let search = chio(
        &[
            "arena",
            "evolve",
            "scenarios/adversaries-weakened.toml",
            "--generations",
            "1",
            "--out",
            &evolved.to_string_lossy(),
        ],
        &[("TMPDIR", missing)],
    );
    assert_ne!(search.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&search.stderr);
    assert!(stderr.contains("TMPDIR"), "{stderr}");
    assert!(!String::from_utf8_lossy(&search.stdout).contains("no escape"));
}

/// The weakened scenario's trace (two generations, three populations a
/// lineage) with every escape rewritten as a defeat and every count made
/// consistent: a trace that agrees with itself and records nothing
/// escaping. Answers its path.
fn forged_trace(tmp: &Path) -> PathBuf {
    let evolved = tmp.join("evolve");
    evolve_files(
        "scenarios/adversaries-weakened.toml",
        &evolved,
        &["--generations", "2", "--population-size", "3"],
    );
    let mut trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(evolved.join("evolve-trace.json")).expect("trace"))
            .expect("json");
    let mut rewritten = 0;
    for generation in trace["generations"].as_array_mut().expect("generations") {
        for sample in generation["samples"].as_array_mut().expect("samples") {
            for record in sample["records"].as_array_mut().expect("records") {
                if record["result"] == "survived" {
                    record["result"] = "defeated".into();
                    record["actual"] = "deny".into();
                    record["stage"] = record["decided_stage"].clone();
                    record["reason"] = "prompt injection detected in tool output".into();
                    rewritten += 1;
                }
            }
            let survivals = sample["survivals"].as_u64().expect("count");
            let defeats = sample["defeats"].as_u64().expect("count");
            sample["defeats"] = (defeats + survivals).into();
            sample["survivals"] = 0.into();
        }
        generation["escapes"] = 0.into();
    }
    assert!(rewritten > 0, "the weakened search found no escape");
    let path = tmp.join("forged-trace.json");
    std::fs::write(&path, serde_json::to_vec(&trace).expect("json")).expect("written");
    path
}

/// `chio arena promote FILE --to adversarial-suite --from-trace TRACE --json`.
fn promote_trace(file: &str, trace: &Path, out: &Path) -> Output {
    promote_trace_with(file, trace, out, &[])
}

/// [`promote_trace`] with `extra` arguments (`--searched FILE`).
fn promote_trace_with(file: &str, trace: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut extra = extra.to_vec();
    extra.push("--json");
    promote_text(file, trace, out, &extra)
}

/// `chio arena promote FILE --to adversarial-suite --from-trace TRACE --out
/// OUT` with `extra` arguments, answering in text.
fn promote_text(file: &str, trace: &Path, out: &Path, extra: &[&str]) -> Output {
    let trace = trace.to_string_lossy();
    let out = out.to_string_lossy();
    let mut args = vec![
        "arena",
        "promote",
        file,
        "--to",
        "adversarial-suite",
        "--from-trace",
        &trace,
        "--out",
        &out,
    ];
    args.extend(extra);
    chio(&args, &[])
}

// A trace of the weakened scenario whose escapes were all rewritten as defeats, the counts made consistent, is not the search that scenario gives when run again: promoting it against that scenario is refused as not genuine, naming the first record that differs, with nothing written; so is one with an escaping record deleted.
#[test]
fn promote_refuses_a_trace_its_own_scenario_does_not_give() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let forged = forged_trace(tmp.path());
    let promoted = tmp.path().join("promoted");
    let out = promote_trace("scenarios/adversaries-weakened.toml", &forged, &promoted);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error[CHIO-ARENA-PROMOTE-TRACE]: arena promote: ")
            && stderr.contains("it is not the search that scenario gives: generations[0].samples[")
            && stderr.contains("records defeated (deny), re-evaluating it gives survived (allow)"),
        "{stderr}"
    );
    assert!(!promoted.exists(), "a refused trace wrote cases");
    // Another edit: an escaping record removed, the counts made to match.
    let mut trace: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("evolve/evolve-trace.json")).unwrap(),
    )
    .unwrap();
    let sample = trace["generations"][0]["samples"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["survivals"].as_u64().unwrap() > 0)
        .expect("an escaping sample");
    let records = sample["records"].as_array_mut().unwrap();
    let at = records
        .iter()
        .position(|r| r["result"] == "survived")
        .unwrap();
    records.remove(at);
    let survivals = sample["survivals"].as_u64().unwrap() - 1;
    let total = sample["total_actions"].as_u64().unwrap() - 1;
    sample["survivals"] = survivals.into();
    sample["total_actions"] = total.into();
    let escapes = trace["generations"][0]["escapes"].as_u64().unwrap() - 1;
    trace["generations"][0]["escapes"] = escapes.into();
    let deleted = tmp.path().join("deleted-trace.json");
    std::fs::write(&deleted, serde_json::to_vec(&trace).unwrap()).unwrap();
    let out = promote_trace("scenarios/adversaries-weakened.toml", &deleted, &promoted);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error[CHIO-ARENA-PROMOTE-TRACE]: ")
            && stderr.contains("it is not the search that scenario gives: generations[0].samples["),
        "{stderr}"
    );
    assert!(!promoted.exists(), "a refused trace wrote cases");
}

// A genuine trace promoted against a twin of the weakened scenario (other bytes, the same pipeline), its search run again against the weakened one, has every recorded action evaluated again in the twin, not only the ones it calls escapes: the ones the twin still admits are counted as still escaping and the command fails; against the reference pipeline every action is denied, its escapes are written, and it exits 0.
#[test]
fn promote_re_evaluates_every_action_of_a_trace() {
    let tmp = tempfile::tempdir().expect("tempdir");
    forged_trace(tmp.path());
    let genuine = tmp.path().join("evolve/evolve-trace.json");
    let twin = weakened_twin(tmp.path());
    let promoted = tmp.path().join("promoted");
    let searched = ["--searched", "scenarios/adversaries-weakened.toml"];
    let out = promote_trace_with(&twin.to_string_lossy(), &genuine, &promoted, &searched);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let still = report["still_escaping"].as_u64().expect("count");
    let evaluated = report["re_evaluated"].as_u64().expect("count");
    assert!(still > 0 && evaluated > still, "{report}");
    assert_eq!(report["written"], serde_json::json!([]), "{report}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error[CHIO-ARENA-PROMOTE-STILL-ESCAPING]: arena promote: ")
            && stderr.contains(&format!("{still} action(s) of the trace still escape")),
        "{stderr}"
    );
    let out = promote_trace_with(SCENARIO, &genuine, &promoted, &searched);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["still_escaping"], 0, "{report}");
    assert_eq!(report["re_evaluated"], evaluated, "{report}");
    let written = report["written"].as_array().expect("written");
    assert!(!written.is_empty(), "{report}");
}

/// A copy of the weakened scenario with other bytes and the same pipeline,
/// in a copy of `scenarios/` under `tmp` (its fixtures beside it).
fn weakened_twin(tmp: &Path) -> PathBuf {
    let scenarios = tmp.join("scenarios");
    crate::util::copy_tree(&repo().join("scenarios"), &scenarios);
    let weak =
        std::fs::read_to_string(scenarios.join("adversaries-weakened.toml")).expect("scenario");
    let twin = scenarios.join("adversaries-weakened-twin.toml");
    std::fs::write(&twin, format!("{weak}\n# the same pipeline, other bytes\n")).expect("twin");
    twin
}

/// The genuine trace `forged_trace` evolved under `tmp`, edited by `edit`
/// and written as `NAME.json`; answers its path.
fn edited_trace(tmp: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut trace: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.join("evolve/evolve-trace.json")).expect("trace"),
    )
    .expect("json");
    edit(&mut trace);
    let path = tmp.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_vec(&trace).expect("json")).expect("written");
    path
}

/// Every escaping record removed from `trace`, each sample's and
/// generation's counts made to match: a trace that agrees with itself and
/// records nothing escaping.
fn without_escapes(trace: &mut serde_json::Value) {
    for generation in trace["generations"].as_array_mut().expect("generations") {
        for sample in generation["samples"].as_array_mut().expect("samples") {
            let records = sample["records"].as_array_mut().expect("records");
            records.retain(|r| r["result"] != "survived");
            let total = records.len();
            sample["survivals"] = 0.into();
            sample["total_actions"] = total.into();
        }
        generation["escapes"] = 0.into();
    }
}

/// Asserts `out` is a refusal of the trace (`CHIO-ARENA-PROMOTE-TRACE`,
/// exit 2) whose text holds every one of `said`, and that nothing was
/// written under `promoted`.
fn assert_trace_refused(out: &Output, promoted: &Path, said: &[&str]) {
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error[CHIO-ARENA-PROMOTE-TRACE]: arena promote: ")
            && said.iter().all(|s| stderr.contains(s)),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "a refused trace printed a report");
    assert!(!promoted.exists(), "a refused trace wrote cases");
}

// A trace of the weakened scenario with every escape removed and its counts made consistent is never spared its search by its own fields: without its configuration it is refused, naming how to write one that records it; with its scenario digest zeroed it is a trace of another scenario, refused without the scenario it searched. Promoted against the very scenario searched, neither is read as a search with nothing escaping.
#[test]
fn promote_refuses_a_forged_trace_whose_fields_would_spare_its_search() {
    let tmp = tempfile::tempdir().expect("tempdir");
    forged_trace(tmp.path());
    let promoted = tmp.path().join("promoted");
    let weakened = "scenarios/adversaries-weakened.toml";
    let no_config = edited_trace(tmp.path(), "no-config", |t| {
        without_escapes(t);
        t.as_object_mut().expect("object").remove("config");
    });
    let out = promote_trace(weakened, &no_config, &promoted);
    assert_trace_refused(
        &out,
        &promoted,
        &[
            "is a search of scenario \"adversaries_weakened\"",
            "records no configuration (`config`)",
            "run `chio arena evolve` again to write a trace that records its configuration",
        ],
    );
    let zeroed = edited_trace(tmp.path(), "sha-zeroed", |t| {
        without_escapes(t);
        t["scenario_sha256"] = "0".repeat(64).into();
    });
    let out = promote_trace(weakened, &zeroed, &promoted);
    assert_trace_refused(
        &out,
        &promoted,
        &[
            &format!("scenario file SHA-256 {}", "0".repeat(64)),
            "is another scenario (\"adversaries_weakened\"",
            "--searched FILE",
        ],
    );
    // Given the scenario it searched as --searched, the zeroed digest is
    // not that scenario's: still refused, before any search.
    let out = promote_trace_with(weakened, &zeroed, &promoted, &["--searched", weakened]);
    assert_trace_refused(&out, &promoted, &["not the scenario it searched"]);
}

// A trace whose generation count, seed or completed count is not what its configuration and its scenario give is refused before it is searched: cut to its first generation (fewer than its configuration runs), emptied, its generations_completed edited, or its rng_seed edited; each genuine otherwise, against the scenario it searched.
#[test]
fn promote_refuses_a_trace_whose_counts_its_configuration_does_not_give() {
    let tmp = tempfile::tempdir().expect("tempdir");
    forged_trace(tmp.path());
    let promoted = tmp.path().join("promoted");
    let weakened = "scenarios/adversaries-weakened.toml";
    let cut = edited_trace(tmp.path(), "cut", |t| {
        t["generations"]
            .as_array_mut()
            .expect("generations")
            .truncate(1);
        t["generations_completed"] = 1.into();
    });
    let out = promote_trace(weakened, &cut, &promoted);
    assert_trace_refused(
        &out,
        &promoted,
        &[
            "its configuration runs 2 generation(s), but it lists 1",
            "--generations 1",
        ],
    );
    let empty = edited_trace(tmp.path(), "empty", |t| {
        t["generations"] = serde_json::json!([]);
        t["generations_completed"] = 0.into();
    });
    let out = promote_trace(weakened, &empty, &promoted);
    assert_trace_refused(&out, &promoted, &["it lists no generation"]);
    let completed = edited_trace(tmp.path(), "completed", |t| {
        t["generations_completed"] = 3.into();
    });
    let out = promote_trace(weakened, &completed, &promoted);
    assert_trace_refused(
        &out,
        &promoted,
        &["its generations_completed is 3, but it lists 2 generation(s)"],
    );
    let reseeded = edited_trace(tmp.path(), "reseeded", |t| {
        let seed = t["rng_seed"].as_u64().expect("seed");
        t["rng_seed"] = (seed ^ 1).into();
    });
    let out = promote_trace(weakened, &reseeded, &promoted);
    assert_trace_refused(&out, &promoted, &["its rng_seed is ", "declares "]);
}

// A search its wall budget stopped records the stop (`stopped_by`), and promote searches it again for exactly the generations it lists: the genuine two-generation trace cut to its first generation with the stop recorded is searched again and promoted as that shorter search (against the weakened scenario it searched, its escapes still escape: exit 1), while the same cut recording no stop, or a stop no search writes, is refused. A search that ran every generation records no stop.
#[test]
fn promote_searches_a_stopped_trace_again_for_the_generations_it_lists() {
    let tmp = tempfile::tempdir().expect("tempdir");
    forged_trace(tmp.path());
    let genuine: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("evolve/evolve-trace.json")).expect("trace"),
    )
    .expect("json");
    assert!(genuine.get("stopped_by").is_none(), "{}", genuine["config"]);
    let promoted = tmp.path().join("promoted");
    let weakened = "scenarios/adversaries-weakened.toml";
    let cut = |t: &mut serde_json::Value, stop: Option<&str>| {
        t["generations"]
            .as_array_mut()
            .expect("generations")
            .truncate(1);
        t["generations_completed"] = 1.into();
        if let Some(stop) = stop {
            t["stopped_by"] = stop.into();
        }
    };
    let stopped = edited_trace(tmp.path(), "stopped", |t| cut(t, Some("wall-budget")));
    let out = promote_trace(weakened, &stopped, &promoted);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr)
        .starts_with("error[CHIO-ARENA-PROMOTE-STILL-ESCAPING]"));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        report["still_escaping"].as_u64().expect("count") > 0,
        "{report}"
    );
    std::fs::remove_dir_all(&promoted).ok();
    let unrecorded = edited_trace(tmp.path(), "unrecorded", |t| cut(t, None));
    let out = promote_trace(weakened, &unrecorded, &promoted);
    assert_trace_refused(
        &out,
        &promoted,
        &["its configuration runs 2 generation(s), but it lists 1 and records no stop (`stopped_by`)"],
    );
    let other = edited_trace(tmp.path(), "other-stop", |t| cut(t, Some("operator")));
    let out = promote_trace(weakened, &other, &promoted);
    assert_trace_refused(
        &out,
        &promoted,
        &["it records a stop by \"operator\", which no search writes"],
    );
}

// In the fixed-twin flow the trace is searched again against the scenario given as --searched: a trace without it is refused naming the option; a forged trace (escapes removed, counts consistent) is refused as not the search that scenario gives, though the fixed pipeline would deny every action it lists; a --searched that is not, byte for byte, the scenario the trace names is refused.
#[test]
fn promote_against_a_fixed_twin_searches_the_trace_again() {
    let tmp = tempfile::tempdir().expect("tempdir");
    forged_trace(tmp.path());
    let genuine = tmp.path().join("evolve/evolve-trace.json");
    let promoted = tmp.path().join("promoted");
    let weakened = "scenarios/adversaries-weakened.toml";
    let out = promote_trace(SCENARIO, &genuine, &promoted);
    assert_trace_refused(
        &out,
        &promoted,
        &[
            "is another scenario (\"adversaries_reference\"",
            "--searched FILE",
        ],
    );
    let stripped = edited_trace(tmp.path(), "stripped", without_escapes);
    let out = promote_trace_with(SCENARIO, &stripped, &promoted, &["--searched", weakened]);
    assert_trace_refused(
        &out,
        &promoted,
        &[
            "it is not the search that scenario gives: generations[0].samples[",
            "searched again from scenarios/adversaries-weakened.toml",
        ],
    );
    let twin = weakened_twin(tmp.path());
    let twin = twin.to_string_lossy();
    let out = promote_trace_with(SCENARIO, &genuine, &promoted, &["--searched", &twin]);
    assert_trace_refused(&out, &promoted, &["not the scenario it searched"]);
}
