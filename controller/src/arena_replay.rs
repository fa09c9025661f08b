//! `chio arena replay DIR [--json]` and `chio arena diff A B [--json]`.
//!
//! Replay re-evaluates a bundle: it runs the scenario and fixtures the
//! bundle recorded (its `inputs/`) again in the embedded topology and
//! compares the new run with the recorded one step by step, naming each
//! step whose verdict or receipt drifted and which input changed. It also
//! checks that the recorded policy files still hash to what the manifest
//! says. Diff compares two recorded bundles the same way without running
//! anything. Both exit 0 when there is no drift and 1 when there is. A
//! bundle of a scenario with mcp servers is replayed from its recording:
//! the one among its inputs (a `--replay-from` run) or beside them (a
//! `chio arena record --out` bundle); no server is started.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use chio_arena::bundle::{
    bundle_files, compare_runs, file_differences, manifest_differences, receipts_difference,
    Bundle, BundleStatus, StepDrift, SCENARIO_INPUT,
};
use chio_arena::{ArenaError, Scenario};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::arena_run::{load_for_run_sealed_from, runtime};
use crate::cli::{DiffArgs, ReplayArgs};
use crate::driver::{run_embedded, ReadBack, RunInputs, RunOptions, RunResult};
use crate::error::{codes, CliError};

mod scenarios;
use scenarios::{shown, ScenariosDiffer};

/// Schema of `chio arena replay --json`.
pub const REPLAY_SCHEMA_VERSION: &str = "chio.arena.replay/v1";
/// Schema of `chio arena diff --json`.
pub const DIFF_SCHEMA_VERSION: &str = "chio.arena.diff/v1";

/// What comparing two runs of a scenario found: the recorded bundle and
/// its replay (`arena replay`, and every reader that re-decides a bundle,
/// `crate::redecide`), or two recorded bundles (`arena diff`).
#[derive(Debug, Serialize)]
pub(crate) struct DriftReport {
    schema_version: &'static str,
    scenario_id: String,
    left: String,
    right: String,
    /// No step, policy file, session record or byte of evidence differs.
    pub(crate) identical: bool,
    policy_files: BTreeMap<String, String>,
    drifts: Vec<StepDrift>,
    /// For `arena diff`: the two scenarios, when the bundles are runs of
    /// different ones (another id, or the same id from another file).
    #[serde(skip_serializing_if = "Option::is_none")]
    scenarios_differ: Option<ScenariosDiffer>,
    /// For `arena replay` of an MCP edge session folder: every mismatch
    /// between the edge's record and its signed receipts, its signed end
    /// and the replay (`mcp_edge::verify`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    session: Vec<String>,
    /// For `arena replay`: every field of the bundle's `arena.json` the
    /// replay does not write the same, and where its receipt log first
    /// differs from the replay's: what the bundle claims that its own
    /// inputs do not make.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    evidence: Vec<String>,
    /// For `arena diff`: the input files (below `inputs/`, a recording kept
    /// beside them counted among them) the two bundles hold with other
    /// bytes, such as a fixture a call read or a server's recorded answer;
    /// a drift whose step records no changed input is blamed on them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    changed_files: Vec<String>,
    /// The recorded steps' ids, in order: a difference in `steps[N]` is
    /// named by its step in [`DriftReport::differences`].
    #[serde(skip)]
    step_ids: Vec<String>,
}

impl DriftReport {
    /// Each difference in one line, naming the step and the field (or
    /// the file) that differs; empty when the runs are identical. The
    /// recorded run is "the bundle", the other "re-decided".
    pub(crate) fn differences(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .drifts
            .iter()
            .map(|d| {
                format!(
                    "step {} (#{}): {} differs ({} in the bundle, {} when re-decided)",
                    d.step_id,
                    d.index,
                    d.what,
                    d.left.map_or("-", |v| v.as_str()),
                    d.right.map_or("-", |v| v.as_str()),
                )
            })
            .collect();
        lines.extend(
            self.policy_files
                .iter()
                .map(|(kernel, problem)| format!("policy {kernel}: {problem}")),
        );
        lines.extend(self.session.iter().map(|line| format!("session: {line}")));
        if !self.evidence.is_empty() {
            let places: Vec<String> = self.evidence.iter().map(|p| self.named(p)).collect();
            lines.push(format!(
                "{} {} not what re-deciding it writes",
                places.join(", "),
                if self.evidence.len() == 1 {
                    "is"
                } else {
                    "are"
                }
            ));
        }
        lines
    }

    /// A place of the manifest, a field of a step followed by that step's
    /// id (`steps[0].trace (step read-notes)`).
    fn named(&self, place: &str) -> String {
        let step = place
            .strip_prefix("steps[")
            .and_then(|rest| rest.split_once(']'))
            .and_then(|(index, _)| index.parse::<usize>().ok())
            .and_then(|index| self.step_ids.get(index));
        match step {
            Some(id) => format!("{place} (step {id})"),
            None => place.to_string(),
        }
    }

    /// What a drift whose step records no changed input is blamed on: the
    /// input files that differ, when there are any; else, for a replay, a
    /// file of the bundle changed after the run or the evaluator's code.
    fn unrecorded_blame(&self) -> String {
        if !self.changed_files.is_empty() {
            return format!(
                "{} (an input file the bundles hold with other bytes; no step digest covers it)",
                self.changed_files.join(", ")
            );
        }
        if self.schema_version == DIFF_SCHEMA_VERSION {
            "none recorded (every input file is the same: the evaluator's code changed)".to_string()
        } else {
            "none recorded (an input file of the bundle, such as a fixture a call read, was changed after the run, or the evaluator's code changed)".to_string()
        }
    }
}

/// The input files two bundles hold with other bytes, or only one holds:
/// the files of the world each ran ([`Bundle::read_world`]), so a recording
/// beside the inputs of one is compared with the one among the inputs of
/// the other, and named where a replayed run keeps it.
fn changed_input_files(left: &Bundle, right: &Bundle) -> Vec<String> {
    let mut names: Vec<&String> = left.inputs.keys().chain(right.inputs.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| left.inputs.get(*name) != right.inputs.get(*name))
        .map(|name| format!("{}/{name}", chio_arena::bundle::INPUTS_DIR))
        .collect()
}

/// The help of a bundle a reading command (replay, diff, explain) refuses:
/// these commands take a folder a run wrote and have no `--out`.
pub const READ_BUNDLE_HELP: &str =
    "pass the folder a run wrote with `chio arena run --out DIR` (it holds arena.json)";

/// Reads the bundle in `dir` for a command that only reads it.
pub fn read_bundle(command: &'static str, dir: &Path) -> Result<Bundle, CliError> {
    refused_read(command, Bundle::read(dir))
}

/// Reads the bundle in `dir` with the files of the world its run read as
/// its inputs, a recording beside them included ([`Bundle::read_world`]):
/// how re-deciding a bundle and comparing two read it.
fn read_world(command: &'static str, dir: &Path) -> Result<Bundle, CliError> {
    refused_read(command, Bundle::read_world(dir))
}

/// A bundle read, or its refusal for a command that only reads it.
fn refused_read(
    command: &'static str,
    read: Result<Bundle, ArenaError>,
) -> Result<Bundle, CliError> {
    read.map_err(|e| {
        let err = CliError::from_arena(command, &e);
        if matches!(e, ArenaError::Bundle { .. }) {
            CliError {
                help: READ_BUNDLE_HELP.to_string(),
                ..err
            }
        } else {
            err
        }
    })
}

/// Reads the bundle in `dir` for a command that presents it as evidence
/// (`chio report`, `chio arena explain`, `chio eval --from-bundle`): read as
/// [`read_bundle`] reads it, then refused unless its manifest agrees with
/// its own signed receipts and files (`chio_arena::bundle::verify`), so an
/// edited verdict is never shown as what the kernel decided. Each caller
/// then re-decides it (`crate::redecide`) before it presents a field no
/// signature covers.
pub(crate) fn read_verified_bundle(command: &'static str, dir: &Path) -> Result<Bundle, CliError> {
    let bundle = read_bundle(command, dir)?;
    chio_arena::bundle::verify(&bundle).map_err(|fault| {
        let shown = crate::term::printable(&dir.display().to_string()).into_owned();
        let err = ArenaError::Bundle {
            path: shown.clone(),
            cause: format!(
                "{}; the bundle contradicts itself, so it was changed after its run; `chio arena replay {shown}` re-decides every call from its inputs and names each difference",
                crate::term::printable(&fault.to_string())
            ),
        };
        CliError {
            help: "use the bundle as the run wrote it, or run its scenario again".to_string(),
            ..CliError::from_arena(command, &err)
        }
    })?;
    Ok(bundle)
}

/// The ids of the steps a bundle records, in order.
fn step_ids(bundle: &Bundle) -> Vec<String> {
    bundle
        .manifest
        .steps
        .iter()
        .map(|s| s.step_id.clone())
        .collect()
}

/// Policy files whose bytes no longer hash to the manifest's record.
fn tampered_policies(bundle: &Bundle) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (kernel, recorded) in &bundle.manifest.policies {
        let actual = bundle
            .policies
            .get(kernel)
            .map(|p| hex::encode(Sha256::digest(p.as_bytes())));
        if actual.as_deref() != Some(recorded.as_str()) {
            out.insert(
                kernel.clone(),
                "policy file differs from the manifest's hash".to_string(),
            );
        }
    }
    out
}

fn render(report: &DriftReport, json: bool, command: &'static str) -> Result<String, CliError> {
    if json {
        return CliError::json_document(command, report);
    }
    let mut text = report
        .scenarios_differ
        .as_ref()
        .map(ScenariosDiffer::warning)
        .unwrap_or_default();
    text.push_str(&format!(
        "{command}: {} vs {} (scenario {})\n",
        shown(&report.left),
        shown(&report.right),
        shown(&report.scenario_id)
    ));
    for (kernel, problem) in &report.policy_files {
        text.push_str(&format!("policy {}: {problem}\n", shown(kernel)));
    }
    for line in &report.session {
        text.push_str(&format!("session: {}\n", shown(line)));
    }
    for place in &report.evidence {
        text.push_str(&format!("evidence: {} differs\n", shown(place)));
    }
    if report.identical {
        text.push_str("no drift: every step has the same verdict and receipt\n");
    }
    for (i, d) in report.drifts.iter().enumerate() {
        text.push_str(&format!(
            "{} step {} (#{}): {} differs ({} vs {}); changed input: {}\n",
            if i == 0 { "first drift at" } else { "also at" },
            shown(&d.step_id),
            d.index,
            d.what,
            d.left.map_or("-", |v| v.as_str()),
            d.right.map_or("-", |v| v.as_str()),
            if d.changed_inputs.is_empty() {
                report.unrecorded_blame()
            } else {
                d.changed_inputs.join(", ")
            }
        ));
    }
    Ok(text)
}

fn drift_error(command: &'static str, report: &DriftReport) -> Result<(), CliError> {
    if report.identical {
        return Ok(());
    }
    let message = match report.drifts.first() {
        Some(d) => format!(
            "step {} drifted ({}); changed input: {}",
            d.step_id,
            d.what,
            if d.changed_inputs.is_empty() {
                report.unrecorded_blame()
            } else {
                d.changed_inputs[0].clone()
            }
        ),
        // A line naming a step says more than one naming a file.
        None => match report
            .session
            .iter()
            .find(|l| l.starts_with("step "))
            .or(report.session.first())
        {
            Some(line) => format!("the edge session does not replay: {line}"),
            None => match report.evidence.first() {
                Some(place) if report.schema_version == DIFF_SCHEMA_VERSION => {
                    format!("the two bundles' {place} differ")
                }
                Some(place) => format!(
                    "the bundle's {place} is not what its inputs make: it was changed after the run"
                ),
                None => "a policy file no longer matches the manifest".to_string(),
            },
        },
    };
    Err(CliError::new(
        codes::DRIFT,
        command,
        message,
        "inspect the named input of that step; the report lists every drifting step",
    ))
}

/// Prints a drift report and turns drift into the command's error.
fn report_drift(
    report: &DriftReport,
    json: bool,
    command: &'static str,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let text = render(report, json, command)?;
    CliError::print(command, out, text.as_bytes())?;
    drift_error(command, report)
}

/// For an MCP edge session folder, every mismatch of the edge's record
/// with its signed receipts and end and with the replay; none otherwise.
fn session_mismatches(dir: &Path, recorded: &Bundle, replayed: &Bundle) -> Vec<String> {
    if !crate::mcp_edge::verify::is_session(dir) {
        return Vec::new();
    }
    let text = recorded
        .inputs
        .get(SCENARIO_INPUT)
        .map(Vec::as_slice)
        .unwrap_or_default();
    crate::mcp_edge::verify::check_session(dir, text, replayed)
}

/// Every claim of the bundle in `dir` the replay does not make the same:
/// a run's bundle is the same bytes whenever its inputs run again, so each
/// field of its manifest (for an edge session, whose record is checked by
/// its own rules, none) and its receipt log are checked against the
/// replay's.
fn evidence_differences(dir: &Path, recorded: &Bundle, replayed: &Replayed) -> Vec<String> {
    let mut evidence = Vec::new();
    if !crate::mcp_edge::verify::is_session(dir) {
        evidence = manifest_differences(&recorded.manifest, &replayed.run.bundle.manifest);
        // Beyond the fields the reader parses: every byte of every file.
        evidence.extend(file_differences(
            &bundle_files(dir),
            &replayed.files,
            ("the bundle", "the replay"),
        ));
    }
    evidence.extend(receipts_difference(
        &recorded.receipts,
        &replayed.run.bundle.receipts,
    ));
    // A recording's calls by step: each the run forwarded, in its order.
    evidence.extend(chio_arena::recording::call_differences(
        &recorded.inputs,
        &replayed.run.bundle.inputs,
    ));
    evidence
}

/// A replay's run, and the files of the bundle it wrote.
struct Replayed {
    run: RunResult,
    files: BTreeMap<String, Option<Vec<u8>>>,
}

/// Runs `chio arena replay`.
pub fn replay(args: &ReplayArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "arena replay";
    let report = redecide(COMMAND, &args.dir, args.sealed_from.as_deref())?;
    report_drift(&report, args.json, COMMAND, out)
}

/// Writes the bundle's inputs below `work`, as its run read them.
fn stage_inputs(command: &'static str, recorded: &Bundle, work: &Path) -> Result<(), CliError> {
    let failed =
        |e: std::io::Error| CliError::infrastructure(command, format!("cannot stage inputs: {e}"));
    for (rel, bytes) in &recorded.inputs {
        let path = work.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        std::fs::write(&path, bytes).map_err(failed)?;
    }
    Ok(())
}

/// Re-decides the bundle in `dir`: runs the scenario and fixtures it
/// recorded (its `inputs/`) again in the embedded topology, reading sealed
/// files below `sealed_from`, and compares the new run with the recorded
/// one, step by step, field by field and byte by byte. `chio arena replay`
/// prints what this answers; `chio report` and `chio campaign report`
/// re-decide the bundles they present with it (`crate::redecide`). A
/// bundle that cannot be re-decided (sealed files it records only as
/// digests and `sealed_from` does not hold, a recording it lacks) is an
/// error naming why.
pub(crate) fn redecide(
    command: &'static str,
    dir: &Path,
    sealed_from: Option<&Path>,
) -> Result<DriftReport, CliError> {
    let recorded = read_world(command, dir)?;
    let work = tempfile::tempdir().map_err(|e| {
        CliError::infrastructure(command, format!("cannot create a work folder: {e}"))
    })?;
    stage_inputs(command, &recorded, work.path())?;
    let sealed = &recorded.manifest.sealed;
    let sealed_from = sealed_folder(command, dir, &recorded, sealed_from)?;
    let (scenario, mut inputs) = load_for_run_sealed_from(
        command,
        &work.path().join(SCENARIO_INPUT),
        sealed_from.as_deref(),
    )?;
    // The recording is staged with the inputs, from either layout.
    if !crate::arena_record::mcp_servers(&scenario).is_empty() {
        crate::arena_record::attach_recordings(command, &scenario, &mut inputs, work.path())?;
    }
    let read = chio_arena::scenario::sealed::digests(scenario.sealed());
    if let Some((path, _)) = sealed
        .iter()
        .find(|(path, digest)| read.get(*path) != Some(*digest))
    {
        return Err(CliError::new(
            codes::DRIFT,
            command,
            format!("sealed file {path} no longer has the digest the bundle recorded"),
            "replay with the sealed files the run read, or run the scenario again",
        ));
    }
    let keep_going = recorded.manifest.status != BundleStatus::Stopped;
    let replayed = rerun(command, &scenario, &inputs, keep_going)?;
    let drifts = compare_runs(&recorded.manifest, &replayed.run.bundle.manifest);
    let policy_files = tampered_policies(&recorded);
    let session = session_mismatches(dir, &recorded, &replayed.run.bundle);
    let evidence = evidence_differences(dir, &recorded, &replayed);
    Ok(DriftReport {
        schema_version: REPLAY_SCHEMA_VERSION,
        scenario_id: recorded.manifest.determinism.scenario_id.clone(),
        left: dir.display().to_string(),
        right: "replay".to_string(),
        identical: drifts.is_empty()
            && policy_files.is_empty()
            && session.is_empty()
            && evidence.is_empty(),
        policy_files,
        drifts,
        scenarios_differ: None,
        session,
        evidence,
        changed_files: Vec::new(),
        step_ids: step_ids(&recorded),
    })
}

/// Where the sealed files of the bundle in `dir` are read: `sealed_from`,
/// or an edge session folder's own inputs; refused when the run read
/// sealed files and there is no such folder.
fn sealed_folder(
    command: &'static str,
    dir: &Path,
    recorded: &Bundle,
    sealed_from: Option<&Path>,
) -> Result<Option<std::path::PathBuf>, CliError> {
    let sealed = &recorded.manifest.sealed;
    // An edge session folder keeps its sealed files beside its scenario.
    let sealed_from = sealed_from.map(Path::to_path_buf).or_else(|| {
        crate::mcp_edge::verify::is_session(dir).then(|| dir.join(chio_arena::bundle::INPUTS_DIR))
    });
    if !sealed.is_empty() && sealed_from.is_none() {
        return Err(CliError::new(
            codes::SEALED_FROM,
            command,
            format!(
                "the run read {} sealed file(s), which a bundle records only as digests",
                sealed.len()
            ),
            "pass --sealed-from <the folder of the scenario the bundle was run from>",
        ));
    }
    Ok(sealed_from)
}

/// Runs the scenario again, embedded, and reads its bundle back whole,
/// with the bytes of each of its files.
fn rerun(
    command: &'static str,
    scenario: &Scenario,
    inputs: &RunInputs,
    keep_going: bool,
) -> Result<Replayed, CliError> {
    let scratch = ReadBack::new().map_err(|e| CliError::node(command, &e))?;
    let options = RunOptions::keep_going(keep_going);
    let live = BTreeMap::new();
    let run = runtime(command)?.block_on(run_embedded(
        scenario,
        inputs,
        options,
        &live,
        scratch.out(),
    ));
    let files = bundle_files(scratch.out());
    let run = scratch
        .bundle(run)
        .map_err(|e| CliError::node(command, &e))?;
    Ok(Replayed { run, files })
}

/// Runs `chio arena diff`.
pub fn diff(args: &DiffArgs, out: &mut dyn Write) -> Result<(), CliError> {
    const COMMAND: &str = "arena diff";
    let left = read_world(COMMAND, &args.left)?;
    let right = read_world(COMMAND, &args.right)?;
    let drifts = compare_runs(&left.manifest, &right.manifest);
    let mut policy_files = tampered_policies(&left);
    policy_files.extend(tampered_policies(&right));
    let mut evidence: Vec<String> = receipts_difference(&left.receipts, &right.receipts)
        .into_iter()
        .collect();
    evidence.extend(file_differences(
        &bundle_files(&args.left),
        &bundle_files(&args.right),
        ("the first bundle", "the second"),
    ));
    let report = DriftReport {
        schema_version: DIFF_SCHEMA_VERSION,
        scenario_id: left.manifest.determinism.scenario_id.clone(),
        left: args.left.display().to_string(),
        right: args.right.display().to_string(),
        identical: drifts.is_empty() && policy_files.is_empty() && evidence.is_empty(),
        policy_files,
        drifts,
        scenarios_differ: ScenariosDiffer::of(&left, &right),
        session: Vec::new(),
        evidence,
        changed_files: changed_input_files(&left, &right),
        step_ids: step_ids(&left),
    };
    report_drift(&report, args.json, COMMAND, out)
}
