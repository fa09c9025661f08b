//! The detector benchmark of the `prompt-injection` guard: detection and
//! false-positive rates per family and per delivery, on the corpus under
//! `tests/corpus/detector/` (provenance in its `PROVENANCE.md`).
//!
//! Every text goes through the real pipeline, `Kernel::evaluate` with the
//! guard in its default configuration, twice: once as a call argument
//! (`write_file` with the text as `content`: the arguments delivery, denied
//! before dispatch) and once as a tool's output (`read_file` whose dispatch
//! returns the text: the output delivery, withheld after dispatch). A text
//! counts as detected when the decision is a deny naming a prompt injection.
//!
//! Besides the corpus files, three families are derived here from caught
//! public payloads, by fixed transforms: look-alike letters, a message
//! spelled in Unicode tag characters after an innocent sentence, and the
//! payload in base64. The run is deterministic (sorted files, fixed order,
//! counts only), so two runs print the same bytes.
//!
//! Run: `cargo test --release -p chio-kernel --test it -- detector_bench::
//! --ignored --nocapture` (about five seconds in release; the signatures
//! make it minutes in a debug build, so the default test run skips it;
//! `detector_floors_at_the_guard`, a corpus figure too, is skipped by it
//! and run by `.ci/run` on its own).
//! Both tests fail if the false-positive rate on benign text passes 1% in
//! either delivery or a family's detection falls below its recorded floor;
//! the one that runs by default checks the guard's request and output
//! stages directly, without the signatures around them.

use crate::util;

use std::fs;
use std::path::{Path, PathBuf};

use chio_kernel::guards::prompt_injection::inspect;
use chio_kernel::guards::{GuardKind, GuardMode, GuardSpec};
use chio_kernel::token::FULL_SHARE_BPS;
use chio_kernel::{CapabilityToken, Kernel, ToolOutput, Verdict};
use serde_json::{json, Value};
use util::*;

use crate::detector_generalization::Delivery;

/// One kernel with the default `prompt-injection` guard and a capability
/// without an invocation limit, evaluating one text at a time.
struct Bench {
    kernel: Kernel,
    cap: CapabilityToken,
    next_id: u64,
}

impl Bench {
    fn new() -> Bench {
        let kernel = kernel(vec![guard(
            "injection",
            GuardKind::PromptInjection,
            json!({}),
        )]);
        let cap = issue_with(
            "cap-bench",
            "alice",
            files_scope(),
            &authority(),
            None,
            FULL_SHARE_BPS,
        );
        Bench {
            kernel,
            cap,
            next_id: 0,
        }
    }

    /// Whether the kernel denies `text` in `delivery` as a prompt injection.
    fn denied(&mut self, text: &str, delivery: Delivery) -> bool {
        self.next_id += 1;
        let id = format!("bench-{}", self.next_id);
        let (tool, arguments) = match delivery {
            Delivery::Arguments => (
                "write_file",
                json!({"path": "/workspace/out.txt", "content": text}),
            ),
            Delivery::Output => ("read_file", json!({"path": "/workspace/in.txt"})),
        };
        let request = request("alice", &self.cap, "files", tool, arguments, &id);
        let content = json!({ "content": text });
        let mut dispatch = |_: &chio_kernel::AdmissionTicket| {
            Ok(ToolOutput {
                content: content.clone(),
                label: None,
                integrity: None,
                performed: true,
                received: true,
            })
        };
        let decision = self.kernel.evaluate(&request, NOW_MS, &mut dispatch);
        let reason = decision.reason.unwrap_or_default();
        match decision.verdict {
            Verdict::Allow => false,
            Verdict::Deny => {
                assert!(
                    reason.starts_with("prompt injection"),
                    "a deny for another cause would blur the rates: {reason}"
                );
                true
            }
            other => panic!("unexpected verdict {other:?}: {reason}"),
        }
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/detector")
}

/// The families of one folder, by file stem, sorted; each line of a file is
/// one JSON string.
fn families(folder: &str) -> Vec<(String, Vec<String>)> {
    let dir = corpus_dir().join(folder);
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text =
                fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let items = text
                .lines()
                .enumerate()
                .map(|(i, line)| {
                    serde_json::from_str::<String>(line)
                        .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1))
                })
                .collect();
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("file stem")
                .to_string();
            (stem, items)
        })
        .collect()
}

/// The benign files every other test of the guard uses, one item each.
fn repository_benign() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/benign");
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("benign corpus")
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

/// Latin letters replaced by their Cyrillic look-alikes, everywhere.
fn homoglyph(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a' => '\u{0430}',
            'e' => '\u{0435}',
            'o' => '\u{043e}',
            'p' => '\u{0440}',
            'c' => '\u{0441}',
            'i' => '\u{0456}',
            's' => '\u{0455}',
            'x' => '\u{0445}',
            'y' => '\u{0443}',
            other => other,
        })
        .collect()
}

/// An innocent sentence followed by the payload spelled in tag characters.
fn tag_characters(text: &str) -> String {
    let hidden: String = text
        .chars()
        .filter(char::is_ascii)
        .filter_map(|c| char::from_u32(c as u32 + 0xe0000))
        .collect();
    format!("Thanks for your order, it ships on Monday.{hidden}")
}

/// The payload in standard base64 after a short note.
fn base64(text: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::from("Reference data: ");
    for chunk in text.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The derived families: each transform applied to the first payloads of
/// public families whose plain form is a clear instruction to the model.
fn variant_families(attacks: &[(String, Vec<String>)]) -> Vec<(String, Vec<String>)> {
    const BASES: [&str; 4] = [
        "agentdojo-important-instructions",
        "agentdojo-injecagent",
        "agentdojo-ignore-previous",
        "garak-promptinject",
    ];
    let base: Vec<&String> = BASES
        .iter()
        .flat_map(|name| {
            attacks
                .iter()
                .find(|(family, _)| family == name)
                .map(|(_, items)| items.iter().take(8))
                .unwrap_or_else(|| panic!("no family {name}"))
        })
        .collect();
    let transforms: [(&str, Transform); 3] = [
        ("variant-homoglyph", homoglyph),
        ("variant-tag-characters", tag_characters),
        ("variant-base64", base64),
    ];
    transforms
        .iter()
        .map(|(name, transform)| {
            (
                name.to_string(),
                base.iter().map(|text| transform(text)).collect(),
            )
        })
        .collect()
}

/// A family: its name and its texts.
type Family = (String, Vec<String>);
/// A text transform deriving a family.
type Transform = fn(&str) -> String;

/// One row of a table: family, delivery, items, denied.
type Row = (String, Delivery, usize, usize);

/// Counts per family and delivery, with `denied` deciding one text.
fn measure(
    families: &[(String, Vec<String>)],
    mut denied: impl FnMut(&str, Delivery) -> bool,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for (family, items) in families {
        for delivery in [Delivery::Arguments, Delivery::Output] {
            let hits = items.iter().filter(|t| denied(t, delivery)).count();
            rows.push((family.clone(), delivery, items.len(), hits));
        }
    }
    rows
}

/// The attack and benign families, derived families included.
fn corpus() -> (Vec<Family>, Vec<Family>) {
    let mut attacks = families("attack");
    attacks.extend(variant_families(&attacks));
    let mut benign = families("benign");
    benign.push(("repository-benign".to_string(), repository_benign()));
    assert!(
        benign.iter().map(|(_, items)| items.len()).sum::<usize>() >= 500,
        "the benign corpus is too small for a 1% rate to mean anything"
    );
    (attacks, benign)
}

/// Fails when benign text passes the ceiling or a family its floor.
fn check_rates(attack_rows: &[Row], benign_rows: &[Row]) {
    for delivery in [Delivery::Arguments, Delivery::Output] {
        let (items, hits) = benign_rows
            .iter()
            .filter(|r| r.1.as_str() == delivery.as_str())
            .fold((0, 0), |(n, k), r| (n + r.2, k + r.3));
        assert!(
            100.0 * hits as f64 <= MAX_FALSE_POSITIVE_PERCENT * items as f64,
            "false positives in {}: {hits} of {items}",
            delivery.as_str()
        );
    }
    for (family, floor) in FLOORS {
        let rows: Vec<&Row> = attack_rows.iter().filter(|r| r.0 == *family).collect();
        assert_eq!(rows.len(), 2, "no family {family} in the corpus");
        for row in rows {
            assert!(
                row.3 * 100 >= floor * row.2,
                "{family} in {}: {} of {} detected, below the floor {floor}%",
                row.1.as_str(),
                row.3,
                row.2
            );
        }
    }
}

fn rate(part: usize, whole: usize) -> String {
    if whole == 0 {
        return "-".to_string();
    }
    format!("{:.1}%", 100.0 * part as f64 / whole as f64)
}

fn table(title: &str, columns: [&str; 2], rows: &[Row]) -> String {
    let mut out = format!(
        "{title}\n| family | delivery | {} | {} | rate |\n| --- | --- | ---: | ---: | ---: |\n",
        columns[0], columns[1]
    );
    for delivery in [Delivery::Arguments, Delivery::Output] {
        let mut items = 0;
        let mut hits = 0;
        for (family, d, n, k) in rows.iter().filter(|r| r.1.as_str() == delivery.as_str()) {
            out.push_str(&format!(
                "| {family} | {} | {n} | {k} | {} |\n",
                d.as_str(),
                rate(*k, *n)
            ));
            items += n;
            hits += k;
        }
        out.push_str(&format!(
            "| **all** | {} | {items} | {hits} | {} |\n",
            delivery.as_str(),
            rate(hits, items)
        ));
    }
    out
}

/// The detection floor of each family (in percent, both deliveries): the
/// figure recorded in `docs/benchmark-breakdowns.md`, rounded down, so a regression
/// fails here. `agentdojo-direct` (`TODO: {goal}`) has no floor: nothing in
/// it marks an injection.
const FLOORS: &[(&str, usize)] = &[
    ("agentdojo-ignore-previous", 100),
    ("agentdojo-important-instructions", 100),
    ("agentdojo-injecagent", 100),
    ("agentdojo-system-message", 100),
    ("garak-latentinjection", 59),
    ("garak-promptinject", 100),
    ("garak-sysprompt-extraction", 67),
    ("own-addressed-instructions", 100),
    ("own-markdown-exfil", 100),
    ("own-repeat-initial", 80),
    ("own-role-markers", 92),
    ("own-tool-call-prose", 93),
    ("variant-homoglyph", 100),
    ("variant-tag-characters", 100),
    ("variant-base64", 100),
];

/// The false-positive ceiling on benign text, per delivery, in percent.
const MAX_FALSE_POSITIVE_PERCENT: f64 = 1.0;

// Through Kernel::evaluate, the rates per family and delivery meet the recorded floors and the 1% ceiling; prints the tables.
#[test]
#[ignore = "signs and verifies about 4,300 calls: minutes in a debug build; run it with --release --ignored"]
fn detector_rates() {
    let (attacks, benign) = corpus();
    let mut bench = Bench::new();
    let attack_rows = measure(&attacks, |t, d| bench.denied(t, d));
    let benign_rows = measure(&benign, |t, d| bench.denied(t, d));
    println!(
        "{}",
        table("Injection payloads", ["payloads", "detected"], &attack_rows)
    );
    println!(
        "{}",
        table("Benign text", ["items", "false positives"], &benign_rows)
    );
    if std::env::var_os("DETECTOR_BENCH_SHOW").is_some() {
        show(&mut bench, &attacks, &benign);
    }
    check_rates(&attack_rows, &benign_rows);
}

// The guard's own request and output checks (the stages Kernel::evaluate runs) meet the same floors and ceiling.
#[test]
#[ignore = "a corpus figure, about a minute in a debug build: .ci/run runs it with --ignored"]
fn detector_floors_at_the_guard() {
    let (attacks, benign) = corpus();
    let guard = GuardSpec {
        id: "injection".into(),
        kind: GuardKind::PromptInjection,
        mode: GuardMode::Enforce,
        config: json!({}),
    }
    .build()
    .expect("default prompt-injection guard");
    let mut denied = |text: &str, delivery: Delivery| {
        crate::detector_generalization::denied(guard.as_ref(), text, delivery)
    };
    let attack_rows = measure(&attacks, &mut denied);
    let benign_rows = measure(&benign, &mut denied);
    check_rates(&attack_rows, &benign_rows);
}

/// Prints the missed payloads and the false positives (output delivery),
/// for working on the detector.
fn show(bench: &mut Bench, attacks: &[(String, Vec<String>)], benign: &[(String, Vec<String>)]) {
    for (family, items) in attacks {
        for text in items.iter().filter(|t| !bench.denied(t, Delivery::Output)) {
            println!("MISS {family}: {}", Value::String(text.clone()));
        }
    }
    for (family, items) in benign {
        for text in items.iter().filter(|t| bench.denied(t, Delivery::Output)) {
            let rules: Vec<String> = inspect(text)
                .matches
                .iter()
                .map(|m| format!("{}/{}/{}", m.pattern.as_str(), m.rule, m.reading.as_str()))
                .collect();
            println!("FALSE {family} {rules:?}: {}", Value::String(text.clone()));
        }
    }
}
