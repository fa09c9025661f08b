//! Process tests for `chio arena matrix`: the shipped guard-pipeline matrix
//! (one established and one inconclusive gap, byte-identical synthesis
//! across runs, worker counts and an interrupted run resumed) and one test
//! per load-time refusal, each asserting exit 2, the message, and that
//! nothing was written.

mod util;

use std::path::{Path, PathBuf};

use util::{chio, explain, repo_path};

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const SYNTHESIS: [&str; 3] = ["synthesis.json", "synthesis.md", "synthesis.html"];

// The shipped matrix gives an established gap for the weaker pipeline and an inconclusive one for the equivalent one, with identical synthesis bytes across runs, worker counts and a resumed interruption.
#[test]
fn shipped_matrix_verdicts_and_reproducible_synthesis() {
    let tmp = tempfile::tempdir().unwrap();
    let file = repo_path("scenarios/matrices/guard_pipelines.toml");
    let file = file.to_str().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let args_a = [
        "arena",
        "matrix",
        file,
        "--json",
        "--out",
        a.to_str().unwrap(),
        "--workers",
        "2",
    ];
    let first = chio(tmp.path(), &args_a);
    assert_eq!(first.status.code(), Some(0), "{}", explain(&args_a, &first));
    let synthesis: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(
        synthesis["schema_version"],
        "chio.arena.matrix-synthesis/v1"
    );
    let verdict = |cell: &str| {
        synthesis["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["cell"] == cell)
            .map(|g| g["verdict"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(verdict("no-injection-guard"), "established");
    assert_eq!(verdict("reordered"), "inconclusive");
    assert_eq!(synthesis["verdict"]["draws"], 10000);
    assert_eq!(synthesis["verdict"]["seed"], 20260729);
    assert_eq!(first.stdout, read(&a.join("synthesis.json")));
    let html = String::from_utf8(read(&a.join("synthesis.html"))).unwrap();
    assert!(html.contains("<svg"), "the page has no chart");
    assert!(
        !html.contains("<script") && !html.contains(" src=") && !html.contains("href="),
        "the page loads something external"
    );

    let args_b = [
        "arena",
        "matrix",
        file,
        "--out",
        b.to_str().unwrap(),
        "--workers",
        "1",
    ];
    let second = chio(tmp.path(), &args_b);
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        explain(&args_b, &second)
    );
    for name in SYNTHESIS {
        assert_eq!(
            read(&a.join(name)),
            read(&b.join(name)),
            "{name} differs between runs"
        );
    }

    // Interrupt: drop some run records and the synthesis, then resume.
    let runs = b.join("runs");
    let mut records: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    records.sort();
    let kept = records[0].clone();
    let kept_bytes = read(&kept);
    for path in records.iter().skip(1).step_by(3) {
        std::fs::remove_file(path).unwrap();
    }
    for name in SYNTHESIS {
        std::fs::remove_file(b.join(name)).unwrap();
    }
    let removed = records.iter().skip(1).step_by(3).count();
    let refused = chio(tmp.path(), &args_b);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "{}",
        explain(&args_b, &refused)
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("CHIO-MATRIX-RUN-LEDGER-EXISTS"));
    assert!(
        !b.join("synthesis.json").exists(),
        "a refusal wrote the synthesis"
    );
    let args_r = [
        "arena",
        "matrix",
        file,
        "--out",
        b.to_str().unwrap(),
        "--resume",
    ];
    let resumed = chio(tmp.path(), &args_r);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        explain(&args_r, &resumed)
    );
    let text = String::from_utf8_lossy(&resumed.stdout);
    assert!(
        text.contains(&format!(
            "{} from the run ledger, {removed} executed",
            records.len() - removed
        )),
        "{text}"
    );
    assert_eq!(read(&kept), kept_bytes, "a recorded run was rerun");
    for name in SYNTHESIS {
        assert_eq!(
            read(&a.join(name)),
            read(&b.join(name)),
            "{name} differs after resume"
        );
    }
}

fn base_matrix(body: &str) -> String {
    let scenario = repo_path("scenarios/pr-421-review.toml");
    format!(
        "schema_version = \"chio.arena.matrix/v1\"\nid = \"m\"\ntitle = \"t\"\nscenario = {:?}\nroot = \"/\"\n\n[protocol]\nrepetitions = 2\n\n{body}",
        scenario.to_str().unwrap()
    )
}

fn assert_refused(body: &str, code: &str, message: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    std::fs::write(&file, base_matrix(body)).unwrap();
    let out = tmp.path().join("out");
    let args = [
        "arena",
        "matrix",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!("error[{code}]: arena matrix: ")),
        "{stderr}"
    );
    assert!(stderr.contains(message), "{stderr}");
    assert!(stderr.contains("  help: "), "{stderr}");
    assert!(output.stdout.is_empty());
    assert!(!out.exists(), "a refused matrix wrote {}", out.display());
    let entries: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(entries.len(), 1, "a refused matrix wrote files");
}

const GRID: &str = "[axes]\npipeline = [\"full\", \"weak\"]\n\n[values.pipeline.weak]\nguards = { kernel-a = [\"no-dotfiles\"] }\n\n";

// The first value of an axis declaring a delta is refused.
#[test]
fn refuses_a_baseline_delta() {
    assert_refused(
        &format!("{GRID}[values.pipeline.full]\nguards = {{ kernel-a = [] }}\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n"),
        "CHIO-MATRIX-BASELINE-DELTA",
        "axis \"pipeline\": value \"full\" is the baseline (the first value) and declares a delta",
    );
}

// A non-baseline value without a delta (a misspelling) is refused, naming the declared deltas.
#[test]
fn refuses_a_missing_delta() {
    assert_refused(
        "[axes]\npipeline = [\"full\", \"weka\"]\n\n[values.pipeline.weak]\nguards = { kernel-a = [] }\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n",
        "CHIO-MATRIX-MISSING-DELTA",
        "value \"weka\" declares no delta; only the first value (\"full\") is the baseline; deltas declared for this axis: [\"weak\"]",
    );
}

// A cell declared twice (a variant named like a grid cell) is refused.
#[test]
fn refuses_a_duplicate_cell() {
    assert_refused(
        &format!("{GRID}[variants.weak]\nguards = {{ kernel-a = [] }}\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n"),
        "CHIO-MATRIX-DUPLICATE-CELL",
        "cell \"weak\" is declared twice",
    );
}

// A reference that is not a cell is refused, listing the cells.
#[test]
fn refuses_a_reference_that_is_not_a_cell() {
    assert_refused(
        &format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"fulll\"\n"),
        "CHIO-MATRIX-UNKNOWN-REFERENCE",
        "verdict.reference \"fulll\" is not a cell; the cells are [\"full\", \"weak\"]",
    );
}

// A grid reference that leaves an axis out is refused.
#[test]
fn refuses_a_partial_grid_reference() {
    assert_refused(
        "[axes]\npipeline = [\"full\", \"weak\"]\nbudget = [\"none\", \"tight\"]\n\n[values.pipeline.weak]\nguards = { kernel-a = [] }\n\n[values.budget.tight]\ngrants = { reviewer-read = { max_invocations = 1 } }\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = { pipeline = \"full\" }\n",
        "CHIO-MATRIX-PARTIAL-REFERENCE",
        "it does not name axes [\"budget\"]",
    );
}

// A criterion no metric provides is refused, listing the criterion metrics.
#[test]
fn refuses_an_unknown_criterion() {
    assert_refused(
        &format!("{GRID}[verdict]\ncriterion = \"delivered\"\nreference = \"full\"\n"),
        "CHIO-MATRIX-UNKNOWN-CRITERION",
        "verdict.criterion \"delivered\" is not a metric a run provides",
    );
}

// A validity metric that does not exist is refused.
#[test]
fn refuses_an_unknown_validity_metric() {
    assert_refused(
        &format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\nvalidity = [\"in_scope\"]\n"),
        "CHIO-MATRIX-UNKNOWN-VALIDITY",
        "verdict.validity names \"in_scope\", which is not a validity metric",
    );
}

// A delta naming a kernel the base scenario does not declare is refused.
#[test]
fn refuses_a_delta_naming_nothing() {
    assert_refused(
        "[axes]\npipeline = [\"full\", \"weak\"]\n\n[values.pipeline.weak]\nguards = { kernel-z = [] }\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n",
        "CHIO-MATRIX-DELTA",
        "the base scenario declares no kernel \"kernel-z\"",
    );
}

// A matrix without [protocol] repetitions is refused.
#[test]
fn refuses_missing_repetitions() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    let text = base_matrix(&format!(
        "{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n"
    ))
    .replace("repetitions = 2\n", "");
    std::fs::write(&file, text).unwrap();
    let args = ["arena", "matrix", file.to_str().unwrap()];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("repetitions"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
}

// docs/errors.md has a heading for every campaign and matrix code, and the two experiment documents exist.
#[test]
fn every_experiment_code_is_documented() {
    let doc = std::fs::read_to_string(repo_path("docs/errors.md")).unwrap();
    let mut codes: Vec<&str> = chio_arena::EXPERIMENT_ERROR_CODES.to_vec();
    codes.extend(["CHIO-CAMPAIGN-LEDGER-EXISTS", "CHIO-CLI-RECORD-SPEC"]);
    for code in codes {
        let anchor = chio_controller::error::docs_anchor(code);
        assert!(
            doc.contains(&format!("### {anchor}\n")),
            "no heading for {code}"
        );
        assert!(doc.contains(&format!("`{code}`")), "{code} not named");
    }
    assert!(repo_path("docs/campaigns.md").exists());
    assert!(repo_path("docs/matrices.md").exists());
}
