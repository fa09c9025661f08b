//! Process tests for `chio arena init`: the real binary writes each
//! template into a fresh temporary folder, and what it wrote validates,
//! lints clean and runs with every step passing, embedded and across local
//! node processes, with the same bundle bytes; a taken file refuses the
//! command and changes nothing.

use crate::util;

use std::path::Path;

use util::{chio, explain, tree};

/// Runs `chio ARGS` in `dir` and asserts exit 0, returning standard output.
fn ok(dir: &Path, args: &[&str]) -> String {
    let output = chio(dir, args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(args, &output));
    String::from_utf8(output.stdout).expect("UTF-8")
}

// Every template, written by init, validates, lints clean and runs with every step passing embedded and with --topology local, byte for byte the same bundle.
#[test]
fn every_template_runs_green_embedded_and_local() {
    for template in ["triage", "finance", "multi-kernel"] {
        let tmp = tempfile::tempdir().expect("temp dir");
        let cwd = tmp.path();
        let printed = ok(cwd, &["arena", "init", "first", "--template", template]);
        assert!(
            printed.contains("chio arena run first/scenario.toml"),
            "{printed}"
        );
        let file = "first/scenario.toml";
        assert!(ok(cwd, &["arena", "validate", file]).contains("is valid"));
        let lint = ok(cwd, &["arena", "lint", file, "--deny-warnings"]);
        assert!(lint.ends_with(": no warnings\n"), "{template}: {lint}");
        let embedded = ok(cwd, &["arena", "run", file, "--out", "embedded"]);
        assert!(
            embedded.contains("result: passed") && embedded.contains(", 0 failed"),
            "{template}: {embedded}"
        );
        ok(
            cwd,
            &[
                "arena",
                "run",
                file,
                "--out",
                "local",
                "--topology",
                "local",
            ],
        );
        let (embedded, local) = (tree(&cwd.join("embedded")), tree(&cwd.join("local")));
        assert!(embedded.contains_key("arena.json"), "no bundle written");
        assert_eq!(
            embedded.keys().collect::<Vec<_>>(),
            local.keys().collect::<Vec<_>>(),
            "{template}: the bundles' file lists differ"
        );
        for (path, bytes) in &embedded {
            assert!(
                bytes == &local[path],
                "{template}: {path} differs between embedded and local"
            );
        }
    }
}

// Without --template init writes the triage template, and prints what it wrote.
#[test]
fn default_template_is_triage() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let printed = ok(tmp.path(), &["arena", "init", "s"]);
    assert!(
        printed.starts_with("wrote the triage template into s:\n"),
        "{printed}"
    );
    let text = std::fs::read_to_string(tmp.path().join("s/scenario.toml")).expect("written");
    assert!(text.contains("id = \"triage\""));
    assert!(tmp
        .path()
        .join("s/fixtures/issues/security/1042.md")
        .is_file());
}

// A second init into the same folder exits 2 naming the taken file and the fix, prints nothing on stdout and changes no file.
#[test]
fn init_refuses_to_overwrite() {
    let tmp = tempfile::tempdir().expect("temp dir");
    ok(tmp.path(), &["arena", "init", "s", "--template", "finance"]);
    std::fs::write(tmp.path().join("s/scenario.toml"), "edited").expect("edit");
    let before = tree(tmp.path());
    let args = ["arena", "init", "s", "--template", "finance"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(output.stdout.is_empty(), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(
            "error[CHIO-CLI-INIT-EXISTS]: arena init: s/scenario.toml already exists\n  help: choose another DIR, or remove s/scenario.toml first"
        ),
        "{stderr}"
    );
    assert_eq!(before, tree(tmp.path()), "a refused init changed files");
    assert_eq!(
        util::entries(tmp.path()).len(),
        1,
        "a refused init left a staging folder"
    );
}

// Another template into a folder that holds only unrelated files is written beside them.
#[test]
fn init_writes_beside_unrelated_files() {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(tmp.path().join("s")).expect("folder");
    std::fs::write(tmp.path().join("s/notes.md"), "mine").expect("write");
    ok(
        tmp.path(),
        &["arena", "init", "s", "--template", "multi-kernel"],
    );
    let written = tree(&tmp.path().join("s"));
    assert_eq!(written["notes.md"], b"mine");
    assert!(written.contains_key("scenario.toml"));
    assert!(written.contains_key("fixtures/shared/plan.md"));
}
