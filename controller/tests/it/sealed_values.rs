//! Sealed values, through the `chio` binary: a call argument read from a
//! secret file reaches the guards, and nothing the run writes (the bundle,
//! the table, `--json`, `explain`) holds a run of 8 of its characters;
//! replay reads the files again from the folder it is given and refuses
//! one whose digest changed.

use crate::util;

use std::path::Path;

use serde_json::Value;
use sha2::{Digest, Sha256};
use util::{chio, copy_tree, explain, repo_path, tree};

const TOKEN: &str = "fixtures/secrets/token.txt";
const PASSPHRASE: &str = "fixtures/secrets/passphrase.txt";

/// The scenario's folder copied, so a test may change a secret.
fn staged(dir: &Path) {
    let scenarios = repo_path("scenarios");
    for rel in ["fixtures/secrets", "fixtures/sealed-secret"] {
        copy_tree(&scenarios.join(rel), &dir.join(rel));
    }
    copy_tree(&scenarios.join("prompts"), &dir.join("prompts"));
    std::fs::copy(
        scenarios.join("sealed_secret.toml"),
        dir.join("sealed_secret.toml"),
    )
    .expect("scenario copied");
}

fn secret(dir: &Path, rel: &str) -> String {
    let text = std::fs::read_to_string(dir.join(rel)).expect("secret readable");
    text.trim_end_matches('\n').to_string()
}

/// Every run of 8 characters of `secret` found in `bytes`, as text.
fn windows_in(bytes: &[u8], secret: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let chars: Vec<char> = secret.chars().collect();
    chars
        .windows(chio_kernel::seal::WINDOW)
        .map(|w| w.iter().collect::<String>())
        .filter(|w| text.contains(w.as_str()))
        .collect()
}

fn assert_sealed(what: &str, bytes: &[u8], secrets: &[String]) {
    for secret in secrets {
        let found = windows_in(bytes, secret);
        assert!(
            found.is_empty(),
            "{what} holds {} runs of a sealed value",
            found.len()
        );
    }
}

// Proves a credential read from a file is stopped by the guard that scans arguments, a passphrase's prefix denial shows <sealed>, and no file of the bundle, no line of the table or the --json document and no explanation holds 8 characters of either secret.
#[test]
fn sealed_values_reach_the_guards_and_never_the_evidence() {
    let tmp = tempfile::tempdir().unwrap();
    staged(tmp.path());
    let secrets = [secret(tmp.path(), TOKEN), secret(tmp.path(), PASSPHRASE)];

    let args = ["arena", "run", "sealed_secret.toml", "--out", "run"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert_sealed("the table", &output.stdout, &secrets);
    assert_sealed("standard error", &output.stderr, &secrets);

    let bundle = tmp.path().join("run");
    let files = tree(&bundle);
    for (rel, bytes) in &files {
        assert_sealed(rel, bytes, &secrets);
    }
    assert!(
        !files.keys().any(|rel| rel.contains("secrets")),
        "the bundle copied a sealed file: {:?}",
        files.keys().collect::<Vec<_>>()
    );
    let manifest: Value = serde_json::from_slice(&files["arena.json"]).expect("arena.json is JSON");
    for (rel, text) in [TOKEN, PASSPHRASE].iter().zip(&secrets) {
        assert_eq!(
            manifest["sealed"][rel],
            hex::encode(Sha256::digest(text.as_bytes())),
            "the manifest records the digest of {rel}"
        );
    }
    let step = |id: &str| {
        manifest["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["step_id"] == id)
            .unwrap_or_else(|| panic!("step {id} recorded"))
            .clone()
    };
    assert_eq!(
        step("paste-the-token")["reason_code"],
        "credential-in-arguments"
    );
    assert_eq!(
        step("passphrase-as-a-path")["reason"],
        "path <sealed> (argument /path) is outside the granted prefix /workspace/"
    );
    assert_eq!(step("paste-the-passphrase")["verdict"], "allow");

    let args = [
        "arena",
        "run",
        "sealed_secret.toml",
        "--out",
        "json",
        "--json",
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert_sealed("the --json document", &output.stdout, &secrets);

    for id in [
        "paste-the-token",
        "passphrase-as-a-path",
        "paste-the-passphrase",
    ] {
        // Re-deciding the bundle reads the sealed files again.
        let args = ["arena", "explain", "run", id, "--sealed-from", "."];
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
        assert_sealed("an explanation", &output.stdout, &secrets);
    }
    let args = ["arena", "explain", "run", "paste-the-token"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(
        String::from_utf8_lossy(&output.stderr).starts_with("error[CHIO-CLI-SEALED-FROM]"),
        "{}",
        explain(&args, &output)
    );
}

// Proves a replay needs the folder the sealed files are in, reproduces the run from it, and names a sealed file whose text changed without printing it.
#[test]
fn replay_reads_sealed_files_again_and_checks_their_digests() {
    let tmp = tempfile::tempdir().unwrap();
    staged(tmp.path());
    let args = ["arena", "run", "sealed_secret.toml", "--out", "run"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));

    let args = ["arena", "replay", "run"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error[CHIO-CLI-SEALED-FROM]"), "{stderr}");
    assert!(stderr.contains("--sealed-from"), "{stderr}");

    let args = ["arena", "replay", "run", "--sealed-from", ".", "--json"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let report: Value = serde_json::from_slice(&output.stdout).expect("replay report");
    assert_eq!(report["identical"], true);

    let changed = "ghp_Changed0Token1Value2Is3Forty4Chars5X";
    std::fs::write(tmp.path().join(TOKEN), format!("{changed}\n")).unwrap();
    let args = ["arena", "replay", "run", "--sealed-from", "."];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("error[CHIO-ARENA-DRIFT]"), "{stderr}");
    assert!(stderr.contains(TOKEN), "{stderr}");
    assert_sealed("the drift error", &output.stderr, &[changed.to_string()]);
}
