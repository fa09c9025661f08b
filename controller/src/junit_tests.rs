//! Tests of the JUnit report: cases from runs and bundles, matrix cells,
//! and the XML written.

use super::*;

/// The rendered report, parsed back.
fn rendered(suites: &[TestSuite]) -> String {
    String::from_utf8(render("chio arena run", suites).unwrap()).unwrap()
}

// Markup, quotes, ANSI colours and characters XML 1.0 cannot carry never break the report: markup and quotes round-trip, the rest become U+FFFD.
#[test]
fn hostile_text_stays_well_formed() {
    let hostile = "a<b>&\"c' \u{1b}[31m\u{1}\u{FFFE}\u{FFFF}";
    let suite = TestSuite {
        name: hostile.into(),
        properties: BTreeMap::from([(hostile.to_string(), hostile.to_string())]),
        cases: vec![TestCase {
            name: hostile.into(),
            classname: "s".into(),
            outcome: CaseOutcome::Failed {
                message: hostile.into(),
                detail: format!("reason: {hostile}\nguard: g\n"),
            },
            output: None,
        }],
    };
    let xml = rendered(&[suite]);
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let kept = "a<b>&\"c' \u{FFFD}[31m\u{FFFD}\u{FFFD}\u{FFFD}";
    let node = |tag: &str| doc.descendants().find(|n| n.has_tag_name(tag)).unwrap();
    assert_eq!(node("testsuite").attribute("name"), Some(kept));
    assert_eq!(node("property").attribute("name"), Some(kept));
    assert_eq!(node("property").attribute("value"), Some(kept));
    assert_eq!(node("testcase").attribute("name"), Some(kept));
    assert_eq!(node("failure").attribute("message"), Some(kept));
    assert_eq!(
        node("failure").text(),
        Some(format!("reason: {kept}\nguard: g\n").as_str())
    );
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
    let skipped = |c: &&TestCase| matches!(c.outcome, CaseOutcome::Skipped { .. });
    assert_eq!(suite.cases.iter().filter(skipped).count(), 1);
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
    let xml = rendered(&[suite.clone(), suite]);
    assert!(xml.contains(
        "<testsuites name=\"chio arena run\" tests=\"6\" skipped=\"2\" failures=\"2\" errors=\"0\">"
    ));
    assert!(xml.contains(
        "<testsuite name=\"s\" tests=\"3\" skipped=\"1\" errors=\"0\" failures=\"1\" id=\"1\">"
    ));
    assert!(xml.contains("<testcase name=\"a\" classname=\"s\"/>"));
    assert!(xml.contains("<skipped message=\"not run\"/>"));
    assert!(xml.contains(
        "<failure message=\"expected deny, the kernel answered allow\" type=\"unexpected-verdict\">"
    ));
    assert!(!xml.contains("time"), "{xml}");
}
