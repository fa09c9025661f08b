//! Tests of the JUnit report: cases from runs and bundles, matrix cells,
//! and the XML written.

use super::*;

// Markup, quotes, newlines and forbidden control characters are escaped so any reason stays well-formed XML.
#[test]
fn escapes_what_xml_cannot_carry() {
    assert_eq!(
        escape_xml("a<b>&\"c'\n\t\u{1}", true),
        "a&lt;b&gt;&amp;&quot;c&apos;&#10;&#9;\u{FFFD}"
    );
    assert_eq!(escape_xml("x\n\"y\"", false), "x\n\"y\"");
}

/// Writes a walking-skeleton bundle with `ids` as its records, stopped
/// at the last one, and reads its suite back.
fn suite_of(ids: &[&str]) -> Result<TestSuite, CliError> {
    use chio_arena::bundle::{Bundle, BundleStatus, StepInputs, BUNDLE_SCHEMA};
    let scenario = chio_arena::load_scenario(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/walking_skeleton.toml"),
    )
    .unwrap();
    let record = |id: &str| StepRecord {
        pass: Some(true),
        ..StepRecord::new(
            id,
            chio_arena::ActionKind::Call,
            "solo",
            "2026-01-05T08:00:00.000Z".to_string(),
            StepInputs::default(),
        )
    };
    let mut manifest = BundleManifest {
        schema_version: BUNDLE_SCHEMA.to_string(),
        determinism: scenario
            .determinism_witness()
            .expect("the scenario's steps read"),
        scenario_title: scenario.title().to_string(),
        scenario_sha256: String::new(),
        status: BundleStatus::Stopped,
        stopped: ids.last().map(|id| StopRecord {
            step_id: id.to_string(),
            cause: "unexpected-verdict".to_string(),
            message: String::new(),
        }),
        mismatches: Vec::new(),
        receipt_root: String::new(),
        receipt_count: 0,
        arena_keys: BTreeMap::new(),
        policies: BTreeMap::new(),
        sealed: std::collections::BTreeMap::new(),
        steps: ids.iter().map(|id| record(id)).collect(),
    };
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("bundle");
    Bundle {
        manifest: manifest.clone(),
        receipts: Vec::new(),
        policies: BTreeMap::new(),
        inputs: BTreeMap::new(),
    }
    .write(&dir)
    .unwrap();
    manifest.steps = Vec::new();
    suite_from_bundle("arena run", &scenario, &manifest, &dir)
}

// A run's suite read back from its bundle judges the recorded steps and skips the rest; records out of the schedule's order are refused as a bundle that cannot be read back.
#[test]
fn a_run_suite_is_read_back_in_schedule_order() {
    let suite = suite_of(&["read-notes"]).unwrap();
    assert_eq!(suite.cases.len(), 2);
    assert_eq!(suite.cases[0].outcome, CaseOutcome::Passed);
    assert_eq!(suite.skipped(), 1);
    let refused = suite_of(&["read-dotenv"]).unwrap_err();
    assert_eq!(refused.code, "CHIO-REPORT-BUNDLE-READ");
    assert!(
        refused.message.contains("read-dotenv"),
        "{}",
        refused.message
    );
}

// Counts on the root and on each suite add up from the cases' outcomes.
#[test]
fn counts_add_up() {
    let case = |name: &str, outcome| TestCase {
        name: name.into(),
        classname: "s".into(),
        outcome,
        output: None,
    };
    let suite = TestSuite {
        name: "s".into(),
        properties: BTreeMap::new(),
        cases: vec![
            case("a", CaseOutcome::Passed),
            case(
                "b",
                CaseOutcome::Failed {
                    message: "expected deny, the kernel answered allow".into(),
                    detail: String::new(),
                },
            ),
            case(
                "c",
                CaseOutcome::Skipped {
                    message: "not run".into(),
                },
            ),
        ],
    };
    let xml = render("chio arena run", &[suite]);
    assert!(xml.contains(
        "<testsuites name=\"chio arena run\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\">"
    ));
    assert!(xml.contains("<testcase name=\"a\" classname=\"s\"/>"));
    assert!(xml.contains("<skipped message=\"not run\"/>"));
}
