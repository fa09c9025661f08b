//! Fuzz targets for the kernel's decoders of untrusted input: capability
//! tokens, delegation links, signed requests and receipts, each decoded
//! from arbitrary bytes and from structure-aware mutations of valid signed
//! material, then verified or evaluated. A target passes when nothing
//! panics and every mutated structure that still decodes is refused by its
//! verifier. The case count comes from `CHIO_FUZZ_CASES` (default 256, what
//! CI runs); a long run is `CHIO_FUZZ_CASES=200000 cargo test --release -p
//! chio-kernel --test it -- fuzz_decode::` (see docs/fuzzing.md).

use crate::util;

use chio_kernel::token::{Attenuation, DelegationLink};
use chio_kernel::verdict::Verdict;
use chio_kernel::{CapabilityToken, SignedReceipt, ToolCallRequest};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value;
use util::*;

fn cases() -> u32 {
    std::env::var("CHIO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn delegated() -> CapabilityToken {
    let root = issue("cap-root", "alice", files_scope());
    root.delegate(
        &agent_key("alice"),
        &agent_pk("bob"),
        &Attenuation {
            tools: Some(vec!["read_file".into()]),
            ..Attenuation::default()
        },
        "cap-child",
        NOW_MS - 1000,
    )
    .expect("delegation signs")
}

fn valid_receipt_json() -> Vec<u8> {
    let mut kernel = kernel(Vec::new());
    let token = issue("cap-r", "alice", files_scope());
    let req = request(
        "alice",
        &token,
        "files",
        "read_file",
        serde_json::json!({"path": "/workspace/notes.txt"}),
        "rq-1",
    );
    let files = standard_files();
    let decision = kernel.evaluate(&req, NOW_MS, &mut dispatch(&files));
    assert_eq!(
        decision.verdict,
        Verdict::Allow,
        "the baseline receipt is an allow"
    );
    serde_json::to_vec(&decision.receipt).expect("receipt serialises")
}

/// Flips one byte of `bytes` at `index` (modulo the length) by `delta`.
fn mutate(mut bytes: Vec<u8>, index: usize, delta: u8) -> Vec<u8> {
    if !bytes.is_empty() {
        let i = index % bytes.len();
        bytes[i] = bytes[i].wrapping_add(delta.max(1));
    }
    bytes
}

proptest! {
    #![proptest_config(Config { cases: cases(), ..Config::default() })]

    // Arbitrary bytes never panic the token, link, request or receipt decoders.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = serde_json::from_slice::<CapabilityToken>(&bytes);
        let _ = serde_json::from_slice::<DelegationLink>(&bytes);
        let _ = serde_json::from_slice::<ToolCallRequest>(&bytes);
        if let Ok(receipt) = serde_json::from_slice::<SignedReceipt>(&bytes) {
            prop_assert!(receipt.verify().is_err());
        }
    }

    // A delegated token with one byte changed either fails to decode or is never allowed.
    #[test]
    fn mutated_tokens_are_refused(index in any::<usize>(), delta in any::<u8>()) {
        let token = delegated();
        let original = serde_json::to_vec(&token).unwrap();
        let bytes = mutate(original.clone(), index, delta);
        if let Ok(decoded) = serde_json::from_slice::<CapabilityToken>(&bytes) {
            if decoded != token {
                let mut kernel = kernel(Vec::new());
                let files = standard_files();
                let req = request("bob", &decoded, "files", "read_file", serde_json::json!({"path": "/workspace/notes.txt"}), "rq-fuzz");
                let decision = kernel.evaluate(&req, NOW_MS, &mut dispatch(&files));
                // A change to a field the signatures do not cover (none exist) would be allowed; every covered change must deny.
                prop_assert_ne!(decision.verdict, Verdict::Allow, "mutated token allowed: {}", String::from_utf8_lossy(&bytes));
            }
        }
    }

    // A delegation link with one byte changed never verifies against its delegator.
    #[test]
    fn mutated_links_do_not_verify(index in any::<usize>(), delta in any::<u8>()) {
        let token = delegated();
        let link = token.delegation_chain[0].clone();
        let bytes = mutate(serde_json::to_vec(&link).unwrap(), index, delta);
        if let Ok(decoded) = serde_json::from_slice::<DelegationLink>(&bytes) {
            if decoded != link {
                let mut forged = token.clone();
                forged.delegation_chain[0] = decoded;
                let mut kernel = kernel(Vec::new());
                let files = standard_files();
                let req = request("bob", &forged, "files", "read_file", serde_json::json!({"path": "/workspace/notes.txt"}), "rq-link");
                let decision = kernel.evaluate(&req, NOW_MS, &mut dispatch(&files));
                prop_assert_ne!(decision.verdict, Verdict::Allow);
            }
        }
    }

    // A receipt with one byte changed either fails to decode or fails to verify.
    #[test]
    fn mutated_receipts_do_not_verify(index in any::<usize>(), delta in any::<u8>()) {
        let original = valid_receipt_json();
        let bytes = mutate(original.clone(), index, delta);
        if let Ok(receipt) = serde_json::from_slice::<SignedReceipt>(&bytes) {
            let back = serde_json::to_vec(&receipt).unwrap();
            if back != original {
                prop_assert!(receipt.verify().is_err());
            }
        }
    }

    // Arbitrary JSON in place of a request's fields never panics evaluation.
    #[test]
    fn arbitrary_request_json_never_panics(text in "\\PC{0,256}") {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text) {
            let _ = serde_json::from_value::<ToolCallRequest>(Value::Object(map));
        }
    }
}
