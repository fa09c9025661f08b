//! The controller's own process tests run the `chio` binary cargo built for
//! this package (`CARGO_BIN_EXE_chio`); everything else (the runner,
//! failure explanations, folder trees, repository paths, reference
//! scenario lists) is the shared helper library `chio-tests`.

use std::path::Path;
use std::process::Output;

pub use chio_tests::{
    copy_tree, entries, explain, reference_scenarios, repo_path, tree, worldless_scenarios,
    OUTPUT_ENV,
};

/// Runs `chio ARGS` with `dir` as working directory.
pub fn chio(dir: &Path, args: &[&str]) -> Output {
    chio_env(dir, args, &[])
}

/// Runs `chio ARGS` with `dir` as working directory and `env` set on top of
/// an environment without [`OUTPUT_ENV`].
/// Edits `dir/bundle/arena.json` with `edit`, keeping it canonical.
pub fn edit_manifest(dir: &Path, bundle: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join(bundle).join("arena.json");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut manifest);
    let text = chio_kernel::canonical::to_canonical_string(&manifest).unwrap();
    std::fs::write(path, format!("{text}\n")).unwrap();
}

/// `chio ARGS` in `dir`, asserting it exits with `code`.
pub fn run(dir: &Path, args: &[&str], code: i32) -> Output {
    let output = chio(dir, args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        explain(args, &output)
    );
    output
}

pub fn chio_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    chio_tests::run_binary(Path::new(env!("CARGO_BIN_EXE_chio")), dir, args, env)
}

/// Edits the manifest of a run of the stopped control
/// (`scenarios/campaigns/controls/misexpected_read.toml`, whose one step the
/// kernel allowed) where no signature reaches: the step rewritten as a deny
/// no kernel decided, with no receipt or trace, and the run as completed
/// with no receipt under `root`, the Merkle root of none. The caller empties
/// `receipts.ndjson`.
pub fn forge_receiptless_deny(manifest: &mut serde_json::Value, root: &str) {
    let step = manifest["steps"][0].as_object_mut().unwrap();
    for key in ["receipt_id", "trace", "recorded"] {
        step.remove(key);
    }
    step.insert("verdict".into(), "deny".into());
    step.insert("actual".into(), "deny".into());
    step.insert("pass".into(), true.into());
    step.insert(
        "reason".into(),
        "agent solo does not hold capability solo-read".into(),
    );
    step.insert("reason_code".into(), "capability-not-held".into());
    let m = manifest.as_object_mut().unwrap();
    m.insert("receipt_count".into(), 0.into());
    m.insert("receipt_root".into(), root.into());
    m.insert("mismatches".into(), serde_json::Value::Array(Vec::new()));
    m.insert("status".into(), "completed".into());
    m.remove("stopped");
}
