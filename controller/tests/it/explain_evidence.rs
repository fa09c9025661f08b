//! Process tests of `chio arena explain` as a reader of evidence: it shows a
//! step only once the bundle holds up, re-deciding it from its inputs as
//! `chio arena replay` and `chio report` do.

use crate::util;

use std::path::Path;

use serde_json::Value;
use util::{copy_tree, edit_manifest, repo_path, run};

/// The index of step `id` in the manifest `m`.
fn index_of(m: &Value, id: &str) -> usize {
    m["steps"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| s["step_id"] == id)
        .unwrap()
}

/// Asserts `chio arena explain BUNDLE STEP` prints every difference (`said`
/// among them) above the step and exits with `CHIO-ARENA-DRIFT`, in text
/// and in JSON.
fn explained_as_drift(dir: &Path, bundle: &str, step: &str, said: &str) {
    let args = ["arena", "explain", bundle, step];
    let output = run(dir, &args, 1);
    let text = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.starts_with("error[CHIO-ARENA-DRIFT]"), "{err}");
    let drift = text.find(said).unwrap_or_else(|| panic!("{said}: {text}"));
    let shown = text.find(&format!("\nstep {step} (")).expect("the step");
    assert!(drift < shown, "the drift is printed above the step: {text}");
    let args = ["arena", "explain", bundle, step, "--json"];
    let output = run(dir, &args, 1);
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let lines: Vec<&str> = doc["drift"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(lines.iter().any(|l| l.contains(said)), "{doc}");
}

// A bundle edited where no signature reaches agrees with its own receipts, yet is not explained as evidence: a refused revocation rewritten as done (its scenario's expectation and digest edited to match) and an allowed call's guard stage rewritten are each re-decided from the bundle's inputs, and explain prints every difference, naming the step and the field, above the step and exits non-zero. The bundle as its run wrote it explains as before, with no drift.
#[test]
fn explain_re_decides_the_bundle_it_shows() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_tree(&repo_path("scenarios"), &dir.join("scenarios"));
    run(
        dir,
        &["arena", "run", "scenarios/deny_reasons.toml", "--out", "b"],
        0,
    );
    let genuine = run(dir, &["arena", "explain", "b", "read-notes"], 0);
    let text = String::from_utf8_lossy(&genuine.stdout);
    assert!(text.starts_with("step read-notes (call)"), "{text}");
    let doc: Value = serde_json::from_slice(
        &run(dir, &["arena", "explain", "b", "read-notes", "--json"], 0).stdout,
    )
    .unwrap();
    assert!(doc.get("drift").is_none(), "{doc}");

    copy_tree(&dir.join("b"), &dir.join("revoked"));
    let scenario = dir.join("revoked/inputs/scenario.toml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    let edited = text.replacen(
        "expect = \"refused\"\nexpect_reason = \"the revoker holds no ancestor of capability operator-read\"\nat = 7",
        "expect = \"done\"\nat = 7",
        1,
    );
    assert_ne!(edited, text);
    std::fs::write(&scenario, &edited).unwrap();
    edit_manifest(dir, "revoked", |m| {
        m["scenario_sha256"] = chio_experiment::definition::sha256_hex(edited.as_bytes()).into();
        let i = index_of(m, "deputy-revokes-operator");
        let step = m["steps"][i].as_object_mut().unwrap();
        step.insert("actual".into(), "done".into());
        step.insert("expected".into(), "done".into());
        step.remove("reason");
        step.remove("expected_reason");
    });
    explained_as_drift(
        dir,
        "revoked",
        "deputy-revokes-operator",
        "step deputy-revokes-operator (#6): verdict differs (done in the bundle, refused when re-decided)",
    );

    copy_tree(&dir.join("b"), &dir.join("traced"));
    edit_manifest(dir, "traced", |m| {
        let i = index_of(m, "read-notes");
        for stage in m["steps"][i]["trace"]["stages"].as_array_mut().unwrap() {
            if stage["stage"] == "guards" {
                stage["detail"] = "guard no-dotfiles: pass; guard injection: pass".into();
            }
        }
    });
    explained_as_drift(
        dir,
        "traced",
        "read-notes",
        "steps[0].trace (step read-notes)",
    );
}
