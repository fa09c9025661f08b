//! Where a report may go, as the binary decides it: a report path that is
//! an input of its command, lies inside the folder the command writes, or
//! is another report's path is refused before anything runs
//! (`CHIO-REPORT-PATH`, exit 2), and nothing is written or destroyed.

use crate::util;

use std::path::Path;

use util::{chio, copy_tree, explain, repo_path};

/// `chio ARGS` in `dir`, which must be refused as `CHIO-REPORT-PATH` with
/// exit 2 and a message holding `wanted`.
fn refused(dir: &Path, args: &[&str], wanted: &str) {
    let output = chio(dir, args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
    assert!(
        stderr.starts_with("error[CHIO-REPORT-PATH]"),
        "{}",
        explain(args, &output)
    );
    assert!(stderr.contains(wanted), "{wanted}: {stderr}");
    assert!(stderr.contains("  help: "), "{stderr}");
}

/// A folder with `arena init`'s triage scenario in `demo/`.
fn demo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let output = chio(tmp.path(), &["arena", "init", "demo"]);
    assert_eq!(output.status.code(), Some(0));
    tmp
}

// arena run: a report at the scenario, at a prompt it reads (or a link to one), inside the bundle folder, or at the other report's path is refused before the run; the scenario and prompt keep their bytes and no bundle is written.
#[test]
fn arena_run_refuses_reports_over_inputs_and_evidence() {
    let tmp = demo();
    let dir = tmp.path();
    let scenario = std::fs::read(dir.join("demo/scenario.toml")).unwrap();
    let prompt = std::fs::read(dir.join("demo/prompts/triager.txt")).unwrap();
    std::os::unix::fs::symlink("demo/prompts/triager.txt", dir.join("link.xml")).unwrap();
    let run = |extra: &[&'static str]| {
        let mut args = vec!["arena", "run", "demo/scenario.toml", "--out", "bundle"];
        args.extend_from_slice(extra);
        args
    };
    for (extra, wanted) in [
        (
            &["--html", "demo/scenario.toml"][..],
            "--html demo/scenario.toml is the scenario file demo/scenario.toml, which arena run reads",
        ),
        (
            &["--junit", "demo/prompts/triager.txt"],
            "--junit demo/prompts/triager.txt is a file or folder the scenario reads",
        ),
        (&["--junit", "link.xml"], "--junit link.xml is a file or folder the scenario reads"),
        (
            &["--junit", "demo/fixtures/issues/r.xml"],
            "lies inside a file or folder the scenario reads",
        ),
        (
            &["--junit", "bundle/arena.json"],
            "--junit bundle/arena.json lies inside the bundle folder bundle, which arena run writes",
        ),
        (
            &["--junit", "report.out", "--html", "./report.out"],
            "--junit report.out and --html ./report.out name the same file",
        ),
    ] {
        refused(dir, &run(extra), wanted);
        assert_eq!(std::fs::read(dir.join("demo/scenario.toml")).unwrap(), scenario);
        assert_eq!(std::fs::read(dir.join("demo/prompts/triager.txt")).unwrap(), prompt);
        assert!(!dir.join("bundle").exists() && !dir.join("report.out").exists());
    }
    // A bundle written before keeps every byte: it still replays.
    let ok = run(&["--junit", "reports/run.xml", "--html", "reports/run.html"]);
    let output = chio(dir, &ok);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&ok, &output));
    refused(
        dir,
        &run(&["--junit", "bundle/arena.json"]),
        "lies inside the bundle folder",
    );
    let replay = ["arena", "replay", "bundle"];
    let output = chio(dir, &replay);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        explain(&replay, &output)
    );
}

// arena matrix, arena evolve, chio report, chio eval and chio import refuse an output path that is an input or lies in what they write or read, before anything runs.
#[test]
fn every_report_flag_keeps_off_inputs_and_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_tree(&repo_path("scenarios"), &dir.join("scenarios"));
    let matrix = "scenarios/matrices/guard_pipelines.toml";
    refused(
        dir,
        &[
            "arena",
            "matrix",
            matrix,
            "--out",
            "mx",
            "--junit",
            "mx/run-ledger.json",
        ],
        "--junit mx/run-ledger.json lies inside the output folder mx, which arena matrix writes",
    );
    refused(
        dir,
        &["arena", "matrix", matrix, "--out", "mx", "--junit", matrix],
        "is the matrix file",
    );
    assert!(!dir.join("mx").exists());
    let evolve = "scenarios/adversaries-weakened.toml";
    let before = std::fs::read(dir.join(evolve)).unwrap();
    refused(
        dir,
        &[
            "arena",
            "evolve",
            evolve,
            "--generations",
            "1",
            "--out",
            "ev",
            "--sarif",
            evolve,
        ],
        "--sarif scenarios/adversaries-weakened.toml is the scenario file",
    );
    refused(
        dir,
        &[
            "arena",
            "evolve",
            evolve,
            "--generations",
            "1",
            "--out",
            "ev",
            "--html",
            "ev/leaderboard.json",
        ],
        "lies inside the output root ev, which arena evolve writes",
    );
    assert_eq!(std::fs::read(dir.join(evolve)).unwrap(), before);
    assert!(!dir.join("ev").exists());
    let run = [
        "arena",
        "run",
        "scenarios/walking_skeleton.toml",
        "--out",
        "b",
    ];
    let output = chio(dir, &run);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&run, &output));
    let manifest = std::fs::read(dir.join("b/arena.json")).unwrap();
    refused(
        dir,
        &["report", "b", "--out", "b/arena.json"],
        "--out b/arena.json lies inside the result PATH b, which report reads",
    );
    refused(
        dir,
        &[
            "eval",
            "--from-bundle",
            "b",
            "any-step",
            "--write-envelope",
            "b/arena.json",
        ],
        "--write-envelope b/arena.json lies inside the bundle --from-bundle reads",
    );
    assert_eq!(std::fs::read(dir.join("b/arena.json")).unwrap(), manifest);
    std::fs::write(dir.join("env.json"), "{}").unwrap();
    refused(
        dir,
        &["eval", "env.json", "--write-envelope", "env.json"],
        "--write-envelope env.json is the envelope file",
    );
    assert_eq!(std::fs::read(dir.join("env.json")).unwrap(), b"{}");
    refused(
        dir,
        &[
            "import",
            "mcp",
            "env.json",
            "--id",
            "s",
            "--out",
            "./env.json",
        ],
        "--out ./env.json is the tools/list result env.json, which import mcp reads",
    );
    std::fs::create_dir(dir.join("t")).unwrap();
    std::fs::write(dir.join("t/scenario.toml"), "{}").unwrap();
    refused(
        dir,
        &[
            "import",
            "trace",
            "t/scenario.toml",
            "--format",
            "mcp",
            "--out",
            "t",
        ],
        "--out t/scenario.toml is the trace t/scenario.toml, which import trace reads",
    );
    assert_eq!(std::fs::read(dir.join("env.json")).unwrap(), b"{}");
    assert_eq!(std::fs::read(dir.join("t/scenario.toml")).unwrap(), b"{}");
}

// A report or an envelope whose path holds a named pipe or a symbolic link is refused (CHIO-REPORT-WRITE, naming the path), and the pipe, the link and its target are left as they were.
#[test]
fn reports_never_replace_a_pipe_or_a_link() {
    use std::os::unix::fs::FileTypeExt;
    let tmp = demo();
    let dir = tmp.path();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(dir.join("target.txt"), b"kept").unwrap();
    std::os::unix::fs::symlink("target.txt", dir.join("link.html")).unwrap();
    let run = ["arena", "run", "demo/scenario.toml", "--out", "bundle"];
    let output = chio(dir, &run);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&run, &output));
    for args in [
        &[
            "arena",
            "run",
            "demo/scenario.toml",
            "--out",
            "b2",
            "--junit",
            "pipe",
        ][..],
        &["report", "bundle", "--out", "link.html"],
        &["report", "bundle", "--out", "pipe"],
    ] {
        let output = chio(dir, args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{}", explain(args, &output));
        assert!(stderr.starts_with("error[CHIO-REPORT-WRITE]"), "{stderr}");
        assert!(stderr.contains("not a regular file"), "{stderr}");
        assert!(
            stderr.contains("pass a path that is new or a regular file"),
            "{stderr}"
        );
    }
    let kind = |name: &str| {
        std::fs::symlink_metadata(dir.join(name))
            .unwrap()
            .file_type()
    };
    assert!(kind("pipe").is_fifo());
    assert!(kind("link.html").is_symlink());
    assert_eq!(std::fs::read(dir.join("target.txt")).unwrap(), b"kept");
}
