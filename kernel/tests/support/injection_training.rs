//! Training of the `prompt-injection` guard's learned rule (`ngram-model`,
//! `src/guards/prompt_injection/learned.rs`): logistic regression over the
//! hashed n-gram windows of the plain reading of every text of the
//! repository's corpora, with its threshold chosen by cross-validation
//! grouped by source package.
//!
//! Everything is deterministic: files are read in sorted order, samples are
//! shuffled by a seeded SplitMix64, the epochs are fixed, arithmetic is
//! single-threaded f64 with the exponential written out (no platform
//! `exp`), and the weights are rounded to integers. [`build`] returns the
//! model file's bytes; `examples/train_injection_model.rs` writes them and
//! the test `committed_model_is_what_training_makes` compares them with the
//! committed file.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use chio_kernel::guards::prompt_injection::learned::{
    norm, windows, Model, BUCKET_BITS, MAX_TOKEN_CHARS, SCALE, STRIDE_TOKENS, WINDOW_TOKENS,
};
use chio_kernel::guards::prompt_injection::normalise;

/// Passes over the training samples.
pub const EPOCHS: usize = 6;
/// The learning rate of the first epoch; epoch `e` uses `LEARNING_RATE / (1 + e)`.
pub const LEARNING_RATE: f64 = 2.0;
/// L2 penalty per sample step.
pub const L2: f64 = 3e-5;
/// The total weight of injection windows relative to that of benign windows.
pub const BALANCE: f64 = 3.0;
/// Weights below this many [`SCALE`] units are dropped.
pub const PRUNE: i64 = 200;
/// Folds of the cross-validation; source packages are dealt to them in order.
pub const FOLDS: usize = 5;
/// The most benign texts above the threshold, per thousand, over the folds.
pub const FALSE_POSITIVES_PER_THOUSAND: usize = 3;
/// The seed of the sample shuffle.
pub const SEED: u64 = 0x6368_696f_2d6e_6772;

/// One text of the training data.
pub struct Text {
    /// The text itself (the example reads it; the tests do not).
    #[cfg_attr(test, allow(dead_code))]
    pub raw: String,
    /// Its source package (the cross-validation group): its family's
    /// (file stem's, or `repository-files`) first word.
    pub group: String,
    /// Whether it is an injection string.
    pub attack: bool,
    /// The buckets of each window of its plain reading.
    pub windows: Vec<Vec<u32>>,
}

/// The package a family comes from: its name up to the first dash, except
/// the one package whose name has dashes.
pub fn package(family: &str) -> &str {
    if family.starts_with("jailbreak-corpus-mini") {
        return "jailbreak-corpus-mini";
    }
    family.split('-').next().unwrap_or(family)
}

/// The files under `dir`, recursively, in sorted order.
pub fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The `(family, text)` items of the `.jsonl` files under `dir`.
fn jsonl_items(dir: &Path) -> Vec<(String, String)> {
    let mut paths = Vec::new();
    files_under(dir, &mut paths);
    let mut out = Vec::new();
    for path in paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
    {
        let family = path.file_stem().and_then(|s| s.to_str()).expect("stem");
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (i, line) in text.lines().enumerate() {
            let item: String = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            out.push((family.to_string(), item));
        }
    }
    out
}

/// Every text the model learns from, in a fixed order: the detector corpus,
/// the four generalization splits, the repository's benign files (whole
/// and line by line) and the benign records kept for training. A benign text that is also an
/// injection string (whitespace collapsed) is left out.
pub fn corpus(kernel_dir: &Path) -> Vec<Text> {
    let root = kernel_dir.join("tests/corpus");
    let mut attacks = jsonl_items(&root.join("detector/attack"));
    let mut benign = jsonl_items(&root.join("detector/benign"));
    for split in ["tuning", "heldout", "fresh", "fourth"] {
        attacks.extend(jsonl_items(
            &root.join("generalization").join(split).join("attack"),
        ));
        benign.extend(jsonl_items(
            &root.join("generalization").join(split).join("benign"),
        ));
    }
    benign.extend(jsonl_items(&root.join("training/benign")));
    let mut files = Vec::new();
    files_under(&root.join("benign"), &mut files);
    for path in files {
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // A call's arguments often carry one line of a file: each line is a text too.
        let lines: BTreeSet<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        for line in lines {
            benign.push(("repository-lines".to_string(), line.to_string()));
        }
        benign.push(("repository-files".to_string(), text));
    }
    let collapsed = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let attack_texts: BTreeSet<String> = attacks.iter().map(|(_, t)| collapsed(t)).collect();
    benign.retain(|(_, t)| !attack_texts.contains(&collapsed(t)));
    let label = |items: Vec<(String, String)>, attack: bool| {
        items.into_iter().map(move |(family, text)| Text {
            group: package(&family).to_string(),
            attack,
            windows: windows(&normalise(&text)),
            raw: text,
        })
    };
    label(attacks, true).chain(label(benign, false)).collect()
}

/// SplitMix64, the shuffle's generator.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `e^x` from `+`, `*` and exact scaling by a power of two, the same on
/// every platform (|relative error| below 1e-15 on the clamped range).
fn exp(x: f64) -> f64 {
    const LN2: f64 = std::f64::consts::LN_2;
    let x = x.clamp(-40.0, 40.0);
    let k = (x / LN2).round();
    let r = x - k * LN2;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..=14 {
        term = term * r / f64::from(i);
        sum += term;
    }
    let bits = ((k as i64 + 1023) as u64) << 52;
    sum * f64::from_bits(bits)
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + exp(-z))
}

/// One sample: a window of a text, its label and its weight.
struct Sample<'t> {
    window: &'t [u32],
    label: f64,
    weight: f64,
}

/// Trains on `texts`: every benign window weighs 1, every injection
/// string's windows share its weight, and injection strings together weigh
/// [`BALANCE`] times the benign windows. The model's threshold is 0.
pub fn train(texts: &[&Text]) -> Model {
    let benign_windows = texts
        .iter()
        .filter(|t| !t.attack)
        .map(|t| t.windows.len())
        .sum::<usize>();
    let attack_texts = texts
        .iter()
        .filter(|t| t.attack && !t.windows.is_empty())
        .count();
    let per_attack = BALANCE * benign_windows as f64 / attack_texts.max(1) as f64;
    let mut samples = Vec::new();
    for text in texts {
        for window in &text.windows {
            let (label, weight) = if text.attack {
                (1.0, per_attack / text.windows.len() as f64)
            } else {
                (0.0, 1.0)
            };
            samples.push(Sample {
                window,
                label,
                weight,
            });
        }
    }
    let mut v = vec![0.0_f64; 1 << BUCKET_BITS];
    let mut scale = 1.0_f64;
    let mut bias = 0.0_f64;
    let mut rng = SplitMix(SEED);
    let mut order: Vec<usize> = (0..samples.len()).collect();
    for epoch in 0..EPOCHS {
        for i in (1..order.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        let rate = LEARNING_RATE / (1 + epoch) as f64;
        for &at in &order {
            let sample = &samples[at];
            if sample.window.is_empty() {
                continue;
            }
            let x = 1.0 / norm(sample.window.len());
            let dot: f64 = sample.window.iter().map(|b| v[*b as usize]).sum();
            let p = sigmoid(bias + scale * dot * x);
            let g = sample.weight * (p - sample.label);
            scale *= 1.0 - rate * L2;
            let step = rate * g * x / scale;
            for b in sample.window {
                v[*b as usize] -= step;
            }
            bias -= rate * g * 0.1;
            if scale < 1e-6 {
                v.iter_mut().for_each(|w| *w *= scale);
                scale = 1.0;
            }
        }
    }
    let weights = v
        .iter()
        .map(|w| {
            let q = (w * scale * SCALE).round() as i64;
            if q.abs() < PRUNE {
                0
            } else {
                q.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
            }
        })
        .collect();
    Model {
        bias: (bias * SCALE).round() as i64,
        threshold: 0,
        weights,
    }
}

/// A text's score: its highest window score, or `None` without windows.
pub fn text_score(model: &Model, text: &Text) -> Option<f64> {
    text.windows.iter().map(|w| model.score(w)).reduce(f64::max)
}

/// The cross-validated figures.
pub struct CrossValidation {
    /// The threshold chosen, in [`SCALE`] units.
    pub threshold: i64,
    /// Each text's score by the model trained without its fold, in corpus
    /// order (the example reads it; the tests do not).
    #[cfg_attr(test, allow(dead_code))]
    pub scores: Vec<f64>,
    /// Per group: (injection strings, detected, benign texts, above the threshold).
    pub groups: BTreeMap<String, [usize; 4]>,
}

impl CrossValidation {
    /// (injection strings, detected, benign texts, false positives) over all groups.
    pub fn totals(&self) -> [usize; 4] {
        self.groups.values().fold([0; 4], |mut acc, g| {
            (0..4).for_each(|i| acc[i] += g[i]);
            acc
        })
    }
}

/// Trains on all folds but one and scores the one left out, for each fold,
/// then picks the lowest threshold that keeps the benign texts above it to
/// [`FALSE_POSITIVES_PER_THOUSAND`] per thousand.
pub fn cross_validate(texts: &[Text]) -> CrossValidation {
    let groups: BTreeSet<&str> = texts.iter().map(|t| t.group.as_str()).collect();
    let fold_of: BTreeMap<&str, usize> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (*g, i % FOLDS))
        .collect();
    let mut scores = vec![f64::NEG_INFINITY; texts.len()];
    for fold in 0..FOLDS {
        let training: Vec<&Text> = texts
            .iter()
            .filter(|t| fold_of[t.group.as_str()] != fold)
            .collect();
        let model = train(&training);
        for (i, text) in texts
            .iter()
            .enumerate()
            .filter(|(_, t)| fold_of[t.group.as_str()] == fold)
        {
            scores[i] = text_score(&model, text).unwrap_or(f64::NEG_INFINITY);
        }
    }
    let scored: Vec<(&Text, f64)> = texts.iter().zip(scores.iter().copied()).collect();
    let mut benign: Vec<f64> = scored
        .iter()
        .filter(|(t, _)| !t.attack)
        .map(|(_, s)| *s)
        .collect();
    benign.sort_by(|a, b| b.total_cmp(a));
    let allowed = benign.len() * FALSE_POSITIVES_PER_THOUSAND / 1000;
    let threshold = benign.get(allowed).map_or(0, |s| s.ceil() as i64);
    let mut out = CrossValidation {
        threshold,
        scores: scores.clone(),
        groups: BTreeMap::new(),
    };
    for (text, score) in scored {
        let entry = out.groups.entry(text.group.clone()).or_default();
        let fires = usize::from(score > threshold as f64);
        if text.attack {
            entry[0] += 1;
            entry[1] += fires;
        } else {
            entry[2] += 1;
            entry[3] += fires;
        }
    }
    out
}

/// The model file: the tokeniser parameters, bias, threshold and every
/// non-zero weight by bucket.
pub fn model_file(model: &Model) -> String {
    let mut out = String::from(
        "# The prompt-injection guard's learned rule (ngram-model), made by\n\
         # `cargo run --release -p chio-kernel --example train_injection_model`.\n",
    );
    for (key, value) in [
        ("buckets", 1_i64 << BUCKET_BITS),
        ("window", WINDOW_TOKENS as i64),
        ("stride", STRIDE_TOKENS as i64),
        ("token", MAX_TOKEN_CHARS as i64),
        ("bias", model.bias),
        ("threshold", model.threshold),
    ] {
        out.push_str(&format!("{key} {value}\n"));
    }
    for (bucket, weight) in model.weights.iter().enumerate().filter(|(_, w)| **w != 0) {
        out.push_str(&format!("{bucket} {weight}\n"));
    }
    out
}

/// Cross-validates, trains on everything and returns the model file with
/// the cross-validated threshold, and the cross-validation.
pub fn build(kernel_dir: &Path) -> (String, CrossValidation, Vec<Text>, Model) {
    let texts = corpus(kernel_dir);
    let cv = cross_validate(&texts);
    let all: Vec<&Text> = texts.iter().collect();
    let mut model = train(&all);
    model.threshold = cv.threshold;
    (model_file(&model), cv, texts, model)
}
