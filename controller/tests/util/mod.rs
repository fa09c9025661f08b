//! Shared helpers for the process tests: run the real `chio` binary in a
//! chosen directory, explain a failure with the command, status and both
//! streams, and copy or compare folders.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A path inside the repository.
pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// Variables that change what `chio` prints (log level, colour); removed
/// for every run so a developer's environment cannot change an output.
pub const OUTPUT_ENV: &[&str] = &["RUST_LOG", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"];

/// Runs `chio ARGS` with `dir` as working directory.
pub fn chio(dir: &Path, args: &[&str]) -> Output {
    chio_env(dir, args, &[])
}

/// Runs `chio ARGS` with `dir` as working directory and `env` set on top of
/// an environment without [`OUTPUT_ENV`].
pub fn chio_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chio"));
    command.args(args).current_dir(dir);
    for key in OUTPUT_ENV {
        command.env_remove(key);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("the chio binary runs")
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

/// Entries of a folder (not recursive).
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .expect("folder lists")
        .map(|e| e.expect("entry").path())
        .collect()
}

/// Every file under `dir`, by relative path, with its bytes.
pub fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("folder lists") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, std::fs::read(&path).expect("file reads"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Copies a folder recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, bytes).unwrap();
    }
}

/// The runnable reference scenarios shipped in `scenarios/`, by file stem:
/// every one that declares a world (a world-less file such as the seed's
/// example validates but is refused by `arena run`, see
/// `worldless_scenarios`).
pub fn reference_scenarios() -> Vec<String> {
    let mut names: Vec<String> = entries(&repo_path("scenarios"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| chio_arena::load_scenario(p).is_ok_and(|s| s.has_world()))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The reference scenarios that declare no world, by file stem.
pub fn worldless_scenarios() -> Vec<String> {
    let mut names: Vec<String> = entries(&repo_path("scenarios"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| chio_arena::load_scenario(p).is_ok_and(|s| !s.has_world()))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
