//! Trains the `prompt-injection` guard's learned rule and writes its model
//! file, `src/guards/prompt_injection/learned_model.txt`, printing the
//! cross-validated detection and false-positive rates per source package,
//! of the learned rule alone and of the guard (hand-written patterns or the
//! learned rule).
//!
//! Run: `cargo run --release -p chio-kernel --example train_injection_model`.
//! The output is the same bytes on every run; the kernel test
//! `learned_model::committed_model_is_what_training_makes` checks the
//! committed file is what this makes.

#[path = "../tests/support/injection_training.rs"]
mod injection_training;

use std::collections::BTreeMap;
use std::path::Path;

use chio_kernel::guards::prompt_injection::{scan_value, Pattern};
use serde_json::Value;

fn rate(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "-".to_string();
    }
    format!("{:.1}%", 100.0 * part as f64 / whole as f64)
}

fn main() {
    let kernel = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (file, cv, texts, model) = injection_training::build(kernel);
    let threshold = cv.threshold as f64;
    // Per package: injection strings, caught by the learned rule, by the guard;
    // benign texts, flagged by the learned rule, by the guard.
    let mut groups: BTreeMap<&str, [usize; 6]> = BTreeMap::new();
    for (text, score) in texts.iter().zip(&cv.scores) {
        let learned = *score > threshold;
        let rules = scan_value(&Value::String(text.raw.clone()), &Pattern::ALL).is_some();
        let row = groups.entry(&text.group).or_default();
        let at = if text.attack { 0 } else { 3 };
        row[at] += 1;
        row[at + 1] += usize::from(learned);
        row[at + 2] += usize::from(learned || rules);
    }
    let [n, k, b, f] = cv.totals();
    println!(
        "Cross-validation: {} folds grouped by source package; threshold {}; the learned rule alone: {k} of {n} injection strings, {f} of {b} benign texts",
        injection_training::FOLDS,
        cv.threshold
    );
    println!("| package | injection strings | learned rule | guard | benign texts | learned rule | guard |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let mut all = [0; 6];
    for (group, row) in &groups {
        (0..6).for_each(|i| all[i] += row[i]);
        print_row(group, row);
    }
    print_row("**all**", &all);
    for text in texts.iter().filter(|t| !t.attack) {
        let score = injection_training::text_score(&model, text).unwrap_or(f64::NEG_INFINITY);
        if score > threshold {
            println!(
                "trained model flags benign ({}, score {score:.0}): {:?}",
                text.group,
                text.raw.chars().take(100).collect::<String>()
            );
        }
    }
    let path = kernel.join("src/guards/prompt_injection/learned_model.txt");
    std::fs::write(&path, &file).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let weights = file.lines().filter(|l| !l.starts_with('#')).count() - 6;
    println!("learned_model.txt: {} bytes, {weights} weights", file.len());
}

fn print_row(name: &str, row: &[usize; 6]) {
    let [n, l, g, b, lf, gf] = *row;
    println!(
        "| {name} | {n} | {} | {} | {b} | {} | {} |",
        rate(l, n),
        rate(g, n),
        rate(lf, b),
        rate(gf, b)
    );
}
