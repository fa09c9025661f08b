//! An evolution's output folder as evidence: its trace is a search of the
//! task's scenario, the generations it scheduled and completed are the
//! row's, and the leaderboard beside it is the one the trace derives.

use std::path::Path;

use serde_json::Value;

use super::{contradiction, Contradiction, RefCheck};
use chio_adversary::report::{leaderboard_disagreement, TraceFile};
use chio_arena::bundle::{read_regular, MAX_FILE_BYTES};
use chio_experiment::definition::{normalise, sha256_hex};

/// The trace an evolution writes in its folder.
const EVOLVE_TRACE: &str = "evolve-trace.json";

/// The leaderboard an evolution writes beside its trace.
const LEADERBOARD: &str = "leaderboard.json";

/// An evolution's row against the trace its folder holds: the generations
/// it scheduled and completed (and so its outcome, `generations` when it
/// completed them all, else `wall-budget`), which the row copied from it;
/// the scenario it searched, which must be the task's; and the leaderboard
/// beside it, which must be the one its generation records derive.
pub(super) fn check_evolution(checked: &RefCheck<'_>, found: &mut Vec<Contradiction>) {
    let dir = checked.dir;
    let bytes = read_regular(&dir.join(EVOLVE_TRACE), MAX_FILE_BYTES).ok();
    let value: Option<Value> = bytes
        .as_deref()
        .and_then(|bytes| serde_json::from_slice(bytes).ok());
    let (Some(bytes), Some(value)) = (bytes, value) else {
        found.push(contradiction(
            checked.at("path"),
            format!("{} holds no readable {EVOLVE_TRACE}", dir.display()),
        ));
        return;
    };
    check_generations(checked, &value, found);
    let trace = match TraceFile::parse(&bytes, EVOLVE_TRACE) {
        Ok(trace) => trace,
        Err(e) => {
            found.push(contradiction(
                checked.at("path"),
                format!("its {EVOLVE_TRACE} is not an evolve trace: {}", e.summary()),
            ));
            return;
        }
    };
    check_scenario(checked, &trace, found);
    if let Some(why) = trace.inconsistency() {
        found.push(contradiction(
            checked.at("path"),
            format!("its {EVOLVE_TRACE} contradicts itself: {why}"),
        ));
    }
    match read_regular(&dir.join(LEADERBOARD), MAX_FILE_BYTES) {
        Ok(board) => {
            if let Some(why) = leaderboard_disagreement(&board, &trace) {
                found.push(contradiction(
                    checked.at("path"),
                    format!("its {LEADERBOARD} is not what its {EVOLVE_TRACE} derives: {why}"),
                ));
            }
        }
        Err(_) => found.push(contradiction(
            checked.at("path"),
            format!("{} holds no readable {LEADERBOARD}", dir.display()),
        )),
    }
}

/// The trace searched the task's scenario: its scenario id is the task's,
/// the scenario file it searched hashes as the definition pinned the
/// task's file (or, unpinned, as the file now does), and its seed is the
/// one the task's scenario file declares. The seed is read from that file
/// only while it is still the file the definition hashed (a pinned
/// campaign's working tree may have moved on).
fn check_scenario(checked: &RefCheck<'_>, trace: &TraceFile, found: &mut Vec<Contradiction>) {
    let task = checked.task;
    if trace.scenario_id != task.subject {
        found.push(contradiction(
            checked.at("path"),
            format!(
                "its {EVOLVE_TRACE} is a search of scenario {:?}, the task's scenario {} is {:?}",
                trace.scenario_id, task.file, task.subject
            ),
        ));
        return;
    }
    let file = checked.base.join(&task.file);
    let pinned = normalise(Path::new(&task.file)).ok().and_then(|rel| {
        task.definition
            .rows
            .iter()
            .find(|r| r.path == rel)
            .map(|r| r.sha256.clone())
    });
    let current = std::fs::read(&file).ok().map(|b| sha256_hex(&b));
    if let Some(expected) = pinned.as_ref().or(current.as_ref()) {
        if trace.scenario_sha256 != *expected {
            found.push(contradiction(
                checked.at("path"),
                format!(
                    "its {EVOLVE_TRACE} searched a scenario file whose SHA-256 is {}, the task's scenario {} hashes to {expected}",
                    chio_arena::report::printable(&trace.scenario_sha256),
                    task.file
                ),
            ));
            return;
        }
    }
    if pinned.is_none() || pinned != current {
        return;
    }
    let Ok(scenario) = chio_arena::load_scenario(&file) else {
        return;
    };
    let seed = scenario.file().rng_seed;
    if trace.rng_seed != seed {
        found.push(contradiction(
            checked.at("path"),
            format!(
                "its {EVOLVE_TRACE} searched with seed {}, the task's scenario {} declares {seed}",
                trace.rng_seed, task.file
            ),
        ));
    }
}

/// The generations the trace lists, scheduled and completed, against the
/// row's outcome, record and spending.
fn check_generations(checked: &RefCheck<'_>, trace: &Value, found: &mut Vec<Contradiction>) {
    let row = checked.row;
    let completed = trace.get("generations_completed").and_then(Value::as_u64);
    let listed = trace
        .get("generations")
        .and_then(Value::as_array)
        .map(|g| g.len() as u64);
    let scheduled = trace.pointer("/config/generations").and_then(Value::as_u64);
    let (Some(completed), Some(scheduled)) = (completed, scheduled) else {
        found.push(contradiction(
            checked.at("path"),
            format!("its {EVOLVE_TRACE} states no generations scheduled and completed"),
        ));
        return;
    };
    if listed != Some(completed) {
        found.push(contradiction(
            checked.at("path"),
            format!(
                "its {EVOLVE_TRACE} claims {completed} generation(s) completed but records {}",
                listed.unwrap_or(0)
            ),
        ));
    }
    let outcome = if completed >= scheduled {
        "generations"
    } else {
        "wall-budget"
    };
    let mut say = |field: &str, recorded: String, traced: String| {
        found.push(contradiction(
            field,
            format!("the row records {recorded}, {EVOLVE_TRACE} {traced}"),
        ));
    };
    if row.native_outcome != outcome {
        say(
            "native_outcome",
            format!("{:?}", row.native_outcome),
            format!("{outcome:?} ({completed} of {scheduled} generations)"),
        );
    }
    let record = row.record.clone().unwrap_or_default();
    for (field, recorded, traced) in [
        (
            "record.generations_completed",
            record.generations_completed,
            completed,
        ),
        (
            "record.generations_scheduled",
            record.generations_scheduled,
            scheduled,
        ),
        ("spent.generations", row.spent.generations, completed),
    ] {
        if let Some(recorded) = recorded.filter(|r| *r != traced) {
            say(field, recorded.to_string(), traced.to_string());
        }
    }
}
