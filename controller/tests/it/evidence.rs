//! Process tests of the commands that read a bundle as evidence (`chio
//! eval --from-bundle`, `chio report`, `chio arena explain`, `replay`,
//! `diff`): a recorded call is evaluated at its receipt's millisecond; a
//! bundle whose manifest contradicts its own signed receipts is refused;
//! text from a bundle reaches the terminal printable; and an entry that is
//! no regular file or folder is refused rather than read.

use crate::util;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use util::{chio, copy_tree, explain, repo_path};

/// A fresh copy of the reference scenarios.
fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_tree(&repo_path("scenarios"), &tmp.path().join("scenarios"));
    tmp
}

fn run(dir: &Path, args: &[&str], code: i32) -> Output {
    let output = chio(dir, args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        explain(args, &output)
    );
    output
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `chio ARGS` in `dir`, failing when it has not ended after a minute.
fn run_bounded(dir: &Path, args: &[&str]) -> Output {
    let (send, receive) = std::sync::mpsc::channel();
    let (dir, owned) = (
        dir.to_path_buf(),
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
    );
    std::thread::spawn(move || {
        let args: Vec<&str> = owned.iter().map(String::as_str).collect();
        send.send(chio(&dir, &args))
    });
    receive
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("chio {args:?} blocked"))
}

// A named pipe among a bundle's inputs, or a top-level file linked to a device, is refused by every command that reads the bundle, naming the file, instead of blocking or reading without end.
#[test]
fn entries_that_are_no_regular_file_are_refused() {
    let tmp = workspace();
    let dir = tmp.path();
    run(
        dir,
        &["arena", "run", "scenarios/deny_reasons.toml", "--out", "b"],
        0,
    );
    let fifo = dir.join("b/inputs/fixtures/deny-reasons/pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let commands: [&[&str]; 4] = [
        &["arena", "replay", "b"],
        &["arena", "explain", "b", "read-notes"],
        &["report", "b", "--out", "b.html"],
        &["eval", "--from-bundle", "b", "read-notes"],
    ];
    for args in commands {
        let output = run_bounded(dir, args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
        assert!(err.starts_with("error[CHIO-ARENA-BUNDLE]"), "{err}");
        assert!(
            err.contains("pipe") && err.contains("a named pipe"),
            "{err}"
        );
    }
    std::fs::remove_file(&fifo).unwrap();
    std::fs::remove_file(dir.join("b/receipts.ndjson")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("b/receipts.ndjson")).unwrap();
    for args in commands {
        let output = run_bounded(dir, args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
        assert!(
            err.contains("receipts.ndjson") && err.contains("a symbolic link"),
            "{err}"
        );
    }
}
