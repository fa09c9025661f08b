//! Unit and property tests of the step reader: reading a bundle's records
//! one at a time gives exactly the records the whole-manifest read gives,
//! for bundles written whole or streamed, and a manifest that is not whole
//! is refused naming `arena.json`.

use super::tests::{manifest, step};
use super::*;
use chio_kernel::trace::{DecisionTrace, StageTrace};
use proptest::prelude::*;

/// A record with a trace, labels and a reason holding escapes and unicode.
fn rich(id: &str, reason: &str) -> StepRecord {
    let mut record = step(id, "deny", "e1");
    record.reason = Some(reason.to_string());
    record.expected_reason = Some("\u{e9}t\u{e9}".to_string());
    record.labels = Some(vec!["secret\"x".to_string(), "\u{1F512}".to_string()]);
    record.trace = Some(Box::new(DecisionTrace {
        principal: Some("agent \\ one".to_string()),
        chain: vec!["cap-1".to_string()],
        stages: vec![StageTrace {
            stage: "guards".to_string(),
            outcome: "deny".to_string(),
            detail: "a \"steps\":[] inside\n a detail".to_string(),
        }],
        ..DecisionTrace::default()
    }));
    record
}

/// The scenario file every test bundle carries.
fn inputs() -> BTreeMap<String, Vec<u8>> {
    BTreeMap::from([(SCENARIO_INPUT.to_string(), b"id = \"s\"\n".to_vec())])
}

/// Writes `whole` into `dir` as a bundle, whole or streamed.
fn write(dir: &Path, whole: &BundleManifest, streamed: bool) {
    if streamed {
        let mut writer = BundleWriter::create(dir).unwrap();
        for s in &whole.steps {
            writer.step(s).unwrap();
        }
        let head = BundleManifest {
            steps: Vec::new(),
            ..whole.clone()
        };
        writer
            .finish(&head, &BTreeMap::new(), &inputs(), None)
            .unwrap();
    } else {
        Bundle {
            manifest: whole.clone(),
            receipts: Vec::new(),
            policies: BTreeMap::new(),
            inputs: inputs(),
        }
        .write(dir)
        .unwrap();
    }
}

/// The records `for_each_step` hands out, in order.
fn streamed_records(dir: &Path) -> Vec<StepRecord> {
    let mut out = Vec::new();
    let count = for_each_step(dir, |r| {
        out.push(r);
        Ok::<(), ()>(())
    })
    .unwrap()
    .unwrap();
    assert_eq!(count, out.len() as u64);
    out
}

/// Checks that the reader and the whole-manifest read agree on `whole`.
fn agrees(whole: &BundleManifest) {
    for streamed in [false, true] {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("b");
        write(&dir, whole, streamed);
        let read = Bundle::read(&dir).unwrap().manifest.steps;
        assert_eq!(read, whole.steps);
        assert_eq!(streamed_records(&dir), read, "streamed {streamed}");
    }
}

// No step, a completed run, a stopped run and records with traces, labels and escaped unicode reasons read back the same one at a time as whole.
#[test]
fn reads_what_the_whole_manifest_holds() {
    agrees(&manifest(Vec::new()));
    agrees(&manifest(vec![
        step("one", "allow", "e1"),
        step("two", "deny", "e1"),
    ]));
    let mut stopped = manifest(vec![
        rich(
            "one",
            "denied: \"quote\" \\ back\tslash \u{0} nul \u{2028} \u{1F600}",
        ),
        step("two", "deny", "e1"),
    ]);
    stopped.status = BundleStatus::Stopped;
    stopped.stopped = Some(StopRecord {
        step_id: "two".to_string(),
        cause: "unexpected-verdict".to_string(),
        message: "step two said \"steps\":[]".to_string(),
    });
    stopped.mismatches = vec!["two".to_string()];
    agrees(&stopped);
}

// The visitor's error ends the reading at that record and comes back as the inner error.
#[test]
fn a_visitor_error_stops_the_reading() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("b");
    let steps = (0..5).map(|n| step(&format!("s{n}"), "allow", "e1"));
    write(&dir, &manifest(steps.collect()), true);
    let mut seen = Vec::new();
    let read = for_each_step(&dir, |r| {
        if r.step_id == "s2" {
            return Err("stop at s2");
        }
        seen.push(r.step_id);
        Ok(())
    });
    assert_eq!(read.unwrap(), Err("stop at s2"));
    assert_eq!(seen, ["s0", "s1"]);
}

// A missing, truncated, foreign-schema, stepless, doubled or malformed manifest is a bundle error naming arena.json, never a short read.
#[test]
fn a_manifest_that_is_not_whole_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("b");
    write(
        &dir,
        &manifest(vec![rich("one", "r"), step("two", "allow", "e1")]),
        true,
    );
    let path = dir.join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&path).unwrap();
    let refused = |dir: &Path, what: &str| match for_each_step(dir, |_| Ok::<(), ()>(())) {
        Err(ArenaError::Bundle { path, .. }) => assert!(path.ends_with(MANIFEST_FILE)),
        other => panic!("{what}: expected a bundle error, got {other:?}"),
    };
    refused(&root.path().join("absent"), "absent");
    let versions = text.replace(BUNDLE_SCHEMA, "chio.arena.bundle/v0");
    // The manifest's own steps open with a record; the witness's are ids.
    let cut = text.find("\"steps\":[{").unwrap();
    let variants = [
        text[..text.len() / 2].to_string(),
        versions,
        text.replacen("\"steps\":[{", "\"steps_\":[{", 1),
        text.replace(
            &format!("\"schema_version\":\"{BUNDLE_SCHEMA}\""),
            &format!("\"schema\":\"{BUNDLE_SCHEMA}\""),
        ),
        format!("{}\"steps\":[],{}", &text[..cut], &text[cut..]),
        text.replacen("\"step_id\":\"two\"", "\"step_id\":2", 1),
        format!("{} trailing", text.trim_end()),
        "[]".to_string(),
    ];
    for variant in variants {
        std::fs::write(&path, &variant).unwrap();
        refused(&dir, &variant);
    }
}

/// Any reason text, label and step count, with or without traces.
fn arbitrary_manifest() -> impl Strategy<Value = BundleManifest> {
    let record = (
        any::<String>(),
        prop::collection::vec(any::<String>(), 0..3),
        any::<bool>(),
    );
    prop::collection::vec(record, 0..6).prop_map(|records| {
        let steps = records
            .into_iter()
            .enumerate()
            .map(|(n, (reason, labels, traced))| {
                let id = format!("s{n}");
                let mut record = if traced {
                    rich(&id, &reason)
                } else {
                    step(&id, "allow", "e1")
                };
                record.reason = Some(reason);
                record.labels = Some(labels);
                record
            })
            .collect();
        manifest(steps)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    // For any records, the one-at-a-time read equals the whole-manifest read.
    #[test]
    fn any_bundle_reads_back_one_step_at_a_time(whole in arbitrary_manifest()) {
        agrees(&whole);
    }
}
