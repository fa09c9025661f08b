//! The `chio` binary for process tests, and running it.
//!
//! Cargo gives `CARGO_BIN_EXE_<name>` only to the tests of the package that
//! declares the binary (`chio-controller`), and artifact dependencies are
//! unstable. A suite of this package therefore asks the cargo that is
//! running it (`$CARGO`) to build `chio-controller`'s `chio` into the same
//! target folder and profile as the suite itself, once per test binary, and
//! runs the executable cargo reports. After `cargo test --workspace` the
//! binary is already built and the build is a no-op; a suite run alone
//! (`cargo test -p chio-tests`) builds it first, so it never runs a stale
//! binary. `controller/tests` keeps using its own `CARGO_BIN_EXE_chio`
//! through [`run_binary`].

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// Variables that change what `chio` prints (log level, colour); removed
/// for every run so a developer's environment cannot change an output.
pub const OUTPUT_ENV: &[&str] = &["RUST_LOG", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"];

/// The `chio` binary of this workspace, built on first use (see the module
/// doc). Panics, with cargo's own message, when it cannot be built.
pub fn chio() -> &'static Path {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BINARY.get_or_init(build_chio) {
        Ok(path) => path,
        Err(problem) => panic!("cannot build the chio binary for the process tests: {problem}"),
    }
}

/// Builds `chio` with the running cargo into this test binary's target
/// folder and profile, answering the executable's path.
fn build_chio() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    // <target>/<profile>/deps/<test>-<hash>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} is not inside a cargo target folder", exe.display()))?;
    let target_dir = profile_dir
        .parent()
        .ok_or_else(|| format!("{} has no parent", profile_dir.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut command = Command::new(cargo);
    command
        .current_dir(crate::files::repo_path(""))
        .args(["build", "--quiet", "-p", "chio-controller"])
        .args(["--bin", "chio", "--message-format=json"])
        .arg("--target-dir")
        .arg(target_dir)
        .stdin(Stdio::null());
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            command.arg("--release");
        }
        Some(other) => {
            command.args(["--profile", other]);
        }
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo build -p chio-controller --bin chio: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "chio")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| "cargo reported no chio executable".to_string())
}

/// Runs `binary ARGS` to completion in `dir`, with `env` set on top of an
/// environment without [`OUTPUT_ENV`] (nor `CHIO_TRUST_TOKEN`, so a token
/// always comes from the files a test wrote).
pub fn run_binary(binary: &Path, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(binary);
    command
        .args(args)
        .current_dir(dir)
        .env_remove("CHIO_TRUST_TOKEN");
    for key in OUTPUT_ENV {
        command.env_remove(key);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command
        .output()
        .unwrap_or_else(|e| panic!("{} does not run: {e}", binary.display()))
}

/// Runs `chio ARGS` to completion in `dir`.
pub fn run_chio(dir: &Path, args: &[&str]) -> Output {
    run_binary(chio(), dir, args, &[])
}

/// The command, status, stdout and stderr, for assertion messages.
pub fn explain(args: &[&str], output: &Output) -> String {
    format!(
        "command: chio {}\nstatus: {}\nstdout:\n{}\nstderr:\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
