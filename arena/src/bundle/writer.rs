//! The streaming bundle writer: a run's receipts and step records go to
//! disk as they are recorded, so a run's memory does not grow with its
//! schedule, and the folder is installed atomically at the end.
//!
//! [`BundleWriter::create`] checks the destination as [`Bundle::write`]
//! does and opens a temporary sibling folder. Each receipt is appended to
//! `receipts.ndjson` as its canonical line and folded into a
//! [`MerkleFrontier`]; each step record is appended, as canonical JSON, to a
//! part file of the staging folder. [`BundleWriter::finish`] writes the
//! policies and inputs, then the manifest last: the canonical manifest
//! without steps is cut where its `steps` array opens and the recorded
//! steps are copied in between, which is byte for byte the canonical form
//! of the whole manifest (RFC 8785 writes an array as its members' canonical
//! forms joined by commas, and keys in order, `steps` then `stopped`). The
//! staging folder is then renamed into place exactly as [`Bundle::write`]
//! installs one. A writer dropped before `finish` leaves nothing behind.
//!
//! [`Bundle::write`]: super::Bundle::write

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use chio_kernel::canonical::to_canonical_string;
use chio_kernel::receipt::{MerkleFrontier, SignedReceipt};

use super::{
    destination, sibling, write_error, write_file, BundleManifest, Destination, StepRecord,
    INPUTS_DIR, MANIFEST_FILE, POLICIES_DIR, RECEIPTS_FILE, SCENARIO_INPUT,
};
use crate::error::ArenaError;
use crate::scenario::{Scenario, ScenarioText};

/// What a streamed bundle records of its scenario beside the run's inputs:
/// the bytes run (`inputs/scenario.toml`) and the scenario whose step ids
/// the manifest's witness lists.
#[derive(Clone, Copy)]
pub struct StreamedScenario<'s> {
    /// The bytes recorded as `inputs/scenario.toml`.
    pub text: &'s ScenarioText,
    /// The scenario run.
    pub scenario: &'s Scenario,
}

/// The part file step records are appended to until the manifest is written.
const STEPS_PART: &str = ".steps.part";

/// Where a bundle is going: the destination checked and a staging folder
/// next to it.
pub(super) struct Staging {
    dir: PathBuf,
    parent: PathBuf,
    name: String,
    existing: Destination,
    folder: tempfile::TempDir,
}

impl Staging {
    /// Checks `dir` (see [`Bundle::write`](super::Bundle::write)) and
    /// creates the staging sibling.
    pub(super) fn open(dir: &Path) -> Result<Staging, ArenaError> {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            return Err(ArenaError::Bundle {
                path: dir.display().to_string(),
                cause: "--out must name a folder by a UTF-8 name (not '.' or '..')".to_string(),
            });
        };
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let existing = destination(dir)?;
        std::fs::create_dir_all(&parent).map_err(|e| write_error(&parent, e))?;
        let folder = sibling(&parent, name, "partial")?;
        Ok(Staging {
            dir: dir.to_path_buf(),
            parent,
            name: name.to_string(),
            existing,
            folder,
        })
    }

    /// The staging folder.
    pub(super) fn path(&self) -> &Path {
        self.folder.path()
    }

    /// Renames the complete staging folder into place. An existing bundle
    /// is moved aside first and deleted only after the rename, and moved
    /// back if the new one cannot take its place.
    pub(super) fn install(self) -> Result<(), ArenaError> {
        let Staging {
            dir,
            parent,
            name,
            existing,
            folder,
        } = self;
        if existing != Destination::Bundle {
            // An absent destination, or an empty folder rename(2) replaces.
            std::fs::rename(folder.path(), &dir).map_err(|e| write_error(&dir, e))?;
            let _installed = folder.keep();
            return Ok(());
        }
        let previous = sibling(&parent, &name, "previous")?;
        std::fs::rename(&dir, previous.path()).map_err(|e| write_error(&dir, e))?;
        if let Err(e) = std::fs::rename(folder.path(), &dir) {
            return match std::fs::rename(previous.path(), &dir) {
                Ok(()) => {
                    let _restored = previous.keep();
                    Err(write_error(&dir, e))
                }
                Err(restore) => {
                    let kept = previous.keep();
                    Err(ArenaError::BundleIo {
                        path: dir.display().to_string(),
                        cause: format!(
                            "{e}; the previous bundle could not be moved back ({restore}) and is kept at {}",
                            kept.display()
                        ),
                    })
                }
            };
        }
        let _installed = folder.keep();
        // Deleting the old bundle is best effort: the new one is in place.
        let _ = previous.close();
        Ok(())
    }
}

/// Writes a bundle while the run records it.
pub struct BundleWriter {
    staging: Staging,
    receipts: BufWriter<File>,
    steps: BufWriter<File>,
    step_count: u64,
    merkle: MerkleFrontier,
}

impl BundleWriter {
    /// Checks the destination `dir` as [`Bundle::write`](super::Bundle::write)
    /// does (refusals are [`ArenaError::Bundle`], filesystem failures
    /// [`ArenaError::BundleIo`]) and opens the staging folder and its files.
    pub fn create(dir: &Path) -> Result<BundleWriter, ArenaError> {
        let staging = Staging::open(dir)?;
        // A step record or a receipt is about a kilobyte: a buffer of 64
        // KiB writes some sixty of them at once.
        let open = |path: PathBuf| {
            File::create(&path)
                .map(|file| BufWriter::with_capacity(64 * 1024, file))
                .map_err(|e| write_error(&path, e))
        };
        let receipts = open(staging.path().join(RECEIPTS_FILE))?;
        let steps = open(staging.path().join(STEPS_PART))?;
        Ok(BundleWriter {
            staging,
            receipts,
            steps,
            step_count: 0,
            merkle: MerkleFrontier::new(),
        })
    }

    /// Appends a receipt's canonical line and folds its id into the root.
    pub fn receipt(&mut self, receipt: &SignedReceipt) -> Result<(), ArenaError> {
        let mut line = to_canonical_string(receipt)?;
        line.push('\n');
        let path = self.staging.path().join(RECEIPTS_FILE);
        self.receipts
            .write_all(line.as_bytes())
            .map_err(|e| write_error(&path, e))?;
        self.merkle.push(&receipt.id);
        Ok(())
    }

    /// Appends a step record, in dispatch order.
    pub fn step(&mut self, record: &StepRecord) -> Result<(), ArenaError> {
        let text = to_canonical_string(record)?;
        let path = self.staging.path().join(STEPS_PART);
        let write = |out: &mut BufWriter<File>| {
            if self.step_count > 0 {
                out.write_all(b",")?;
            }
            out.write_all(text.as_bytes())
        };
        write(&mut self.steps).map_err(|e| write_error(&path, e))?;
        self.step_count += 1;
        Ok(())
    }

    /// The Merkle root over the receipts appended so far.
    pub fn receipt_root(&self) -> String {
        self.merkle.root()
    }

    /// Receipts appended so far.
    pub fn receipt_count(&self) -> u64 {
        self.merkle.count()
    }

    /// Writes the policies, the inputs and the manifest (`manifest.steps`
    /// must be empty: the appended records take their place), then installs
    /// the bundle in place. With `scenario`, its text is written as
    /// `inputs/scenario.toml` from where it is kept (never from `inputs`),
    /// and the witness's step ids are written from its steps one at a time
    /// (`manifest.determinism.steps` must then be empty), so a long
    /// schedule is never held whole to be recorded.
    pub fn finish(
        self,
        manifest: &BundleManifest,
        policies: &BTreeMap<String, String>,
        inputs: &BTreeMap<String, Vec<u8>>,
        scenario: Option<StreamedScenario<'_>>,
    ) -> Result<(), ArenaError> {
        let BundleWriter {
            staging,
            receipts,
            steps,
            ..
        } = self;
        let dir = staging.path().to_path_buf();
        let flush = |out: BufWriter<File>, name: &str| {
            let path = dir.join(name);
            out.into_inner()
                .map_err(|e| write_error(&path, e.into_error()))?
                .sync_all()
                .map_err(|e| write_error(&path, e))
        };
        flush(receipts, RECEIPTS_FILE)?;
        flush(steps, STEPS_PART)?;
        std::fs::create_dir_all(dir.join(POLICIES_DIR)).map_err(|e| write_error(&dir, e))?;
        for (kernel, policy) in policies {
            write_file(
                &dir.join(POLICIES_DIR).join(format!("{kernel}.json")),
                format!("{policy}\n").as_bytes(),
            )?;
        }
        for (rel, bytes) in inputs {
            let path = dir.join(INPUTS_DIR).join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
            }
            write_file(&path, bytes)?;
        }
        if let Some(streamed) = &scenario {
            let path = dir.join(INPUTS_DIR).join(SCENARIO_INPUT);
            std::fs::create_dir_all(dir.join(INPUTS_DIR)).map_err(|e| write_error(&dir, e))?;
            let file = File::create(&path).map_err(|e| write_error(&path, e))?;
            let mut out = BufWriter::new(file);
            streamed
                .text
                .copy_to(&mut out)
                .and_then(|()| out.into_inner().map_err(|e| e.into_error()))
                .and_then(|file| file.sync_all())
                .map_err(|e| write_error(&path, e))?;
        }
        // The manifest goes last: a folder with arena.json is a whole bundle.
        write_manifest(&dir, manifest, scenario.map(|s| s.scenario))?;
        staging.install()
    }
}

/// Writes `arena.json` with the part file's records as its `steps`, and
/// removes the part file; with `scenario`, the determinism witness's
/// `steps` are its step ids, written one at a time.
fn write_manifest(
    dir: &Path,
    manifest: &BundleManifest,
    scenario: Option<&Scenario>,
) -> Result<(), ArenaError> {
    let head = to_canonical_string(manifest)?;
    let path = dir.join(MANIFEST_FILE);
    let refused = |cause: &str| ArenaError::BundleIo {
        path: path.display().to_string(),
        cause: cause.to_string(),
    };
    // `steps` is the manifest's last key but `stopped`, whose strings are
    // escaped, so the last unescaped `"steps":[]` is the manifest's own.
    const EMPTY: &str = "\"steps\":[]";
    let Some(at) = head
        .rfind(EMPTY)
        .filter(|_| manifest.steps.is_empty())
        .map(|at| at + EMPTY.len() - 1)
    else {
        return Err(refused(
            "the streamed manifest carries its steps in the part file only",
        ));
    };
    let witness = match scenario {
        None => None,
        Some(_) if !manifest.determinism.steps.is_empty() => {
            return Err(refused(
                "the streamed manifest writes the witness's steps from the scenario only",
            ))
        }
        Some(scenario) => {
            let inner = crate::witness::empty_steps_at(&head, at)
                .ok_or_else(|| refused("the manifest's witness holds no steps"))?;
            Some((inner, scenario))
        }
    };
    let part = dir.join(STEPS_PART);
    let mut out = BufWriter::new(File::create(&path).map_err(|e| write_error(&path, e))?);
    let mut records = File::open(&part).map_err(|e| write_error(&part, e))?;
    let mut from = 0;
    if let Some((inner, scenario)) = witness {
        out.write_all(&head.as_bytes()[..inner])
            .map_err(|e| write_error(&path, e))?;
        scenario.write_witness_steps(&mut out)?;
        from = inner;
    }
    let written = out
        .write_all(&head.as_bytes()[from..at])
        .and_then(|()| std::io::copy(&mut records, &mut out).map(|_| ()))
        .and_then(|()| out.write_all(&head.as_bytes()[at..]))
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.into_inner().map_err(|e| e.into_error()))
        .and_then(|file| file.sync_all());
    written.map_err(|e| write_error(&path, e))?;
    std::fs::remove_file(&part).map_err(|e| write_error(&part, e))
}
