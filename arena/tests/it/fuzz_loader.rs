//! Fuzz target for the scenario loader, structure-aware over every reference
//! scenario in `scenarios/`: lines deleted, duplicated and swapped, values
//! after `=` replaced by hostile ones (negative, huge, non-finite, empty,
//! wrong type, path escapes, deep nesting), and bytes flipped. The loader
//! must never panic, every refusal must carry a listed error code and a
//! message, and a document that loads must load to the same scenario again.
//!
//! Complements `loader_props.rs` (arbitrary bytes and TOML around the seed
//! example). The case count comes from `CHIO_FUZZ_CASES` (default 128, what
//! CI runs); a long run is `CHIO_FUZZ_CASES=400000 cargo test --release -p
//! chio-arena --test it -- fuzz_loader::` (see docs/fuzzing.md).

use std::path::{Path, PathBuf};

use chio_arena::{parse_scenario_bytes, ERROR_CODES};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn cases() -> u32 {
    std::env::var("CHIO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128)
}

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// Every top-level reference scenario, read once.
fn references() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(scenarios_dir()).expect("scenarios directory") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_some_and(|ext| ext == "toml") {
            let text = std::fs::read_to_string(&path).expect("read scenario");
            found.push((path.display().to_string(), text));
        }
    }
    found.sort();
    assert!(found.len() >= 5, "the reference scenarios are missing");
    found
}

/// Values a hostile or careless author might write after `=`.
const VALUES: &[&str] = &[
    "-1",
    "0",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "1e309",
    "nan",
    "-inf",
    "\"\"",
    "\"../../etc/passwd\"",
    "\"/etc/shadow\"",
    "\"\\u0000\"",
    "true",
    "[]",
    "[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]",
    "{}",
    "{ a = { b = { c = { d = 1 } } } }",
    "\"x\"",
    "1979-05-27T07:32:00Z",
    "'''\nmulti\nline'''",
];

/// One edit of a document.
#[derive(Debug, Clone)]
enum Edit {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    ReplaceValue(usize, usize),
    FlipByte(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        1 => any::<usize>().prop_map(Edit::DeleteLine),
        1 => any::<usize>().prop_map(Edit::DuplicateLine),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
        3 => (any::<usize>(), 0..VALUES.len()).prop_map(|(l, v)| Edit::ReplaceValue(l, v)),
        1 => (any::<usize>(), 1..=255u8).prop_map(|(i, x)| Edit::FlipByte(i, x)),
    ]
}

fn apply(text: &str, edit: &Edit) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if lines.is_empty() {
        return text.as_bytes().to_vec();
    }
    let n = lines.len();
    match *edit {
        Edit::DeleteLine(l) => {
            lines.remove(l % n);
        }
        Edit::DuplicateLine(l) => {
            let line = lines[l % n].clone();
            lines.insert(l % n, line);
        }
        Edit::SwapLines(a, b) => lines.swap(a % n, b % n),
        Edit::ReplaceValue(l, v) => {
            // Prefer a line with an assignment at or after the chosen one.
            if let Some(at) = (0..n)
                .map(|k| (l + k) % n)
                .find(|&k| lines[k].contains('='))
            {
                let key = lines[at].split('=').next().unwrap_or_default().to_owned();
                lines[at] = format!("{key}= {}", VALUES[v]);
            }
        }
        Edit::FlipByte(i, x) => {
            let mut bytes = text.as_bytes().to_vec();
            let at = i % bytes.len();
            bytes[at] ^= x;
            return bytes;
        }
    }
    let mut joined = lines.join("\n");
    joined.push('\n');
    joined.into_bytes()
}

// Proves edited reference scenarios never panic the loader, refusals carry listed codes, and loads are repeatable.
#[test]
fn edited_reference_scenarios_never_panic_and_load_repeatably() {
    let references = references();
    let base = scenarios_dir();
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let strategy = (0..references.len(), prop::collection::vec(edit(), 1..4));
    let outcome = runner.run(&strategy, |(which, edits)| {
        let mut bytes = references[which].1.as_bytes().to_vec();
        for edit in &edits {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            bytes = apply(&text, edit);
        }
        match parse_scenario_bytes(&bytes, &base) {
            Ok(first) => {
                let again = parse_scenario_bytes(&bytes, &base)
                    .map_err(|e| TestCaseError::fail(format!("second load failed: {e}")))?;
                prop_assert_eq!(format!("{first:?}"), format!("{again:?}"));
            }
            Err(error) => {
                prop_assert!(
                    ERROR_CODES.contains(&error.code()),
                    "unlisted code {} for {}",
                    error.code(),
                    references[which].0
                );
                prop_assert!(!error.to_string().is_empty());
            }
        }
        Ok(())
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

// Proves every unedited reference scenario loads, so the mutations start from valid documents.
#[test]
fn every_reference_scenario_loads() {
    let base = scenarios_dir();
    for (path, text) in references() {
        if let Err(error) = parse_scenario_bytes(text.as_bytes(), &base) {
            panic!("{path} does not load: {error}");
        }
    }
}
