//! Unit tests of the printed outcome: the document written one step at a
//! time is byte for byte the canonical JSON of the whole document, for real
//! runs and for stopped runs with escaped and unicode reasons; the table
//! reads its rows back from the bundle; and a bundle that cannot be read
//! back is an infrastructure error that prints nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chio_arena::bundle::{
    Bundle, BundleManifest, BundleStatus, StepInputs, StepRecord, StopRecord,
};
use chio_arena::{ActionKind, Scenario};
use chio_kernel::verdict::ProjectedVerdict;

use super::outcome::{report, write_json, write_table, OutcomeStep, Tally};
use super::{load_for_run, COMMAND};
use crate::driver::{RunOptions, RunResult, RunStatus};
use crate::error::{CliError, Exit};
use crate::term::Palette;

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios")
        .join(name)
}

/// The document as it was printed whole: the counts taken from the records
/// in memory and every step in the document before it is serialised.
fn whole_json(scenario: &Scenario, result: &RunResult, dir: &Path, steps: &[StepRecord]) -> String {
    let calls: Vec<_> = steps
        .iter()
        .filter(|s| s.pass.is_some() && s.action == ActionKind::Call)
        .collect();
    let mut tally = Tally::new(None);
    tally.calls = calls.len();
    tally.passed = calls.iter().filter(|s| s.pass == Some(true)).count();
    tally.failed = calls.iter().filter(|s| s.pass == Some(false)).count();
    let mut document = report(scenario, result, dir, &tally);
    // The whole document carries the whole witness, which a streamed run
    // writes from the scenario.
    let witness = scenario.determinism_witness().unwrap();
    document.determinism = &witness;
    document.outcome.steps = steps.iter().map(OutcomeStep::of).collect();
    let mut text = chio_kernel::canonical::to_canonical_string(&document).unwrap();
    text.push('\n');
    text
}

/// The document written one step at a time.
fn streamed_json(scenario: &Scenario, result: &RunResult, dir: &Path) -> String {
    let mut out = Vec::new();
    write_json(COMMAND, scenario, result, dir, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The table written from the bundle, without colour, and what was
/// printed whether or not it was written.
fn table(scenario: &Scenario, result: &RunResult, dir: &Path) -> (Result<Tally, CliError>, String) {
    let mut out = Vec::new();
    let written = write_table(COMMAND, scenario, result, dir, Palette::PLAIN, &mut out);
    (written, String::from_utf8(out).unwrap())
}

/// A record of `id` for a hand-made bundle.
fn step(id: &str) -> StepRecord {
    let mut record = StepRecord::new(
        id,
        ActionKind::Call,
        "solo",
        "2026-01-05T08:00:00.000Z".to_string(),
        StepInputs::default(),
    );
    record.kernel = Some("kernel-a".to_string());
    record.target = Some("workspace/read_file".to_string());
    record.expected = Some(ProjectedVerdict::Allow.into());
    record
}

/// Writes a hand-made bundle of the walking skeleton with `steps`, stopped
/// as `stopped` says, and returns the run that wrote it (without steps).
fn hand_made(
    dir: &Path,
    steps: Vec<StepRecord>,
    stopped: Option<StopRecord>,
    status: RunStatus,
) -> (Scenario, RunResult) {
    let scenario = chio_arena::load_scenario(scenario_path("walking_skeleton.toml")).unwrap();
    let manifest = BundleManifest {
        schema_version: chio_arena::bundle::BUNDLE_SCHEMA.to_string(),
        determinism: scenario.determinism_witness().unwrap(),
        scenario_title: scenario.title().to_string(),
        scenario_sha256: String::new(),
        status: BundleStatus::Stopped,
        stopped,
        mismatches: Vec::new(),
        receipt_root: String::new(),
        receipt_count: 0,
        arena_keys: BTreeMap::new(),
        policies: BTreeMap::new(),
        sealed: BTreeMap::new(),
        steps,
    };
    let bundle = Bundle {
        manifest,
        receipts: Vec::new(),
        policies: BTreeMap::new(),
        inputs: BTreeMap::new(),
    };
    bundle.write(dir).unwrap();
    let mut bundle = bundle;
    bundle.manifest.steps = Vec::new();
    let result = RunResult {
        bundle,
        status,
        failure: None,
    };
    (scenario, result)
}

// For real runs of reference scenarios (calls, delegations, revocations, messages with labels, deny reasons), the document written one step at a time is the whole document's canonical JSON, byte for byte.
#[test]
fn streamed_document_equals_the_whole_one_for_real_runs() {
    let runtime = super::runtime(COMMAND).unwrap();
    for name in [
        "walking_skeleton.toml",
        "deny_reasons.toml",
        "three_agent_triangular_delegation.toml",
        "message_exfiltration.toml",
        "integrity_hijack.toml",
    ] {
        let (scenario, inputs) = load_for_run(COMMAND, &scenario_path(name)).unwrap();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("bundle");
        let result = runtime
            .block_on(crate::driver::run_embedded(
                &scenario,
                &inputs,
                RunOptions::keep_going(true),
                &std::collections::BTreeMap::new(),
                &dir,
            ))
            .unwrap()
            .unwrap();
        assert!(result.bundle.manifest.steps.is_empty(), "{name}");
        let written = Bundle::read(&dir).unwrap().manifest;
        assert_eq!(
            written.determinism,
            scenario.determinism_witness().unwrap(),
            "{name}"
        );
        let steps = written.steps;
        assert!(!steps.is_empty(), "{name}");
        let streamed = streamed_json(&scenario, &result, &dir);
        assert_eq!(
            streamed,
            whole_json(&scenario, &result, &dir, &steps),
            "{name}"
        );
        let (written, table) = table(&scenario, &result, &dir);
        written.unwrap();
        let ids: Vec<&str> = table
            .lines()
            .skip(4)
            .filter(|l| !l.starts_with(' ') && !l.is_empty())
            .map(|l| l.split(' ').next().unwrap_or_default())
            .take_while(|id| *id != "result:")
            .collect();
        let recorded: Vec<&str> = steps.iter().map(|s| s.step_id.as_str()).collect();
        assert_eq!(ids, recorded, "{name}: {table}");
    }
}

// A stopped run whose reasons hold quotes, backslashes, controls and non-ASCII text, and whose stop message holds a steps array, streams the same bytes as the whole document.
#[test]
fn streamed_document_equals_the_whole_one_for_a_stopped_run_with_escapes() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bundle");
    let mut first = step("read-notes");
    first.actual = Some(ProjectedVerdict::Deny.into());
    first.pass = Some(false);
    first.reason =
        Some("denied: \"quote\" \\ slash\t\u{1} \u{e9}t\u{e9} \u{1F512} \"steps\":[]".into());
    first.expected_reason = Some("\u{2028}".into());
    first.labels = Some(vec!["secret\"x".into(), "\u{4e2d}".into()]);
    let stop = StopRecord {
        step_id: "read-notes".into(),
        cause: "unexpected-verdict".into(),
        message: "step read-notes said \"steps\":[]".into(),
    };
    let (scenario, result) = hand_made(&dir, vec![first.clone()], Some(stop), RunStatus::Stopped);
    let streamed = streamed_json(&scenario, &result, &dir);
    assert_eq!(streamed, whole_json(&scenario, &result, &dir, &[first]));
    assert!(
        streamed.contains("\"stopped_at\":\"read-notes\""),
        "{streamed}"
    );
}

// The step an infrastructure failure stopped at shows ERROR, not done, in the table read back from the bundle.
#[test]
fn infrastructure_stop_is_not_shown_as_done() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bundle");
    let stop = StopRecord {
        step_id: "read-notes".into(),
        cause: "infrastructure".into(),
        message: "kernel kernel-a stopped before answering".into(),
    };
    let (scenario, result) = hand_made(
        &dir,
        vec![step("read-notes")],
        Some(stop),
        RunStatus::InfrastructureFailure,
    );
    let (written, table) = table(&scenario, &result, &dir);
    written.unwrap();
    let row = table.lines().find(|l| l.starts_with("read-notes")).unwrap();
    assert!(row.ends_with("ERROR"), "{table}");
    assert!(table.contains("result: infrastructure failure"), "{table}");
}

// A bundle gone from its folder, or holding fewer records than the run recorded, is CHIO-REPORT-BUNDLE-READ (exit 3) naming arena.json, and nothing is printed.
#[test]
fn a_bundle_that_cannot_be_read_back_is_an_infrastructure_error() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bundle");
    let (scenario, result) = hand_made(&dir, vec![step("read-notes")], None, RunStatus::Passed);
    let refused = |dir: &Path| {
        let mut out = Vec::new();
        let json = write_json(COMMAND, &scenario, &result, dir, &mut out);
        let (written, printed) = table(&scenario, &result, dir);
        for e in [
            json.map(|_| ()).unwrap_err(),
            written.map(|_| ()).unwrap_err(),
        ] {
            assert_eq!(e.code, "CHIO-REPORT-BUNDLE-READ");
            assert_eq!(e.exit, Exit::Infrastructure);
            assert!(e.message.contains("arena.json"), "{}", e.message);
        }
        assert!(out.is_empty() && printed.is_empty(), "{printed}");
    };
    // One record of the two steps a completed run records.
    refused(&dir);
    std::fs::remove_file(dir.join("arena.json")).unwrap();
    refused(&dir);
}

// A stopped run's bundle holds its stop step's record and, after it, only steps decided no later: none after an ordinary stop, those decided up to the arrival of a delayed call it stopped at. Anything else is CHIO-REPORT-BUNDLE-READ naming the step.
#[test]
fn records_after_the_stop_step_are_those_decided_before_it() {
    let root = tempfile::tempdir().unwrap();
    let stop = || StopRecord {
        step_id: "read-notes".into(),
        cause: "unexpected-verdict".into(),
        message: "step read-notes expected allow".into(),
    };
    let at = |id: &str, instant: &str| {
        let mut record = step(id);
        record.virtual_time = instant.to_string();
        record
    };
    let delayed = || {
        let mut record = at("read-notes", "2026-01-05T08:00:00.001Z");
        record.decided_time = Some("2026-01-05T08:00:01.001Z".to_string());
        record
    };
    let read = |name: &str, steps: Vec<StepRecord>| {
        let dir = root.path().join(name);
        let (scenario, result) = hand_made(&dir, steps, Some(stop()), RunStatus::Failed);
        table(&scenario, &result, &dir).0.map(|_| ())
    };
    let refused = |name: &str, steps: Vec<StepRecord>, named: &str| {
        let e = read(name, steps).unwrap_err();
        assert_eq!(e.code, "CHIO-REPORT-BUNDLE-READ", "{name}");
        assert!(e.message.contains(named), "{name}: {}", e.message);
    };
    read("last", vec![at("read-notes", "2026-01-05T08:00:00.001Z")]).unwrap();
    refused(
        "after-an-ordinary-stop",
        vec![
            at("read-notes", "2026-01-05T08:00:00.001Z"),
            at("later", "2026-01-05T08:00:00.002Z"),
        ],
        "later",
    );
    read(
        "decided-before-arrival",
        vec![
            delayed(),
            at("meanwhile", "2026-01-05T08:00:00.500Z"),
            at("at-arrival", "2026-01-05T08:00:01.001Z"),
        ],
    )
    .unwrap();
    refused(
        "decided-after-arrival",
        vec![delayed(), at("too-late", "2026-01-05T08:00:01.002Z")],
        "too-late",
    );
    refused(
        "no-stop-record",
        vec![at("other", "2026-01-05T08:00:00.001Z")],
        "read-notes",
    );
}
