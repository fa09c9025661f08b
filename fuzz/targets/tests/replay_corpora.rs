//! Replays every committed input of every fuzz target, without a fuzzer:
//! each file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`
//! goes through its target function, which panics when a property fails.
//! A panic in any thread (a node's actors run on their own tasks and
//! threads) fails the replay, and the failing file is named.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Once;

use chio_fuzz_targets::{Target, TARGETS};

/// Panics seen by any thread since the hook was installed.
static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
    });
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The files of `folder`, sorted; none when it does not exist.
fn files(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

fn target(name: &str) -> Target {
    TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .unwrap_or_else(|| panic!("no target {name}"))
}

/// Runs every committed input of `name`; the corpus must not be empty.
fn replay(name: &str) {
    count_panics();
    let run = target(name);
    let corpus = files(&fuzz_dir().join("corpus").join(name));
    assert!(!corpus.is_empty(), "the corpus of {name} is missing");
    let regressions = files(&fuzz_dir().join("regressions").join(name));
    for file in corpus.iter().chain(&regressions) {
        let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let before = PANICS.load(Ordering::SeqCst);
        let outcome = catch_unwind(AssertUnwindSafe(|| run(&bytes)));
        assert!(outcome.is_ok(), "{} fails its properties", file.display());
        assert_eq!(
            PANICS.load(Ordering::SeqCst),
            before,
            "a thread panicked while {} ran",
            file.display()
        );
    }
}

// Proves the scenario loader corpus and regressions hold the loader's properties.
#[test]
fn scenario_loader_corpus_replays() {
    replay("scenario_loader");
}

// Proves the token corpus and regressions hold the token's decode-then-verify properties.
#[test]
fn capability_token_corpus_replays() {
    replay("capability_token");
}

// Proves the portable envelope corpus and regressions hold the envelope's properties.
#[test]
fn portable_envelope_corpus_replays() {
    replay("portable_envelope");
}

// Proves the NodeControl corpus and regressions are served without a property failure.
#[test]
fn node_control_corpus_replays() {
    replay("node_control");
}

// Proves the KernelLink corpus and regressions are served without a property failure.
#[test]
fn kernel_link_corpus_replays() {
    replay("kernel_link");
}

// Proves the TrustControl corpus and regressions keep the store's invariants.
#[test]
fn trust_control_corpus_replays() {
    replay("trust_control");
}

// Every target's seeds are the same bytes when built twice: no map whose
// order varies from run to run reaches an encoded message (the fixtures of
// a LoadWorld request among them).
#[test]
fn seeds_are_the_same_bytes_every_time() {
    for target in [
        "scenario_loader",
        "capability_token",
        "portable_envelope",
        "node_control",
        "kernel_link",
        "trust_control",
    ] {
        let first = chio_fuzz_targets::seeds::seeds(target);
        assert!(!first.is_empty(), "{target} has no seeds");
        for _ in 0..3 {
            assert_eq!(
                first,
                chio_fuzz_targets::seeds::seeds(target),
                "{target}: seeds differ between two builds"
            );
        }
    }
}
