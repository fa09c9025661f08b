//! The four results `chio report` renders, made by the real binary in one
//! temporary folder: a run bundle (with its `--html` page), an evolve
//! output (with its `--html` page), a matrix output (with its
//! `synthesis.html`), and a campaign ledger with one measured attempt in a
//! committed copy of the scenario tree; and hostile copies of each, whose
//! untrusted strings hold markup.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::git_repo::commit_all;
use crate::util::{chio, copy_tree, explain, repo_path};

/// Markup an untrusted string might hold.
pub const HOSTILE: &str = "</td><script>alert(\"x\")</script><img src=x onerror=alert(1)>'&";

/// The same, escaped.
pub const HOSTILE_ESCAPED: &str = "&lt;/td&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&#39;&amp;";

/// The run's scenario: messages, hand-overs and calls whose arguments take
/// values from earlier outputs.
pub const RUN_SCENARIO: &str = "scenarios/planner_reader.toml";
/// The search's scenario: a weakened kernel, so actions escape.
pub const EVOLVE_SCENARIO: &str = "scenarios/adversaries-weakened.toml";
/// The matrix: two axes, so its page has a grid, and validators.
pub const MATRIX: &str = "scenarios/matrices/protocol_reference.toml";

/// Where each result is.
pub struct Results {
    /// Holds everything.
    pub tmp: tempfile::TempDir,
    /// The run bundle.
    pub bundle: PathBuf,
    /// `arena run --html`.
    pub run_html: PathBuf,
    /// The evolve output root.
    pub evolve: PathBuf,
    /// `arena evolve --html`.
    pub evolve_html: PathBuf,
    /// The matrix output folder.
    pub matrix: PathBuf,
    /// The matrix file it was run from, which `chio report` of the folder
    /// takes as its `--declaration`.
    pub matrix_file: PathBuf,
    /// The campaign declaration.
    pub declaration: PathBuf,
    /// The campaign ledger.
    pub ledger: PathBuf,
}

/// Runs `chio` in `dir`, asserting exit 0.
pub fn ok(dir: &Path, args: &[&str]) -> std::process::Output {
    let output = chio(dir, args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(args, &output));
    output
}

/// A path as the command line takes it.
pub fn s(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Makes every result.
pub fn make() -> Results {
    let tmp = tempfile::tempdir().expect("a temporary folder");
    let dir = tmp.path();
    let bundle = dir.join("bundle");
    let run_html = dir.join("run.html");
    let scenario = repo_path(RUN_SCENARIO);
    ok(
        dir,
        &[
            "arena",
            "run",
            s(&scenario),
            "--out",
            s(&bundle),
            "--html",
            s(&run_html),
        ],
    );
    let evolve = dir.join("evolve");
    let evolve_html = dir.join("evolve.html");
    let scenario = repo_path(EVOLVE_SCENARIO);
    ok(
        dir,
        &[
            "arena",
            "evolve",
            s(&scenario),
            "--generations",
            "2",
            "--out",
            s(&evolve),
            "--html",
            s(&evolve_html),
        ],
    );
    let matrix = dir.join("matrix");
    ok(
        dir,
        &[
            "arena",
            "matrix",
            s(&repo_path(MATRIX)),
            "--out",
            s(&matrix),
        ],
    );
    let repo = dir.join("repo");
    copy_tree(&repo_path("scenarios"), &repo.join("scenarios"));
    commit_all(&repo);
    let declaration = repo.join("scenarios/campaigns/reference.toml");
    let ledger = dir.join("ledger.json");
    ok(
        dir,
        &["campaign", "template", s(&declaration), "--out", s(&ledger)],
    );
    ok(
        dir,
        &[
            "campaign",
            "run",
            s(&declaration),
            s(&ledger),
            "walking-skeleton/01",
            "--out",
            s(&dir.join("attempts")),
        ],
    );
    Results {
        tmp,
        bundle,
        run_html,
        evolve,
        evolve_html,
        matrix,
        matrix_file: repo_path(MATRIX),
        declaration,
        ledger,
    }
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    edit(&mut value);
    std::fs::write(path, serde_json::to_vec(&value).unwrap()).unwrap();
}

/// The hostile results: what `chio report` takes of each.
pub struct Hostile {
    /// The run bundle.
    pub bundle: PathBuf,
    /// The evolve output.
    pub evolve: PathBuf,
    /// The matrix output folder.
    pub matrix: PathBuf,
    /// The matrix file it was run from.
    pub matrix_file: PathBuf,
    /// The campaign ledger.
    pub ledger: PathBuf,
    /// The campaign declaration.
    pub declaration: PathBuf,
}

/// Hostile copies of the results: markup in the run's title, a step's
/// reason and its labels; in the search's scenario id and a population
/// (in its trace, the leaderboard derived again); in a matrix's title and
/// hypothesis (a matrix file of its own, run: `chio report` presents only a
/// synthesis its run records derive); as a campaign row's skip reason.
pub fn hostile(results: &Results) -> Hostile {
    let dir = results.tmp.path().join("hostile");
    let bundle = dir.join("bundle");
    copy_tree(&results.bundle, &bundle);
    edit_json(&bundle.join("arena.json"), |m| {
        m["scenario_title"] = Value::from(HOSTILE);
        let steps = m["steps"].as_array_mut().unwrap();
        // A refused hand-over's reason, which no receipt signs (a call's
        // reason edited is refused as a contradiction of its receipt),
        // still holding the part its step expects.
        let reason = format!("{}{HOSTILE}", steps[5]["reason"].as_str().unwrap());
        steps[5]["reason"] = Value::from(reason);
        let message = steps.iter_mut().find(|s| s["action"] == "message").unwrap();
        message["labels"] = serde_json::json!([HOSTILE]);
    });
    let evolve = dir.join("evolve");
    copy_tree(&results.evolve, &evolve);
    // The trace is edited, and the leaderboard derived from it again, as
    // `chio report` presents only a leaderboard its trace derives.
    let first: Value =
        serde_json::from_slice(&std::fs::read(evolve.join("leaderboard.json")).unwrap()).unwrap();
    let first = first["rows"][0]["population"].clone();
    edit_json(&evolve.join("evolve-trace.json"), |t| {
        t["scenario_id"] = Value::from(HOSTILE);
        for generation in t["generations"].as_array_mut().unwrap() {
            for sample in generation["samples"].as_array_mut().unwrap() {
                if sample["population"] == first {
                    sample["population"] = Value::from(HOSTILE);
                }
            }
        }
    });
    let trace = std::fs::read(evolve.join("evolve-trace.json")).unwrap();
    let trace = chio_adversary::report::TraceFile::parse(&trace, "evolve-trace.json").unwrap();
    let board = chio_adversary::Leaderboard::from_trace(&trace.scenario_id, &trace.generations);
    std::fs::write(evolve.join("leaderboard.json"), board.to_json().unwrap()).unwrap();
    let scenarios = dir.join("scenarios");
    copy_tree(&repo_path("scenarios"), &scenarios);
    let matrix_file = scenarios.join(MATRIX.trim_start_matches("scenarios/"));
    let text = std::fs::read_to_string(&matrix_file).unwrap();
    let quoted = format!("\"{}\"", HOSTILE.replace('"', "\\\""));
    let text = replace_line(&text, "title = ", &format!("title = {quoted}"));
    let (head, tail) = text.split_once("hypothesis = \"\"\"").unwrap();
    let (_, tail) = tail.split_once("\"\"\"").unwrap();
    std::fs::write(&matrix_file, format!("{head}hypothesis = {quoted}{tail}")).unwrap();
    let matrix = dir.join("matrix");
    ok(
        results.tmp.path(),
        &["arena", "matrix", s(&matrix_file), "--out", s(&matrix)],
    );
    let ledger = dir.join("ledger.json");
    std::fs::copy(&results.ledger, &ledger).unwrap();
    ok(
        results.tmp.path(),
        &[
            "campaign",
            "annotate",
            s(&results.declaration),
            s(&ledger),
            "walking-skeleton/02",
            "--skip",
            HOSTILE,
        ],
    );
    Hostile {
        bundle,
        evolve,
        matrix,
        matrix_file,
        ledger,
        declaration: results.declaration.clone(),
    }
}

/// `text` with its first line starting with `start` replaced by `line`.
fn replace_line(text: &str, start: &str, line: &str) -> String {
    let mut done = false;
    text.lines()
        .map(|l| {
            if !done && l.starts_with(start) {
                done = true;
                line.to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}
