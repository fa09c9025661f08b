//! Unit tests of the streaming bundle writer: its bundle is byte for byte
//! the one `Bundle::write` writes for the same records, stopped runs
//! included, and a refused destination is refused before anything is written.

use super::tests::{manifest, step};
use super::*;
use chio_kernel::keys::{derive_arena_key, public_key_hex};
use chio_kernel::receipt::{merkle_root, ReceiptBody, ReceiptDecision, RECEIPT_SCHEMA};
use chio_kernel::{SignedReceipt, Verdict};

fn receipt(n: u64) -> SignedReceipt {
    let key = derive_arena_key(1, "kernel", "k");
    let body = ReceiptBody {
        schema: RECEIPT_SCHEMA.into(),
        timestamp_ms: n,
        kernel_id: "k".into(),
        kernel_key: public_key_hex(&key),
        capability_id: "cap".into(),
        request_id: format!("r{n}"),
        agent_id: "a".into(),
        session_id: "s".into(),
        server: "srv".into(),
        tool: "t".into(),
        parameter_hash: "00".into(),
        decision: ReceiptDecision {
            verdict: Verdict::Allow,
            reason: Some("a \"steps\":[] inside a string".into()),
            guard: None,
            sanitized: false,
        },
        observed: vec![],
        output_hash: None,
    };
    SignedReceipt::sign(body, &key).unwrap()
}

/// Every file under `dir`, by relative path, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// The same run written whole and streamed, for `count` steps.
fn both(count: u64, stopped: bool) -> (BTreeMap<String, Vec<u8>>, BTreeMap<String, Vec<u8>>) {
    let root = tempfile::tempdir().unwrap();
    let receipts: Vec<SignedReceipt> = (0..count).map(receipt).collect();
    let steps: Vec<StepRecord> = (0..count)
        .map(|n| step(&format!("s{n}"), "allow", "e1"))
        .collect();
    let mut whole = manifest(steps.clone());
    whole.receipt_root = merkle_root(&receipts);
    if stopped {
        whole.status = crate::bundle::BundleStatus::Stopped;
        whole.stopped = Some(StopRecord {
            step_id: "s0".to_string(),
            cause: "unexpected-verdict".to_string(),
            message: "step s0 said \"steps\":[]".to_string(),
        });
    }
    let policies = BTreeMap::from([("k".to_string(), "{\"kernel\":\"k\"}".to_string())]);
    let inputs = BTreeMap::from([
        (SCENARIO_INPUT.to_string(), b"id = \"s\"\n".to_vec()),
        ("fixtures/a.txt".to_string(), b"a\n".to_vec()),
    ]);
    let bundle = Bundle {
        manifest: whole.clone(),
        receipts: receipts
            .iter()
            .map(|r| chio_kernel::canonical::to_canonical_string(r).unwrap())
            .collect(),
        policies: policies.clone(),
        inputs: inputs.clone(),
    };
    bundle.write(&root.path().join("whole")).unwrap();

    let mut writer = BundleWriter::create(&root.path().join("streamed")).unwrap();
    for (r, s) in receipts.iter().zip(&steps) {
        writer.receipt(r).unwrap();
        writer.step(s).unwrap();
    }
    let mut head = whole;
    head.steps = Vec::new();
    head.receipt_root = writer.receipt_root();
    assert_eq!(writer.receipt_count(), count);
    writer.finish(&head, &policies, &inputs, None).unwrap();
    (
        files(&root.path().join("whole")),
        files(&root.path().join("streamed")),
    )
}

// A streamed bundle is byte for byte the bundle written whole, for no step, one step and several, completed or stopped.
#[test]
fn streamed_bundle_equals_the_whole_one() {
    for count in [0, 1, 2, 7] {
        for stopped in [false, true] {
            let (whole, streamed) = both(count, stopped);
            assert_eq!(
                whole.keys().collect::<Vec<_>>(),
                streamed.keys().collect::<Vec<_>>()
            );
            assert!(whole == streamed, "count {count}, stopped {stopped}");
        }
    }
}

// A destination that is not a bundle is refused before any file is written, and a writer dropped unfinished leaves nothing.
#[test]
fn refusals_come_first_and_nothing_is_left_behind() {
    let root = tempfile::tempdir().unwrap();
    let foreign = root.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
    assert!(matches!(
        BundleWriter::create(&foreign),
        Err(ArenaError::Bundle { .. })
    ));
    let mut writer = BundleWriter::create(&root.path().join("out")).unwrap();
    writer.receipt(&receipt(0)).unwrap();
    drop(writer);
    let left: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("foreign")]);
}
