//! Every file a command reads as input is a regular file, read no further
//! than its bound: a device, a link to one or a named pipe is refused
//! before it is read (never read until memory runs out, never waited on),
//! and a file over the bound is refused naming the bound.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::util::{explain, OUTPUT_ENV};

/// Runs `chio ARGS` in `dir` with `stdin`, killed and failed after 30
/// seconds: a reader with no bound would run until memory runs out, and
/// one that opens a named pipe would wait forever.
fn chio_bounded(dir: &Path, args: &[&str], stdin: Stdio) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chio"));
    command
        .args(args)
        .current_dir(dir)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for key in OUTPUT_ENV {
        command.env_remove(key);
    }
    let mut child = command.spawn().expect("chio starts");
    let started = Instant::now();
    while child.try_wait().expect("chio is waited on").is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chio {} did not end within 30 s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let _ = child.stdout.take().unwrap().read_to_end(&mut stdout);
    let _ = child.stderr.take().unwrap().read_to_end(&mut stderr);
    Output {
        status: child.wait().unwrap(),
        stdout,
        stderr,
    }
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

// A device, a link to a device and a named pipe given as a scenario, an envelope, a trace, a tools/list result or a matrix are refused at once with exit 2, naming the file and what it is.
#[test]
fn devices_and_pipes_are_refused_unread() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::os::unix::fs::symlink("/dev/zero", dir.join("scenario.toml")).unwrap();
    mkfifo(&dir.join("pipe.toml"));
    mkfifo(&dir.join("pipe.json"));
    let cases: [(&[&str], &str, &str); 8] = [
        (
            &["arena", "validate", "scenario.toml"],
            "CHIO-SCENARIO-UNREADABLE",
            "scenario.toml\": it is a device, not a regular file",
        ),
        (
            &["arena", "run", "pipe.toml"],
            "CHIO-SCENARIO-UNREADABLE",
            "pipe.toml\": it is a named pipe, not a regular file",
        ),
        (
            &["eval", "/dev/zero"],
            "CHIO-EVAL-UNREADABLE",
            "cannot read /dev/zero: it is a device, not a regular file",
        ),
        (
            &["eval", "pipe.json"],
            "CHIO-EVAL-UNREADABLE",
            "cannot read pipe.json: it is a named pipe, not a regular file",
        ),
        (
            &[
                "import",
                "trace",
                "/dev/zero",
                "--format",
                "mcp",
                "--out",
                "o",
            ],
            "CHIO-IMPORT-UNREADABLE",
            "cannot read /dev/zero: it is a device, not a regular file",
        ),
        (
            &["import", "mcp", "/dev/zero", "--id", "s"],
            "CHIO-IMPORT-UNREADABLE",
            "cannot read /dev/zero: it is a device, not a regular file",
        ),
        (
            &["import", "mcp", "pipe.json", "--id", "s"],
            "CHIO-IMPORT-UNREADABLE",
            "cannot read pipe.json: it is a named pipe, not a regular file",
        ),
        (
            &["arena", "matrix", "scenario.toml"],
            "CHIO-EXPERIMENT-UNREADABLE",
            "scenario.toml\": it is a device, not a regular file",
        ),
    ];
    for (args, code, wanted) in cases {
        let output = chio_bounded(dir, args, Stdio::null());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
        assert!(stderr.starts_with(&format!("error[{code}]")), "{stderr}");
        assert!(stderr.contains(wanted), "{stderr}");
        assert!(!dir.join("o").exists(), "{}", explain(args, &output));
    }
}

// An envelope over its 64 MiB bound, from a file or from standard input, is refused after one byte past the bound, naming the bound.
#[test]
fn an_envelope_over_its_bound_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let big = std::fs::File::create(dir.join("big.json")).unwrap();
    big.set_len((64 << 20) + 1).unwrap();
    let bound = "it holds more than 64 MiB (67108864 bytes), the most an envelope may hold";
    let output = chio_bounded(dir, &["eval", "big.json"], Stdio::null());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot read big.json: {bound}")),
        "{stderr}"
    );
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let output = chio_bounded(dir, &["eval", "-"], Stdio::from(zero));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error[CHIO-EVAL-UNREADABLE]"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("cannot read standard input: {bound}")),
        "{stderr}"
    );
}
