//! A scenario's bundle re-decided: a bundle is a folder anyone can edit,
//! and a field no signature covers (whether a delegation or revocation
//! took effect, a call its node denied without a kernel, which receipts the
//! log keeps) can be rewritten consistently with every check that only
//! reads it. So the report verifies a bundle by re-deciding it: its
//! scenario and fixtures (its `inputs/`) run again, and the new run must be
//! the recorded one, step for step and byte for byte. This crate runs no
//! kernel; the runtime that can (the `chio` CLI, with the code path of
//! `chio arena replay`) provides the [`Redecide`] the report asks. A drift
//! means the bundle was changed after its run, or was written by a `chio`
//! whose kernel decides otherwise than the one re-deciding it (the row's
//! runtime identity names the one that ran).

use std::path::Path;

use super::{contradiction, RefCheck, RowFindings};
use crate::ledger::{REPLAY_RECORD, RUN_RECORD};

/// What re-deciding a bundle from its own inputs gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redecision {
    /// The run came out as recorded: every step, receipt and file.
    Same,
    /// It came out otherwise: one line per difference, each naming the
    /// step and the field (or the file) that differs.
    Drifted(Vec<String>),
    /// It cannot be re-decided here, and why (sealed files the bundle
    /// records only as digests and that are not at hand, a recording it
    /// lacks, a failure of the machine).
    Undecidable(String),
}

/// Re-decides bundles for the report.
pub trait Redecide {
    /// Re-decides the bundle in `bundle`, a run of the task's scenario file
    /// `scenario` (whose folder holds the sealed files the run read, if
    /// any), as `chio arena replay` re-decides it.
    fn redecide(&self, bundle: &Path, scenario: &Path) -> Redecision;
}

/// Re-decides the bundle of a run or replay row and records what that
/// says of the row: a run's bundle that drifts contradicts the row at the
/// evidence path, once per difference; a replay row that says `identical`
/// of a bundle that drifts is contradicted at its native outcome; a bundle
/// that cannot be re-decided leaves the row unverified, saying why.
pub(super) fn check_redecided(checked: &RefCheck<'_>, found: &mut RowFindings) {
    let schema = checked
        .row
        .record
        .as_ref()
        .map(|r| r.schema_version.as_str());
    let is_run = schema == Some(RUN_RECORD);
    if !is_run && schema != Some(REPLAY_RECORD) {
        return;
    }
    let scenario = checked.base.join(&checked.task.file);
    match checked.redecide.redecide(checked.dir, &scenario) {
        Redecision::Same => {}
        Redecision::Drifted(lines) if is_run => {
            for line in lines {
                found.contradictions.push(contradiction(
                    checked.at("path"),
                    format!(
                        "re-decided from its inputs (as `chio arena replay` re-decides it), the bundle drifts: {line}"
                    ),
                ));
            }
        }
        Redecision::Drifted(lines) if checked.row.native_outcome == "identical" => {
            found.contradictions.push(contradiction(
                "native_outcome",
                format!(
                    "the row records \"identical\", but re-decided from its inputs the bundle drifts ({} difference(s)): {}",
                    lines.len(),
                    lines.first().map_or("", String::as_str)
                ),
            ));
        }
        Redecision::Drifted(_) => {}
        Redecision::Undecidable(why) => found.unverified.push(format!(
            "its bundle {} cannot be re-decided here: {why}",
            checked.dir.display()
        )),
    }
}
