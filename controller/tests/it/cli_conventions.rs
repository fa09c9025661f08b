//! The CLI's conventions as processes see them: `chio completions SHELL`
//! and `chio man` generated from the clap definitions, `--color` with
//! `NO_COLOR` and `CLICOLOR_FORCE`, and `--quiet`/`--verbose` against
//! `RUST_LOG`. Each test runs the real binary in a fresh temporary
//! directory.

use crate::util;

use util::{chio, chio_env, explain, repo_path};

const ESC: &str = "\x1b[";

// The bash completion script names every command group and the arena subcommands; zsh, fish, elvish and powershell scripts generate too.
#[test]
fn completions_name_the_subcommands() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["completions", "bash"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let script = String::from_utf8(output.stdout).unwrap();
    assert!(script.contains("_chio()"), "{script}");
    for word in [
        "arena",
        "eval",
        "campaign",
        "node",
        "trust",
        "completions",
        "man",
        "validate",
        "run",
        "replay",
        "diff",
        "explain",
        "matrix",
        "evolve",
        "promote",
        "report",
        "--html",
        "--junit",
        "--sarif",
        "--color",
    ] {
        assert!(script.contains(word), "bash completions lack {word}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let args = ["completions", shell];
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("arena"),
            "{shell}"
        );
    }
    let args = ["completions", "tcsh"];
    assert_eq!(
        chio(tmp.path(), &args).status.code(),
        Some(2),
        "an unknown shell is refused"
    );
}

// The man page is roff for chio(1), lists the arena command group and the global flags, and is the same bytes every time.
#[test]
fn man_page_is_generated_from_the_definitions() {
    let tmp = tempfile::tempdir().unwrap();
    let first = chio(tmp.path(), &["man"]);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        explain(&["man"], &first)
    );
    let page = String::from_utf8(first.stdout.clone()).unwrap();
    assert!(page.contains(".TH chio 1"), "{page}");
    assert!(page.contains("arena"), "{page}");
    assert!(
        page.contains("\\-\\-color") && page.contains("\\-\\-verbose"),
        "{page}"
    );
    assert_eq!(first.stdout, chio(tmp.path(), &["man"]).stdout);
}

fn run_table(env: &[(&str, &str)], extra: &[&str]) -> (String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let file = repo_path("scenarios/walking_skeleton.toml");
    let mut args = vec!["arena", "run", file.to_str().unwrap(), "--out", "bundle"];
    args.extend_from_slice(extra);
    let output = chio_env(tmp.path(), &args, env);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    (
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

// CLICOLOR_FORCE colours the table off a terminal, NO_COLOR turns that off again, and --color always/never win over both.
#[test]
fn no_color_disables_colour() {
    let (forced, _) = run_table(&[("CLICOLOR_FORCE", "1")], &[]);
    assert!(forced.contains("\x1b[32mpass\x1b[0m"), "{forced:?}");
    let (plain, _) = run_table(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")], &[]);
    assert!(!plain.contains(ESC), "{plain:?}");
    assert_eq!(
        plain,
        run_table(&[], &[]).0,
        "no colour is the default off a terminal"
    );
    let (always, _) = run_table(&[("NO_COLOR", "1")], &["--color", "always"]);
    assert!(always.contains(ESC), "{always:?}");
    let (never, _) = run_table(&[("CLICOLOR_FORCE", "1")], &["--color", "never"]);
    assert!(!never.contains(ESC), "{never:?}");
    let (json, _) = run_table(&[], &["--color", "always", "--json"]);
    assert!(!json.contains(ESC), "JSON is never coloured");
}

// An error block is coloured only when asked, and its text stays the documented block.
#[test]
fn error_block_colour_follows_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = chio_env(tmp.path(), &["arena", "validate", "missing.toml"], &[]);
    let coloured = chio_env(
        tmp.path(),
        &["--color", "always", "arena", "validate", "missing.toml"],
        &[],
    );
    let plain = String::from_utf8(plain.stderr).unwrap();
    let coloured = String::from_utf8(coloured.stderr).unwrap();
    assert!(
        plain.starts_with("error[CHIO-SCENARIO-UNREADABLE]"),
        "{plain}"
    );
    assert_eq!(
        coloured.replace("\x1b[1;31m", "").replace("\x1b[0m", ""),
        plain
    );
    assert_ne!(coloured, plain);
}

// --verbose shows info logs, the default and --quiet do not, RUST_LOG wins over both, and --quiet with --verbose is refused.
#[test]
fn quiet_and_verbose_set_the_log_level_unless_rust_log_does() {
    let info = "starting embedded run";
    assert!(!run_table(&[], &[]).1.contains(info));
    assert!(run_table(&[], &["--verbose"]).1.contains(info));
    assert!(run_table(&[], &["-v"]).1.contains(info));
    assert!(!run_table(&[], &["--quiet"]).1.contains(info));
    assert!(!run_table(&[("RUST_LOG", "error")], &["-vv"])
        .1
        .contains(info));
    assert!(run_table(&[("RUST_LOG", "info")], &["--quiet"])
        .1
        .contains(info));
    let tmp = tempfile::tempdir().unwrap();
    let args = ["-q", "-v", "man"];
    assert_eq!(chio(tmp.path(), &args).status.code(), Some(2));
}
