//! Promoted cases replay: every file under `scenarios/promoted/` (fixtures
//! and adversarial cases) is loaded, its action evaluated alone by the real
//! kernel in its scenario's world, and the verdict, reason and signed
//! receipt compared byte for byte with what was promoted.

use std::path::{Path, PathBuf};

use chio_adversary::fitness::ActionEvaluator;
use chio_adversary::{PromotedCase, ADVERSARIAL_CASE_SCHEMA, FIXTURE_SCHEMA};
use chio_arena::load_scenario;
use chio_kernel::verdict::ProjectedVerdict;
use chio_node::evaluator::KernelActionEvaluator;

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

// Every promoted fixture and adversarial case in the folder replays to the same verdict and receipt bytes.
#[test]
fn every_promoted_case_replays_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/promoted");
    let mut files = Vec::new();
    json_files(&root, &mut files);
    let fixtures = files
        .iter()
        .filter(|p| p.to_string_lossy().contains("/fixtures/"))
        .count();
    assert!(fixtures > 0, "no promoted fixture under {}", root.display());
    assert!(
        files.len() > fixtures,
        "no adversarial case under {}",
        root.display()
    );
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable");
        let case: PromotedCase = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not a promoted case: {e}", path.display()));
        match case.schema_version.as_str() {
            FIXTURE_SCHEMA => {
                assert_eq!(case.projected, ProjectedVerdict::Deny, "{}", path.display())
            }
            ADVERSARIAL_CASE_SCHEMA => assert_ne!(
                case.projected,
                ProjectedVerdict::Allow,
                "{}",
                path.display()
            ),
            other => panic!("{}: unknown schema {other}", path.display()),
        }
        let dir = path.parent().expect("file has a folder");
        let scenario = load_scenario(dir.join(&case.scenario))
            .unwrap_or_else(|e| panic!("{}: scenario: {e}", path.display()));
        assert_eq!(scenario.id(), case.scenario_id);
        let mut evaluator = KernelActionEvaluator::load(&scenario).expect("world");
        let outcome = evaluator
            .evaluate_batch(std::slice::from_ref(&case.action))
            .expect("evaluation")
            .remove(0);
        if !case.reproduced_by(&outcome) {
            failures.push(format!(
                "{}: promoted {:?} ({:?}), replayed {:?} ({:?})",
                path.display(),
                case.projected,
                case.reason,
                outcome.projected,
                outcome.reason
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
