//! Reading a written bundle whole ([`Bundle::read`]), as untrusted input.
//!
//! A bundle is a folder someone handed over: every entry it holds is read
//! only when it is a regular file or a folder. A symbolic link (even at
//! the top, `receipts.ndjson -> /dev/zero`), a named pipe, a socket or a
//! device is refused before it is opened, and a file is opened without
//! following a link and without blocking (`O_NOFOLLOW`, `O_NONBLOCK`), then
//! checked again as opened, so one swapped in meanwhile is refused too
//! (the one opener of [`crate::files`]).
//! Every file is read up to [`MAX_FILE_BYTES`]; a longer one is refused,
//! never read to its end. Each refusal is [`ArenaError::Bundle`] naming the
//! file, printable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{
    Bundle, BundleManifest, BUNDLE_SCHEMA, INPUTS_DIR, MANIFEST_FILE, POLICIES_DIR, RECEIPTS_FILE,
};
use crate::error::ArenaError;
use crate::files::kind_of;
pub use crate::files::{open_regular, read_regular, FileRefusal};
use crate::report::printable;

/// The most bytes any one file of a bundle may hold (1 GiB): far above what
/// a run writes (a 100,000-step run's manifest, decision traces included,
/// is a few hundred MiB), and a bound on what reading a bundle costs.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// A refusal of `path`, named printably.
fn refused(path: &Path, cause: impl std::fmt::Display) -> ArenaError {
    ArenaError::Bundle {
        path: printable(&path.display().to_string()).into_owned(),
        cause: printable(&cause.to_string()).into_owned(),
    }
}

/// The file `path` of a bundle, as text.
fn read_text(path: &Path) -> Result<String, ArenaError> {
    let bytes = read_regular(path, MAX_FILE_BYTES).map_err(|e| refused(path, e))?;
    String::from_utf8(bytes).map_err(|_| refused(path, "it is not UTF-8 text"))
}

/// Refuses a folder of a bundle that is a link or no folder at all.
fn check_folder(path: &Path) -> Result<(), ArenaError> {
    let kind = std::fs::symlink_metadata(path)
        .map_err(|e| refused(path, e))?
        .file_type();
    if kind.is_dir() {
        Ok(())
    } else {
        Err(refused(
            path,
            format!(
                "it is {}, not a folder; a run writes plain files and folders only",
                kind_of(kind)
            ),
        ))
    }
}

impl Bundle {
    /// Reads a bundle written by [`Bundle::write`], refusing any entry that
    /// is not a regular file or a folder and any file over
    /// [`MAX_FILE_BYTES`].
    pub fn read(dir: &Path) -> Result<Bundle, ArenaError> {
        let manifest_path = dir.join(MANIFEST_FILE);
        if let Err(e) = std::fs::symlink_metadata(&manifest_path) {
            return Err(refused(
                &manifest_path,
                format!("{e}; pass the folder a run wrote (it holds arena.json)"),
            ));
        }
        let text = read_text(&manifest_path)?;
        let manifest: BundleManifest = serde_json::from_str(&text).map_err(|e| {
            refused(
                &manifest_path,
                format!("not a {BUNDLE_SCHEMA} manifest: {e}"),
            )
        })?;
        drop(text);
        if manifest.schema_version != BUNDLE_SCHEMA {
            return Err(refused(
                &manifest_path,
                format!("schema {} is not {BUNDLE_SCHEMA}", manifest.schema_version),
            ));
        }
        let receipts = read_text(&dir.join(RECEIPTS_FILE))?
            .lines()
            .map(str::to_string)
            .collect();
        let policies = read_policies(dir, &manifest)?;
        let mut inputs = BTreeMap::new();
        let root = dir.join(INPUTS_DIR);
        check_folder(&root)?;
        read_inputs(&root, &root, &mut inputs)?;
        Ok(Bundle {
            manifest,
            receipts,
            policies,
            inputs,
        })
    }

    /// Reads a bundle as [`Bundle::read`] does, with the files of the world
    /// its run read as its inputs: a `chio arena record --out` bundle keeps
    /// the recording of its servers' answers beside its inputs
    /// (`recording/<name>`), a replayed run among them
    /// (`inputs/recording/<name>`), and either is read here as
    /// `recording/<name>` below `inputs/` ([`super::compare::world_place`], the one
    /// mapping of the two layouts). Every reader that holds a bundle to a
    /// world (re-deciding it, naming the inputs two bundles differ in, a
    /// campaign's pinned fixtures) reads it this way, so a recording counts
    /// the same in either place. A folder holding a server's recording in
    /// both places with different bytes is refused, naming both.
    pub fn read_world(dir: &Path) -> Result<Bundle, ArenaError> {
        let mut bundle = Bundle::read(dir)?;
        let held: Vec<String> = bundle
            .inputs
            .keys()
            .map(|k| format!("{INPUTS_DIR}/{k}"))
            .collect();
        let beside = dir.join(crate::recording::RECORDING_FOLDER);
        let absent = std::fs::symlink_metadata(&beside)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        if absent {
            return Ok(bundle);
        }
        check_folder(&beside)?;
        let mut recording = BTreeMap::new();
        read_inputs(&beside, &beside, &mut recording)?;
        let among = super::compare::holds_recording_among_inputs(&held);
        for (rel, bytes) in recording {
            let beside = format!("{}/{rel}", crate::recording::RECORDING_FOLDER);
            let place = super::compare::world_place(&beside, false);
            let rel = place
                .strip_prefix(&format!("{INPUTS_DIR}/"))
                .unwrap_or(&place);
            match bundle.inputs.get(rel) {
                // One folder, two different recordings of one server: which
                // one its run read cannot be told.
                Some(held) if held != &bytes => {
                    return Err(refused(
                        &dir.join(&beside),
                        format!(
                            "it and {} are two different copies of one recording; a bundle keeps one, beside its inputs or among them",
                            dir.join(&place).display()
                        ),
                    ))
                }
                Some(_) => {}
                None if among => {}
                None => {
                    bundle.inputs.insert(rel.to_string(), bytes);
                }
            }
        }
        Ok(bundle)
    }
}

/// Each kernel's policy file the manifest names, by kernel id.
fn read_policies(
    dir: &Path,
    manifest: &BundleManifest,
) -> Result<BTreeMap<String, String>, ArenaError> {
    let mut policies = BTreeMap::new();
    if manifest.policies.is_empty() {
        return Ok(policies);
    }
    check_folder(&dir.join(POLICIES_DIR))?;
    for kernel in manifest.policies.keys() {
        // A kernel id names a file inside the bundle, never a path: a
        // manifest edited to hold `../x` or `/etc/x` is refused unread.
        if !crate::scenario::is_valid_id(kernel) {
            return Err(refused(
                &dir.join(MANIFEST_FILE),
                format!(
                    "policies names {kernel:?}, which is not a kernel id; the manifest was edited"
                ),
            ));
        }
        let path = dir.join(POLICIES_DIR).join(format!("{kernel}.json"));
        let text = read_text(&path)?;
        policies.insert(kernel.clone(), text.trim_end_matches('\n').to_string());
    }
    Ok(policies)
}

fn read_inputs(
    root: &Path,
    dir: &Path,
    out: &mut BTreeMap<String, Vec<u8>>,
) -> Result<(), ArenaError> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| refused(dir, e))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(|e| refused(dir, e))?;
    paths.sort();
    for path in paths {
        let kind = std::fs::symlink_metadata(&path)
            .map_err(|e| refused(&path, e))?
            .file_type();
        if kind.is_symlink() {
            // A run writes plain files only; following a link could read
            // (or loop through) anything on the machine.
            return Err(refused(
                &path,
                "a bundle's inputs hold no symbolic links; pass a folder a run wrote",
            ));
        }
        if kind.is_dir() {
            read_inputs(root, &path, out)?;
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .map_err(|_| refused(&path, "input outside the inputs folder"))?
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let bytes = read_regular(&path, MAX_FILE_BYTES).map_err(|e| refused(&path, e))?;
        out.insert(rel, bytes);
    }
    Ok(())
}
