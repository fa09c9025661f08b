//! What a row's evidence says of it: the report opens every evidence
//! reference an attempted row names and asks the repository about the
//! source revision it claims, so a row edited by hand, or pointed at other
//! evidence, is never reported as more than its evidence supports.
//!
//! For each attempted row (`DEFERRED` and `SKIPPED` rows carry no claim):
//!
//! - **Source revision.** A row's `source_revision` must be a full commit id
//!   the repository holding the campaign's root has
//!   ([`super::git::commit_exists`]), and that commit must hold every file
//!   of the task's definition with its pinned mode and bytes
//!   ([`super::git::PinnedTree::first_difference`]): a commit without the
//!   task's scenario, or with other fixtures, cannot be the tree that ran.
//!   When the root is not in a Git checkout, the claim cannot be checked,
//!   and an unchecked claim counts as contradicted.
//! - **A scenario's bundle** (a run's own bundle, or the bundle a fixture
//!   replays): the folder must exist and hold a readable bundle whose
//!   receipts hash to its manifest's receipt root, whose scenario file is
//!   the task's, whose fixture files are the ones the task's definition
//!   pins (byte for byte: a run beside other fixtures ran another world;
//!   a recording of MCP servers' answers counts as one of them whether the
//!   bundle keeps it beside its inputs or among them), and whose receipt root is the reference's Merkle root. For
//!   a run, the bundle also decides the native outcome (`completed` with no
//!   mismatch is `passed`, with one `failed`; `stopped`; `failed` is
//!   `infrastructure-failure`), the calls, passes and failures, the failing
//!   steps, the stop step, the receipt root, the oracle checks and the steps
//!   and kernel evaluations spent, each of which the row must repeat. For a
//!   replay, the replayed bundle's step counts must match what the row
//!   spent.
//! - **A scenario's bundle, re-decided** ([`redecision`]): a bundle's
//!   fields that no signature covers can be edited consistently, so the
//!   bundle of a run or replay row is re-decided from its own inputs as
//!   `chio arena replay` re-decides it (the [`Redecide`] the caller
//!   provides). A run whose bundle drifts is contradicted at the evidence
//!   path, once per difference, naming the step and the field; a replay row
//!   that says `identical` of a bundle that drifts is contradicted at its
//!   native outcome; a bundle that cannot be re-decided here (sealed files
//!   not at hand) leaves the row unverified, which keeps a pass from being
//!   a verified delivery.
//! - **An evolution's or matrix's output folder**: the folder must exist
//!   and its files must hash to the reference's Merkle root (the folder
//!   root [`folder_merkle_root`] defines). A matrix's `synthesis.json` there
//!   must be the record the row names (its SHA-256), and the outcome,
//!   counts and checks read from it must be the row's. The synthesis is
//!   not taken on its own word: it must be, byte for byte, what the task's
//!   matrix derives from the run records beside it (`runs/`) under the load
//!   it states, so validators, cells and gaps edited into it, with its
//!   digest and the folder's root recomputed, are still contradicted.
//!   An evolution's `evolve-trace.json` must be a search of the task's
//!   scenario (its scenario id, and its seed while the task's file is the
//!   one the definition hashed), its generations the row's, and the
//!   `leaderboard.json` beside it, byte for byte, the leaderboard its
//!   generation records derive (`chio_adversary::Leaderboard::from_trace`),
//!   so another scenario's search, or a leaderboard with escapes removed,
//!   is contradicted.
//! - **One attempt, one piece of evidence.** Two rows of live runs,
//!   evolutions or matrices must not name the same folder: a folder holds
//!   one attempt's evidence, so both rows are contradicted (fixture replays
//!   may name the bundle of the run they replay). This needs the whole
//!   ledger ([`check_ledger_evidence`]); the rest is per row
//!   ([`check_row_evidence`]).
//!
//! A run, replay or evolution record always names its folder, so such a
//! row with no evidence reference is contradicted. A reference without a
//! Merkle root claims nothing the report can check beyond what the row's
//! record states; such a pass is already not a
//! verified delivery ([`super::portfolio::evidence_gaps`]). A relative
//! evidence path is read from the folder the report runs in, as the tool
//! wrote it. Every disagreement is a [`Contradiction`] naming the row's
//! field and the reason; the report marks the row contradicted and blocks
//! its section's comparison.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ledger::{
    is_unrun, Ledger, LedgerRow, OracleCheck, EVOLVE_RECORD, REPLAY_RECORD, RUN_RECORD,
};
use super::{Campaign, Evidence, Task, TaskKind};

mod bundle;
mod evolution;
mod folder;
mod redecision;
mod revision;

use bundle::check_bundle;
use folder::check_folder;
pub use folder::folder_merkle_root;
pub use redecision::{Redecide, Redecision};
use revision::{check_revision, Revisions};

/// The file of a matrix's output folder that holds its synthesis.
pub const SYNTHESIS_FILE: &str = chio_experiment::synthesis::SYNTHESIS_FILE;

/// One field of a row its evidence does not bear out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contradiction {
    /// The row's field, such as `native_outcome` or `evidence_refs[0].merkle_root`.
    pub field: String,
    /// What the evidence says instead.
    pub reason: String,
}

/// What opening one row's evidence found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowFindings {
    /// Each field of the row its evidence does not bear out.
    pub contradictions: Vec<Contradiction>,
    /// Why its evidence, though it contradicts nothing, is not verified
    /// (a bundle that cannot be re-decided here); a pass with any is not a
    /// verified delivery.
    pub unverified: Vec<String>,
}

fn contradiction(field: impl Into<String>, reason: impl Into<String>) -> Contradiction {
    Contradiction {
        field: field.into(),
        reason: reason.into(),
    }
}

/// One evidence reference of a row, as the bundle and folder checks read it.
struct RefCheck<'a> {
    /// The folder the campaign's task files are read from.
    base: &'a Path,
    /// The row's task.
    task: &'a Task,
    /// The row.
    row: &'a LedgerRow,
    /// The folder the reference names.
    dir: &'a Path,
    /// The Merkle root the reference claims, if it claims one.
    root: Option<&'a str>,
    /// The reference's place in the row's `evidence_refs`.
    index: usize,
    /// What re-decides a scenario's bundle.
    redecide: &'a dyn Redecide,
}

impl RefCheck<'_> {
    /// The row field `evidence_refs[<index>].<key>`.
    fn at(&self, key: &str) -> String {
        format!("evidence_refs[{}].{key}", self.index)
    }
}

/// What the evidence of every row of a checked ledger says, by schedule
/// id; rows whose evidence bears them out and is verified are absent.
pub fn check_ledger_evidence(
    campaign: &Campaign,
    ledger: &Ledger,
    redecide: &dyn Redecide,
) -> BTreeMap<String, RowFindings> {
    let mut revisions = BTreeMap::new();
    let mut found: BTreeMap<String, RowFindings> = BTreeMap::new();
    let mut claims: BTreeMap<PathBuf, Vec<(&str, usize, &str)>> = BTreeMap::new();
    for row in &ledger.rows {
        let findings = row_findings(campaign, row, &mut revisions, redecide);
        if findings != RowFindings::default() {
            found.insert(row.schedule_id.clone(), findings);
        }
        if is_unrun(&row.native_outcome) || row.evidence != Evidence::Live {
            continue;
        }
        for (i, reference) in row.evidence_refs.iter().enumerate() {
            let path = Path::new(&reference.path);
            let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            claims.entry(key).or_default().push((
                row.schedule_id.as_str(),
                i,
                reference.path.as_str(),
            ));
        }
    }
    for claimants in claims.values() {
        let mut ids: Vec<&str> = claimants.iter().map(|(id, _, _)| *id).collect();
        ids.dedup();
        if ids.len() < 2 {
            continue;
        }
        for (id, i, path) in claimants {
            let others: Vec<&str> = ids.iter().copied().filter(|o| o != id).collect();
            found
                .entry(id.to_string())
                .or_default()
                .contradictions
                .push(contradiction(
                    format!("evidence_refs[{i}].path"),
                    format!(
                        "{path} is also the evidence of {}; one folder backs one attempt",
                        others.join(", ")
                    ),
                ));
        }
    }
    found
}

/// What the evidence of one row of a checked ledger says of it.
pub fn check_row_evidence(
    campaign: &Campaign,
    row: &LedgerRow,
    redecide: &dyn Redecide,
) -> RowFindings {
    row_findings(campaign, row, &mut BTreeMap::new(), redecide)
}

/// What one row's evidence says; `revisions` caches what the repository
/// said of each revision.
fn row_findings(
    campaign: &Campaign,
    row: &LedgerRow,
    revisions: &mut Revisions,
    redecide: &dyn Redecide,
) -> RowFindings {
    let mut findings = RowFindings::default();
    if is_unrun(&row.native_outcome) {
        return findings;
    }
    let Some(attempt) = campaign.attempt(&row.schedule_id) else {
        return findings;
    };
    let task = &campaign.tasks[attempt.task];
    let found = &mut findings.contradictions;
    if let Some(revision) = &row.source_revision {
        check_revision(campaign, task, revision, revisions, found);
    }
    // The estimated cost is the declaration's prices times what the row
    // spent, never a figure of its own.
    let priced = super::ledger::estimated_cost(campaign, row);
    let agrees = match (row.estimated_cost, priced) {
        (None, None) => true,
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
        _ => false,
    };
    if !agrees {
        let show = |v: Option<f64>| v.map_or("nothing".to_string(), |v| format!("{v}"));
        found.push(contradiction(
            "estimated_cost",
            format!(
                "the row records {}, the declaration's prices of what it spent give {}",
                show(row.estimated_cost),
                show(priced)
            ),
        ));
    }
    let schema = row.record.as_ref().map(|r| r.schema_version.as_str());
    if row.evidence_refs.is_empty() {
        if let Some(schema) =
            schema.filter(|s| [RUN_RECORD, REPLAY_RECORD, EVOLVE_RECORD].contains(s))
        {
            found.push(contradiction(
                "evidence_refs",
                format!("the row names no evidence, and a {schema} record always names its folder"),
            ));
        }
    }
    check_references(campaign, task, row, redecide, &mut findings);
    findings
}

/// Opens each evidence reference of an attempted row.
fn check_references(
    campaign: &Campaign,
    task: &Task,
    row: &LedgerRow,
    redecide: &dyn Redecide,
    findings: &mut RowFindings,
) {
    for (index, reference) in row.evidence_refs.iter().enumerate() {
        let checked = RefCheck {
            base: &campaign.root,
            task,
            row,
            dir: Path::new(&reference.path),
            root: reference.merkle_root.as_deref(),
            index,
            redecide,
        };
        if !checked.dir.is_dir() {
            if checked.root.is_some() {
                let what = match task.kind {
                    TaskKind::Scenario => "bundle",
                    _ => "output folder",
                };
                findings.contradictions.push(contradiction(
                    checked.at("path"),
                    format!("no {what} at {}", reference.path),
                ));
            }
            continue;
        }
        match task.kind {
            TaskKind::Scenario => check_bundle(&checked, findings),
            _ => check_folder(&checked, &mut findings.contradictions),
        }
    }
}

/// Names the first oracle check the row holds that the evidence does not.
fn compare_checks(
    recorded: &[OracleCheck],
    evidence: &[OracleCheck],
    source: &str,
    found: &mut Vec<Contradiction>,
) {
    if recorded == evidence {
        return;
    }
    let at = recorded
        .iter()
        .zip(evidence)
        .position(|(a, b)| a != b)
        .unwrap_or(recorded.len().min(evidence.len()));
    let show = |check: Option<&OracleCheck>| match check {
        Some(c) => format!("{:?} {}", c.name, if c.ok { "held" } else { "failed" }),
        None => "no check".to_string(),
    };
    found.push(contradiction(
        format!("oracle_checks[{at}]"),
        format!(
            "the row records {}, {source} {} ({} check(s) recorded, {} in the evidence)",
            show(recorded.get(at)),
            show(evidence.get(at)),
            recorded.len(),
            evidence.len()
        ),
    ));
}
