//! Process tests for `chio arena matrix`: the shipped guard-pipeline matrix
//! (one established and one inconclusive gap, identical results across
//! worker counts and an interrupted run resumed), the shipped protocol
//! reference (a two-axis grid, validators, gaps of non-zero width, and
//! byte-identical synthesis and state files when run twice), the default
//! output folder, and one test per load-time refusal, each asserting exit 2,
//! the message, and that nothing was written.

use crate::util;

use std::path::{Path, PathBuf};

use util::{chio, explain, repo_path, tree};

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const SYNTHESIS: [&str; 3] = ["synthesis.json", "synthesis.md", "synthesis.html"];

/// The synthesis JSON without its `load` object, the one part that names
/// the concurrency.
fn without_load(bytes: &[u8]) -> serde_json::Value {
    let mut value: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    value.as_object_mut().unwrap().remove("load");
    value
}

fn run_records(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut records: Vec<PathBuf> = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    records.sort();
    records
        .into_iter()
        .map(|p| {
            let bytes = read(&p);
            (p.file_name().unwrap().into(), bytes)
        })
        .collect()
}

// The shipped matrix gives an established gap for the weaker pipeline and an inconclusive one for the equivalent one; its run records and results do not depend on the worker count, and a resumed interruption gives the same synthesis bytes.
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
        "chio.arena.matrix-synthesis/v2"
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
    assert_eq!(synthesis["load"]["concurrency"], 2);
    assert_eq!(synthesis["load"]["concurrency_source"], "--workers");
    assert_eq!(
        synthesis["grid"],
        serde_json::Value::Null,
        "one axis, no grid"
    );
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
    assert_eq!(
        run_records(&a),
        run_records(&b),
        "run records differ between worker counts"
    );
    assert_eq!(
        without_load(&read(&a.join("synthesis.json"))),
        without_load(&read(&b.join("synthesis.json"))),
        "results differ between worker counts"
    );

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
        "--workers",
        "2",
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

/// The state file without its wall-clock fields.
fn state_without_clock(dir: &Path) -> serde_json::Value {
    let mut state: serde_json::Value =
        serde_json::from_slice(&read(&dir.join("state.json"))).unwrap();
    let clock = state.as_object_mut().unwrap().remove("wall_clock");
    assert!(clock.is_some(), "the state file has no wall_clock object");
    state
}

// The protocol reference runs as a two-axis grid with validators and gaps of non-zero width, and running it twice gives byte-identical synthesis files and state files equal but for their wall-clock fields.
#[test]
fn protocol_reference_grid_widths_and_determinism() {
    let tmp = tempfile::tempdir().unwrap();
    let file = repo_path("scenarios/matrices/protocol_reference.toml");
    let file = file.to_str().unwrap();
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    for dir in [&a, &b] {
        let args = [
            "arena",
            "matrix",
            file,
            "--json",
            "--out",
            dir.to_str().unwrap(),
        ];
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    }
    for name in SYNTHESIS {
        assert_eq!(
            read(&a.join(name)),
            read(&b.join(name)),
            "{name} differs between runs"
        );
    }
    assert_eq!(state_without_clock(&a), state_without_clock(&b));
    let state = state_without_clock(&a);
    assert_eq!(state["status"], "complete");
    assert_eq!(state["load"]["runs_planned"], 40);
    assert_eq!(state["load"]["concurrency"], 2);
    assert_eq!(state["load"]["timeout_seconds"], 120.0);
    assert_eq!(state["load"]["attempts"], 2);

    let s: serde_json::Value = serde_json::from_slice(&read(&a.join("synthesis.json"))).unwrap();
    assert!(
        !String::from_utf8(read(&a.join("synthesis.json")))
            .unwrap()
            .contains("unix_ms"),
        "a wall-clock field reached the synthesis"
    );
    assert!(s["hypothesis"]
        .as_str()
        .unwrap()
        .starts_with("Scanning tool output"));
    let md = String::from_utf8(read(&a.join("synthesis.md"))).unwrap();
    let mut lines = md.lines().filter(|l| !l.is_empty());
    assert!(lines.next().unwrap().starts_with("# "));
    assert!(lines
        .next()
        .unwrap()
        .starts_with("**Hypothesis.** Scanning tool output"));
    assert!(lines.next().unwrap().starts_with("Load: 40 runs planned"));

    let grid = &s["grid"];
    assert_eq!(grid["rows_axis"], "scan");
    assert_eq!(grid["columns_axis"], "payloads");
    assert_eq!(
        grid["rows"],
        serde_json::json!(["arguments-and-output", "arguments-only"])
    );
    assert_eq!(
        grid["columns"],
        serde_json::json!(["samples", "with-evasive"])
    );
    assert_eq!(grid["cells"][0][0]["verdict"], "reference");
    assert_eq!(grid["cells"][1][0]["cell"], "arguments-only / samples");
    assert_eq!(
        grid["cells"][0][1]["cell"],
        "arguments-and-output / with-evasive"
    );
    assert_eq!(
        s["cells"].as_array().unwrap().len(),
        5,
        "the flat list keeps the variant"
    );
    assert!(
        md.contains("| scan \\ payloads | samples | with-evasive |"),
        "{md}"
    );

    let widths: Vec<f64> = s["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["high"].as_f64().unwrap() - g["low"].as_f64().unwrap())
        .collect();
    assert!(
        widths.iter().any(|w| *w > 0.0),
        "every interval has zero width: {widths:?}"
    );
    let validators = s["validators"].as_array().unwrap();
    assert_eq!(validators.len(), 4);
    assert!(validators
        .iter()
        .flat_map(|v| v["cells"].as_array().unwrap())
        .all(|c| c["passed"] == true));
    assert_eq!(s["runs"]["retried"], 0);
}

// Without --out the output folder is named by the matrix id and its repetitions, so two protocols never share one.
#[test]
fn default_folder_names_the_repetitions() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    std::fs::write(
        &file,
        base_matrix(&format!(
            "{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n"
        )),
    )
    .unwrap();
    let args = ["arena", "matrix", file.to_str().unwrap()];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let folder = tmp.path().join("target/arena/matrix/m-r2");
    assert!(folder.join("synthesis.json").exists());
    assert!(folder.join("state.json").exists());
}

// Off a terminal no progress is drawn: stderr holds no bar or carriage return, and neither stdout nor any output file holds progress text.
#[test]
fn progress_stays_off_a_non_terminal_and_out_of_files() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    std::fs::write(
        &file,
        base_matrix(&format!(
            "{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n"
        )),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let output = matrix_ok(tmp.path(), &file, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains('\r') && !stderr.contains(" runs"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains('\r'));
    for (name, bytes) in tree(&out) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains('\r') && !text.contains("matrix: "), "{name}");
    }
}

fn base_matrix(body: &str) -> String {
    matrix_over("scenarios/pr-421-review.toml", body)
}

/// `chio arena matrix FILE --out OUT` in `dir`, asserting exit 0.
fn matrix_ok(dir: &Path, file: &Path, out: &Path) -> std::process::Output {
    let args = [
        "arena",
        "matrix",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let output = chio(dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    output
}

/// A two-repetition matrix over the reference scenario at `scenario`.
fn matrix_over(scenario: &str, body: &str) -> String {
    let scenario = repo_path(scenario);
    format!(
        "schema_version = \"chio.arena.matrix/v2\"\nid = \"m\"\ntitle = \"t\"\nhypothesis = \"the weak pipeline lets attacks through\"\nscenario = {:?}\nroot = \"/\"\n\n[protocol]\nrepetitions = 2\n\n{body}",
        scenario.to_str().unwrap()
    )
}

fn assert_refused(body: &str, code: &str, message: &str) {
    assert_refused_text(&base_matrix(body), code, message);
}

/// Like `assert_refused`, for a whole matrix text: exit 2, the `error[CODE]`
/// block with its help, nothing on standard output and nothing written.
fn assert_refused_text(text: &str, code: &str, message: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    std::fs::write(&file, text).unwrap();
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

// Two axes whose deltas set the same key are refused at load, naming both axes and the key, whichever key it is: a kernel's pipeline, one key of a grant, a population's parameters, the topology; two keys of one grant on two axes are not an overlap.
#[test]
fn refuses_axes_whose_deltas_overlap() {
    let verdict = "[verdict]\ncriterion = \"escape_rate\"\nreference = { pipeline = \"full\", other = \"base\" }\n";
    for (delta, key) in [
        ("guards = { kernel-a = [] }", "guards.kernel-a"),
        (
            "grants = { reviewer-read = { max_invocations = 1 } }",
            "grants.reviewer-read.max_invocations",
        ),
        ("topology = \"local\"", "topology"),
    ] {
        let first = match key {
            "guards.kernel-a" => "guards = { kernel-a = [\"no-dotfiles\"] }",
            "topology" => "topology = \"embedded\"",
            _ => "grants = { reviewer-read = { max_invocations = 2 } }",
        };
        assert_refused_text(
            &base_matrix(&format!(
                "[axes]\npipeline = [\"full\", \"weak\"]\nother = [\"base\", \"changed\"]\n\n[values.pipeline.weak]\n{first}\n\n[values.other.changed]\n{delta}\n\n{verdict}"
            )),
            "CHIO-MATRIX-OVERLAPPING-DELTAS",
            &format!("axes \"pipeline\" and \"other\" both set {key} in their deltas"),
        );
    }
    // Another key of the same grant on each axis is not an overlap.
    let disjoint = base_matrix(&format!(
        "[axes]\npipeline = [\"full\", \"weak\"]\nother = [\"base\", \"changed\"]\n\n[values.pipeline.weak]\ngrants = {{ reviewer-read = {{ max_invocations = 2 }} }}\n\n[values.other.changed]\ngrants = {{ reviewer-read = {{ max_invocations = 2, path_prefix = \"/workspace/tests/\" }} }}\n\n{verdict}"
    ));
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    std::fs::write(&file, &disjoint).unwrap();
    let err = chio_experiment::load_matrix(&file).unwrap_err();
    assert!(
        err.to_string()
            .contains("both set grants.reviewer-read.max_invocations"),
        "{err}"
    );
    let disjoint = disjoint.replace("max_invocations = 2, path_prefix", "path_prefix");
    std::fs::write(&file, &disjoint).unwrap();
    let matrix = chio_experiment::load_matrix(&file);
    assert!(matrix.is_ok(), "{:?}", matrix.err());
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

// A delta that declares tables but sets no key (guards = {}, grants = {}, a variant's empty guards) is refused at load naming the value, since its cell would be the baseline under another name; so is a validator whose cells list is empty.
#[test]
fn refuses_a_delta_that_changes_nothing_and_a_validator_of_no_cell() {
    let verdict = "[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n";
    for (delta, shown) in [
        ("grants = {}", "grants is empty"),
        ("guards = {}", "guards is empty"),
        ("guards = {}\ngrants = {}", "guards and grants are empty"),
    ] {
        assert_refused(
            &format!("[axes]\npipeline = [\"full\", \"weak\"]\n\n[values.pipeline.weak]\n{delta}\n\n{verdict}"),
            "CHIO-MATRIX-INVALID",
            &format!("matrix refused at values.pipeline.weak: the delta changes nothing ({shown}"),
        );
    }
    assert_refused(
        &format!("{GRID}[variants.same]\nguards = {{}}\n\n{verdict}"),
        "CHIO-MATRIX-INVALID",
        "matrix refused at variants.same: the delta changes nothing",
    );
    assert_refused(
        &format!("{GRID}{verdict}\n[[validation]]\nmetric = \"escapes\"\nmax = 0\ncells = []\n"),
        "CHIO-MATRIX-INVALID",
        "matrix refused at validation[0].cells: lists no cell",
    );
}

// A validator that fails a cell fails the matrix: exit 1 with CHIO-MATRIX-VALIDATION-FAILED naming the validator and cell, after the synthesis is written and printed, and the JUnit report counts it as a failure; with two repetitions no gap is established, however narrow its interval.
#[test]
fn a_failed_validator_fails_the_matrix_and_its_junit() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    let body = format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n\n[[validation]]\nmetric = \"escapes\"\nmax = 0\n");
    std::fs::write(&file, base_matrix(&body)).unwrap();
    let out = tmp.path().join("out");
    let junit = tmp.path().join("junit.xml");
    let args = [
        "arena",
        "matrix",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
        "--json",
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error[CHIO-MATRIX-VALIDATION-FAILED]: arena matrix: ")
            && stderr.contains("escapes of weak"),
        "{stderr}"
    );
    let synthesis: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        synthesis,
        serde_json::from_slice::<serde_json::Value>(&read(&out.join("synthesis.json"))).unwrap()
    );
    for gap in synthesis["gaps"].as_array().unwrap() {
        assert_ne!(gap["verdict"], "established", "{gap}");
    }
    let xml = String::from_utf8(read(&junit)).unwrap();
    assert!(xml.contains("name=\"m [validation]\""), "{xml}");
    assert!(xml.contains("type=\"validator-failed\""), "{xml}");
    assert!(xml.contains("name=\"escapes [weak]\""), "{xml}");
    let failures: u64 = xml
        .lines()
        .find(|l| l.contains("<testsuites"))
        .and_then(|l| l.split("failures=\"").nth(1))
        .and_then(|rest| rest.split('"').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(failures >= 1, "{xml}");
}

/// Runs `chio report DIR --out OUT.html` with `extra` flags in `dir`,
/// asserting `code`; answers the output.
fn report_matrix(dir: &Path, folder: &Path, extra: &[&str], code: i32) -> std::process::Output {
    let page = dir.join("page.html");
    let mut args = vec![
        "report",
        folder.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
    ];
    args.extend(extra);
    let output = chio(dir, &args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        explain(&args, &output)
    );
    output
}

// `chio report` presents a matrix folder only once its synthesis is what its matrix file derives from the run records beside it, the check `chio campaign report` applies to a matrix row: the genuine folder of a failed validator is framed red; the same folder with the validator marked passed, or a gap's verdict edited, is refused naming where it first differs (CHIO-REPORT-INPUT-UNREADABLE), and so is the folder given with another matrix's file; without its matrix file it is refused as needing one. Nothing is written.
#[test]
fn report_presents_only_a_synthesis_its_runs_derive() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let file = dir.join("m.toml");
    let body = format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n\n[[validation]]\nmetric = \"escapes\"\nmax = 0\n");
    std::fs::write(&file, base_matrix(&body)).unwrap();
    let out = dir.join("out");
    let args = [
        "arena",
        "matrix",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let output = chio(dir, &args);
    assert_eq!(output.status.code(), Some(1), "{}", explain(&args, &output));
    let decl = ["--declaration", file.to_str().unwrap()];
    report_matrix(dir, &out, &decl, 0);
    let page = String::from_utf8(read(&dir.join("page.html"))).unwrap();
    assert!(page.contains("class=\"summary bad\""), "{page}");
    std::fs::remove_file(dir.join("page.html")).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit); 2] = [
        ("validator", |s| {
            for validator in s["validators"].as_array_mut().unwrap() {
                for cell in validator["cells"].as_array_mut().unwrap() {
                    cell["passed"] = true.into();
                }
            }
            for cell in s["cells"].as_array_mut().unwrap() {
                cell["validation"] = "passed".into();
            }
        }),
        ("gap", |s| {
            for gap in s["gaps"].as_array_mut().unwrap() {
                gap["verdict"] = "established".into();
                gap["invalid_because"] = serde_json::Value::Array(Vec::new());
            }
        }),
    ];
    for (name, edit) in edits {
        let forged = dir.join(name);
        util::copy_tree(&out, &forged);
        let path = forged.join("synthesis.json");
        let mut synthesis: serde_json::Value = serde_json::from_slice(&read(&path)).unwrap();
        edit(&mut synthesis);
        let text = chio_kernel::canonical::to_canonical_string(&synthesis).unwrap();
        std::fs::write(&path, format!("{text}\n")).unwrap();
        let output = report_matrix(dir, &forged, &decl, 2);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with("error[CHIO-REPORT-INPUT-UNREADABLE]: report: cannot read ")
                && stderr.contains(&format!(
                    "synthesis.json is not what {} derives from the run records in ",
                    file.display()
                ))
                && stderr.contains("at byte "),
            "{name}: {stderr}"
        );
    }
    let other = repo_path("scenarios/matrices/guard_pipelines.toml");
    let output = report_matrix(dir, &out, &["--declaration", other.to_str().unwrap()], 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error[CHIO-REPORT-INPUT-UNREADABLE]: ")
            && stderr.contains("synthesis.json is a synthesis of matrix \"m\""),
        "{stderr}"
    );
    let output = report_matrix(dir, &out, &[], 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error[CHIO-REPORT-NEEDS-DECLARATION]: report: ")
            && stderr.contains("is a matrix output"),
        "{stderr}"
    );
    assert!(
        !dir.join("page.html").exists(),
        "a refused report wrote its page"
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

// Two validators declaring one metric are refused at load.
#[test]
fn refuses_two_validators_of_one_metric() {
    assert_refused(
        &format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n\n[[validation]]\nmetric = \"escapes\"\nmax = 0\n\n[[validation]]\nmetric = \"escapes\"\nmin = 0\n"),
        "CHIO-MATRIX-DUPLICATE-VALIDATOR",
        "two [[validation]] blocks declare the metric \"escapes\"",
    );
}

// A validator naming no validator metric is refused, listing them.
#[test]
fn refuses_an_unknown_validator_metric() {
    assert_refused(
        &format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n\n[[validation]]\nmetric = \"speed\"\nmin = 1\n"),
        "CHIO-MATRIX-UNKNOWN-VALIDATOR",
        "validator metrics: [expectation_pass_rate, escapes, denied_share, evaluations_per_run]",
    );
}

// A validator without thresholds, or with min above max, is refused.
#[test]
fn refuses_a_validator_without_a_usable_threshold() {
    assert_refused(
        &format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n\n[[validation]]\nmetric = \"escapes\"\n"),
        "CHIO-MATRIX-INVALID",
        "validation[0].min: declare min, max or both",
    );
    assert_refused(
        &format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n\n[[validation]]\nmetric = \"denied_share\"\nmin = 0.9\nmax = 0.1\n"),
        "CHIO-MATRIX-INVALID",
        "0.1 is below min 0.9",
    );
}

// A matrix without a hypothesis, or with a blank one, is refused.
#[test]
fn refuses_a_missing_hypothesis() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    let body = format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n");
    let text = base_matrix(&body).replace(
        "hypothesis = \"the weak pipeline lets attacks through\"\n",
        "",
    );
    std::fs::write(&file, text).unwrap();
    let args = ["arena", "matrix", file.to_str().unwrap()];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("hypothesis"));
    assert_refused_text(
        &base_matrix(&body).replace("the weak pipeline lets attacks through", "  "),
        "CHIO-MATRIX-INVALID",
        "matrix refused at hypothesis",
    );
}

// A matrix of the previous schema is refused with the migration it needs.
#[test]
fn refuses_a_v1_matrix_with_a_migration_note() {
    let body = format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n");
    assert_refused_text(
        &base_matrix(&body).replace("chio.arena.matrix/v2", "chio.arena.matrix/v1"),
        "CHIO-MATRIX-INVALID",
        "add a top-level hypothesis",
    );
}

// Out-of-range load settings are refused at load.
#[test]
fn refuses_out_of_range_load() {
    let body = format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n");
    for (setting, message) in [
        (
            "concurrency = 0",
            "protocol.concurrency: must be between 1 and 256",
        ),
        ("timeout = 0", "protocol.timeout: must be more than 0"),
        ("timeout = inf", "protocol.timeout: must be a finite number"),
        (
            "attempts = 0",
            "protocol.attempts: must be between 1 and 10",
        ),
    ] {
        assert_refused_text(
            &base_matrix(&body).replace(
                "repetitions = 2\n",
                &format!("repetitions = 2\n{setting}\n"),
            ),
            "CHIO-MATRIX-INVALID",
            message,
        );
    }
}

// A bootstrap seed past 2^53, which the synthesis could not print exactly, is refused at load, before any run; 2^53 itself loads.
#[test]
fn refuses_a_seed_past_two_to_the_53() {
    let body = format!(
        "{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\nseed = 9007199254740993\n"
    );
    assert_refused_text(
        &base_matrix(&body),
        "CHIO-MATRIX-INVALID",
        "verdict.seed: must be at most 2^53",
    );
}

// --workers contradicting a declared [protocol] concurrency is refused as ambiguous; agreeing with it is accepted.
#[test]
fn refuses_an_ambiguous_concurrency() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    let body = format!("{GRID}[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n");
    std::fs::write(
        &file,
        base_matrix(&body).replace("repetitions = 2\n", "repetitions = 2\nconcurrency = 2\n"),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let args = [
        "arena",
        "matrix",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--workers",
        "1",
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error[CHIO-MATRIX-AMBIGUOUS-LOAD]: arena matrix: concurrency is given twice: the matrix declares [protocol] concurrency = 2 and the command line says --workers 1"), "{stderr}");
    assert!(!out.exists());
    let agreeing = [
        "arena",
        "matrix",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--workers",
        "2",
    ];
    let output = chio(tmp.path(), &agreeing);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        explain(&agreeing, &output)
    );
}

// A matrix whose title, hypothesis and an axis value hold terminal escape sequences (a window-title write, a clear screen, a colour) prints them escaped, with or without --color never; synthesis.md keeps the text as written, but for the characters that open Markdown markup, escaped with a backslash.
#[test]
fn matrix_text_reaches_the_terminal_printable() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    let body = "[axes]\npipeline = [\"full\", \"we\\u001b[31mak\"]\n\n[values.pipeline.\"we\\u001b[31mak\"]\nguards = { kernel-a = [\"no-dotfiles\"] }\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n";
    let text = base_matrix(body)
        .replace(
            "title = \"t\"",
            "title = \"T\\u001b]0;PWNED\\u0007\\u001b[31mRED\"",
        )
        .replace(
            "hypothesis = \"the weak",
            "hypothesis = \"H\\u001b[2J\\u202eHYP the weak",
        );
    std::fs::write(&file, text).unwrap();
    for (out, color) in [("plain", &[][..]), ("never", &["--color", "never"][..])] {
        let out = tmp.path().join(out);
        let mut args = color.to_vec();
        args.extend(["arena", "matrix", file.to_str().unwrap()]);
        args.extend(["--out", out.to_str().unwrap()]);
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(
            !stdout.contains('\u{1b}') && !stdout.contains('\u{7}') && !stdout.contains('\u{202e}'),
            "{stdout}"
        );
        for shown in [
            "# T\\u{1b}\\]0;PWNED\\u{7}\\u{1b}\\[31mRED\n",
            "**Hypothesis.** H\\u{1b}\\[2J\\u{202e}HYP the weak",
            "| we\\u{1b}\\[31mak |",
        ] {
            assert!(stdout.contains(shown), "{shown} not in {stdout}");
        }
        let written = String::from_utf8(read(&out.join("synthesis.md"))).unwrap();
        assert!(
            written.starts_with("# T\u{1b}\\]0;PWNED\u{7}\u{1b}\\[31mRED\n"),
            "{written}"
        );
    }
}

// A matrix whose axis value holds a table's cell separators and whose title and hypothesis hold an image, a link and raw HTML writes them as plain Markdown text, in synthesis.md and on the terminal: no cell is forged and nothing is fetched by a renderer.
#[test]
fn matrix_text_cannot_forge_markdown() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("m.toml");
    let forged = "we | 0.0000 (reference) | x";
    let body = format!(
        "[axes]\npipeline = [\"full\", \"{forged}\"]\n\n[values.pipeline.\"{forged}\"]\nguards = {{ kernel-a = [\"no-dotfiles\"] }}\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n"
    );
    let text = base_matrix(&body)
        .replace("title = \"t\"", "title = \"T ![x](http://e.test/x.png)\"")
        .replace(
            "hypothesis = \"the weak",
            "hypothesis = \"<img src=x> [a](http://e.test) the weak",
        );
    std::fs::write(&file, text).unwrap();
    let out = tmp.path().join("out");
    let output = matrix_ok(tmp.path(), &file, &out);
    let stdout = String::from_utf8(output.stdout).unwrap();
    let written = String::from_utf8(read(&out.join("synthesis.md"))).unwrap();
    for md in [&written, &stdout] {
        assert!(md.contains("we \\| 0.0000 (reference) \\| x"), "{md}");
        assert!(!md.contains("we | 0.0000"), "{md}");
        assert!(md.contains("# T \\!\\[x\\](http://e.test/x.png)"), "{md}");
        assert!(
            md.contains("\\<img src=x\\> \\[a\\](http://e.test)"),
            "{md}"
        );
    }
}

// docs/errors.md has a heading for every code the experiment table declares, and the two experiment documents exist.
#[test]
fn every_experiment_code_is_documented() {
    let doc = std::fs::read_to_string(repo_path("docs/errors.md")).unwrap();
    for code in chio_experiment::EXPERIMENT_ERROR_CODES {
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

/// The axis that moves a run between the embedded topology and node
/// processes the controller starts.
const PLACE_AXIS: &str = "[axes]\nplace = [\"embedded\", \"local\"]\n\n[values.place.local]\ntopology = \"local\"\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = { place = \"embedded\" }\n";

/// A matrix whose one axis moves the scenario part of a run between the
/// embedded topology and node processes the controller starts.
fn topology_matrix(dir: &Path) -> PathBuf {
    let file = dir.join("where.toml");
    std::fs::write(&file, base_matrix(PLACE_AXIS)).unwrap();
    file
}

// A cell of a scenario whose schedule crashes, restarts and cuts nodes, declared `topology = "local"`, inflicts those faults on real processes in its run and in every adversary batch, and measures exactly what the embedded cell measures.
#[test]
fn a_fault_scenarios_cells_measure_the_same_on_a_local_cluster() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("faults.toml");
    let text = matrix_over("scenarios/adversaries-during-faults.toml", PLACE_AXIS);
    std::fs::write(&file, text).unwrap();
    let out = tmp.path().join("out");
    let args = [
        "arena",
        "matrix",
        file.to_str().unwrap(),
        "--json",
        "--workers",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let records = run_records(&out);
    assert_eq!(records.len(), 4, "two cells, two repetitions");
    for repetition in 0..2 {
        let find = |cell: usize| cell_metrics(&records, cell, repetition);
        let embedded = find(0);
        assert!(
            embedded["adversary_actions"].as_u64().unwrap_or(0) > 100,
            "no adversary was evaluated: {embedded}"
        );
        assert_eq!(
            embedded,
            find(1),
            "repetition {repetition} differs by topology"
        );
    }
}

/// The measurements of cell `cell`'s run `repetition` among `records`.
fn cell_metrics(
    records: &[(PathBuf, Vec<u8>)],
    cell: usize,
    repetition: usize,
) -> serde_json::Value {
    let name = format!("c{cell:03}-r{repetition:04}.json");
    let (_, bytes) = records
        .iter()
        .find(|(p, _)| p.to_str() == Some(name.as_str()))
        .unwrap_or_else(|| panic!("no record {name}"));
    metrics_of(bytes)
}

fn metrics_of(record: &[u8]) -> serde_json::Value {
    let value: serde_json::Value = serde_json::from_slice(record).unwrap();
    assert!(!value["metrics"].is_null(), "a run has no measurements");
    value["metrics"].clone()
}

// A cell declaring `topology = "local"` runs across real node processes (its scenario steps and its adversary batches alike) and measures exactly what the embedded cell measures, escapes included, and `--topology local` moves every other cell there without changing one byte of the run records or the synthesis.
#[test]
fn cells_measure_the_same_on_every_topology() {
    let tmp = tempfile::tempdir().unwrap();
    let file = topology_matrix(tmp.path());
    let file = file.to_str().unwrap();
    let mut outs = Vec::new();
    for (label, extra) in [
        ("embedded", &[][..]),
        ("local", &["--topology", "local"][..]),
    ] {
        let out = tmp.path().join(label);
        let mut args = vec!["arena", "matrix", file, "--json", "--workers", "2"];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(extra);
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
        outs.push(out);
    }
    let records = run_records(&outs[0]);
    assert_eq!(records.len(), 4, "two cells, two repetitions");
    for repetition in 0..2 {
        let find = |cell: usize| cell_metrics(&records, cell, repetition);
        assert_eq!(
            find(0),
            find(1),
            "repetition {repetition} differs by topology"
        );
    }
    let synthesis: serde_json::Value =
        serde_json::from_slice(&read(&outs[0].join("synthesis.json"))).unwrap();
    for gap in synthesis["gaps"].as_array().unwrap() {
        assert_eq!(gap["low"], gap["high"], "a topology gap has width: {gap}");
    }
    assert_eq!(run_records(&outs[0]), run_records(&outs[1]));
    for name in SYNTHESIS {
        assert_eq!(
            read(&outs[0].join(name)),
            read(&outs[1].join(name)),
            "{name} depends on --topology"
        );
    }
}
