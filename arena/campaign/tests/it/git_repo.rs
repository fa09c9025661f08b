//! Git in a test's temporary folder: one committer identity, no signing,
//! `main` as the first branch. A module of `chio-campaign`'s test binary;
//! `chio-controller`'s test binary includes this file by path.

use std::path::Path;
use std::process::Command;

/// A well-formed commit id no repository here holds.
pub const INVENTED: &str = "4d1c0ffee4d1c0ffee4d1c0ffee4d1c0ffee4d1c";

/// Runs git in `dir`, asserting success, and returns its trimmed output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=campaign test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Makes `dir` a repository with everything in it committed; returns the commit.
pub fn commit_all(dir: &Path) -> String {
    if !dir.join(".git").exists() {
        git(dir, &["init", "-q"]);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "scenarios", "--allow-empty"]);
    git(dir, &["rev-parse", "HEAD"])
}
