//! How a decided call closes: the receipt binds the released output by its
//! hash (and an output with no canonical form is withheld, never signed
//! with a hash of nothing); the output stage names the labels the output
//! was released with; a receipt the closing batch left unanswered is
//! appended alone.

use crate::util;

use chio_kernel::batch::{BatchAnswers, BatchStore, StoreOp};
use chio_kernel::label::Label;
use chio_kernel::receipt::canonical_sha256;
use chio_kernel::stores::{InMemoryAuthority, KernelStores};
use chio_kernel::{Kernel, ToolOutput, Verdict};
use serde_json::{json, Value};
use util::*;

/// Alice's read of `path` (request `id`), which the server answers with
/// `answer`.
fn read_at(
    k: &mut Kernel,
    path: &str,
    id: &str,
    answer: Result<ToolOutput, String>,
) -> chio_kernel::Decision {
    let cap = issue("cap-alice", "alice", files_scope());
    let call = request(
        "alice",
        &cap,
        "files",
        "read_file",
        json!({"path": path}),
        id,
    );
    k.evaluate(&call, NOW_MS, &mut |_| answer.clone())
}

/// Alice's read of her notes, which the server answers with `output`.
fn read(k: &mut Kernel, output: ToolOutput, id: &str) -> chio_kernel::Decision {
    read_at(k, "/workspace/notes.txt", id, Ok(output))
}

fn output(content: Value, label: Option<Label>, integrity: Option<&str>) -> ToolOutput {
    ToolOutput {
        content,
        label,
        integrity: integrity.map(str::to_string),
        performed: true,
        received: true,
    }
}

// An allow's receipt carries the SHA-256 of the released output's canonical JSON, the rewritten output's when a guard rewrote it; a deny's carries none.
#[test]
fn the_receipt_binds_the_released_output() {
    let mut k = kernel(vec![]);
    let content = json!({"content": "contents", "lines": [1, 2]});
    let d = read(&mut k, output(content.clone(), None, None), "r-1");
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reason);
    assert_eq!(
        d.receipt.body.output_hash,
        Some(canonical_sha256(&content).unwrap())
    );
    assert!(d.receipt.verify().is_ok());

    let mut redacting = kernel(vec![guard(
        "redact",
        chio_kernel::guards::GuardKind::SecretRedaction,
        json!({}),
    )]);
    let secret = json!({"content": "deploy key AKIAIOSFODNN7EXAMPLE"});
    let d = read(&mut redacting, output(secret.clone(), None, None), "r-2");
    assert!(d.sanitized, "{:?}", d.reason);
    let released = d.output.clone().expect("released");
    assert_ne!(released, secret);
    assert_eq!(
        d.receipt.body.output_hash,
        Some(canonical_sha256(&released).unwrap())
    );

    let denied = read_at(
        &mut k,
        "/etc/passwd",
        "r-3",
        Ok(output(json!({}), None, None)),
    );
    assert_eq!(denied.verdict, Verdict::Deny);
    assert_eq!(denied.receipt.body.output_hash, None);
}

// An output holding an integer beyond 2^53 (at the top, nested in an array or an object) has no canonical form: it is withheld with its own reason and code, the receipt is signed over no output hash, and the next call is decided as usual.
#[test]
fn an_output_without_a_canonical_form_is_withheld() {
    let mut k = kernel(vec![]);
    for (i, content) in [
        json!(9_007_199_254_740_993u64),
        json!({"ids": [1, 9_007_199_254_740_993u64]}),
        json!({"a": {"b": -9_007_199_254_740_993i64}}),
    ]
    .into_iter()
    .enumerate()
    {
        let d = read(&mut k, output(content, None, None), &format!("big-{i}"));
        assert_eq!(d.verdict, Verdict::Deny);
        assert_eq!(d.output, None);
        let reason = d.reason.as_deref().unwrap_or_default();
        assert_eq!(
            reason,
            "tool output has no canonical form for its receipt: it holds an integer past 2^53; output withheld",
            "the withheld value is never quoted"
        );
        assert_eq!(
            d.trace.reason_code.map(|c| c.as_str()),
            Some("output-uncanonical")
        );
        assert_eq!(d.receipt.body.output_hash, None);
        assert!(d.receipt.verify().is_ok(), "the deny is signed");
        assert!(d.recorded);
    }
    // The largest exact integer is canonical.
    let edge = json!({"n": 9_007_199_254_740_992u64});
    let d = read(&mut k, output(edge.clone(), None, None), "edge");
    assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reason);
    assert_eq!(
        d.receipt.body.output_hash,
        Some(canonical_sha256(&edge).unwrap())
    );
}

// The output stage says with which labels the output was released, and the trace keeps them; an output the server did not carry out says so.
#[test]
fn the_output_stage_names_the_release_labels() {
    let content = json!({"content": "x"});
    let cases = [
        (
            output(content.clone(), None, None),
            "output released",
            None,
            None,
        ),
        (
            output(content.clone(), Some(Label::Internal), None),
            "output released, labelled internal",
            Some("internal"),
            None,
        ),
        (
            output(content.clone(), None, Some("integrity:untrusted")),
            "output released, labelled integrity:untrusted",
            None,
            Some("integrity:untrusted"),
        ),
        (
            output(
                content.clone(),
                Some(Label::Confidential),
                Some("integrity:untrusted"),
            ),
            "output released, labelled confidential and integrity:untrusted",
            Some("confidential"),
            Some("integrity:untrusted"),
        ),
        (
            ToolOutput {
                performed: false,
                received: false,
                ..output(content.clone(), Some(Label::Internal), None)
            },
            "output released; the server did not carry the call out",
            Some("internal"),
            None,
        ),
    ];
    for (i, (given, detail, label, integrity)) in cases.into_iter().enumerate() {
        let mut k = kernel(vec![]);
        let d = read(&mut k, given, &format!("l-{i}"));
        assert_eq!(d.verdict, Verdict::Allow, "{:?}", d.reason);
        let stage = d.trace.stages.last().expect("an output stage");
        assert_eq!(
            (stage.stage.as_str(), stage.outcome.as_str()),
            ("output", "pass")
        );
        assert_eq!(stage.detail, detail);
        assert_eq!(d.trace.output_label.as_deref(), label, "{detail}");
        assert_eq!(d.trace.output_integrity.as_deref(), integrity, "{detail}");
    }
}

/// Authority state that, in a batch ending with a receipt after other
/// operations, runs the others and leaves the receipt unanswered: a store
/// that stops answering partway through a closing batch.
struct ShortStore(InMemoryAuthority);

impl BatchStore for ShortStore {
    fn run(&mut self, mut ops: Vec<StoreOp>) -> BatchAnswers {
        if ops.len() > 1 && matches!(ops.last(), Some(StoreOp::AppendReceipt { .. })) {
            ops.pop();
        }
        self.0.run(ops)
    }
}

// A deny whose closing batch (the holds' releases, then the receipt) left the receipt unanswered appends it in a batch of its own, and says it was recorded only when that append was acknowledged.
#[test]
fn an_unanswered_receipt_is_appended_alone() {
    let authority = InMemoryAuthority::default();
    let mut k = Kernel::new(
        kernel_config(vec![]),
        KernelStores::new(ShortStore(authority.clone())),
    )
    .expect("kernel builds");
    let gone = Err("server gone".to_string());
    let d = read_at(&mut k, "/workspace/notes.txt", "alone-1", gone);
    assert_eq!(d.verdict, Verdict::Deny);
    assert_eq!(d.reason.as_deref(), Some("dispatch failed: server gone"));
    assert!(d.recorded, "the receipt was appended alone");
    let stored: Vec<String> = authority.receipts().into_iter().map(|r| r.id).collect();
    assert_eq!(stored, vec![d.receipt.id.clone()]);
}
