//! Regression scenarios for the escapes and wrong answers a red team found
//! in the world the arena simulates (labels and integrity through a tool's
//! answers, sealed values, path spellings, monetary amounts at their
//! bounds, ids at their bound, calls in flight over delayed links): each
//! scenario in `tests/tests/it/escapes/` states the verdicts the rules
//! require, with a control beside each attack, and must pass embedded and
//! across node processes with the same bundle bytes. The scenarios named
//! `invalid_*` must be refused at load, by `validate` and `run` alike, with
//! the code that names their fix; those named `stopped_*` must stop at
//! their step `stops-the-run`, the one step whose expectation fails, every
//! other recorded step giving the verdict it states.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chio_tests::*;

/// The folder of the regression scenarios.
fn escapes() -> PathBuf {
    repo_path("tests/tests/it/escapes")
}

/// Runs `file` embedded, across node processes and one step at a time, and
/// asserts that every run passes (exit 0: each step gave its expected
/// verdict and reason) and that the three bundles are the same bytes.
fn passes_everywhere(file: &Path) {
    runs_everywhere(file, 0);
}

/// Runs `file` embedded, across node processes and one step at a time,
/// asserts that every run exits with `code` and that the three bundles are
/// the same bytes, and answers the embedded bundle. Every call record that
/// says how a delayed link moved it claims an arrival only when a kernel
/// decided it (its receipt is in the bundle).
fn runs_everywhere(file: &Path, code: i32) -> BTreeMap<String, Vec<u8>> {
    let work = tempfile::tempdir().unwrap();
    let scenario = file.to_str().unwrap();
    let mut bundles = Vec::new();
    // Only the controller reads sealed files, so a recorded answer that
    // reads one is served by the embedded topology alone, and a node
    // topology is refused before anything starts.
    let sealed_answer = std::fs::read_to_string(file)
        .unwrap()
        .contains("output = { fixture");
    for (name, extra) in [
        ("embedded", &[][..]),
        ("local", &["--topology", "local"][..]),
        ("one-at-a-time", &["--one-at-a-time"][..]),
    ] {
        if sealed_answer && name == "local" {
            let args = [
                "arena",
                "run",
                scenario,
                "--topology",
                "local",
                "--out",
                "x",
            ];
            let output = run_chio(work.path(), &args);
            assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
            assert!(String::from_utf8_lossy(&output.stderr).contains("CHIO-TOPOLOGY-INVALID"));
            continue;
        }
        let out = work.path().join(name);
        let mut args = vec!["arena", "run", scenario, "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let output = run_chio(work.path(), &args);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{}",
            explain(&args, &output)
        );
        bundles.push((name, tree(&out)));
    }
    for (name, bundle) in &bundles[1..] {
        assert!(
            bundle == &bundles[0].1,
            "{scenario}: the {name} bundle differs from the embedded one"
        );
    }
    let bundle = bundles.swap_remove(0).1;
    for step in manifest(&bundle)["steps"].as_array().unwrap() {
        let Some(detail) = step["detail"].as_str().filter(|_| step["action"] == "call") else {
            continue;
        };
        let decided = step["receipt_id"].is_string();
        assert_eq!(
            detail.starts_with("arrived "),
            decided,
            "{scenario}: step {} says {detail:?}",
            step["step_id"]
        );
        assert!(decided || detail.starts_with("sent over link "), "{detail}");
    }
    bundle
}

/// A bundle's manifest, `arena.json`.
fn manifest(bundle: &BTreeMap<String, Vec<u8>>) -> serde_json::Value {
    serde_json::from_slice(&bundle["arena.json"]).expect("arena.json")
}

/// The scenario files of the folder whose names start with `prefix`, or,
/// for an empty prefix, with neither `invalid_` nor `stopped_`, in name
/// order.
fn scenarios(prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = entries(&escapes())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            match prefix {
                "" => !name.starts_with("invalid_") && !name.starts_with("stopped_"),
                prefix => name.starts_with(prefix),
            }
        })
        .collect();
    files.sort();
    files
}

// Proves every regression scenario gives the verdicts its rules require on every topology and dispatch mode, byte for byte: labels and integrity kept through a tool's answers, sealed values kept sealed, paths read in every spelling, amounts refused or counted at their bounds, ids at their bound.
#[test]
fn every_escape_is_closed_on_every_topology() {
    let files = scenarios("");
    assert!(files.len() >= 15, "the regression scenarios are missing");
    for file in files {
        passes_everywhere(&file);
    }
}

// Proves a run stopped by a mismatch decides a call still in flight over a delayed link only when every step at or before its arrival was applied: arriving before the stop's instant, or at it with no skipped step there, it is decided by its kernel; arriving later, or at the stop's instant with a step there skipped, it is denied by the controller naming the stop, with no receipt and no decision trace (so it spent nothing); whether the stop is a step or a delayed call itself; on every topology and dispatch mode, byte for byte.
#[test]
fn a_stop_decides_no_call_past_its_instant() {
    let files = scenarios("stopped_");
    assert_eq!(files.len(), 3, "the stopped scenarios are missing");
    for file in files {
        let bundle = runs_everywhere(&file, 1);
        let manifest = manifest(&bundle);
        assert_eq!(
            manifest["stopped"]["step_id"], "stops-the-run",
            "{manifest}"
        );
        assert_eq!(manifest["mismatches"], serde_json::json!(["stops-the-run"]));
        let undecided: Vec<&serde_json::Value> = manifest["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|step| step["reason_code"] == "run-stopped-before-arrival")
            .collect();
        assert!(!undecided.is_empty(), "{}", file.display());
        for step in undecided {
            assert!(
                step["receipt_id"].is_null() && step["trace"].is_null(),
                "{step}"
            );
        }
    }
}

// Proves a scenario whose id, number or monetary limit is past its bound, or that writes a fraction a parser rounds to a whole number or a tool schema with a key given twice, or whose capability budget names a server its grant does not cover, or whose server serves a near-copy of a sealed value (8 characters of it in a row, in any case), or whose server shares the store of a server that shares another's, is refused by validate and by run, with the code naming the fix, before anything runs.
#[test]
fn ids_and_limits_past_their_bounds_are_refused_at_load() {
    let work = tempfile::tempdir().unwrap();
    let expected = [
        (
            "invalid_capability_budget_other_server.toml",
            "CHIO-SCENARIO-KEY-NOT-ALLOWED",
        ),
        ("invalid_float_past_2_53.toml", "CHIO-SCENARIO-OUT-OF-RANGE"),
        (
            "invalid_fraction_rounds_to_whole.toml",
            "CHIO-SCENARIO-SYNTAX",
        ),
        ("invalid_limit_past_2_53.toml", "CHIO-SCENARIO-BUDGET-LIMIT"),
        (
            "invalid_schema_key_twice.toml",
            "CHIO-SCENARIO-TOOL-DECLARATION",
        ),
        (
            "invalid_sealed_near_copy_served.toml",
            "CHIO-SCENARIO-VALUE-FIXTURE",
        ),
        (
            "invalid_shared_store_chain.toml",
            "CHIO-SCENARIO-OUT-OF-RANGE",
        ),
        ("invalid_step_id_too_long.toml", "CHIO-SCENARIO-INVALID-ID"),
    ];
    let files = scenarios("invalid_");
    assert_eq!(files.len(), expected.len());
    for (file, (name, code)) in files.iter().zip(expected) {
        assert!(file.ends_with(name), "{}", file.display());
        let out = work.path().join("out");
        for args in [
            vec!["arena", "validate", file.to_str().unwrap()],
            vec![
                "arena",
                "run",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        ] {
            let output = run_chio(work.path(), &args);
            assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains(code), "{}", explain(&args, &output));
        }
        assert!(!out.exists(), "a refused scenario wrote a bundle");
    }
}

// Proves a sealed value never reaches the evidence, whether a server answered it and a later call took it by reference, a server echoed it back decoded and normalised and a later call took that, or a reason quotes it escaped: no file of the bundle and no printed line holds 8 consecutive characters of it, as written, escaped or decoded (the checked files `*-decoded.txt` hold the part of the decoded path that is the secret's own, past the public `/workspace/`).
#[test]
fn sealed_values_stay_out_of_the_evidence() {
    for (file, secret, step) in [
        (
            "sealed_answer_stays_sealed.toml",
            "secrets/token.txt",
            "read-with-answered-pass",
        ),
        ("sealed_value_quoted_escaped.toml", "secrets/pw.txt", ""),
        // Echoed back decoded: the evidence holds no run of the sealed
        // text as sent nor of the path it decodes to (past the public
        // `/workspace/` the grants name too).
        (
            "sealed_value_echoed_decoded.toml",
            "secrets/path.txt",
            "read-echoed-path",
        ),
        (
            "sealed_value_echoed_decoded.toml",
            "secrets/path-decoded.txt",
            "",
        ),
        (
            "sealed_value_echoed_decoded.toml",
            "secrets/path-dots-decoded.txt",
            "",
        ),
    ] {
        let work = tempfile::tempdir().unwrap();
        let file = escapes().join(file);
        let secret = std::fs::read_to_string(escapes().join(secret)).unwrap();
        let secret = secret.trim_end().to_string();
        let out = work.path().join("out");
        let args = [
            "arena",
            "run",
            file.to_str().unwrap(),
            "--json",
            "--out",
            out.to_str().unwrap(),
        ];
        let output = run_chio(work.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
        let mut texts: Vec<(String, Vec<u8>)> = tree(&out).into_iter().collect();
        texts.push(("stdout".into(), output.stdout.clone()));
        texts.push(("stderr".into(), output.stderr.clone()));
        let debug = format!("{secret:?}");
        let json = serde_json::to_string(&secret).unwrap();
        let forms = [
            secret.as_str(),
            &debug[1..debug.len() - 1],
            &json[1..json.len() - 1],
        ];
        for (name, bytes) in texts {
            let text = String::from_utf8_lossy(&bytes);
            for form in forms {
                let chars: Vec<char> = form.chars().collect();
                for window in chars.windows(8) {
                    let window: String = window.iter().collect();
                    assert!(
                        !text.contains(&window),
                        "{name} holds a run of the sealed value"
                    );
                }
            }
        }
        if step.is_empty() {
            continue;
        }
        // Explain re-decides the bundle, so it reads the sealed files again
        // from the scenario's folder.
        let folder = escapes();
        let explain_args = [
            "arena",
            "explain",
            out.to_str().unwrap(),
            step,
            "--sealed-from",
            folder.to_str().unwrap(),
        ];
        let explained = run_chio(work.path(), &explain_args);
        assert_eq!(
            explained.status.code(),
            Some(0),
            "{}",
            explain(&explain_args, &explained)
        );
        let text = String::from_utf8_lossy(&explained.stdout);
        assert!(text.contains("<sealed>"), "{text}");
        assert!(!text.contains(&secret), "explain prints the sealed value");
    }
}

/// A scenario whose recorded server answers `s1` with `width` bytes of
/// text and `d1` with a value nested `answer_depth` arrays deep, and whose
/// steps complete arguments from them by reference: `big` from `copies`
/// references to `s1` (`small` from 10), `deep` with the `d1` value placed
/// `argument_depth` arrays down (`shallow` 10 down).
fn bounded_values_scenario(
    width: usize,
    copies: usize,
    answer_depth: usize,
    argument_depth: usize,
) -> String {
    let nest =
        |depth: usize, inner: &str| format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth));
    let refs = |n: usize| vec!["{ from_step = \"s1\", pointer = \"/output/a\" }"; n].join(", ");
    let deep_ref = "{ from_step = \"d1\", pointer = \"/output/a\" }";
    let call = |id: &str, at: u32, arguments: String, verdict: &str, reason: Option<&str>| {
        format!(
            "[[steps]]\nid = \"{id}\"\nagent = \"a\"\nat = {at}\nserver = \"rec\"\ntool = \"get\"\narguments = {{ v = {arguments} }}\nexpect_verdict = \"{verdict}\"\n{}\n",
            reason.map(|r| format!("expect_reason = \"{r}\"\n")).unwrap_or_default()
        )
    };
    let bound = "nested deeper than 96 levels or larger than 4 MiB";
    let answers: String = ["small", "shallow"]
        .iter()
        .map(|s| format!("[[servers.answers]]\nstep = \"{s}\"\noutput = {{ a = \"ok\" }}\n\n"))
        .collect();
    format!(
        "schema_version = \"chio.arena.scenario/v1\"\nid = \"values_past_their_bounds\"\ntitle = \"values built by reference past a link's bounds\"\nrng_seed = 1\nvirtual_clock_start = \"2026-06-03T09:00:00.000Z\"\n\n\
         [determinism]\nscheduler = \"deterministic-multi-v1\"\nlocale = \"C\"\n\n[[nodes]]\nid = \"node-a\"\n\n[[kernels]]\nid = \"kernel-a\"\nnode = \"node-a\"\n\n\
         [[servers]]\nid = \"rec\"\nkernel = \"kernel-a\"\nkind = \"recorded\"\n\n[[servers.tools]]\nname = \"get\"\ninput_schema = '{{\"type\":\"object\"}}'\n\n\
         [[servers.answers]]\nstep = \"s1\"\noutput = {{ a = \"{}\" }}\n\n[[servers.answers]]\nstep = \"d1\"\noutput = {{ a = {} }}\n\n{answers}\
         [[agents]]\nid = \"a\"\nrole = \"r\"\nmodel = \"recorded:a\"\nseed_prompt_ref = \"prompts/p.txt\"\nkernel = \"kernel-a\"\n\n\
         [[grants]]\nid = \"gar\"\nagent = \"a\"\nserver = \"rec\"\ntools = [\"get\"]\n\n{}{}{}{}{}{}",
        "x".repeat(width),
        nest(answer_depth, "1"),
        call("s1", 10, "{}".into(), "allow", None),
        call("d1", 20, "{}".into(), "allow", None),
        call("big", 30, format!("[{}]", refs(copies)), "deny", Some(bound)),
        call("small", 40, format!("[{}]", refs(10)), "allow", None),
        call("deep", 50, nest(argument_depth, deep_ref), "deny", Some(bound)),
        call("shallow", 60, nest(10, deep_ref), "allow", None),
    )
}

// Proves a call whose arguments, completed by reference, would be larger than 4 MiB or nested deeper than 96 levels (70 copies of a 64 KiB answer; a 60-deep answer placed 40 arrays down) is refused by the agent's node with its own reason, the same bytes embedded, across node processes and one step at a time, and that the same references within the bounds are admitted.
#[test]
fn values_built_past_their_bounds_are_refused_on_every_topology() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.path().join("prompts")).unwrap();
    std::fs::copy(
        escapes().join("prompts/p.txt"),
        work.path().join("prompts/p.txt"),
    )
    .unwrap();
    let file = work.path().join("values_past_their_bounds.toml");
    std::fs::write(&file, bounded_values_scenario(64 * 1024, 70, 60, 40)).unwrap();
    passes_everywhere(&file);
}
