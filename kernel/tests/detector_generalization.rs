//! The generalization benchmark of the `prompt-injection` guard, on the
//! second corpus under `tests/corpus/generalization/` (provenance, licences
//! and the split rule in its `PROVENANCE.md`): injection strings and benign
//! text from public packages the detector was not built from, in a tuning
//! split and a held-out split.

use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/generalization")
}

/// The `.jsonl` files under `dir`, recursively, sorted.
fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            jsonl_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

// Every held-out file has the sha256 committed with the split, and no held-out file is missing or added.
#[test]
fn held_out_split_is_the_committed_one() {
    let root = corpus_dir();
    let listing = fs::read_to_string(root.join("heldout.sha256")).expect("heldout.sha256");
    let mut listed: Vec<(String, String)> = listing
        .lines()
        .map(|line| {
            let (digest, path) = line.split_once("  ").expect("`DIGEST  PATH` lines");
            (path.to_string(), digest.to_string())
        })
        .collect();
    listed.sort();
    let mut files = Vec::new();
    jsonl_files(&root.join("heldout"), &mut files);
    let found: Vec<(String, String)> = files
        .iter()
        .map(|path| {
            let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let relative = path
                .strip_prefix(&root)
                .expect("under the corpus")
                .to_string_lossy()
                .replace('\\', "/");
            (relative, hex::encode(Sha256::digest(&bytes)))
        })
        .collect();
    assert!(listed.len() >= 9, "the digest file lists too few files");
    assert_eq!(found, listed, "the held-out split differs from its digests");
}
