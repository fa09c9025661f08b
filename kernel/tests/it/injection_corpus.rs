//! The benign corpus of the `prompt-injection` guard: READMEs, an email,
//! JSON configs, code, CI files, logs and notes under `tests/corpus/benign/`,
//! plus every fixture and seed prompt the reference scenarios ship. None may
//! trigger a detector, as one text, as a tool output or as call arguments
//! whose string values are also read together. The fixtures that carry an
//! injection by design ([`HOSTILE_FIXTURES`], read by scenarios whose
//! defence is not the detector) are held to the opposite: they must be caught.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use chio_kernel::guards::prompt_injection::{detect, inspect};
use chio_kernel::guards::{
    Guard, GuardContext, GuardKind, GuardMode, GuardSpec, GuardVerdict, OutputVerdict,
};
use serde_json::{json, Value};

use crate::injection_training::files_under;

/// Scenario fixtures written as injections, for scenarios that test another
/// defence (integrity labels); relative to `scenarios/fixtures/`.
const HOSTILE_FIXTURES: &[&str] = &[
    "integrity-hijack/mail/invoice.txt",
    "planner-reader/inbox/bill-march.txt",
];

fn is_hostile(path: &Path) -> bool {
    HOSTILE_FIXTURES
        .iter()
        .any(|f| path.ends_with(Path::new("scenarios/fixtures").join(f)))
}

fn corpus() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    files_under(&root.join("tests/corpus/benign"), &mut paths);
    files_under(&root.join("../scenarios/fixtures"), &mut paths);
    files_under(&root.join("../scenarios/prompts"), &mut paths);
    paths
        .into_iter()
        .filter(|p| !is_hostile(p))
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect()
}

fn guard() -> Box<dyn Guard> {
    GuardSpec {
        id: "injection".into(),
        kind: GuardKind::PromptInjection,
        mode: GuardMode::Enforce,
        config: json!({}),
    }
    .build()
    .expect("default prompt-injection guard")
}

/// No monetary totals: the guard reads none.
static NO_MONEY: BTreeMap<String, chio_kernel::guards::MoneyTotal> = BTreeMap::new();

fn context<'a>(
    arguments: &'a Value,
    labels: &'a BTreeMap<String, std::collections::BTreeSet<String>>,
) -> GuardContext<'a> {
    GuardContext {
        server: "workspace",
        tool: "write_file",
        arguments,
        agent_id: "reviewer",
        session_id: "reviewer",
        journal: &[],
        labels,
        money: &NO_MONEY,
        session_filesystem_roots: None,
        provenance: &chio_kernel::provenance::NO_PROVENANCE,
        definition: None,
    }
}

// Every benign text passes the detectors, the output scan and the argument scan with joined values.
#[test]
fn benign_corpus_passes() {
    let guard = guard();
    let labels = BTreeMap::new();
    let corpus = corpus();
    assert!(corpus.len() >= 20, "the corpus shrank to {}", corpus.len());
    let mut failures = Vec::new();
    for (path, text) in &corpus {
        let name = path.display();
        if let Some(pattern) = detect(text) {
            failures.push(format!(
                "{name}: {} ({:?})",
                pattern.as_str(),
                inspect(text)
            ));
        }
        let lines: Vec<&str> = text.lines().collect();
        let arguments = json!({"path": "/workspace/out.txt", "lines": lines});
        match guard.check_request(&context(&arguments, &labels)) {
            Ok(GuardVerdict::Allow) => {}
            other => failures.push(format!("{name} as arguments: {other:?}")),
        }
        let output = json!({"ok": true, "path": "/workspace/in.txt", "content": text});
        let path_args = json!({"path": "/workspace/in.txt"});
        match guard.check_output(&context(&path_args, &labels), &output) {
            Ok(OutputVerdict::Pass) => {}
            other => failures.push(format!("{name} as output: {other:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// The fixtures written as injections are caught by the default detector, as text and as a tool output.
#[test]
fn hostile_fixtures_are_detected() {
    let guard = guard();
    let labels = BTreeMap::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/fixtures");
    for fixture in HOSTILE_FIXTURES {
        let path = root.join(fixture);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(detect(&text).is_some(), "{fixture} not detected");
        let output = json!({"ok": true, "content": text});
        let path_args = json!({"path": "/workspace/in.txt"});
        assert!(
            matches!(
                guard.check_output(&context(&path_args, &labels), &output),
                Ok(OutputVerdict::Deny(_))
            ),
            "{fixture} passed as output"
        );
    }
}
