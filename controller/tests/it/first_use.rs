//! What a new user met on first use, each as the real binary shows it in a
//! fresh copy of the reference scenarios: the manual page of a command,
//! the help of a read-only command given a folder that is not a bundle, a
//! diff of two scenarios' bundles, mismatches labelled as what they are,
//! `--> FILE:LINE:COLUMN` for a syntax error and a failed step, a missing
//! seed prompt, an envelope built from a recorded call, and error codes
//! named in the documentation.

use crate::util;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use chio_controller::error::documented_codes;
use util::{copy_tree, repo_path, run};

fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_tree(&repo_path("scenarios"), &tmp.path().join("scenarios"));
    tmp
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `deny_reasons.toml` with its first step expecting `deny` (a verdict
/// mismatch) and its first `expect_reason` changed (a reason mismatch).
fn write_mismatches(dir: &Path, verdict: bool, reason: bool) -> String {
    let mut text = std::fs::read_to_string(dir.join("scenarios/deny_reasons.toml")).unwrap();
    if verdict {
        text = text.replacen("expect_verdict = \"allow\"", "expect_verdict = \"deny\"", 1);
    }
    if reason {
        text = text.replacen(
            "expect_reason = \"matches forbidden glob **/.env\"",
            "expect_reason = \"no such reason\"",
            1,
        );
    }
    let name = format!("scenarios/mismatch-{verdict}-{reason}.toml");
    std::fs::write(dir.join(&name), text).unwrap();
    name
}

// `chio man` lists chio-arena(1), and `chio man arena` prints that page; a word naming no command is a coded refusal.
#[test]
fn man_prints_every_page_it_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let main = stdout(&run(tmp.path(), &["man"], 0));
    assert!(main.contains("chio\\-arena(1)"), "{main}");
    let page = stdout(&run(tmp.path(), &["man", "arena"], 0));
    assert!(page.contains(".TH chio-arena 1"), "{page}");
    assert!(page.contains("chio\\-arena\\-run(1)"), "{page}");
    let run_page = stdout(&run(tmp.path(), &["man", "arena", "run"], 0));
    assert!(run_page.contains(".TH chio-arena-run 1"), "{run_page}");
    let refused = stderr(&run(tmp.path(), &["man", "arena", "nope"], 2));
    assert!(
        refused.starts_with("error[CHIO-CLI-MAN-UNKNOWN]: man: `chio arena` has no command `nope`"),
        "{refused}"
    );
}

// Replay, diff and explain of a folder a run did not write suggest the folder a run writes, never a --out they do not have.
#[test]
fn reading_commands_do_not_suggest_out() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("used")).unwrap();
    std::fs::write(tmp.path().join("used/notes.txt"), "x").unwrap();
    for args in [
        vec!["arena", "replay", "used"],
        vec!["arena", "diff", "used", "used"],
        vec!["arena", "explain", "used", "step"],
    ] {
        let text = stderr(&run(tmp.path(), &args, 2));
        assert!(text.starts_with("error[CHIO-ARENA-BUNDLE]"), "{text}");
        let help = text.lines().find(|l| l.starts_with("  help:")).unwrap();
        assert_eq!(
            help,
            "  help: pass the folder a run wrote with `chio arena run --out DIR` (it holds arena.json)"
        );
    }
}

// A diff of two scenarios' bundles says so first, naming both ids and digests; a diff of one scenario's runs does not.
#[test]
fn diff_of_two_scenarios_says_so_first() {
    let tmp = workspace();
    let dir = tmp.path();
    run(
        dir,
        &[
            "arena",
            "run",
            "scenarios/walking_skeleton.toml",
            "--out",
            "a",
        ],
        0,
    );
    run(
        dir,
        &["arena", "run", "scenarios/deny_reasons.toml", "--out", "b"],
        0,
    );
    run(
        dir,
        &[
            "arena",
            "run",
            "scenarios/walking_skeleton.toml",
            "--out",
            "c",
        ],
        0,
    );
    let text = stdout(&run(dir, &["arena", "diff", "a", "b"], 1));
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(
            "warning: the bundles are runs of different scenarios: walking_skeleton and deny_reasons (scenario sha256 "
        ),
        "{text}"
    );
    let json = stdout(&run(dir, &["arena", "diff", "a", "b", "--json"], 1));
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["scenarios_differ"]["left_id"], "walking_skeleton");
    assert_eq!(report["scenarios_differ"]["right_id"], "deny_reasons");
    let same = stdout(&run(dir, &["arena", "diff", "a", "c"], 0));
    assert!(!same.contains("warning:"), "{same}");
}

// With --keep-going, a reason mismatch is labelled a reason mismatch with expected and actual reason, apart from the verdict mismatch.
#[test]
fn keep_going_labels_reason_mismatches() {
    let tmp = workspace();
    let file = write_mismatches(tmp.path(), true, true);
    let text = stderr(&run(
        tmp.path(),
        &["arena", "run", &file, "--keep-going", "--out", "k"],
        1,
    ));
    assert!(
        text.contains("1 step(s) answered another verdict than expected: read-notes (expected deny, actual allow); 1 reason mismatch(es): step read-dotenv expected a reason containing \"no such reason\" but the reason is \"path /workspace/.env matches forbidden glob **/.env\""),
        "{text}"
    );
    let reasons_only = write_mismatches(tmp.path(), false, true);
    let text = stderr(&run(
        tmp.path(),
        &["arena", "run", &reasons_only, "--keep-going", "--out", "r"],
        1,
    ));
    assert!(
        text.starts_with("error[CHIO-ARENA-UNEXPECTED-REASON]: arena run: 1 reason mismatch(es): step read-dotenv expected"),
        "{text}"
    );
}

/// The `--> FILE:LINE:COLUMN` line of an error block, and the text there.
fn pointed(dir: &Path, text: &str) -> (String, String) {
    let at = text
        .lines()
        .find_map(|l| l.strip_prefix("  --> "))
        .unwrap_or_else(|| panic!("no location in {text}"));
    let mut parts = at.rsplitn(3, ':');
    let column: usize = parts.next().unwrap().parse().unwrap();
    let line: usize = parts.next().unwrap().parse().unwrap();
    let file = parts.next().unwrap().to_string();
    let source = std::fs::read_to_string(dir.join(&file)).unwrap();
    let rest = source.lines().nth(line - 1).unwrap()[column - 1..].to_string();
    (file, rest)
}

// A TOML syntax error and a failed step (stopped, or first of --keep-going) point at FILE:LINE:COLUMN of what they name.
#[test]
fn syntax_errors_and_failed_steps_are_located() {
    let tmp = workspace();
    let dir = tmp.path();
    std::fs::write(
        dir.join("scenarios/broken.toml"),
        "schema_version = \"chio.arena.scenario/v1\"\nid = \"x\"\ntitle = [\n",
    )
    .unwrap();
    for command in ["validate", "run"] {
        let text = stderr(&run(dir, &["arena", command, "scenarios/broken.toml"], 2));
        assert!(
            text.contains("\n  --> scenarios/broken.toml:3:10\n"),
            "{text}"
        );
    }
    let verdict = write_mismatches(dir, true, false);
    let text = stderr(&run(dir, &["arena", "run", &verdict, "--out", "v"], 1));
    let (file, rest) = pointed(dir, &text);
    assert_eq!(
        (file.as_str(), rest.as_str()),
        (verdict.as_str(), "\"deny\"")
    );
    let reason = write_mismatches(dir, false, true);
    let text = stderr(&run(dir, &["arena", "run", &reason, "--out", "r"], 1));
    assert_eq!(pointed(dir, &text).1, "\"no such reason\"");
    let text = stderr(&run(
        dir,
        &["arena", "run", &reason, "--keep-going", "--out", "rk"],
        1,
    ));
    assert_eq!(pointed(dir, &text).1, "\"no such reason\"");
}

// A seed_prompt_ref naming no file is refused by validate with its own code, naming the key and the file.
#[test]
fn missing_seed_prompt_is_refused_by_validate() {
    let tmp = workspace();
    let dir = tmp.path();
    let text = std::fs::read_to_string(dir.join("scenarios/adversaries-weakened.toml")).unwrap();
    let text = text.replace("prompts/review-pr-421.txt", "prompts/missing.txt");
    std::fs::write(dir.join("scenarios/no-prompt.toml"), text).unwrap();
    let refused = stderr(&run(
        dir,
        &["arena", "validate", "scenarios/no-prompt.toml"],
        2,
    ));
    assert!(
        refused.starts_with("error[CHIO-SCENARIO-SEED-PROMPT-MISSING]: arena validate: seed prompt \"prompts/missing.txt\" at agents[0].seed_prompt_ref is not a file next to the scenario"),
        "{refused}"
    );
    assert_eq!(pointed(dir, &refused).1, "\"prompts/missing.txt\"");
    run(
        dir,
        &["arena", "validate", "scenarios/adversaries-weakened.toml"],
        0,
    );
}

// `chio eval --from-bundle` builds the envelope of a recorded call, which evaluates as written to a file; a delegated call is refused by code; a missing clock's help names --now-unix-secs.
#[test]
fn eval_builds_an_envelope_from_a_recorded_call() {
    let tmp = workspace();
    let dir = tmp.path();
    run(
        dir,
        &["arena", "run", "scenarios/deny_reasons.toml", "--out", "b"],
        0,
    );
    let answer = stdout(&run(
        dir,
        &[
            "eval",
            "--from-bundle",
            "b",
            "read-outside-prefix",
            "--json",
            "--write-envelope",
            "env.json",
        ],
        0,
    ));
    let parsed: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(parsed["verdict"], "deny");
    assert_eq!(parsed["request_id"], "read-outside-prefix");
    assert_eq!(parsed["capability_id"], "operator-read");
    let again = stdout(&run(dir, &["eval", "env.json", "--json"], 0));
    assert_eq!(answer, again);
    let envelope: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("env.json")).unwrap()).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("b/arena.json")).unwrap()).unwrap();
    assert_eq!(
        envelope["trusted_issuers_hex"][0],
        manifest["arena_keys"]["authority"]["arena"]
    );
    assert_eq!(
        envelope["request"]["agent_id"],
        manifest["arena_keys"]["agent"]["operator"]
    );
    let admitted = stdout(&run(
        dir,
        &["eval", "--from-bundle", "b", "read-notes", "--json"],
        0,
    ));
    assert!(
        admitted.contains("\"verdict\":\"pending_approval\""),
        "{admitted}"
    );
    let refused = stderr(&run(
        dir,
        &["eval", "--from-bundle", "b", "deputy-reads"],
        2,
    ));
    assert!(
        refused.starts_with("error[CHIO-EVAL-FROM-BUNDLE]: eval: cannot build an envelope from step deputy-reads: it presents delegation"),
        "{refused}"
    );
    let unknown = stderr(&run(dir, &["eval", "--from-bundle", "b", "nope"], 2));
    assert!(
        unknown.starts_with("error[CHIO-ARENA-UNKNOWN-STEP]"),
        "{unknown}"
    );
    let mut no_clock = envelope.clone();
    no_clock
        .as_object_mut()
        .unwrap()
        .remove("clock_override_unix_ms");
    std::fs::write(dir.join("no-clock.json"), no_clock.to_string()).unwrap();
    let missing = stderr(&run(dir, &["eval", "no-clock.json"], 2));
    assert!(
        missing.starts_with("error[CHIO-EVAL-MISSING-CLOCK]"),
        "{missing}"
    );
    assert!(
        missing.contains("  help: pass --now-unix-secs N"),
        "{missing}"
    );
}

// A bundle never holds the files a scenario seals, and `chio eval --from-bundle` answers from a bundle only once it re-decides it: without the folder the sealed files were read from the bundle cannot be re-decided and is refused, naming why; with `--sealed-from` a call with literal arguments in a scenario that seals a file for another call (or for a server's answer) builds its envelope, and a call that took a sealed value is refused by code, naming why, as any call whose arguments were resolved during the run (before anything is re-decided). `--sealed-from` needs `--from-bundle`.
#[test]
fn eval_of_a_bundle_reads_sealed_files_to_re_decide_it() {
    let tmp = workspace();
    let dir = tmp.path();
    run(
        dir,
        &["arena", "run", "scenarios/sealed_secret.toml", "--out", "b"],
        0,
    );
    let unsealed = stderr(&run(
        dir,
        &["eval", "--from-bundle", "b", "read-notes", "--json"],
        2,
    ));
    assert!(
        unsealed.starts_with("error[CHIO-ARENA-BUNDLE]")
            && unsealed.contains(
                "it cannot be re-decided here (CHIO-CLI-SEALED-FROM: the run read 2 sealed file(s)"
            )
            && unsealed.contains("pass --sealed-from FOLDER"),
        "{unsealed}"
    );
    let answer = stdout(&run(
        dir,
        &[
            "eval",
            "--from-bundle",
            "b",
            "read-notes",
            "--sealed-from",
            "scenarios",
            "--json",
        ],
        0,
    ));
    assert!(
        answer.contains("\"verdict\":\"pending_approval\""),
        "{answer}"
    );
    let refused = stderr(&run(
        dir,
        &["eval", "--from-bundle", "b", "paste-the-token"],
        2,
    ));
    assert!(
        refused.starts_with("error[CHIO-EVAL-FROM-BUNDLE]")
            && refused.contains("earlier values or sealed files"),
        "{refused}"
    );
    let escapes = repo_path("tests/tests/it/escapes/sealed_answer_stays_sealed.toml");
    run(
        dir,
        &["arena", "run", escapes.to_str().unwrap(), "--out", "c"],
        0,
    );
    let folder = escapes.parent().unwrap().to_str().unwrap();
    let answer = stdout(&run(
        dir,
        &[
            "eval",
            "--from-bundle",
            "c",
            "get-pass",
            "--sealed-from",
            folder,
            "--json",
        ],
        0,
    ));
    assert!(answer.contains("\"request_id\":\"get-pass\""), "{answer}");
    let alone = stderr(&run(
        dir,
        &["eval", "e.json", "--sealed-from", "scenarios"],
        2,
    ));
    assert!(
        alone.starts_with("error[CHIO-CLI-SEALED-FROM]") && alone.contains("without --from-bundle"),
        "{alone}"
    );
}

/// Every `CHIO-...` token in the documentation pages and the README.
fn doc_codes() -> Vec<(String, String)> {
    let mut pages: Vec<_> = std::fs::read_dir(repo_path("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.push(repo_path("README.md"));
    pages.sort();
    let mut out = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for (at, _) in text.match_indices("CHIO-") {
            let token: String = text[at..]
                .chars()
                .take_while(|c| {
                    c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '-' || *c == '*'
                })
                .collect();
            // `CHIO-<DOMAIN>-<NAME>` describes the form, not a code.
            if token != "CHIO-" {
                out.push((page.display().to_string(), token));
            }
        }
    }
    out
}

// Every error or lint code the documentation names is one a command can print (a `CHIO-X-*` family names at least one), and the no-world refusal the schema page names is the one a run of a worldless scenario gets.
#[test]
fn documented_codes_exist_and_the_no_world_code_is_right() {
    let known: BTreeSet<&str> = documented_codes()
        .iter()
        .map(|(c, _)| *c)
        .chain(
            chio_arena::scenario::lint::LINT_RULES
                .iter()
                .map(|r| r.code),
        )
        .collect();
    let mut unknown = Vec::new();
    for (page, token) in doc_codes() {
        let ok = match token.strip_suffix("-*") {
            Some(family) => known.iter().any(|c| c.starts_with(&format!("{family}-"))),
            None => known.contains(token.trim_end_matches('-')),
        };
        if !ok {
            unknown.push(format!("{page}: {token}"));
        }
    }
    assert!(
        unknown.is_empty(),
        "codes the tables do not declare: {unknown:#?}"
    );

    let schema = std::fs::read_to_string(repo_path("docs/scenario-schema.md")).unwrap();
    let sentence =
        "one file `validate` accepts and `run` refuses is a scenario without a world\n(`";
    let at = schema
        .find(sentence)
        .expect("the schema page names the refusal")
        + sentence.len();
    let named = &schema[at..at + schema[at..].find('`').unwrap()];
    let tmp = workspace();
    let text = stderr(&run(
        tmp.path(),
        &[
            "arena",
            "run",
            "scenarios/pr-421-review-seed.toml",
            "--out",
            "x",
        ],
        2,
    ));
    assert!(
        text.starts_with(&format!("error[{named}]")),
        "{named}: {text}"
    );
}
