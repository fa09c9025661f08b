//! Process tests for `chio arena validate`: the real binary on the seed's
//! example, the reference scenarios and a refused scenario, run in a fresh
//! temporary directory so any write would be seen.

use crate::util;

use util::{chio, entries, explain, repo_path};

// On the seed's example, --json prints canonical chio.arena.validate/v1 whose determinism object equals the seed's printed one.
#[test]
fn seed_example_prints_the_seed_witness() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = repo_path("arena/tests/fixtures/seed_pr_421_review.toml");
    let args = ["arena", "validate", file.to_str().unwrap(), "--json"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let stdout = String::from_utf8(output.stdout.clone()).expect("UTF-8");
    let printed: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let seed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path(
            "arena/tests/fixtures/seed_pr_421_review.run.json",
        ))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(printed["determinism"], seed["determinism"]);
    assert_eq!(printed["scenario_id"], seed["scenario_id"]);
    assert_eq!(printed["scenario_title"], seed["scenario_title"]);
    assert_eq!(printed["schema_version"], "chio.arena.validate/v1");
    let canonical = chio_kernel::canonical::to_canonical_string(&printed).unwrap();
    assert_eq!(stdout, format!("{canonical}\n"), "output is canonical JSON");
    assert!(entries(tmp.path()).is_empty(), "validate wrote files");
}

// Each reference scenario validates with exit 0 and a readable summary; two runs print identical bytes.
#[test]
fn reference_scenarios_validate_reproducibly() {
    let tmp = tempfile::tempdir().expect("temp dir");
    for name in [
        "pr-421-review.toml",
        "walking_skeleton.toml",
        "two_agent_tool_exchange.toml",
        "three_agent_triangular_delegation.toml",
    ] {
        let file = repo_path(&format!("scenarios/{name}"));
        let args = ["arena", "validate", file.to_str().unwrap()];
        let first = chio(tmp.path(), &args);
        assert_eq!(first.status.code(), Some(0), "{}", explain(&args, &first));
        let text = String::from_utf8_lossy(&first.stdout);
        assert!(text.contains("is valid"), "{}", explain(&args, &first));
        assert!(text.contains("schedule (execution order)"));
        let second = chio(tmp.path(), &args);
        assert_eq!(
            first.stdout, second.stdout,
            "{name} printed different bytes"
        );
    }
    assert!(entries(tmp.path()).is_empty(), "validate wrote files");
}

// A refused scenario exits 2, prints exactly the documented error block (pointing at the line and column of the second id) on stderr, nothing on stdout, and writes nothing.
#[test]
fn refusal_prints_the_error_block_and_exits_2() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = repo_path("arena/tests/invalid/duplicate_agent.toml");
    let args = ["arena", "validate", file.to_str().unwrap(), "--json"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(output.stdout.is_empty(), "{}", explain(&args, &output));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!("error[CHIO-SCENARIO-DUPLICATE-ID]: arena validate: duplicate agent id \"alice\" at agents[1].id\n  --> {}:21:6\n  help: give each agent a unique id\n  code: urn:chio:error:scenario:duplicate-id\n  docs: https://chio.computer/docs/reference/errors#error-scenario-duplicate-id\n", file.display())
    );
    assert!(
        entries(tmp.path()).is_empty(),
        "a refused scenario wrote files"
    );
}

// A missing file is invalid input (exit 2) with its own code.
#[test]
fn missing_file_exits_2() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let args = ["arena", "validate", "no-such-scenario.toml"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error[CHIO-SCENARIO-UNREADABLE]: arena validate: "),
        "{stderr}"
    );
}

// A secret in a refused scenario never reaches the terminal.
#[test]
fn secret_refusal_does_not_echo_the_value() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = repo_path("arena/tests/invalid/secret_sk.toml");
    let args = ["arena", "validate", file.to_str().unwrap()];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("steps[0].arguments.query"), "{stderr}");
    assert!(!stderr.contains("4f9a8b7c6d5e4f3a2b1c0d9e"), "{stderr}");
}

// docs/errors.md has an anchored heading for every code the three error tables declare, giving the exit code its class leads to, no heading for a code none declares, and lists the exit codes.
#[test]
fn every_code_is_documented() {
    use chio_controller::error::{docs_anchor, documented_codes, Exit};
    let doc = std::fs::read_to_string(repo_path("docs/errors.md")).expect("docs/errors.md");
    let codes = documented_codes();
    let declared = |code: &str| codes.iter().any(|(c, _)| *c == code);
    assert!(declared("CHIO-CAMPAIGN-LEDGER-EXISTS") && declared("CHIO-CLI-RECORD-SPEC"));
    let missing: Vec<String> = codes
        .iter()
        .map(|(c, _)| docs_anchor(c))
        .filter(|anchor| !doc.contains(&format!("### {anchor}\n")))
        .collect();
    assert!(missing.is_empty(), "undocumented codes: {missing:?}");
    for (code, class) in &codes {
        let exit = Exit::of(*class).code();
        assert!(
            doc.contains(&format!("`{code}`. Exit {exit}.")),
            "docs/errors.md does not give {code} exit {exit}"
        );
    }
    let anchors: std::collections::BTreeSet<String> =
        codes.iter().map(|(c, _)| docs_anchor(c)).collect();
    let stale: Vec<&str> = doc
        .lines()
        .filter_map(|line| line.strip_prefix("### "))
        .filter(|heading| heading.starts_with("error-") && !anchors.contains(*heading))
        .collect();
    assert!(
        stale.is_empty(),
        "documented codes no table declares: {stale:?}"
    );
    for exit in ["| 0 |", "| 1 |", "| 2 |", "| 3 |"] {
        assert!(doc.contains(exit), "exit code row {exit} missing");
    }
}

/// The codes a table of `section` in docs/errors.md lists in its `code`
/// column, each as often as rows name it.
fn table_codes(doc: &str, section: &str) -> Vec<String> {
    let body = doc
        .split(&format!("\n## {section}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/errors.md has no section {section}"));
    let body = body.split("\n## ").next().unwrap_or_default();
    let mut column = None;
    let mut codes = Vec::new();
    for line in body
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
    {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        match column {
            None => column = cells.iter().position(|c| *c == "code"),
            Some(i) => codes.extend(cells[i].split('`').skip(1).step_by(2).map(str::to_string)),
        }
    }
    assert!(column.is_some(), "section {section} has no code column");
    codes
}

// docs/errors.md lists the code of every reason the kernel and the node declare, and no code either does not.
#[test]
fn every_reason_code_is_documented() {
    let doc = std::fs::read_to_string(repo_path("docs/errors.md")).expect("docs/errors.md");
    let documented: std::collections::BTreeSet<String> = [
        "Deny reasons",
        "Refused delegate and revoke steps",
        "Fault denials",
    ]
    .iter()
    .flat_map(|section| table_codes(&doc, section))
    .collect();
    let declared: std::collections::BTreeSet<String> = chio_kernel::reason::ReasonCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .chain(
            chio_node::outage::NodeCode::ALL
                .iter()
                .map(|c| c.as_str().to_string()),
        )
        .collect();
    let missing: Vec<&String> = declared.difference(&documented).collect();
    assert!(missing.is_empty(), "undocumented reason codes: {missing:?}");
    let stale: Vec<&String> = documented.difference(&declared).collect();
    assert!(
        stale.is_empty(),
        "documented codes nothing declares: {stale:?}"
    );
}

// The schedule listing keeps its columns aligned whatever the length of the step and agent ids.
#[test]
fn schedule_listing_aligns_long_ids() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let scenarios = tmp.path().join("scenarios");
    util::copy_tree(
        &repo_path("scenarios/fixtures"),
        &scenarios.join("fixtures"),
    );
    util::copy_tree(&repo_path("scenarios/prompts"), &scenarios.join("prompts"));
    let text = std::fs::read_to_string(repo_path("scenarios/deny_reasons.toml")).unwrap();
    let long = "deputy-revokes-the-operators-grant-and-is-refused-for-want-of-authority";
    let edited = text.replace(
        "id = \"deputy-revokes-operator\"",
        &format!("id = \"{long}\""),
    );
    assert_ne!(edited, text);
    let file = scenarios.join("long.toml");
    std::fs::write(&file, edited).unwrap();
    let args = ["arena", "validate", file.to_str().unwrap()];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let listing: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "schedule (execution order)")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(listing.len(), 7, "{stdout}");
    // The action column starts at the same place on every line.
    let starts: Vec<usize> = listing
        .iter()
        .map(|l| {
            ["call ", "delegate ", "revoke "]
                .iter()
                .filter_map(|w| l.find(w))
                .min()
                .unwrap()
        })
        .collect();
    assert!(starts.windows(2).all(|w| w[0] == w[1]), "{stdout}");
    assert!(
        listing
            .iter()
            .any(|l| l.contains(&format!("{long}  revoke"))),
        "{stdout}"
    );
}

// The tool-poisoning reference prints one line per flagged definition (the catalog's two and the redefinition's, with its instant), naming the place and rule and never the text; a scenario with clean definitions prints none.
#[test]
fn flagged_definitions_are_listed_one_line_each() {
    let file = repo_path("scenarios/tool_poisoning.toml");
    let args = ["arena", "validate", file.to_str().unwrap()];
    let output = chio(&repo_path("scenarios"), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let printed = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("flagged definition: "))
        .collect();
    assert_eq!(
        lines,
        [
            "flagged definition: docs/summarise on kernel-a: ignore-previous-instructions (rule override-verb) at /description",
            "flagged definition: docs/translate on kernel-a from 2026-07-01T10:00:00.100Z: delimiter-confusion (rule special-token) at /inputSchema/properties/language/enum/2",
            "flagged definition: wiki/search on kernel-b: ignore-previous-instructions (rule override-verb) at /inputSchema/properties/query/description",
        ],
        "{printed}"
    );
    for word in ["IMPORTANT", "id_rsa", "im_start", ".aws"] {
        assert!(!lines.concat().contains(word), "{word}");
    }
    let clean = repo_path("scenarios/rug_pull.toml");
    let args = ["arena", "validate", clean.to_str().unwrap()];
    let output = chio(&repo_path("scenarios"), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert!(!String::from_utf8_lossy(&output.stdout).contains("flagged definition"));
}

// A title carrying terminal control sequences (retitle the window, clear the screen, move the cursor) is printed with each control character escaped by validate and by run, so it cannot forge what the reader sees; the JSON keeps the title as written.
#[test]
fn control_characters_in_a_title_reach_no_terminal() {
    let tmp = tempfile::tempdir().expect("temp dir");
    util::copy_tree(&repo_path("scenarios"), &tmp.path().join("s"));
    let file = tmp.path().join("s/walking_skeleton.toml");
    let text = std::fs::read_to_string(&file).unwrap().replacen(
        "title = \"one agent reads a note and is refused a forbidden path\"",
        "title = \"ok\\u001b]0;owned\\u0007\\u001b[2J\\u001b[1;1Hall 99 steps passed\\u202e\"",
        1,
    );
    std::fs::write(&file, text).unwrap();
    let path = file.to_str().unwrap();
    for args in [
        vec!["arena", "validate", path],
        vec!["arena", "run", path, "--out", "bundle"],
    ] {
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
        let stdout = String::from_utf8(output.stdout.clone()).unwrap();
        assert!(
            !stdout.contains('\u{1b}') && !stdout.contains('\u{7}') && !stdout.contains('\u{202e}'),
            "{stdout:?}"
        );
        assert!(
            stdout.contains(
                "ok\\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{1b}[1;1Hall 99 steps passed\\u{202e}"
            ),
            "{stdout}"
        );
    }
    let args = ["arena", "validate", path, "--json"];
    let output = chio(tmp.path(), &args);
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(printed["scenario_title"]
        .as_str()
        .unwrap()
        .starts_with("ok\u{1b}]0;owned"));
}
