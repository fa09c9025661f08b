//! The evidence bundle of a run, and the comparison of two bundles.
//!
//! A bundle is a folder (by default `target/arena/<scenario-id>/`) holding:
//! - `arena.json`: the manifest (`chio.arena.bundle/v1`) with the
//!   determinism witness, the Merkle root of the receipts, the arena public
//!   keys, each kernel's policy hash, the run's status, and one entry per
//!   step dispatched, with the fingerprints of the inputs its verdict
//!   depends on;
//! - `receipts.ndjson`: every signed receipt, canonical JSON, one per line,
//!   in dispatch order;
//! - `policies/<kernel>.json`: each kernel's guard pipeline as canonical
//!   JSON, so a verdict is explained with the policy that made it;
//! - `inputs/`: the scenario file and its fixture folders, byte for byte,
//!   which is everything replay needs.
//!
//! Every JSON file is canonical (RFC 8785), so two runs of one scenario give
//! byte-identical bundles. A bundle is written atomically: into a temporary
//! sibling folder first, renamed into place once complete, so a failed write
//! never leaves half a bundle nor loses the previous one. A run writes its
//! bundle as it goes with [`BundleWriter`] (`writer`), which appends each
//! receipt and step record as it is recorded and writes the same bytes
//! [`Bundle::write`] writes for the same bundle; [`for_each_step`]
//! (`reader`) reads a written bundle's step records back one at a time, so
//! a report of a long run never holds the whole manifest. Producing the
//! records is the run driver's job; this module owns their shape, their
//! files and [`compare_runs`], which names the first differing step and
//! which input changed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use chio_kernel::verdict::Verdict;

use crate::error::ArenaError;
use crate::scenario::ActionKind;
use crate::witness::DeterminismWitness;

mod outcome;

pub use outcome::{BundleStatus, StepOutcome};

/// Schema id of `arena.json`.
pub const BUNDLE_SCHEMA: &str = "chio.arena.bundle/v1";
/// File name of the manifest.
pub const MANIFEST_FILE: &str = "arena.json";
/// File name of the receipt log.
pub const RECEIPTS_FILE: &str = "receipts.ndjson";
/// Folder of the per-kernel policies.
pub const POLICIES_DIR: &str = "policies";
/// Folder of the scenario and fixtures as run.
pub const INPUTS_DIR: &str = "inputs";

/// Fingerprints of what a step's verdict depends on, in the order of the
/// investigation checklist (seed 002): the invocation, the evaluator, the
/// authority and time, the admission state, and the session history. Each
/// is the SHA-256 (hex) of a canonical JSON projection the run driver
/// documents; equal fingerprints mean that input did not change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepInputs {
    /// Server, tool, caller, arguments and capability presented.
    pub invocation: String,
    /// Serving kernel, its key, its policy and the evaluator's version.
    pub evaluator: String,
    /// Trusted issuers, the SHA-256 of the presented token's canonical
    /// JSON, and the virtual time of evaluation.
    pub authority_time: String,
    /// Revocations, delegations and calls ordered before the step, as a
    /// hash chain (each link is SHA-256 of the previous link, a newline and
    /// the canonical entry).
    pub admission: String,
    /// The calls the acting agent's session made before, with verdicts,
    /// as a hash chain like `admission`.
    pub session: String,
}

impl StepInputs {
    /// The names of the inputs that differ, in checklist order.
    pub fn differences(&self, other: &StepInputs) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.invocation != other.invocation {
            out.push("invocation");
        }
        if self.evaluator != other.evaluator {
            out.push("evaluator");
        }
        if self.authority_time != other.authority_time {
            out.push("authority and time");
        }
        if self.admission != other.admission {
            out.push("admission state");
        }
        if self.session != other.session {
            out.push("session history");
        }
        out
    }
}

/// One dispatched step as the bundle records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The step id.
    pub step_id: String,
    /// What kind of action the step was.
    pub action: ActionKind,
    /// The acting agent.
    pub agent: String,
    /// Virtual instant of the step (RFC 3339): when it was evaluated, or,
    /// for a call over a delayed link, when it was sent.
    pub virtual_time: String,
    /// For a call over a delayed link: the virtual instant it was decided
    /// (RFC 3339), its arrival, after every step whose evaluation instant
    /// is at or before it, or, for a call still in flight when the run
    /// stopped before its arrival, the stop's instant; the record keeps its
    /// scheduled place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_time: Option<String>,
    /// For a call: the kernel that evaluated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// For a call: server and tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// For a call: the verdict the scenario expects; for a delegate or
    /// revoke step: whether it is expected to take effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<StepOutcome>,
    /// For a call: the kernel's verdict on the scenario alphabet; for a
    /// delegate or revoke step: whether it took effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<StepOutcome>,
    /// For a call: the kernel's own verdict (`allow`, `deny`, `pending_approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// For a call: why, for every deny and approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The stable code of `reason` (a kernel's deny, a node's or the
    /// controller's deny without a kernel, a refused delegate or revoke
    /// step); absent when there is no reason or it has no code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    /// For a call: the guard that decided, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    /// For a call: the receipt's content-addressed id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_id: Option<String>,
    /// For a call: whether the receipt store acknowledged the receipt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<bool>,
    /// For a call: whether the verdict equals the expectation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<bool>,
    /// For a delegation: the SHA-256 of the child token; for a revocation:
    /// the id revoked; for a message: the SHA-256 of the canonical content;
    /// for an advance: the milliseconds added; for a fault: the fault in
    /// words; for a call over a delayed link: how late it arrived, or that
    /// it never reached its kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The part of the reason the step expects (`expect_reason`), so a
    /// reader sees what was asserted besides the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_reason: Option<String>,
    /// For a message: the labels joined into the receiver; for a
    /// delegation: the delegator's labels recorded for the child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// For a call: what the kernel's decision read and how each stage
    /// answered (`chio arena explain` prints it). Boxed, so a record
    /// without one (every step but a call) stays small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<Box<chio_kernel::trace::DecisionTrace>>,
    /// Fingerprints of the step's inputs.
    pub inputs: StepInputs,
}

impl StepRecord {
    /// The record of step `step_id`, an `action` of `agent` at
    /// `virtual_time` with `inputs`, before anything of its answer is
    /// known: every optional field empty.
    pub fn new(
        step_id: &str,
        action: ActionKind,
        agent: &str,
        virtual_time: String,
        inputs: StepInputs,
    ) -> StepRecord {
        StepRecord {
            step_id: step_id.to_string(),
            action,
            agent: agent.to_string(),
            virtual_time,
            decided_time: None,
            kernel: None,
            target: None,
            expected: None,
            actual: None,
            verdict: None,
            reason: None,
            reason_code: None,
            guard: None,
            receipt_id: None,
            recorded: None,
            pass: None,
            detail: None,
            expected_reason: None,
            labels: None,
            trace: None,
            inputs,
        }
    }

    /// A call step's actual verdict and who gave it, in the words of a
    /// mismatch: the kernel when one decided it (the step has a receipt),
    /// else the calling side (its agent's node, or the controller when that
    /// node was down), which denies before any kernel runs.
    pub fn answer(&self) -> String {
        let denied = Some(StepOutcome::Verdict(
            chio_kernel::verdict::ProjectedVerdict::Deny,
        ));
        if self.receipt_id.is_none() && self.actual == denied {
            "it was denied before any kernel decided".to_string()
        } else {
            let actual = self.actual.map_or("?", |a| a.as_str());
            format!("the kernel answered {actual}")
        }
    }
}

/// Why a run ended before its last step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopRecord {
    /// The step at which it stopped.
    pub step_id: String,
    /// `unexpected-verdict` (a call), `unexpected-outcome` (a delegate or
    /// revoke step done when refused was expected, or refused when done was)
    /// or `infrastructure`.
    pub cause: String,
    /// What happened, in words.
    pub message: String,
}

/// The manifest, `arena.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleManifest {
    /// Always [`BUNDLE_SCHEMA`].
    pub schema_version: String,
    /// The scenario's determinism witness.
    pub determinism: DeterminismWitness,
    /// The scenario title.
    pub scenario_title: String,
    /// SHA-256 of the scenario file's bytes.
    pub scenario_sha256: String,
    /// `completed` (every step dispatched), `stopped` (an unexpected
    /// verdict ended the run) or `failed` (infrastructure).
    pub status: BundleStatus,
    /// Why the run ended early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<StopRecord>,
    /// Steps whose verdict differed from the expectation.
    pub mismatches: Vec<String>,
    /// Merkle root over the receipt ids (see `chio_kernel::receipt`).
    pub receipt_root: String,
    /// Number of receipts in `receipts.ndjson`.
    pub receipt_count: u64,
    /// The run's arena public keys by role, then id (arena keys, never
    /// production keys).
    pub arena_keys: BTreeMap<String, BTreeMap<String, String>>,
    /// SHA-256 of each kernel's canonical policy file, by kernel id.
    pub policies: BTreeMap<String, String>,
    /// SHA-256 of the text of each sealed file call arguments read
    /// (`{ fixture = ... }`), by path as the scenario writes it: the only
    /// trace of a sealed value in the bundle, whose `inputs/` never holds
    /// the file (see `crate::scenario::sealed`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sealed: BTreeMap<String, String>,
    /// One entry per dispatched step, in dispatch order.
    pub steps: Vec<StepRecord>,
}

/// A whole bundle in memory, as written or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// The manifest.
    pub manifest: BundleManifest,
    /// Canonical receipt lines, in dispatch order.
    pub receipts: Vec<String>,
    /// Canonical policy JSON by kernel id.
    pub policies: BTreeMap<String, String>,
    /// Input files by path relative to `inputs/` (the scenario file is
    /// `scenario.toml`).
    pub inputs: BTreeMap<String, Vec<u8>>,
}

/// The scenario file's name inside `inputs/`.
pub const SCENARIO_INPUT: &str = "scenario.toml";

/// A write failure: the filesystem, not the input, is at fault.
fn write_error(path: &Path, e: std::io::Error) -> ArenaError {
    ArenaError::BundleIo {
        path: path.display().to_string(),
        cause: e.to_string(),
    }
}

/// What `--out` names before a bundle is written there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Destination {
    /// Nothing: the bundle folder is created.
    Absent,
    /// An empty folder: replaced by the bundle.
    Empty,
    /// A bundle an earlier run wrote: kept until the new one is complete.
    Bundle,
}

/// Refuses a destination the arena did not write: a file, a symbolic link,
/// a non-empty folder without `arena.json`, or one that is not a bundle
/// ([`replace::check_replaceable`]: a foreign `arena.json` or entry).
fn destination(dir: &Path) -> Result<Destination, ArenaError> {
    let refuse = |cause: &str| ArenaError::Bundle {
        path: dir.display().to_string(),
        cause: cause.to_string(),
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Destination::Absent),
        Err(e) => return Err(write_error(dir, e)),
    };
    if meta.file_type().is_symlink() {
        return Err(refuse(
            "the path is a symbolic link; pass the folder itself as --out",
        ));
    }
    if !meta.is_dir() {
        return Err(refuse(
            "the path exists and is not a folder; pass an empty or new --out folder",
        ));
    }
    let manifest = std::fs::symlink_metadata(dir.join(MANIFEST_FILE));
    if manifest.is_ok() {
        replace::check_replaceable(dir)?;
        return Ok(Destination::Bundle);
    }
    let empty = std::fs::read_dir(dir)
        .map_err(|e| write_error(dir, e))?
        .next()
        .is_none();
    if empty {
        Ok(Destination::Empty)
    } else {
        Err(refuse("the folder exists, is not empty and holds no arena.json; pass an empty or new --out folder"))
    }
}

impl Bundle {
    /// Writes the bundle into `dir`, atomically: every file goes into a
    /// temporary sibling folder, which is renamed to `dir` only once it is
    /// complete. An existing bundle there (a folder holding a bundle
    /// manifest and nothing a bundle does not write) is moved aside first and deleted only after the rename, so a failed
    /// write (a full disk) leaves it exactly as it was. A file, a symbolic
    /// link, or a non-empty folder that is not a bundle is refused, so a
    /// mistyped `--out` never clobbers other files. Refusals are
    /// [`ArenaError::Bundle`]; filesystem failures are [`ArenaError::BundleIo`].
    pub fn write(&self, dir: &Path) -> Result<(), ArenaError> {
        let staging = writer::Staging::open(dir)?;
        self.write_contents(staging.path())?;
        staging.install()
    }

    /// Writes every file of the bundle into the empty folder `dir`.
    fn write_contents(&self, dir: &Path) -> Result<(), ArenaError> {
        std::fs::create_dir_all(dir.join(POLICIES_DIR)).map_err(|e| write_error(dir, e))?;
        let mut receipts = String::new();
        for line in &self.receipts {
            receipts.push_str(line);
            receipts.push('\n');
        }
        write_file(&dir.join(RECEIPTS_FILE), receipts.as_bytes())?;
        for (kernel, policy) in &self.policies {
            write_file(
                &dir.join(POLICIES_DIR).join(format!("{kernel}.json")),
                format!("{policy}\n").as_bytes(),
            )?;
        }
        for (rel, bytes) in &self.inputs {
            let path = dir.join(INPUTS_DIR).join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
            }
            write_file(&path, bytes)?;
        }
        // The manifest goes last: a folder with arena.json is a whole bundle.
        let mut manifest = chio_kernel::canonical::to_canonical_string(&self.manifest)?;
        manifest.push('\n');
        write_file(&dir.join(MANIFEST_FILE), manifest.as_bytes())
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ArenaError> {
    std::fs::write(path, bytes).map_err(|e| write_error(path, e))
}

/// A new hidden folder next to the bundle (`.<name>.<random>.<role>`),
/// deleted when dropped unless kept. Its name never reaches an output.
fn sibling(parent: &Path, name: &str, role: &str) -> Result<tempfile::TempDir, ArenaError> {
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(&format!(".{role}"))
        .tempdir_in(parent)
        .map_err(|e| write_error(parent, e))
}

mod compare;
mod load;
#[cfg(test)]
mod load_tests;
mod reader;
#[cfg(test)]
mod reader_tests;
mod replace;
#[cfg(test)]
mod tests;
mod verify;
mod writer;
#[cfg(test)]
mod writer_tests;

pub use compare::{
    bundle_files, compare_runs, file_differences, manifest_differences, receipts_difference,
    recording_places, StepDrift,
};
pub use load::{open_regular, read_regular, FileRefusal, MAX_FILE_BYTES};
pub use reader::for_each_step;
pub use verify::{schedule_faults, signed_receipts, step_faults, verify, EvidenceFault};
pub use writer::{BundleWriter, StreamedScenario};
