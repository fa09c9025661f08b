//! Process tests for `chio campaign`: the shipped reference campaign end to
//! end in a committed copy of the scenario tree (template, measured runs,
//! a fixture replay, a plain import, a decision, the report), every
//! portfolio outcome reached, limits and a null cost kept null, pinned
//! definitions read from Git, and one test per refusal, each asserting exit
//! 2, the message, and that the ledger's bytes did not change.

use crate::git_repo;
use crate::util;

use std::path::{Path, PathBuf};
use std::process::Output;

use git_repo::{commit_all, git, INVENTED};
use serde_json::Value;
use util::{chio, copy_tree, explain, repo_path, run as expect};

/// Runs a scenario with --json into `name.json` (bundle in `name/`).
fn run_record(dir: &Path, scenario: &Path, name: &str, code: i32, extra: &[&str]) -> PathBuf {
    let bundle = dir.join(name);
    let mut args = vec![
        "arena",
        "run",
        scenario.to_str().unwrap(),
        "--json",
        "--out",
        bundle.to_str().unwrap(),
    ];
    args.extend(extra);
    let output = expect(dir, &args, code);
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, &output.stdout).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn attempt<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["schedule_id"] == id)
        .unwrap_or_else(|| panic!("no attempt {id}"))
}

fn row<'a>(ledger: &'a Value, id: &str) -> &'a Value {
    ledger["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["schedule_id"] == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

// The shipped reference campaign in a committed copy of the scenarios: measured runs are verified deliveries with runtime, revision, checks and evidence roots; a plain import is a pass without complete evidence; a decision makes the control's stop appropriate; live and fixture sections stay apart, and an unknown cost keeps the total null.
#[test]
fn reference_campaign_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let repo = dir.join("repo");
    copy_tree(&repo_path("scenarios"), &repo.join("scenarios"));
    let commit = commit_all(&repo);
    let decl = repo.join("scenarios/campaigns/reference.toml");
    let ledger = dir.join("ledger.json");
    let out = expect(
        dir,
        &["campaign", "template", s(&decl), "--out", s(&ledger)],
        0,
    );
    assert!(out.stdout.is_empty());
    let template: Value = serde_json::from_slice(&std::fs::read(&ledger).unwrap()).unwrap();
    assert_eq!(template["schema_version"], "chio.arena.campaign-ledger/v2");
    let rows = template["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 7);
    assert!(rows.iter().all(|r| r["native_outcome"] == "DEFERRED"));

    let attempts = dir.join("attempts");
    let ran = expect(
        dir,
        &[
            "campaign",
            "run",
            s(&decl),
            s(&ledger),
            "walking-skeleton/01",
            "pr-421/01",
            "failing-control/01",
            "pr-421-evolve/01",
            "guard-pipelines/01",
            "--out",
            s(&attempts),
        ],
        0,
    );
    let text = String::from_utf8_lossy(&ran.stdout);
    assert!(
        text.contains("ran walking-skeleton/01: native passed, portfolio verified delivery"),
        "{text}"
    );
    assert!(
        text.contains("ran failing-control/01: native stopped, portfolio stopped with appropriateness not established"),
        "{text}"
    );
    // Where it wrote: every attempt's folder under --out, and the ledger.
    assert!(
        text.contains(&format!("outputs written under {}:\n", attempts.display())),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "  walking-skeleton/01: {}\n",
            attempts.join("walking-skeleton-01").display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("ledger updated: {}\n", ledger.display())),
        "{text}"
    );
    let bundle = attempts.join("pr-421-01");
    expect(
        dir,
        &[
            "campaign",
            "run",
            s(&decl),
            s(&ledger),
            "pr-421-replay/01",
            "--bundle",
            &format!("pr-421-replay/01={}", s(&bundle)),
        ],
        0,
    );
    let ws2 = run_record(
        dir,
        &repo.join("scenarios/walking_skeleton.toml"),
        "ws2",
        0,
        &[],
    );
    expect(
        dir,
        &[
            "campaign",
            "import",
            s(&decl),
            s(&ledger),
            &format!("walking-skeleton/02={}", s(&ws2)),
        ],
        0,
    );
    expect(
        dir,
        &[
            "campaign",
            "annotate",
            s(&decl),
            s(&ledger),
            "failing-control/01",
            "--decision",
            "the kernel rightly allowed a granted read; the control's expectation is the planted error",
        ],
        0,
    );

    let written: Value = serde_json::from_slice(&std::fs::read(&ledger).unwrap()).unwrap();
    let ws1 = row(&written, "walking-skeleton/01");
    assert_eq!(ws1["source_revision"], commit.as_str());
    assert_eq!(
        ws1["runtime_identity"]["chio_version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        ws1["runtime_identity"]["binary_sha256"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert!(ws1["elapsed_seconds"].as_f64().unwrap() >= 0.0);
    assert_eq!(
        ws1["evidence_refs"][0]["merkle_root"],
        ws1["record"]["receipt_root"]
    );
    assert!(ws1["oracle_checks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["ok"] == true && c["name"].as_str().unwrap().contains(" expects ")));
    assert!(ws1["estimated_cost"].as_f64().is_some());
    let ws2_row = row(&written, "walking-skeleton/02");
    assert_eq!(ws2_row["runtime_identity"], Value::Null);
    assert_eq!(
        ws2_row["estimated_cost"],
        Value::Null,
        "unknown cost stays null"
    );
    assert_eq!(ws2_row["deviations"].as_array().unwrap().len(), 2);
    let control = row(&written, "failing-control/01");
    assert_eq!(control["interventions"][0]["kind"], "decision");

    let report = expect(
        dir,
        &["campaign", "report", s(&decl), s(&ledger), "--json"],
        0,
    );
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["schema_version"], "chio.arena.campaign-report/v3");
    assert_eq!(report["definitions"], "working-tree");
    let outcome = |id: &str| {
        attempt(&report, id)["outcome"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(outcome("walking-skeleton/01"), "verified delivery");
    assert_eq!(
        outcome("walking-skeleton/02"),
        "pass without complete evidence"
    );
    assert_eq!(outcome("pr-421/01"), "verified delivery");
    assert_eq!(outcome("failing-control/01"), "appropriate stop");
    assert_eq!(outcome("pr-421-replay/01"), "verified delivery");
    assert_eq!(outcome("guard-pipelines/01"), "verified delivery");
    assert_eq!(outcome("pr-421-evolve/01"), "verified delivery");
    for line in report["attempts"].as_array().unwrap() {
        assert_eq!(
            line["contradictions"],
            Value::Array(Vec::new()),
            "measured and imported rows agree with their evidence: {line}"
        );
    }
    let gaps = attempt(&report, "walking-skeleton/02")["evidence_gaps"].clone();
    assert!(gaps
        .as_array()
        .unwrap()
        .contains(&Value::from("runtime unknown")));
    let sections = report["sections"].as_array().unwrap();
    assert_eq!(
        sections.len(),
        2,
        "live attempts and fixture replays are separate"
    );
    assert_eq!(sections[0]["evidence"], "live");
    assert_eq!(sections[0]["attempts"], 6);
    assert_eq!(sections[0]["decisions"], 1);
    assert_eq!(sections[1]["evidence"], "fixture");
    assert_eq!(sections[1]["attempts"], 1);
    assert_eq!(
        sections[0]["elapsed_seconds"]["total"],
        Value::Null,
        "unknown time is not zero"
    );
    assert_eq!(sections[0]["elapsed_seconds"]["unknown_attempts"], 1);
    assert_eq!(
        sections[0]["estimated_cost"]["total"],
        Value::Null,
        "a null cost keeps the total null"
    );
    assert!(
        sections[0]["estimated_cost"]["known_subtotal"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(sections[0]["cost_per_verified_delivery"], Value::Null);
    assert_eq!(sections[0]["currency"], "kernel-ms");
    assert_eq!(sections[0]["comparison"], "blocked");
    assert!(sections[0]["blocked_because"]
        .as_array()
        .unwrap()
        .contains(&Value::from(
            "walking-skeleton/02 ran on an unknown runtime"
        )));
    assert_eq!(sections[1]["comparison"], "complete");
    assert!(sections[1]["cost_per_verified_delivery"].as_f64().is_some());
    let counted: u64 = sections
        .iter()
        .flat_map(|s| s["outcomes"].as_array().unwrap())
        .map(|o| o["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 7, "each attempt in exactly one outcome");
    let text = expect(dir, &["campaign", "report", s(&decl), s(&ledger)], 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("blocked: walking-skeleton/02 ran on an unknown runtime"),
        "{text}"
    );
    assert!(
        text.contains("limits: wall_seconds unknown, steps within"),
        "{text}"
    );
    forged_synthesis_is_contradicted(dir, &decl, &ledger);
}

/// The matrix row of the reference campaign, its synthesis forged (a gap's
/// verdict turned), with the row made to agree: the synthesis's digest,
/// the folder's Merkle root and the verdict counts recomputed. Nothing the
/// row states contradicts the forged file; the run records beside it do.
fn forged_synthesis_is_contradicted(dir: &Path, decl: &Path, ledger: &Path) {
    let id = "guard-pipelines/01";
    // Spend edited below what the synthesis states (to pass a limit): the
    // synthesis is what the limits judge.
    let genuine = std::fs::read(ledger).unwrap();
    let mut value: Value = serde_json::from_slice(&genuine).unwrap();
    let rows = value["rows"].as_array_mut().unwrap();
    let row = rows.iter_mut().find(|r| r["schedule_id"] == id).unwrap();
    row["spent"]["kernel_evaluations"] = 1.into();
    std::fs::write(ledger, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    let out = expect(
        dir,
        &["campaign", "report", s(decl), s(ledger), "--json"],
        0,
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        contradicted_fields(&report, id).contains(&"spent.kernel_evaluations".to_string()),
        "{:?}",
        contradicted_fields(&report, id)
    );
    std::fs::write(ledger, &genuine).unwrap();
    let mut value: Value = serde_json::from_slice(&std::fs::read(ledger).unwrap()).unwrap();
    let rows = value["rows"].as_array_mut().unwrap();
    let row = rows.iter_mut().find(|r| r["schedule_id"] == id).unwrap();
    let folder = dir.join(row["evidence_refs"][0]["path"].as_str().unwrap());
    let file = folder.join("synthesis.json");
    let mut synthesis: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let gap = &mut synthesis["gaps"][1];
    assert_eq!(gap["verdict"], "inconclusive", "{gap}");
    gap["verdict"] = "established".into();
    gap["low"] = 1.into();
    gap["high"] = 1.into();
    gap["gap"] = 1.into();
    let bytes = serde_json::to_vec(&synthesis).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    let record = row["record"].as_object_mut().unwrap();
    record.insert(
        "sha256".into(),
        chio_experiment::definition::sha256_hex(&bytes).into(),
    );
    record.insert("established".into(), 2.into());
    record.insert("inconclusive".into(), 0.into());
    row["evidence_refs"][0]["merkle_root"] = chio_campaign::evidence::folder_merkle_root(&folder)
        .unwrap()
        .into();
    std::fs::write(ledger, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    let out = expect(
        dir,
        &["campaign", "report", s(decl), s(ledger), "--json"],
        0,
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_contradicted(&report, id, "record");
    let reason = attempt(&report, id)["contradictions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "record")
        .unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains(
            "synthesis.json is not what matrices/guard_pipelines.toml derives from the run records"
        ),
        "{reason}"
    );
    assert!(reason.contains("where the runs give"), "{reason}");
}

/// A small campaign over copies of the walking skeleton and the failing
/// control, committed in its own repository.
struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    root: PathBuf,
    decl: PathBuf,
    ledger: PathBuf,
}

fn copy(from: &str, to: &Path) {
    let target = to.join(from);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::copy(repo_path(&format!("scenarios/{from}")), target).unwrap();
}

fn definition(dir: &Path, root: &Path, file: &str, revision: Option<&str>) -> String {
    let mut args = vec!["campaign", "hash", "--root", s(root), file];
    if let Some(revision) = revision {
        args.extend(["--revision", revision]);
    }
    let out = expect(dir, &args, 0);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .trim_start_matches("definition = ")
        .to_string()
}

const LIMITS: &str = "{ wall_seconds = 120, steps = 20, kernel_evaluations = 20, generations = 0 }";

/// Options of a fixture campaign.
struct Shape {
    ws: u32,
    control: u32,
    replays: u32,
    limits: &'static str,
    pinned: bool,
    extra: &'static str,
}

const SMALL: Shape = Shape {
    ws: 2,
    control: 1,
    replays: 1,
    limits: LIMITS,
    pinned: false,
    extra: "",
};

fn fixture_with(shape: Shape) -> Fixture {
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
    let commit = commit_all(&root);
    let revision = shape.pinned.then_some(commit.as_str());
    let ws = definition(&dir, &root, "walking_skeleton.toml", revision);
    let control = definition(
        &dir,
        &root,
        "campaigns/controls/misexpected_read.toml",
        revision,
    );
    let decl = dir.join("campaign.toml");
    let pin = revision
        .map(|r| format!("revision = \"{r}\"\n"))
        .unwrap_or_default();
    std::fs::write(
        &decl,
        format!(
            "schema_version = \"chio.arena.campaign/v2\"\nid = \"small\"\ntitle = \"small\"\nroot = \"root\"\n{pin}{}\n\n\
             [[tasks]]\nid = \"ws\"\nkind = \"scenario\"\nfile = \"walking_skeleton.toml\"\nrepetitions = {}\nlimits = {}\ndefinition = {ws}\n\n\
             [[tasks]]\nid = \"ws-replay\"\nkind = \"scenario\"\nfile = \"walking_skeleton.toml\"\nevidence = \"fixture\"\nrepetitions = {}\nlimits = {LIMITS}\ndefinition = {ws}\n\n\
             [[tasks]]\nid = \"control\"\nkind = \"scenario\"\nfile = \"campaigns/controls/misexpected_read.toml\"\nrepetitions = {}\nlimits = {LIMITS}\ndefinition = {control}\n",
            shape.extra, shape.ws, shape.limits, shape.replays, shape.control
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
        root,
        decl,
        ledger,
    }
}

fn fixture() -> Fixture {
    fixture_with(SMALL)
}

impl Fixture {
    fn ws_run(&self, name: &str) -> PathBuf {
        run_record(
            &self.dir,
            &self.root.join("walking_skeleton.toml"),
            name,
            0,
            &[],
        )
    }

    fn control_run(&self, name: &str, extra: &[&str]) -> PathBuf {
        run_record(
            &self.dir,
            &self.root.join("campaigns/controls/misexpected_read.toml"),
            name,
            1,
            extra,
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

    fn import_ok(&self, id: &str, record: &Path) {
        let output = self.import(&[(id, record)]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn run_ok(&self, ids: &[&str]) {
        let mut args = vec!["campaign", "run", s(&self.decl), s(&self.ledger)];
        args.extend(ids);
        let out = self.dir.join("attempts");
        args.extend(["--out", s(&out)]);
        expect(&self.dir, &args, 0);
    }

    fn annotate(&self, id: &str, flag: &str, note: &str) -> Output {
        chio(
            &self.dir,
            &[
                "campaign",
                "annotate",
                s(&self.decl),
                s(&self.ledger),
                id,
                flag,
                note,
            ],
        )
    }

    fn ledger(&self) -> Value {
        serde_json::from_slice(&std::fs::read(&self.ledger).unwrap()).unwrap()
    }

    fn write_ledger(&self, value: &Value) {
        std::fs::write(&self.ledger, serde_json::to_vec(value).unwrap()).unwrap();
    }

    fn report(&self) -> Value {
        let out = expect(
            &self.dir,
            &[
                "campaign",
                "report",
                s(&self.decl),
                s(&self.ledger),
                "--json",
            ],
            0,
        );
        serde_json::from_slice(&out.stdout).unwrap()
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

    /// Asserts that `args` exit 2 with `code` and `message` and leave the ledger unchanged.
    fn assert_command_refused(&self, args: &[&str], code: &str, message: &str) {
        let before = std::fs::read(&self.ledger).unwrap();
        let output = chio(&self.dir, args);
        assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with(&format!("error[{code}]: ")), "{stderr}");
        assert!(stderr.contains(message), "{stderr}");
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

// Every portfolio outcome is reached from the rows that produce it, each attempt lands in exactly one, and decisions and repairs are counted.
#[test]
fn every_portfolio_outcome_is_reachable() {
    let f = fixture_with(Shape {
        ws: 7,
        control: 3,
        replays: 2,
        ..SMALL
    });
    f.run_ok(&["ws/01", "ws/02"]);
    let out = f.annotate(
        "ws/02",
        "--repair",
        "restored the fixture a teammate had truncated",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    f.import_ok("ws/03", &f.ws_run("ws3"));
    f.import_ok("ws/04", &f.ws_run("ws4"));
    // A run's checks are its bundle's verdicts: an edited one is contradicted.
    f.edit_row("ws/04", |row| {
        row["oracle_checks"][0]["ok"] = false.into();
    });
    let out = f.annotate(
        "ws/05",
        "--skip",
        "the walking skeleton is covered by ws/01",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    f.edit_row("ws/07", |row| {
        row.insert("native_outcome".into(), "infrastructure-failure".into());
        row.insert("reason".into(), "the node failed to start".into());
    });
    f.import_ok("control/01", &f.control_run("c1", &[]));
    let out = f.annotate(
        "control/01",
        "--decision",
        "allowing a granted read is right",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    f.import_ok("control/02", &f.control_run("c2", &[]));
    f.import_ok("control/03", &f.control_run("c3", &["--keep-going"]));
    let replay = expect(
        &f.dir,
        &["arena", "replay", s(&f.dir.join("ws3")), "--json"],
        0,
    );
    let replay_path = f.dir.join("replay.json");
    std::fs::write(&replay_path, &replay.stdout).unwrap();
    f.import_ok("ws-replay/01", &replay_path);
    f.edit_row("ws-replay/01", |row| {
        row.insert("oracle_checks".into(), Value::Array(Vec::new()));
    });
    // A replay's verdict is not rerun by the report, so a failed check on
    // an identical replay stands as a false completion.
    let second = f.dir.join("replay2.json");
    let replay = expect(
        &f.dir,
        &["arena", "replay", s(&f.dir.join("ws4")), "--json"],
        0,
    );
    std::fs::write(&second, &replay.stdout).unwrap();
    f.import_ok("ws-replay/02", &second);
    f.edit_row("ws-replay/02", |row| {
        row["oracle_checks"][1]["ok"] = false.into();
    });

    let report = f.report();
    let outcome = |id: &str| {
        attempt(&report, id)["outcome"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let expected = [
        ("ws/01", "verified delivery"),
        ("ws/02", "verified after a human repair"),
        ("ws/03", "pass without complete evidence"),
        ("ws/04", "contradicted by its evidence"),
        ("ws/05", "skipped"),
        ("ws/06", "not attempted"),
        ("ws/07", "error"),
        ("control/01", "appropriate stop"),
        ("control/02", "stopped with appropriateness not established"),
        ("control/03", "ended without completing"),
        ("ws-replay/01", "ungraded"),
        ("ws-replay/02", "false completion"),
    ];
    for (id, want) in expected {
        assert_eq!(outcome(id), want, "{id}");
    }
    assert_eq!(
        attempt(&report, "ws/04")["contradictions"][0]["field"],
        "oracle_checks[0]"
    );
    let sections = report["sections"].as_array().unwrap();
    let counted: u64 = sections
        .iter()
        .flat_map(|s| s["outcomes"].as_array().unwrap())
        .map(|o| o["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 12, "each attempt in exactly one outcome");
    assert_eq!(sections[0]["decisions"], 1);
    assert_eq!(sections[0]["repairs"], 1);
    let blocked = sections[0]["blocked_because"].as_array().unwrap();
    assert!(blocked.contains(&Value::from("ws/06 is unjudged (not attempted)")));
    assert!(blocked.contains(&Value::from(
        "control/02 is unjudged (stopped with appropriateness not established)"
    )));
    assert_eq!(
        sections[1]["comparison"], "blocked",
        "an ungraded replay blocks its section"
    );
}

/// The fields the report names as contradicted for `id`.
fn contradicted_fields(report: &Value, id: &str) -> Vec<String> {
    attempt(report, id)["contradictions"]
        .as_array()
        .unwrap_or_else(|| panic!("{id} lists no contradictions"))
        .iter()
        .map(|c| c["field"].as_str().unwrap().to_string())
        .collect()
}

/// Asserts that the report marks `id` contradicted on `field`, never as a
/// delivery, and blocks the live comparison naming both.
fn assert_contradicted(report: &Value, id: &str, field: &str) {
    assert_eq!(
        attempt(report, id)["outcome"],
        "contradicted by its evidence"
    );
    let fields = contradicted_fields(report, id);
    assert!(
        fields.iter().any(|f| f == field),
        "{field} not in {fields:?}"
    );
    let live = &report["sections"][0];
    assert_eq!(live["comparison"], "blocked");
    let prefix = format!("{id} is contradicted by its evidence: {field}: ");
    assert!(
        live["blocked_because"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().starts_with(&prefix)),
        "{}",
        live["blocked_because"]
    );
}

// The stopped control, edited by hand into a pass with consistent counts, held checks and an invented revision, in a root that is no Git checkout: the report still prints, marks it contradicted by its evidence naming each field, and the comparison is blocked.
#[test]
fn a_stopped_attempt_edited_into_a_pass_is_contradicted() {
    let f = fixture();
    f.run_ok(&["control/01"]);
    std::fs::remove_dir_all(f.root.join(".git")).unwrap();
    f.edit_row("control/01", |row| {
        row.insert("native_outcome".into(), "passed".into());
        row.insert("reason".into(), Value::Null);
        row.insert("source_revision".into(), INVENTED.into());
        let record = row["record"].as_object_mut().unwrap();
        let calls = record["calls"].clone();
        record.insert("passed".into(), calls);
        record.insert("failed".into(), 0.into());
        record.insert("failing_steps".into(), Value::Array(Vec::new()));
        record.remove("stopped_at");
        for check in row["oracle_checks"].as_array_mut().unwrap() {
            check["ok"] = true.into();
        }
    });
    let before = std::fs::read(&f.ledger).unwrap();
    let report = f.report();
    for field in ["native_outcome", "record.stopped_at", "source_revision"] {
        assert_contradicted(&report, "control/01", field);
    }
    let text = expect(&f.dir, &["campaign", "report", s(&f.decl), s(&f.ledger)], 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("control/01") && text.contains("contradicted by its evidence"),
        "{text}"
    );
    assert!(
        text.contains(
            "    contradicted: native_outcome: the row records \"passed\", the bundle \"stopped\""
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "    contradicted: source_revision: {INVENTED} cannot be checked: the campaign root is not in a Git checkout"
        )),
        "{text}"
    );
    assert!(!text.contains("verified delivery     "), "{text}");
    assert_eq!(
        std::fs::read(&f.ledger).unwrap(),
        before,
        "the ledger changed"
    );
}

// One measured run, edited one field at a time: its status, its evidence and record roots, its verdict counts, its bundle removed, and a revision the real repository does not hold are each contradicted and named.
#[test]
fn each_field_the_evidence_contradicts_is_named() {
    let f = fixture();
    f.run_ok(&["ws/01"]);
    let genuine = std::fs::read(&f.ledger).unwrap();
    let bundle = f.dir.join("attempts/ws-01");
    type Edit = fn(&mut serde_json::Map<String, Value>);
    let cases: [(&str, Edit, &[&str]); 5] = [
        (
            "edited cost",
            |row| {
                row.insert("estimated_cost".into(), 0.0.into());
            },
            &["estimated_cost"],
        ),
        (
            "edited status",
            |row| {
                row.insert("native_outcome".into(), "failed".into());
                row.insert("reason".into(), "failed: edited".into());
            },
            &["native_outcome"],
        ),
        (
            "edited roots",
            |row| {
                let other = Value::from("c".repeat(64));
                row["evidence_refs"][0]["merkle_root"] = other.clone();
                row["record"]["receipt_root"] = other;
            },
            &["evidence_refs[0].merkle_root", "record.receipt_root"],
        ),
        (
            "edited verdict counts",
            |row| {
                let calls = row["record"]["calls"].as_u64().unwrap() + 1;
                row["record"]["calls"] = calls.into();
                row["record"]["passed"] = calls.into();
            },
            &["record.calls", "record.passed"],
        ),
        (
            "invented revision",
            |row| {
                row.insert("source_revision".into(), INVENTED.into());
            },
            &["source_revision"],
        ),
    ];
    for (what, edit, fields) in cases {
        std::fs::write(&f.ledger, &genuine).unwrap();
        f.edit_row("ws/01", edit);
        let report = f.report();
        for field in fields {
            assert_contradicted(&report, "ws/01", field);
        }
        assert_eq!(contradicted_fields(&report, "ws/01"), *fields, "{what}");
    }
    std::fs::write(&f.ledger, &genuine).unwrap();
    let moved = f.dir.join("moved");
    std::fs::rename(&bundle, &moved).unwrap();
    assert_contradicted(&f.report(), "ws/01", "evidence_refs[0].path");
    std::fs::rename(&moved, &bundle).unwrap();
    assert_eq!(
        attempt(&f.report(), "ws/01")["outcome"],
        "verified delivery"
    );
}

// Rows `chio campaign run` measured stay what they are once the report opens their evidence: a pass a verified delivery, a stop a stop, and nothing is contradicted.
#[test]
fn measured_rows_stay_verified() {
    let f = fixture();
    f.run_ok(&["ws/01", "control/01"]);
    let report = f.report();
    assert_eq!(attempt(&report, "ws/01")["outcome"], "verified delivery");
    assert_eq!(
        attempt(&report, "control/01")["outcome"],
        "stopped with appropriateness not established"
    );
    for line in report["attempts"].as_array().unwrap() {
        assert_eq!(line["contradictions"], Value::Array(Vec::new()), "{line}");
    }
    let blocked = report["sections"][0]["blocked_because"].as_array().unwrap();
    assert!(
        blocked
            .iter()
            .all(|r| !r.as_str().unwrap().contains("contradicted")),
        "{blocked:?}"
    );
}

/// A campaign of one evolution of the weakened adversary scenario, with
/// searches of it, of another scenario and of the same id under another
/// seed (`weak`, `other`, `reseeded`), `evo/01` imported from `weak`;
/// answers the folder and the declaration.
fn evolve_fixture() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let root = dir.join("root");
    copy_tree(&repo_path("scenarios"), &root);
    let weak = std::fs::read_to_string(root.join("adversaries-weakened.toml")).unwrap();
    std::fs::write(
        root.join("weakened-reseeded.toml"),
        weak.replace("rng_seed = 4242", "rng_seed = 5151"),
    )
    .unwrap();
    let pin = definition(&dir, &root, "adversaries-weakened.toml", None);
    let decl = dir.join("campaign.toml");
    std::fs::write(
        &decl,
        format!(
            "schema_version = \"chio.arena.campaign/v2\"\nid = \"evo\"\ntitle = \"evo\"\nroot = \"root\"\n\n\
             [[tasks]]\nid = \"evo\"\nkind = \"evolve\"\nfile = \"adversaries-weakened.toml\"\nrepetitions = 1\n\
             limits = {{ wall_seconds = 600, steps = 0, kernel_evaluations = 100000, generations = 10 }}\ndefinition = {pin}\n"
        ),
    )
    .unwrap();
    let ledger = dir.join("ledger.json");
    expect(
        &dir,
        &["campaign", "template", s(&decl), "--out", s(&ledger)],
        0,
    );
    for (file, out) in [
        ("adversaries-weakened.toml", "weak"),
        ("adversaries-two-nodes.toml", "other"),
        ("weakened-reseeded.toml", "reseeded"),
    ] {
        let args = [
            "arena",
            "evolve",
            &format!("root/{file}"),
            "--generations",
            "2",
            "--population-size",
            "2",
            "--json",
            "--out",
            out,
        ];
        let output = expect(&dir, &args, 0);
        std::fs::write(dir.join(format!("{out}.json")), &output.stdout).unwrap();
    }
    expect(
        &dir,
        &[
            "campaign",
            "import",
            s(&decl),
            s(&ledger),
            "evo/01=weak.json",
        ],
        0,
    );
    (tmp, dir, decl)
}

/// Points row `evo/01` at `folder`, its Merkle root recomputed, and
/// answers the report's reason for `evidence_refs[0].path`.
fn evolution_reason(dir: &Path, decl: &Path, folder: &str) -> String {
    let ledger = dir.join("ledger.json");
    let mut value: Value = serde_json::from_slice(&std::fs::read(&ledger).unwrap()).unwrap();
    let row = &mut value["rows"][0];
    row["evidence_refs"][0]["path"] = folder.into();
    row["evidence_refs"][0]["merkle_root"] =
        chio_campaign::evidence::folder_merkle_root(&dir.join(folder))
            .unwrap()
            .into();
    std::fs::write(&ledger, serde_json::to_vec(&value).unwrap()).unwrap();
    let out = expect(
        dir,
        &["campaign", "report", s(decl), s(&ledger), "--json"],
        0,
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_contradicted(&report, "evo/01", "evidence_refs[0].path");
    attempt(&report, "evo/01")["contradictions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "evidence_refs[0].path")
        .unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string()
}

// An evolution's row pointed at another scenario's search, at a search of an edited copy of its scenario that keeps the id (under another seed), or at its own folder with the escapes removed from the leaderboard (each with the folder's Merkle root recomputed) is contradicted, naming what the trace says instead; `chio report` refuses the edited leaderboard.
#[test]
fn a_forged_evolution_is_contradicted() {
    let (_tmp, dir, decl) = evolve_fixture();
    let ledger = dir.join("ledger.json");
    let report = expect(
        &dir,
        &["campaign", "report", s(&decl), s(&ledger), "--json"],
        0,
    );
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(
        attempt(&report, "evo/01")["contradictions"],
        Value::Array(Vec::new())
    );
    let why = evolution_reason(&dir, &decl, "other");
    assert!(
        why.contains("is a search of scenario \"adversaries_two_nodes\"")
            && why.contains("\"adversaries_weakened\""),
        "{why}"
    );
    // A search of an edited copy of the scenario that keeps its id (here
    // with another seed) searched another file than the task's.
    let why = evolution_reason(&dir, &decl, "reseeded");
    assert!(
        why.contains("searched a scenario file whose SHA-256 is")
            && why.contains("the task's scenario adversaries-weakened.toml hashes to"),
        "{why}"
    );
    let board = dir.join("weak/leaderboard.json");
    let mut value: Value = serde_json::from_slice(&std::fs::read(&board).unwrap()).unwrap();
    let escapes: u64 = value["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert!(escapes > 0, "the weakened search finds escapes");
    value.as_object_mut().unwrap().remove("causes");
    std::fs::write(&board, serde_json::to_vec(&value).unwrap()).unwrap();
    let why = evolution_reason(&dir, &decl, "weak");
    assert!(
        why.contains("leaderboard.json is not what its evolve-trace.json derives")
            && why.contains(&format!(
                "it records 0 escape(s) in 0 cause(s), the trace's survived actions give {escapes} in"
            )),
        "{why}"
    );
    let args = ["report", "weak", "--out", "weak.html"];
    let output = expect(&dir, &args, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error[CHIO-REPORT-INPUT-UNREADABLE]: report: ")
            && stderr.contains("it is not what evolve-trace.json beside it derives"),
        "{stderr}"
    );
    assert!(!dir.join("weak.html").exists());
}

// A search whose trace contradicts itself (every escaped record turned into a defeat, the sample counts and generation escapes left, the leaderboard rewritten as the edited records derive it) is refused by `chio report` (CHIO-REPORT-INCONSISTENT-TRACE, naming the field, nothing written) and contradicts an evolution row that names it.
#[test]
fn a_self_contradicting_trace_is_refused() {
    let (_tmp, dir, decl) = evolve_fixture();
    copy_tree(&dir.join("weak"), &dir.join("flipped"));
    let trace_path = dir.join("flipped/evolve-trace.json");
    let text = std::fs::read_to_string(&trace_path).unwrap();
    assert!(
        text.contains("\"result\":\"survived\""),
        "the weakened search has escapes"
    );
    let text = text.replace("\"result\":\"survived\"", "\"result\":\"defeated\"");
    std::fs::write(&trace_path, &text).unwrap();
    let trace =
        chio_adversary::report::TraceFile::parse(text.as_bytes(), "evolve-trace.json").unwrap();
    let board = chio_adversary::Leaderboard::from_trace(&trace.scenario_id, &trace.generations);
    std::fs::write(
        dir.join("flipped/leaderboard.json"),
        board.to_json().unwrap(),
    )
    .unwrap();
    let output = expect(&dir, &["report", "flipped", "--out", "flipped.html"], 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error[CHIO-REPORT-INCONSISTENT-TRACE]: report: ")
            && stderr.contains("contradicts itself: generations[0].samples[")
            && stderr.contains("is \"defeated\", but the record's verdict is"),
        "{stderr}"
    );
    assert!(!dir.join("flipped.html").exists());
    let why = evolution_reason(&dir, &decl, "flipped");
    assert!(
        why.contains("its evolve-trace.json contradicts itself: generations[0]"),
        "{why}"
    );
}

// A campaign title, its cost's currency and a skip reason holding terminal escape sequences reach the terminal escaped, in `campaign report` (with --color never too) and in the line `campaign annotate` prints; the ledger keeps the reason as given.
#[test]
fn campaign_text_reaches_the_terminal_printable() {
    let f = fixture();
    let text = std::fs::read_to_string(&f.decl).unwrap().replace(
        "title = \"small\"",
        "title = \"M\\u001b]0;PWNED\\u0007\\u001b[2J\"",
    );
    let costed = format!(
        "{text}\n[cost]\ncurrency = \"k\\u001b[2J\\u001b[32mcomparison: complete\"\nper_kernel_evaluation = 1.0\nper_wall_second = 1000.0\n"
    );
    std::fs::write(&f.decl, costed).unwrap();
    std::fs::remove_file(&f.ledger).unwrap();
    expect(
        &f.dir,
        &["campaign", "template", s(&f.decl), "--out", s(&f.ledger)],
        0,
    );
    let reason = "gone\u{1b}[31m\u{202e}red";
    let annotated = f.annotate("ws/02", "--skip", reason);
    assert_eq!(annotated.status.code(), Some(0));
    let line = String::from_utf8(annotated.stdout).unwrap();
    assert!(
        line.contains("(gone\\u{1b}[31m\\u{202e}red)") && !line.contains('\u{1b}'),
        "{line}"
    );
    assert_eq!(row(&f.ledger(), "ws/02")["reason"], reason);
    for color in [&[][..], &["--color", "never"][..]] {
        let mut args = color.to_vec();
        args.extend(["campaign", "report", s(&f.decl), s(&f.ledger)]);
        let report = expect(&f.dir, &args, 0);
        let text = String::from_utf8(report.stdout).unwrap();
        assert!(
            text.starts_with("campaign small: M\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\n"),
            "{text}"
        );
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'),
            "{text}"
        );
    }
}

// An attempt over a declared limit is recorded with the overrun as its reason, is not a verified delivery, and blocks the comparison.
#[test]
fn an_over_limit_attempt_blocks_the_comparison() {
    let f = fixture_with(Shape {
        limits: "{ wall_seconds = 120, steps = 1, kernel_evaluations = 20, generations = 0 }",
        ..SMALL
    });
    f.run_ok(&["ws/01"]);
    let ledger = f.ledger();
    let reason = row(&ledger, "ws/01")["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.starts_with("over its steps limit: spent "),
        "{reason}"
    );
    let report = f.report();
    let ws = attempt(&report, "ws/01");
    assert_eq!(ws["outcome"], "pass without complete evidence");
    let steps = ws["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["limit"] == "steps")
        .unwrap();
    assert_eq!(steps["status"], "over");
    assert_eq!(steps["declared"], 1.0);
    let wall = ws["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["limit"] == "wall_seconds")
        .unwrap();
    assert_eq!(wall["status"], "within");
    assert!(ws["evidence_gaps"]
        .as_array()
        .unwrap()
        .contains(&Value::from("over its steps limit")));
    let live = &report["sections"][0];
    assert_eq!(live["comparison"], "blocked");
    assert!(live["blocked_because"]
        .as_array()
        .unwrap()
        .contains(&Value::from("ws/01 went over its steps limit")));
}

// Without a [cost] model every estimated cost stays null, and so do the totals and the cost per delivery: an unknown is never zero.
#[test]
fn a_null_cost_stays_null_in_the_total() {
    let f = fixture();
    f.run_ok(&["ws/01"]);
    let ledger = f.ledger();
    assert_eq!(row(&ledger, "ws/01")["estimated_cost"], Value::Null);
    let report = f.report();
    let live = &report["sections"][0];
    assert_eq!(live["estimated_cost"]["total"], Value::Null);
    assert_eq!(live["estimated_cost"]["known_attempts"], 0);
    assert_eq!(live["estimated_cost"]["unknown_attempts"], 1);
    assert_eq!(live["cost_per_verified_delivery"], Value::Null);
    assert_eq!(live["currency"], Value::Null);
}

// A pinned declaration reads its definitions from the revision's objects: working-tree edits do not move them, while the same declaration unpinned refuses the drift; an attempt run from the edited tree is off the declared revision, and its bundle, holding the edited fixture, is contradicted.
#[test]
fn pinned_definitions_come_from_git() {
    let f = fixture_with(Shape {
        pinned: true,
        ..SMALL
    });
    let commit = git(&f.root, &["rev-parse", "HEAD"]);
    assert_eq!(
        definition(&f.dir, &f.root, "walking_skeleton.toml", Some(&commit)),
        definition(&f.dir, &f.root, "walking_skeleton.toml", None),
        "a clean checkout hashes the same either way"
    );
    let report = f.report();
    assert_eq!(report["definitions"], format!("pinned at {commit}"));

    std::fs::write(
        f.root.join("fixtures/walking-skeleton/notes.txt"),
        "edited after the pin\n",
    )
    .unwrap();
    f.report();
    assert_ne!(
        definition(&f.dir, &f.root, "walking_skeleton.toml", Some(&commit)),
        definition(&f.dir, &f.root, "walking_skeleton.toml", None)
    );
    let unpinned = f.dir.join("unpinned.toml");
    let text = std::fs::read_to_string(&f.decl).unwrap();
    std::fs::write(
        &unpinned,
        text.replace(&format!("revision = \"{commit}\"\n"), ""),
    )
    .unwrap();
    let refused = chio(&f.dir, &["campaign", "template", s(&unpinned)]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("CHIO-CAMPAIGN-DEFINITION-DRIFT"));

    f.run_ok(&["ws/01"]);
    let ledger = f.ledger();
    let ws = row(&ledger, "ws/01");
    assert_eq!(ws["source_revision"], Value::Null);
    assert!(ws["deviations"][0]
        .as_str()
        .unwrap()
        .contains("uncommitted changes to the task's files"));
    // The run read the edited fixture, which the pinned definition does
    // not hold: its bundle ran another world, so the row is contradicted.
    let report = f.report();
    assert_contradicted(&report, "ws/01", "evidence_refs[0].path");
    assert!(
        attempt(&report, "ws/01")["contradictions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["reason"].as_str().unwrap().starts_with(
                "the bundle ran inputs/fixtures/walking-skeleton/notes.txt with SHA-256"
            )),
        "{report}"
    );
    assert!(report["sections"][0]["blocked_because"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r
            .as_str()
            .unwrap()
            .starts_with(&format!("ws/01 ran off the declared revision {commit}"))));
}

// A revision the repository does not hold is refused.
#[test]
fn refuses_an_unknown_revision() {
    let f = fixture();
    let text = std::fs::read_to_string(&f.decl).unwrap();
    let pinned = f.dir.join("pinned.toml");
    std::fs::write(
        &pinned,
        text.replace(
            "root = \"root\"\n",
            "root = \"root\"\nrevision = \"0123456789abcdef0123456789abcdef01234567\"\n",
        ),
    )
    .unwrap();
    let output = chio(&f.dir, &["campaign", "template", s(&pinned)]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(
            "error[CHIO-CAMPAIGN-REVISION]: campaign template: cannot read the pinned revision"
        ),
        "{stderr}"
    );
}

// An annotated tag's object id pinned as the revision is refused, though Git peels it to a commit: the declaration and `campaign hash --revision` name the commit to pin instead, as a row's source revision must name the commit itself.
#[test]
fn refuses_a_tag_object_as_revision() {
    let f = fixture();
    git(&f.root, &["tag", "-a", "pinned", "-m", "a tag object"]);
    let tag = git(&f.root, &["rev-parse", "pinned"]);
    let commit = git(&f.root, &["rev-parse", "HEAD"]);
    assert_ne!(tag, commit);
    let text = std::fs::read_to_string(&f.decl).unwrap();
    let pinned = f.dir.join("pinned.toml");
    std::fs::write(
        &pinned,
        text.replace(
            "root = \"root\"\n",
            &format!("root = \"root\"\nrevision = \"{tag}\"\n"),
        ),
    )
    .unwrap();
    let hash = [
        "campaign",
        "hash",
        "--root",
        s(&f.root),
        "--revision",
        &tag,
        "walking_skeleton.toml",
    ];
    for args in [&["campaign", "template", s(&pinned)][..], &hash[..]] {
        let output = chio(&f.dir, args);
        assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with("error[CHIO-CAMPAIGN-REVISION]: campaign ")
                && stderr.contains(&format!(
                    "it is a tag object, not a commit; pin the commit itself: {commit}"
                )),
            "{stderr}"
        );
    }
    // The commit it names is accepted, and the report says it as declared.
    std::fs::write(
        &pinned,
        text.replace(
            "root = \"root\"\n",
            &format!("root = \"root\"\nrevision = \"{commit}\"\n"),
        ),
    )
    .unwrap();
    expect(&f.dir, &["campaign", "template", s(&pinned)], 0);
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
        f.root.join("fixtures/walking-skeleton/notes.txt"),
        "edited\n",
    )
    .unwrap();
    f.assert_refused(
        "CHIO-CAMPAIGN-DEFINITION-DRIFT",
        "task \"ws\": its files hash to",
    );
}

// A scenario task whose fixture links out of its folder, or a matrix file hashed as a scenario, is refused as a task's file, never as a matrix cell; the declaration is refused the same way.
#[test]
fn refuses_a_task_file_the_scenario_loader_refuses() {
    let f = fixture();
    let matrices = f.root.join("matrices");
    std::fs::create_dir_all(&matrices).unwrap();
    std::fs::copy(
        repo_path("scenarios/matrices/guard_pipelines.toml"),
        matrices.join("guard_pipelines.toml"),
    )
    .unwrap();
    let args = [
        "campaign",
        "hash",
        "--root",
        s(&f.root),
        "matrices/guard_pipelines.toml",
    ];
    f.assert_command_refused(
        &args,
        "CHIO-CAMPAIGN-TASK-SCENARIO",
        "campaign hash: task file \"matrices/guard_pipelines.toml\" is refused as a scenario: unknown key",
    );
    std::fs::write(f.dir.join("outside.txt"), "not the scenario's\n").unwrap();
    std::os::unix::fs::symlink(
        "../../../outside.txt",
        f.root.join("fixtures/walking-skeleton/leak.txt"),
    )
    .unwrap();
    let args = [
        "campaign",
        "hash",
        "--root",
        s(&f.root),
        "walking_skeleton.toml",
    ];
    f.assert_command_refused(
        &args,
        "CHIO-CAMPAIGN-TASK-SCENARIO",
        "campaign hash: task file \"walking_skeleton.toml\" is refused as a scenario: \"fixtures/walking-skeleton/leak.txt\" at servers[0].fixtures resolves outside the scenario's folder",
    );
    let output = chio(&f.dir, &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("cell"), "{stderr}");
    f.assert_command_refused(
        &["campaign", "report", s(&f.decl), s(&f.ledger)],
        "CHIO-CAMPAIGN-TASK-SCENARIO",
        "task file \"walking_skeleton.toml\" is refused as a scenario",
    );
}

// A fixture replay cannot fill a live row, and a row relabelled from fixture to live is refused.
#[test]
fn refuses_a_fixture_relabelled_as_live() {
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
        stderr.contains("scheduled as live evidence but carries fixture evidence"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&f.ledger).unwrap(), before);
    f.import_ok("ws-replay/01", &replay_path);
    f.edit_row("ws-replay/01", |row| {
        row.insert("evidence".into(), "live".into());
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-RELABELLED-EVIDENCE",
        "\"ws-replay/01\" is scheduled as fixture evidence but carries live evidence",
    );
}

// A record whose status says passed while its steps failed is refused at import, and such a row at report; so is a pass whose evidence root is not its record's.
#[test]
fn refuses_a_pass_contradicted_by_its_evidence() {
    let f = fixture();
    let control = f.control_run("control", &[]);
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
    f.import_ok("ws/01", &f.ws_run("ws1"));
    f.edit_row("ws/01", |row| {
        row["record"]["stopped_at"] = "read-dotenv".into();
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-CONTRADICTED-PASS",
        "the run stopped at step read-dotenv",
    );
    f.edit_row("ws/01", |row| {
        row["record"].as_object_mut().unwrap().remove("stopped_at");
        row["evidence_refs"][0]["merkle_root"] = "00".repeat(32).into();
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-CONTRADICTED-PASS",
        "is not the record's receipt root",
    );
}

// A row that did not pass and gives no reason is refused.
#[test]
fn refuses_a_non_pass_without_reason() {
    let f = fixture();
    f.import_ok("control/01", &f.control_run("control", &[]));
    f.edit_row("control/01", |row| {
        row.insert("reason".into(), Value::Null);
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-MISSING-REASON",
        "\"control/01\" did not pass and gives no reason",
    );
}

// A DEFERRED row carrying results is refused, and so is a SKIPPED one.
#[test]
fn refuses_a_deferred_or_skipped_row_with_results() {
    let f = fixture();
    f.edit_row("ws/01", |row| {
        row["spent"]["kernel_evaluations"] = 2.into();
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-DEFERRED-WITH-RESULTS",
        "\"ws/01\" is DEFERRED (not attempted) but carries a spent budget",
    );
    f.edit_row("ws/01", |row| {
        row["spent"]["kernel_evaluations"] = Value::Null;
        row.insert("native_outcome".into(), "SKIPPED".into());
        row.insert("elapsed_seconds".into(), 1.5.into());
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-DEFERRED-WITH-RESULTS",
        "\"ws/01\" is SKIPPED (not attempted) but carries an elapsed time",
    );
}

// An intervention on an attempt never made is refused, and the ledger keeps its bytes.
#[test]
fn refuses_an_intervention_on_a_deferred_row() {
    let f = fixture();
    f.assert_command_refused(
        &[
            "campaign",
            "annotate",
            s(&f.decl),
            s(&f.ledger),
            "ws/01",
            "--repair",
            "fixed it",
        ],
        "CHIO-CAMPAIGN-DEFERRED-WITH-RESULTS",
        "\"ws/01\" is DEFERRED (not attempted) but carries interventions",
    );
}

// Importing into a row that already holds an attempt is refused: a retry needs a new schedule.
#[test]
fn refuses_a_second_attempt_on_one_row() {
    let f = fixture();
    f.import_ok("ws/01", &f.ws_run("ws1"));
    let ws2 = f.ws_run("ws2");
    f.assert_command_refused(
        &[
            "campaign",
            "import",
            s(&f.decl),
            s(&f.ledger),
            &format!("ws/01={}", s(&ws2)),
        ],
        "CHIO-CAMPAIGN-ALREADY-ATTEMPTED",
        "campaign import: ledger row \"ws/01\" already holds an attempt",
    );
    f.assert_command_refused(
        &["campaign", "run", s(&f.decl), s(&f.ledger), "ws/01"],
        "CHIO-CAMPAIGN-ALREADY-ATTEMPTED",
        "ledger row \"ws/01\" already holds an attempt",
    );
}

// An import naming one schedule id twice, or one record for two rows, is refused.
#[test]
fn refuses_an_import_that_names_twice() {
    let f = fixture();
    let ws1 = f.ws_run("ws1");
    let ws2 = f.ws_run("ws2");
    f.assert_command_refused(
        &[
            "campaign",
            "import",
            s(&f.decl),
            s(&f.ledger),
            &format!("ws/01={}", s(&ws1)),
            &format!("ws/01={}", s(&ws2)),
        ],
        "CHIO-CAMPAIGN-IMPORT-TWICE",
        "the import names schedule id \"ws/01\" twice",
    );
    let copy = f.dir.join("copy.json");
    std::fs::copy(&ws1, &copy).unwrap();
    f.assert_command_refused(
        &[
            "campaign",
            "import",
            s(&f.decl),
            s(&f.ledger),
            &format!("ws/01={}", s(&ws1)),
            &format!("ws/02={}", s(&copy)),
        ],
        "CHIO-CAMPAIGN-IMPORT-TWICE",
        "the import gives rows \"ws/01\" and \"ws/02\" the same record: ",
    );
}

// A record of another task's scenario is refused for the row it was named for.
#[test]
fn refuses_a_record_of_another_task() {
    let f = fixture();
    let control = f.control_run("control", &[]);
    f.assert_command_refused(
        &[
            "campaign",
            "import",
            s(&f.decl),
            s(&f.ledger),
            &format!("ws/01={}", s(&control)),
        ],
        "CHIO-CAMPAIGN-WRONG-TASK",
        "the record names \"misexpected_read\", the task runs \"walking_skeleton\"",
    );
}

// A native outcome name the task never produces is refused, naming the allowed ones.
#[test]
fn refuses_an_unknown_outcome_name() {
    let f = fixture();
    f.import_ok("control/01", &f.control_run("control", &[]));
    f.edit_row("control/01", |row| {
        row.insert("native_outcome".into(), "PASS".into());
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-UNKNOWN-OUTCOME",
        "ledger row \"control/01\": native outcome \"PASS\" is not one its task produces",
    );
}

// A row spending over a limit without naming the overrun in its reason is refused.
#[test]
fn refuses_an_over_limit_row_that_hides_its_overrun() {
    let f = fixture();
    f.import_ok("ws/01", &f.ws_run("ws1"));
    f.edit_row("ws/01", |row| {
        row.insert("elapsed_seconds".into(), 500.0.into());
    });
    f.assert_refused(
        "CHIO-CAMPAIGN-OVER-LIMIT",
        "ledger row \"ws/01\" spent 500 against a wall_seconds limit of 120",
    );
}

// Negative amounts in a row are refused, each naming its field.
#[test]
fn refuses_negative_numbers() {
    for (field, edit) in [
        (
            "elapsed_seconds",
            serde_json::json!({"elapsed_seconds": -1.0}),
        ),
        (
            "estimated_cost",
            serde_json::json!({"estimated_cost": -0.5}),
        ),
        (
            "spent.steps",
            serde_json::json!({"spent": {"steps": -3, "kernel_evaluations": null, "generations": null}}),
        ),
    ] {
        let f = fixture();
        f.import_ok("ws/01", &f.ws_run("ws1"));
        f.edit_row("ws/01", |row| {
            for (key, value) in edit.as_object().unwrap() {
                row.insert(key.clone(), value.clone());
            }
        });
        f.assert_refused(
            "CHIO-CAMPAIGN-BAD-NUMBER",
            &format!("ledger row \"ws/01\": {field} is negative or not finite"),
        );
    }
}

// A non-finite amount, which JSON can only spell as an out-of-range number, is refused and the ledger kept.
#[test]
fn refuses_a_non_finite_number() {
    let f = fixture();
    f.import_ok("ws/01", &f.ws_run("ws1"));
    let text = std::fs::read_to_string(&f.ledger).unwrap();
    let seconds = f.ledger()["rows"][0]["elapsed_seconds"].clone();
    assert_eq!(seconds, Value::Null);
    let edited = text.replacen("\"elapsed_seconds\":null", "\"elapsed_seconds\":1e999", 1);
    assert_ne!(edited, text);
    std::fs::write(&f.ledger, edited).unwrap();
    f.assert_refused("CHIO-EXPERIMENT-SYNTAX", "number out of range");
}

// A row missing a declared field is refused.
#[test]
fn refuses_a_row_missing_a_field() {
    let f = fixture();
    f.edit_row("ws/01", |row| {
        row.remove("oracle_checks");
    });
    f.assert_refused(
        "CHIO-EXPERIMENT-SYNTAX",
        "rows[0] lacks the declared field oracle_checks",
    );
}

// A declaration whose task has no limits, or a negative or infinite one, is refused by every command; so is the previous schema.
#[test]
fn refuses_declarations_with_bad_limits() {
    let f = fixture();
    let text = std::fs::read_to_string(&f.decl).unwrap();
    let cases = [
        (
            text.replacen(&format!("limits = {LIMITS}\n"), "", 1),
            "tasks[0].limits: declare limits",
        ),
        (
            text.replacen("wall_seconds = 120", "wall_seconds = -1", 1),
            "tasks[0].limits.wall_seconds: must be zero or more",
        ),
        (
            text.replacen("steps = 20", "steps = inf", 1),
            "tasks[0].limits.steps: must be finite",
        ),
        (
            text.replacen("generations = 0", "generations = nan", 1),
            "tasks[0].limits.generations: must be finite",
        ),
        (
            text.replace("chio.arena.campaign/v2", "chio.arena.campaign/v1"),
            "declarations have no limits",
        ),
    ];
    for (bytes, message) in cases {
        std::fs::write(&f.decl, &bytes).unwrap();
        for args in [
            vec!["campaign", "report", s(&f.decl), s(&f.ledger)],
            vec!["campaign", "run", s(&f.decl), s(&f.ledger), "ws/01"],
        ] {
            f.assert_command_refused(&args, "CHIO-CAMPAIGN-DECLARATION", message);
        }
    }
}

/// Edits the manifest of the bundle in `dir` with `edit`, keeping it canonical.
fn edit_bundle(dir: &Path, edit: impl FnOnce(&mut Value)) {
    let path = dir.join("arena.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut manifest);
    let text = chio_kernel::canonical::to_canonical_string(&manifest).unwrap();
    std::fs::write(path, format!("{text}\n")).unwrap();
}

/// Rewrites a stopped run's row as a pass of `bundle` (a copy of its own
/// bundle, edited), with every count and check made to match, and the
/// receipt root `root` the edited bundle now holds.
fn forge_pass(f: &Fixture, id: &str, bundle: &Path, root: &str) {
    f.edit_row(id, |row| {
        row.insert("native_outcome".into(), "passed".into());
        row.insert("reason".into(), Value::Null);
        let record = row["record"].as_object_mut().unwrap();
        let calls = record["calls"].clone();
        record.insert("passed".into(), calls);
        record.insert("failed".into(), 0.into());
        record.insert("failing_steps".into(), Value::Array(Vec::new()));
        record.insert("receipt_root".into(), root.into());
        record.remove("stopped_at");
        for check in row["oracle_checks"].as_array_mut().unwrap() {
            check["ok"] = true.into();
        }
        row["evidence_refs"][0]["path"] = bundle.display().to_string().into();
        row["evidence_refs"][0]["merkle_root"] = root.into();
    });
}

/// The reasons the report gives for `id`'s contradictions at `field`.
fn reasons_at(report: &Value, id: &str, field: &str) -> Vec<String> {
    attempt(report, id)["contradictions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["field"] == field)
        .map(|c| c["reason"].as_str().unwrap().to_string())
        .collect()
}

// The stopped control's bundle edited where no signature reaches (its allow receipt deleted with the root and count recomputed, the step rewritten as a deny no kernel decided, the run as completed), and its row made to match: the bundle agrees with itself and the row with the bundle, but re-deciding it from its inputs gives the allow back, so the row is contradicted at the evidence path naming the step and the field, never a verified delivery; the report still prints (exit 0) and the comparison is blocked.
#[test]
fn a_receiptless_deny_edited_into_a_bundle_is_contradicted_when_re_decided() {
    let f = fixture();
    f.run_ok(&["control/01"]);
    let forged = f.dir.join("attempts/control-01-forged");
    copy_tree(&f.dir.join("attempts/control-01"), &forged);
    std::fs::write(forged.join("receipts.ndjson"), "").unwrap();
    let root = chio_kernel::receipt::merkle_root_of_ids(&[]);
    edit_bundle(&forged, |m| util::forge_receiptless_deny(m, &root));
    forge_pass(&f, "control/01", &forged, &root);
    let report = f.report();
    assert_contradicted(&report, "control/01", "evidence_refs[0].path");
    let reasons = reasons_at(&report, "control/01", "evidence_refs[0].path");
    assert!(
        reasons.iter().any(|r| r.starts_with(
            "re-decided from its inputs (as `chio arena replay` re-decides it), the bundle drifts: step read-notes (#0): verdict differs (deny in the bundle, allow when re-decided)"
        )),
        "{reasons:?}"
    );
    let text = expect(&f.dir, &["campaign", "report", s(&f.decl), s(&f.ledger)], 0);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("contradicted by its evidence")
            && text.contains("    contradicted: evidence_refs[0].path: re-decided from its inputs")
            && !text.contains("verified delivery     "),
        "{text}"
    );
}

// Neighbours of the same rule: a passing run's bundle with an unsigned trace detail edited is contradicted at the evidence path naming that field; a fixture replay row that says `identical` of a bundle that drifts is contradicted at its native outcome; an untouched run stays a verified delivery.
#[test]
fn unsigned_bundle_edits_are_contradicted_for_runs_and_replays() {
    let f = fixture();
    f.run_ok(&["ws/01", "ws/02"]);
    let spec = format!("ws-replay/01={}", f.dir.join("attempts/ws-02").display());
    let attempts = f.dir.join("attempts");
    expect(
        &f.dir,
        &[
            "campaign",
            "run",
            s(&f.decl),
            s(&f.ledger),
            "ws-replay/01",
            "--bundle",
            &spec,
            "--out",
            s(&attempts),
        ],
        0,
    );
    let before = f.report();
    for id in ["ws/01", "ws/02", "ws-replay/01"] {
        assert_eq!(attempt(&before, id)["outcome"], "verified delivery", "{id}");
    }
    for bundle in ["attempts/ws-01", "attempts/ws-02"] {
        edit_bundle(&f.dir.join(bundle), |m| {
            let detail = m["steps"][0]["trace"]["stages"][0]["detail"]
                .as_str()
                .unwrap_or_else(|| panic!("no trace detail: {}", m["steps"][0]))
                .to_string();
            m["steps"][0]["trace"]["stages"][0]["detail"] = format!("{detail} (edited)").into();
        });
    }
    let report = f.report();
    assert_contradicted(&report, "ws/01", "evidence_refs[0].path");
    let reasons = reasons_at(&report, "ws/01", "evidence_refs[0].path");
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("steps[0].trace") && r.contains("not what re-deciding it writes")),
        "{reasons:?}"
    );
    assert_eq!(
        attempt(&report, "ws-replay/01")["outcome"],
        "contradicted by its evidence"
    );
    let reasons = reasons_at(&report, "ws-replay/01", "native_outcome");
    assert!(
        reasons.iter().any(|r| r.starts_with(
            "the row records \"identical\", but re-decided from its inputs the bundle drifts"
        )),
        "{reasons:?}"
    );
}

/// A campaign of one scenario task `t` over a committed copy of the
/// reference scenarios, with `file` written as `text` first when given.
struct OneTask {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    root: PathBuf,
    decl: PathBuf,
    ledger: PathBuf,
}

impl OneTask {
    fn new(file: &str, text: Option<String>) -> OneTask {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let root = dir.join("root");
        copy_tree(&repo_path("scenarios"), &root);
        if let Some(text) = text {
            std::fs::write(root.join(file), text).unwrap();
        }
        commit_all(&root);
        let pin = definition(&dir, &root, file, None);
        let decl = dir.join("campaign.toml");
        std::fs::write(
            &decl,
            format!(
                "schema_version = \"chio.arena.campaign/v2\"\nid = \"one\"\ntitle = \"one\"\nroot = \"root\"\n\n\
                 [[tasks]]\nid = \"t\"\nkind = \"scenario\"\nfile = \"{file}\"\nrepetitions = 1\nlimits = {LIMITS}\ndefinition = {pin}\n"
            ),
        )
        .unwrap();
        let ledger = dir.join("ledger.json");
        expect(
            &dir,
            &["campaign", "template", s(&decl), "--out", s(&ledger)],
            0,
        );
        OneTask {
            _tmp: tmp,
            dir,
            root,
            decl,
            ledger,
        }
    }

    fn run(&self) -> PathBuf {
        let out = self.dir.join("attempts");
        expect(
            &self.dir,
            &[
                "campaign",
                "run",
                s(&self.decl),
                s(&self.ledger),
                "t/01",
                "--out",
                s(&out),
            ],
            0,
        );
        out.join("t-01")
    }

    fn report(&self) -> Value {
        let out = expect(
            &self.dir,
            &[
                "campaign",
                "report",
                s(&self.decl),
                s(&self.ledger),
                "--json",
            ],
            0,
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

// Another step kind: a run stopped on a revocation the kernel refused, its unsigned outcome flipped to done in a copy of its bundle (no receipt touched) and its row made a pass, is contradicted when the bundle is re-decided, naming the revocation step; a delegation flipped the same way is named too.
#[test]
fn a_flipped_revocation_or_delegation_outcome_is_contradicted_when_re_decided() {
    let text = std::fs::read_to_string(repo_path("scenarios/deny_reasons.toml")).unwrap();
    let revoke = text.replace(
        "expect = \"refused\"\nexpect_reason = \"the revoker holds no ancestor of capability operator-read\"\nat = 7",
        "expect = \"done\"\nat = 7",
    );
    assert_ne!(revoke, text);
    let one = OneTask::new("ctl_revoke.toml", Some(revoke));
    let bundle = one.run();
    let forged = one.dir.join("forged");
    copy_tree(&bundle, &forged);
    edit_bundle(&forged, |m| {
        let last = m["steps"].as_array().unwrap().len() - 1;
        let step = m["steps"][last].as_object_mut().unwrap();
        step.insert("actual".into(), "done".into());
        step.insert("pass".into(), true.into());
        step.insert("reason".into(), Value::Null);
        step.insert("reason_code".into(), Value::Null);
        let m = m.as_object_mut().unwrap();
        m.insert("mismatches".into(), Value::Array(Vec::new()));
        m.insert("status".into(), "completed".into());
        m.remove("stopped");
    });
    let mut ledger: Value = serde_json::from_slice(&std::fs::read(&one.ledger).unwrap()).unwrap();
    let root = ledger["rows"][0]["record"]["receipt_root"]
        .as_str()
        .unwrap()
        .to_string();
    {
        let row = ledger["rows"][0].as_object_mut().unwrap();
        row.insert("native_outcome".into(), "passed".into());
        row.insert("reason".into(), Value::Null);
        let record = row["record"].as_object_mut().unwrap();
        record.insert("failing_steps".into(), Value::Array(Vec::new()));
        record.remove("stopped_at");
        for check in row["oracle_checks"].as_array_mut().unwrap() {
            check["ok"] = true.into();
        }
        row["evidence_refs"][0]["path"] = forged.display().to_string().into();
        row["evidence_refs"][0]["merkle_root"] = root.into();
    }
    std::fs::write(&one.ledger, serde_json::to_vec(&ledger).unwrap()).unwrap();
    let report = one.report();
    assert_contradicted(&report, "t/01", "evidence_refs[0].path");
    let reasons = reasons_at(&report, "t/01", "evidence_refs[0].path");
    assert!(
        reasons.iter().any(|r| r.contains(
            "step deputy-revokes-operator (#6): verdict differs (done in the bundle, refused when re-decided)"
        )),
        "{reasons:?}"
    );
}

// A run that read sealed files is re-decided with the sealed files beside its task's scenario, and stays a verified delivery; once those files change, it cannot be re-decided with the values it took, so its pass is a pass without complete evidence that says why, contradicting nothing.
#[test]
fn a_bundle_that_cannot_be_re_decided_is_a_pass_without_complete_evidence() {
    let one = OneTask::new("sealed_secret.toml", None);
    one.run();
    let report = one.report();
    assert_eq!(
        attempt(&report, "t/01")["outcome"],
        "verified delivery",
        "{report}"
    );
    std::fs::write(
        one.root.join("fixtures/secrets/token.txt"),
        "another token\n",
    )
    .unwrap();
    let report = one.report();
    let line = attempt(&report, "t/01");
    assert_eq!(line["outcome"], "pass without complete evidence", "{line}");
    assert_eq!(line["contradictions"], Value::Array(Vec::new()), "{line}");
    assert!(
        line["evidence_gaps"].as_array().unwrap().iter().any(|g| {
            let g = g.as_str().unwrap();
            g.contains("cannot be re-decided here: CHIO-ARENA-DRIFT: sealed file ")
                && g.contains("no longer has the digest the bundle recorded")
        }),
        "{line}"
    );
}
