//! Process tests for `chio campaign`: the shipped reference campaign end to
//! end (template, runs, import, report, with a deliberately failing attempt
//! kept beside the passes), and one test per ledger refusal, each asserting
//! exit 2, the message, and that the ledger's bytes did not change.

mod util;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use util::{chio, explain, repo_path};

/// Runs `chio` and asserts its exit code.
fn expect(dir: &Path, args: &[&str], code: i32) -> Output {
    let output = chio(dir, args);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        explain(args, &output)
    );
    output
}

/// Runs a scenario with --json into `name.json` (bundle in `name/`).
fn run_record(dir: &Path, scenario: &Path, name: &str, code: i32) -> PathBuf {
    let bundle = dir.join(name);
    let args = [
        "arena",
        "run",
        scenario.to_str().unwrap(),
        "--json",
        "--out",
        bundle.to_str().unwrap(),
    ];
    let output = expect(dir, &args, code);
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, &output.stdout).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

// The shipped reference campaign goes template, run, import, report; the failing control stays in the ledger beside the passes, replays are reported apart, unknown time stays unknown.
#[test]
fn reference_campaign_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let decl = repo_path("scenarios/campaigns/reference.toml");
    let ledger = dir.join("ledger.json");
    let out = expect(
        dir,
        &["campaign", "template", s(&decl), "--out", s(&ledger)],
        0,
    );
    assert!(out.stdout.is_empty());
    let template: Value = serde_json::from_slice(&std::fs::read(&ledger).unwrap()).unwrap();
    let rows = template["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    assert!(rows.iter().all(|r| r["native_outcome"] == "DEFERRED"));

    let ws1 = run_record(dir, &repo_path("scenarios/walking_skeleton.toml"), "ws1", 0);
    let ws2 = run_record(dir, &repo_path("scenarios/walking_skeleton.toml"), "ws2", 0);
    let pr = run_record(dir, &repo_path("scenarios/pr-421-review.toml"), "pr", 0);
    let replay = expect(dir, &["arena", "replay", s(&dir.join("pr")), "--json"], 0);
    std::fs::write(dir.join("replay.json"), &replay.stdout).unwrap();
    let control = run_record(
        dir,
        &repo_path("scenarios/campaigns/controls/misexpected_read.toml"),
        "control",
        1,
    );
    let matrix = expect(
        dir,
        &[
            "arena",
            "matrix",
            s(&repo_path("scenarios/matrices/guard_pipelines.toml")),
            "--json",
            "--out",
            s(&dir.join("mx")),
        ],
        0,
    );
    std::fs::write(dir.join("mx.json"), &matrix.stdout).unwrap();
    let evolve = expect(
        dir,
        &[
            "arena",
            "evolve",
            s(&repo_path("scenarios/pr-421-review.toml")),
            "--json",
            "--out",
            s(&dir.join("evo")),
        ],
        0,
    );
    std::fs::write(dir.join("evo.json"), &evolve.stdout).unwrap();

    let pairs = [
        format!("walking-skeleton/01={}", s(&ws1)),
        format!("walking-skeleton/02={}", s(&ws2)),
        format!("pr-421/01={}", s(&pr)),
        format!("pr-421-replay/01={}", s(&dir.join("replay.json"))),
        format!("failing-control/01={}", s(&control)),
        format!("guard-pipelines/01={}", s(&dir.join("mx.json"))),
        format!("pr-421-evolve/01={}", s(&dir.join("evo.json"))),
    ];
    let mut args = vec!["campaign", "import", s(&decl), s(&ledger)];
    args.extend(pairs.iter().map(String::as_str));
    let imported = expect(dir, &args, 0);
    let text = String::from_utf8_lossy(&imported.stdout);
    assert!(
        text.contains("imported failing-control/01: native stopped"),
        "{text}"
    );

    let report = expect(
        dir,
        &["campaign", "report", s(&decl), s(&ledger), "--json"],
        0,
    );
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let outcome = |id: &str| {
        report["attempts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["schedule_id"] == id)
            .map(|a| a["outcome"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(outcome("walking-skeleton/01"), "passed");
    assert_eq!(outcome("walking-skeleton/02"), "passed");
    assert_eq!(
        outcome("failing-control/01"),
        "stopped at an unexpected verdict"
    );
    assert_eq!(outcome("pr-421-replay/01"), "replay identical");
    assert_eq!(outcome("guard-pipelines/01"), "matrix complete");
    assert_eq!(outcome("pr-421-evolve/01"), "evolution complete");
    let sections = report["sections"].as_array().unwrap();
    assert_eq!(sections.len(), 2, "fresh runs and replays are separate");
    assert_eq!(sections[0]["evidence"], "fresh");
    assert_eq!(sections[0]["attempts"], 6);
    assert_eq!(sections[1]["evidence"], "replay");
    assert_eq!(sections[1]["attempts"], 1);
    assert_eq!(
        sections[0]["elapsed_seconds"]["total"],
        Value::Null,
        "unknown time is not zero"
    );
    assert_eq!(sections[0]["elapsed_seconds"]["unknown_attempts"], 6);
    assert_eq!(sections[1]["kernel_evaluations"]["total"], Value::Null);
    assert_eq!(sections[0]["comparison"], "complete");
    let counted: u64 = sections
        .iter()
        .flat_map(|s| s["outcomes"].as_array().unwrap())
        .map(|o| o["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 7, "each attempt in exactly one outcome");
    let text = expect(dir, &["campaign", "report", s(&decl), s(&ledger)], 0);
    assert!(String::from_utf8_lossy(&text.stdout).contains("failing-control/01"));
}

/// A small campaign over copies of the walking skeleton and the failing control.
struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    decl: PathBuf,
    ledger: PathBuf,
}

fn copy(from: &str, to: &Path) {
    let target = to.join(from);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::copy(repo_path(&format!("scenarios/{from}")), target).unwrap();
}

fn definition(dir: &Path, root: &Path, file: &str) -> String {
    let out = expect(dir, &["campaign", "hash", "--root", s(root), file], 0);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .trim_start_matches("definition = ")
        .to_string()
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let root = dir.join("root");
    for file in [
        "walking_skeleton.toml",
        "fixtures/walking-skeleton/notes.txt",
        "fixtures/walking-skeleton/.env",
        "prompts/walking-skeleton.txt",
        "campaigns/controls/misexpected_read.toml",
        "campaigns/controls/fixtures/notes/notes.txt",
    ] {
        copy(file, &root);
    }
    let ws = definition(&dir, &root, "walking_skeleton.toml");
    let control = definition(&dir, &root, "campaigns/controls/misexpected_read.toml");
    let decl = dir.join("campaign.toml");
    std::fs::write(
        &decl,
        format!(
            "schema_version = \"chio.arena.campaign/v1\"\nid = \"small\"\ntitle = \"small\"\nroot = \"root\"\n\n\
             [[tasks]]\nid = \"ws\"\nkind = \"scenario\"\nfile = \"walking_skeleton.toml\"\nrepetitions = 2\ndefinition = {ws}\n\n\
             [[tasks]]\nid = \"ws-replay\"\nkind = \"scenario\"\nfile = \"walking_skeleton.toml\"\nevidence = \"replay\"\nrepetitions = 1\ndefinition = {ws}\n\n\
             [[tasks]]\nid = \"control\"\nkind = \"scenario\"\nfile = \"campaigns/controls/misexpected_read.toml\"\nrepetitions = 1\ndefinition = {control}\n"
        ),
    )
    .unwrap();
    let ledger = dir.join("ledger.json");
    expect(
        &dir,
        &["campaign", "template", s(&decl), "--out", s(&ledger)],
        0,
    );
    Fixture {
        _tmp: tmp,
        dir,
        decl,
        ledger,
    }
}

impl Fixture {
    fn ws_run(&self, name: &str) -> PathBuf {
        run_record(
            &self.dir,
            &self.dir.join("root/walking_skeleton.toml"),
            name,
            0,
        )
    }

    fn import(&self, pairs: &[(&str, &Path)]) -> Output {
        let specs: Vec<String> = pairs
            .iter()
            .map(|(id, p)| format!("{id}={}", p.display()))
            .collect();
        let mut args = vec!["campaign", "import", s(&self.decl), s(&self.ledger)];
        args.extend(specs.iter().map(String::as_str));
        chio(&self.dir, &args)
    }

    fn ledger(&self) -> Value {
        serde_json::from_slice(&std::fs::read(&self.ledger).unwrap()).unwrap()
    }

    fn write_ledger(&self, value: &Value) {
        std::fs::write(&self.ledger, serde_json::to_vec(value).unwrap()).unwrap();
    }

    /// Asserts that report (and an otherwise valid import) refuse with `code`
    /// and `message`, leaving the ledger's bytes unchanged.
    fn assert_refused(&self, code: &str, message: &str) {
        let before = std::fs::read(&self.ledger).unwrap();
        let report_args = ["campaign", "report", s(&self.decl), s(&self.ledger)];
        let report = chio(&self.dir, &report_args);
        assert_eq!(
            report.status.code(),
            Some(2),
            "{}",
            explain(&report_args, &report)
        );
        let stderr = String::from_utf8_lossy(&report.stderr);
        assert!(
            stderr.starts_with(&format!("error[{code}]: campaign report: ")),
            "{stderr}"
        );
        assert!(stderr.contains(message), "{stderr}");
        assert!(report.stdout.is_empty());
        let record = self.dir.join("extra.json");
        if !record.exists() {
            self.ws_run("extra");
        }
        let import = self.import(&[("ws/02", &record)]);
        assert_eq!(
            import.status.code(),
            Some(2),
            "import: {}",
            String::from_utf8_lossy(&import.stderr)
        );
        assert!(String::from_utf8_lossy(&import.stderr).contains(code));
        assert_eq!(
            std::fs::read(&self.ledger).unwrap(),
            before,
            "the ledger changed"
        );
    }

    fn edit_row(&self, id: &str, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) {
        let mut ledger = self.ledger();
        let row = ledger["rows"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|r| r["schedule_id"] == id)
            .unwrap();
        edit(row.as_object_mut().unwrap());
        self.write_ledger(&ledger);
    }
}

// A scheduled attempt without a row is refused.
#[test]
fn refuses_a_missing_attempt() {
    let f = fixture();
    let mut ledger = f.ledger();
    ledger["rows"].as_array_mut().unwrap().remove(1);
    f.write_ledger(&ledger);
    f.assert_refused(
        "CHIO-CAMPAIGN-MISSING-ATTEMPT",
        "scheduled attempt \"ws/02\" has no ledger row",
    );
}

// A scheduled attempt with two rows is refused.
#[test]
fn refuses_a_duplicated_attempt() {
    let f = fixture();
    let mut ledger = f.ledger();
    let rows = ledger["rows"].as_array_mut().unwrap();
    rows.push(rows[0].clone());
    f.write_ledger(&ledger);
    f.assert_refused("CHIO-CAMPAIGN-DUPLICATE-ATTEMPT", "\"ws/01\" appears twice");
}

// A row for an attempt the declaration does not schedule is refused.
#[test]
fn refuses_an_unscheduled_attempt() {
    let f = fixture();
    let mut ledger = f.ledger();
    let rows = ledger["rows"].as_array_mut().unwrap();
    let mut extra = rows[0].clone();
    extra["schedule_id"] = "ws/03".into();
    extra["repetition"] = 3.into();
    rows.push(extra);
    f.write_ledger(&ledger);
    f.assert_refused(
        "CHIO-CAMPAIGN-UNSCHEDULED-ATTEMPT",
        "ledger row \"ws/03\" is not a scheduled attempt",
    );
}

// A ledger naming another declaration is refused.
#[test]
fn refuses_another_declaration() {
    let f = fixture();
    let mut ledger = f.ledger();
    ledger["campaign_id"] = "other".into();
    f.write_ledger(&ledger);
    f.assert_refused(
        "CHIO-CAMPAIGN-OTHER-DECLARATION",
        "the ledger belongs to campaign \"other\"",
    );
}

// A declaration whose bytes changed after admission is refused.
#[test]
fn refuses_changed_declaration_bytes() {
    let f = fixture();
    let mut text = std::fs::read_to_string(&f.decl).unwrap();
    text.push_str("# edited after admission\n");
    std::fs::write(&f.decl, text).unwrap();
    f.assert_refused(
        "CHIO-CAMPAIGN-DECLARATION-CHANGED",
        "the declaration's bytes changed after admission",
    );
}

// A task whose files no longer hash to its pinned definition is refused.
#[test]
fn refuses_a_drifted_definition() {
    let f = fixture();
    f.ws_run("extra");
    std::fs::write(
        f.dir.join("root/fixtures/walking-skeleton/notes.txt"),
        "edited\n",
    )
    .unwrap();
    f.assert_refused(
        "CHIO-CAMPAIGN-DEFINITION-DRIFT",
        "task \"ws\": its files hash to",
    );
}

// A replay record cannot fill a fresh row, and a row relabelled from replay to fresh is refused.
#[test]
fn refuses_a_replay_relabelled_as_fresh() {
    let f = fixture();
    f.ws_run("ws1");
    let replay = expect(
        &f.dir,
        &["arena", "replay", s(&f.dir.join("ws1")), "--json"],
        0,
    );
    let replay_path = f.dir.join("replay.json");
    std::fs::write(&replay_path, &replay.stdout).unwrap();
    let before = std::fs::read(&f.ledger).unwrap();
    let import = f.import(&[("ws/01", &replay_path)]);
    assert_eq!(import.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&import.stderr);
    assert!(
        stderr.contains("CHIO-CAMPAIGN-RELABELLED-EVIDENCE"),
        "{stderr}"
    );
    assert!(
        stderr.contains("scheduled as fresh evidence but carries replay evidence"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&f.ledger).unwrap(), before);
    expect(
        &f.dir,
        &[
            "campaign",
            "import",
            s(&f.decl),
            s(&f.ledger),
            &format!("ws-replay/01={}", s(&replay_path)),
        ],
        0,
    );
    f.edit_row("ws-replay/01", |row| {
        row.insert("evidence".into(), "fresh".into());
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-RELABELLED-EVIDENCE",
        "\"ws-replay/01\" is scheduled as replay evidence but carries fresh evidence",
    );
}

// A record whose status says passed while its steps failed is refused at import, and such a row at report.
#[test]
fn refuses_a_pass_contradicted_by_its_evidence() {
    let f = fixture();
    let control = run_record(
        &f.dir,
        &f.dir.join("root/campaigns/controls/misexpected_read.toml"),
        "control",
        1,
    );
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&control).unwrap()).unwrap();
    doc["outcome"]["status"] = "passed".into();
    std::fs::write(&control, serde_json::to_vec(&doc).unwrap()).unwrap();
    let before = std::fs::read(&f.ledger).unwrap();
    let import = f.import(&[("control/01", &control)]);
    assert_eq!(import.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&import.stderr);
    assert!(
        stderr.contains("CHIO-CAMPAIGN-CONTRADICTED-PASS"),
        "{stderr}"
    );
    assert!(
        stderr.contains("\"control/01\" passes but its own evidence says 1 failed call(s)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&f.ledger).unwrap(), before);
    let ws1 = f.ws_run("ws1");
    expect(
        &f.dir,
        &[
            "campaign",
            "import",
            s(&f.decl),
            s(&f.ledger),
            &format!("ws/01={}", s(&ws1)),
        ],
        0,
    );
    f.edit_row("ws/01", |row| {
        row["record"]["stopped_at"] = "read-dotenv".into();
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-CONTRADICTED-PASS",
        "the run stopped at step read-dotenv",
    );
}

// A row that did not pass and gives no reason is refused.
#[test]
fn refuses_a_non_pass_without_reason() {
    let f = fixture();
    let control = run_record(
        &f.dir,
        &f.dir.join("root/campaigns/controls/misexpected_read.toml"),
        "control",
        1,
    );
    expect(
        &f.dir,
        &[
            "campaign",
            "import",
            s(&f.decl),
            s(&f.ledger),
            &format!("control/01={}", s(&control)),
        ],
        0,
    );
    f.edit_row("control/01", |row| {
        row.insert("reason".into(), Value::Null);
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-MISSING-REASON",
        "\"control/01\" did not pass and gives no reason",
    );
}

// A DEFERRED row carrying results is refused.
#[test]
fn refuses_a_deferred_row_with_results() {
    let f = fixture();
    f.edit_row("ws/01", |row| {
        row.insert("kernel_evaluations".into(), 2.into());
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-DEFERRED-WITH-RESULTS",
        "\"ws/01\" is DEFERRED (not attempted) but carries kernel evaluations",
    );
}

// Importing into a row that already holds an attempt is refused: a retry needs a new schedule.
#[test]
fn refuses_a_second_attempt_on_one_row() {
    let f = fixture();
    let ws1 = f.ws_run("ws1");
    let ws2 = f.ws_run("ws2");
    expect(
        &f.dir,
        &[
            "campaign",
            "import",
            s(&f.decl),
            s(&f.ledger),
            &format!("ws/01={}", s(&ws1)),
        ],
        0,
    );
    let before = std::fs::read(&f.ledger).unwrap();
    let import = f.import(&[("ws/01", &ws2)]);
    assert_eq!(import.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&import.stderr);
    assert!(stderr.starts_with("error[CHIO-CAMPAIGN-ALREADY-ATTEMPTED]: campaign import: ledger row \"ws/01\" already holds an attempt"), "{stderr}");
    assert_eq!(std::fs::read(&f.ledger).unwrap(), before);
}

// A row missing a declared field is refused.
#[test]
fn refuses_a_row_missing_a_field() {
    let f = fixture();
    f.edit_row("ws/01", |row| {
        row.remove("elapsed_seconds");
    });
    f.assert_refused(
        "CHIO-EXPERIMENT-SYNTAX",
        "rows[0] lacks the declared field elapsed_seconds",
    );
}
