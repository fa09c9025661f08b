//! The `prompt-injection` guard's learned rule (`ngram-model`): the
//! committed model file is exactly what training makes, its
//! cross-validated figures hold, and its windows stay bounded.
//!
//! Retrain with `cargo run --release -p chio-kernel --example
//! train_injection_model` (the training code is
//! `tests/support/injection_training.rs`).

use std::path::Path;

use chio_kernel::guards::prompt_injection::learned::{
    self, windows, MAX_TOKEN_CHARS, WINDOW_TOKENS,
};
use chio_kernel::guards::prompt_injection::{detects, Pattern};

use crate::injection_training;

/// The learned rule's cross-validated detection, in percent (the figure in
/// `docs/benchmarks.md`, rounded down).
const MIN_CROSS_VALIDATED_PERCENT: usize = 38;

// Training from the corpora in the repository makes the committed model file byte for byte, and its cross-validation keeps false positives at 3 per thousand and detection at its floor.
#[test]
#[ignore = "a corpus figure, about a minute in a debug build: .ci/run runs it with --ignored"]
fn committed_model_is_what_training_makes() {
    let kernel = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (file, cv, _, _) = injection_training::build(kernel);
    let committed =
        std::fs::read_to_string(kernel.join("src/guards/prompt_injection/learned_model.txt"))
            .expect("the committed model file");
    assert!(
        file == committed,
        "the committed model differs from what training makes; run `cargo run --release -p chio-kernel --example train_injection_model`"
    );
    let [attacks, detected, benign, flagged] = cv.totals();
    assert!(
        flagged * 1000 <= benign * injection_training::FALSE_POSITIVES_PER_THOUSAND,
        "{flagged} of {benign} benign texts above the threshold"
    );
    assert!(
        detected * 100 >= attacks * MIN_CROSS_VALIDATED_PERCENT,
        "{detected} of {attacks} detected"
    );
}

// The committed model reads, and its threshold sits above its bias (an empty window never fires).
#[test]
fn committed_model_reads() {
    let model = learned::model().expect("the committed model reads");
    assert!(model.threshold > model.bias);
    assert!(model.weights.iter().any(|w| *w > 0) && model.weights.iter().any(|w| *w < 0));
    assert!(!model.fires(""));
}

// A model file made for another tokeniser, or with a malformed line, is refused.
#[test]
fn foreign_model_files_are_refused() {
    let good = "buckets 262144\nwindow 48\nstride 24\ntoken 32\nbias -5\nthreshold 7\n12 300\n";
    let model = learned::Model::parse(good).expect("a well-formed file");
    assert_eq!(
        (model.bias, model.threshold, model.weights[12]),
        (-5, 7, 300)
    );
    for bad in [
        good.replace("window 48", "window 40"),
        good.replace("buckets 262144\n", ""),
        good.replace("12 300", "262144 300"),
        good.replace("12 300", "12 x"),
        good.replace("12 300", "12"),
    ] {
        assert!(learned::Model::parse(&bad).is_err(), "{bad}");
    }
}

// Windows hold at most a fixed number of features however long the text or its words, overlap by half, and are the same on every run.
#[test]
fn windows_are_bounded_and_deterministic() {
    let long_word = "a".repeat(100_000);
    let per_window = WINDOW_TOKENS * (2 + 3 * (MAX_TOKEN_CHARS + 2));
    for text in [
        long_word.as_str(),
        &"word ".repeat(10_000),
        &"<| ".repeat(5_000),
    ] {
        let first = windows(text);
        assert!(first.iter().all(|w| !w.is_empty() && w.len() <= per_window));
        assert_eq!(first, windows(text));
    }
    assert_eq!(windows(&"word ".repeat(48)).len(), 1);
    assert_eq!(windows(&"word ".repeat(49)).len(), 2);
    assert!(windows("").is_empty());
}

// The learned rule catches its sample alone, and misses its documented evasive variant.
#[test]
fn learned_rule_sample_and_limit() {
    assert!(detects(Pattern::Learned, Pattern::Learned.sample()));
    for v in Pattern::Learned.evasive_variants() {
        assert!(!detects(Pattern::Learned, v), "{v}");
    }
}
