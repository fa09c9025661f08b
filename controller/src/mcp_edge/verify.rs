//! What `chio arena replay DIR` checks of an edge session folder (a bundle
//! with `session.json`), besides re-deciding its scenario as it does every
//! bundle's:
//!
//! - the signed end (`session-end.json`): its signature under the session's
//!   receipt key, the number of calls, the SHA-256 of `calls.jsonl` and
//!   that of `session.json` (the policy in force, the upstreams' tool
//!   listings), so neither can be edited after the session;
//! - each call in order: `seq` is its position; its receipt verifies under
//!   the session's receipt key and states the call's server, tool, verdict
//!   and reason (a sanitized allow is a `rewrite`); a plain allow's
//!   upstream answer, read as the edge's kernel read it (`crate::mcp_answer`
//!   against the tool the upstream listed), is the output the receipt
//!   hashed; and a
//!   call the scenario re-decides has, in the replay, the same verdict,
//!   reason, reason code and receipt fields (all but the time, the ids and
//!   the keys) as the edge gave it;
//! - `inputs/scenario.toml` is the scenario the edge's builder makes of
//!   `session.json` and `calls.jsonl`, and each sealed file it reads
//!   (`inputs/fixtures/secrets/`) holds the value `calls.jsonl` records.
//!
//! Each mismatch is one line naming the call's step (`call-<seq>`) or the
//! file, never a recorded value.

use std::collections::BTreeMap;
use std::path::Path;

use chio_arena::bundle::{Bundle, StepRecord, INPUTS_DIR};
use chio_kernel::canonical::to_canonical_vec;
use chio_kernel::contract::ToolContract;
use chio_kernel::keys::parse_public_key_hex;
use chio_kernel::receipt::{canonical_sha256, SignedReceipt};
use ed25519_dalek::Signature;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::bundle::{end_body, parse_calls, CALLS_FILE, SESSION_END_FILE, SESSION_FILE};
use super::scenario::{
    session_scenario, step_id, upstream_answer, upstream_contracts, Presentation,
};

/// Whether `dir` is an edge session folder.
pub fn is_session(dir: &Path) -> bool {
    dir.join(SESSION_FILE).is_file()
}

/// The mismatches of the session folder `dir` against its own signed
/// records and against `replayed`, the re-decision of its scenario;
/// `inputs_scenario` is the scenario text the bundle holds.
pub fn check_session(dir: &Path, inputs_scenario: &[u8], replayed: &Bundle) -> Vec<String> {
    // Read as every file of a bundle is: a regular file, bounded.
    let read = |name: &str| {
        chio_arena::bundle::read_regular(&dir.join(name), chio_arena::bundle::MAX_FILE_BYTES)
            .map_err(|e| match e {
                chio_arena::bundle::FileRefusal::Io(_) => format!("{name}: missing"),
                refusal => format!("{name}: {refusal}"),
            })
    };
    let header_bytes = match read(SESSION_FILE) {
        Ok(b) => b,
        Err(e) => return vec![e],
    };
    let header: Value = match serde_json::from_slice(&header_bytes) {
        Ok(v) => v,
        Err(_) => return vec![format!("{SESSION_FILE}: not JSON")],
    };
    let key = header["kernel_key"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let bytes = match read(CALLS_FILE) {
        Ok(b) => b,
        Err(e) => return vec![e],
    };
    let calls = match parse_calls(&bytes) {
        Ok(c) => c,
        Err(e) => return vec![e],
    };
    let mut found = check_end(dir, &key, &bytes, &header_bytes, calls.len());
    let contracts = upstream_contracts(&header);
    let steps: Vec<&StepRecord> = replayed.manifest.steps.iter().collect();
    let receipts: Vec<SignedReceipt> = replayed
        .receipts
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for (i, call) in calls.iter().enumerate() {
        let at = step_id(i as u64 + 1);
        found.extend(
            check_signed(call, i as u64 + 1, &key, &contracts).map(|m| format!("step {at}: {m}")),
        );
        if let Some(step) = steps.iter().find(|s| s.step_id == at) {
            found.extend(check_redecided(call, step, &receipts).map(|m| format!("step {at}: {m}")));
        }
    }
    match session_scenario(&header, &calls) {
        Ok(built) => {
            for (i, p) in built.steps.iter().enumerate() {
                let at = step_id(i as u64 + 1);
                if matches!(p, Presentation::Step(_)) && !steps.iter().any(|s| s.step_id == at) {
                    found.push(format!("step {at}: the replay did not decide it"));
                }
            }
            if built.text.as_bytes() != inputs_scenario {
                found.push(format!(
                    "inputs/scenario.toml: not the scenario of {SESSION_FILE} and {CALLS_FILE}"
                ));
            }
            for file in &built.sealed {
                let held = read_bounded(&dir.join(INPUTS_DIR).join(&file.path));
                if held.as_deref() != Some(format!("{}\n", file.text).as_bytes()) {
                    found.push(format!(
                        "{INPUTS_DIR}/{}: not the value {CALLS_FILE} records",
                        file.path
                    ));
                }
            }
        }
        Err(e) => found.push(format!("{CALLS_FILE}: no scenario can be built: {e}")),
    }
    found
}

/// The bytes of a regular file of the folder, bounded; nothing for any
/// other entry.
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    chio_arena::bundle::read_regular(path, chio_arena::bundle::MAX_FILE_BYTES).ok()
}

/// The signed end against `calls.jsonl` and `session.json`.
fn check_end(dir: &Path, key: &str, calls: &[u8], header: &[u8], count: usize) -> Vec<String> {
    let end: Value = match read_bounded(&dir.join(SESSION_END_FILE))
        .and_then(|b| serde_json::from_slice(&b).ok())
    {
        Some(v) => v,
        None => return vec![format!("{SESSION_END_FILE}: missing or not JSON")],
    };
    let stated = end["calls"].as_u64().unwrap_or(u64::MAX);
    let digest = end["calls_sha256"].as_str().unwrap_or_default();
    let header_digest = end["session_sha256"].as_str().unwrap_or_default();
    let body = end_body(
        stated,
        digest,
        header_digest,
        end["kernel_key"].as_str().unwrap_or_default(),
    );
    let mut found = Vec::new();
    if end["schema"] != super::bundle::SESSION_END_SCHEMA {
        found.push(format!(
            "{SESSION_END_FILE}: not {} (an earlier end does not bind {SESSION_FILE})",
            super::bundle::SESSION_END_SCHEMA
        ));
    }
    if header_digest != hex::encode(Sha256::digest(header)) {
        found.push(format!(
            "{SESSION_FILE}: its SHA-256 is not the one the signed end states"
        ));
    }
    if end["kernel_key"] != key || !signature_holds(key, &body, &end["signature"]) {
        found.push(format!(
            "{SESSION_END_FILE}: not signed by the session's receipt key"
        ));
    }
    if stated != count as u64 {
        found.push(format!(
            "{CALLS_FILE}: holds {count} calls, the signed end counts {stated}"
        ));
    }
    if digest != hex::encode(Sha256::digest(calls)) {
        found.push(format!(
            "{CALLS_FILE}: its SHA-256 is not the one the signed end states"
        ));
    }
    found
}

/// Whether `signature` (hex) is `key`'s over the canonical `body`.
fn signature_holds(key: &str, body: &Value, signature: &Value) -> bool {
    let (Ok(key), Ok(bytes)) = (parse_public_key_hex(key), to_canonical_vec(body)) else {
        return false;
    };
    let Some(sig) = signature
        .as_str()
        .and_then(|s| hex::decode(s).ok())
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
    else {
        return false;
    };
    key.verify_strict(&bytes, &Signature::from_bytes(&sig))
        .is_ok()
}

/// A call against its own receipt; `contracts` are the upstreams' tools,
/// which an answer is read against.
fn check_signed(
    call: &Value,
    seq: u64,
    key: &str,
    contracts: &BTreeMap<String, Vec<ToolContract>>,
) -> Option<String> {
    if call["seq"].as_u64() != Some(seq) {
        return Some(format!("its seq is not its position {seq}"));
    }
    let receipt = match call.get("receipt").filter(|r| !r.is_null()) {
        None if call["request"].is_null() => return None,
        None => return Some("a call the kernel decided has no receipt".to_string()),
        Some(r) => r,
    };
    let Ok(receipt) = serde_json::from_value::<SignedReceipt>(receipt.clone()) else {
        return Some("its receipt cannot be read".to_string());
    };
    if receipt.verify().is_err() || receipt.body.kernel_key != key {
        return Some("its receipt is not signed by the session's receipt key".to_string());
    }
    let b = &receipt.body;
    let projected = b.decision.verdict.project(b.decision.sanitized);
    let verdict = serde_json::to_value(projected).unwrap_or(Value::Null);
    if call["server"] != b.server.as_str() || call["tool"] != b.tool.as_str() {
        return Some("its server or tool is not its receipt's".to_string());
    }
    if call["verdict"] != verdict || call["reason"] != json!(b.decision.reason) {
        return Some("its verdict or reason is not its receipt's".to_string());
    }
    let answered = call.get("upstream").filter(|u| !u.is_null())?;
    // The recorded answer the edge's kernel read of the upstream's.
    let answer = upstream_answer(contracts, &b.server, &b.tool, answered);
    let hashed = canonical_sha256(&json!({"ok": answer.ok, "output": answer.output})).ok();
    // A sanitized allow released the rewritten output, which the replay's
    // receipt is compared with instead.
    let plain_allow =
        b.decision.verdict == chio_kernel::verdict::Verdict::Allow && !b.decision.sanitized;
    (plain_allow && hashed != b.output_hash)
        .then(|| "its upstream answer is not the output its receipt hashed".to_string())
}

/// A re-decided call against its step in the replay.
fn check_redecided(call: &Value, step: &StepRecord, receipts: &[SignedReceipt]) -> Option<String> {
    let actual = serde_json::to_value(step.actual).unwrap_or(Value::Null);
    let verdict = match call["verdict"].as_str() {
        Some("pending_approval") => json!("deny"),
        _ => call["verdict"].clone(),
    };
    if actual != verdict {
        return Some(format!(
            "the edge's verdict {} is not the replay's {}",
            verdict.as_str().unwrap_or("-"),
            actual.as_str().unwrap_or("-")
        ));
    }
    if call["reason"] != json!(step.reason) || call["reason_code"] != json!(step.reason_code) {
        return Some("the edge's reason is not the replay's".to_string());
    }
    let replayed = receipts
        .iter()
        .find(|r| Some(&r.id) == step.receipt_id.as_ref())?;
    let edge: SignedReceipt = serde_json::from_value(call["receipt"].clone()).ok()?;
    let comparable = |r: &SignedReceipt| {
        let b = &r.body;
        json!([
            b.server,
            b.tool,
            b.parameter_hash,
            b.decision,
            b.observed,
            b.output_hash
        ])
    };
    (comparable(&edge) != comparable(replayed))
        .then(|| "the edge's receipt differs from the replay's (server, tool, arguments, decision, findings or output)".to_string())
}

#[cfg(test)]
mod tests {
    use chio_kernel::keys::public_key_hex;
    use chio_kernel::receipt::{ReceiptBody, ReceiptDecision, RECEIPT_SCHEMA};
    use chio_kernel::verdict::Verdict;
    use ed25519_dalek::SigningKey;

    use super::*;

    /// A call record with its receipt signed by `key`.
    fn record(key: &SigningKey, verdict: Verdict, sanitized: bool, answer: &Value) -> Value {
        let read = upstream_answer(&BTreeMap::new(), "notes", "echo", answer);
        let performed = json!({"ok": read.ok, "output": read.output});
        let body = ReceiptBody {
            schema: RECEIPT_SCHEMA.to_string(),
            timestamp_ms: 1,
            kernel_id: "mcp-edge".to_string(),
            kernel_key: public_key_hex(key),
            capability_id: "cap".to_string(),
            request_id: "r".to_string(),
            agent_id: "a".to_string(),
            session_id: "s".to_string(),
            server: "notes".to_string(),
            tool: "echo".to_string(),
            parameter_hash: "00".to_string(),
            decision: ReceiptDecision {
                verdict,
                reason: sanitized.then(|| "redacted".to_string()),
                guard: None,
                sanitized,
            },
            observed: Vec::new(),
            output_hash: Some(if sanitized {
                "ff".to_string()
            } else {
                canonical_sha256(&performed).unwrap()
            }),
        };
        let receipt = SignedReceipt::sign(body, key).unwrap();
        json!({
            "seq": 1, "server": "notes", "tool": "echo", "request": {},
            "verdict": verdict.project(sanitized), "reason": receipt.body.decision.reason,
            "receipt": receipt, "upstream": answer,
        })
    }

    // A call agrees with its signed receipt: a plain allow's answer is the hashed output, a sanitized allow is a rewrite; a flipped verdict, another answer, another key or another seq is named.
    #[test]
    fn a_call_is_checked_against_its_signed_receipt() {
        let key = SigningKey::from_bytes(&[9; 32]);
        let hex = public_key_hex(&key);
        let none = BTreeMap::new();
        let answer = json!({"content": [{"type": "text", "text": "a"}]});
        let allow = record(&key, Verdict::Allow, false, &answer);
        assert_eq!(check_signed(&allow, 1, &hex, &none), None);
        let rewrite = record(&key, Verdict::Allow, true, &answer);
        assert_eq!(rewrite["verdict"], "rewrite");
        assert_eq!(check_signed(&rewrite, 1, &hex, &none), None);
        let mut flipped = allow.clone();
        flipped["verdict"] = json!("deny");
        assert!(check_signed(&flipped, 1, &hex, &none)
            .unwrap()
            .contains("verdict"));
        let mut answered = allow.clone();
        answered["upstream"]["content"][0]["text"] = json!("b");
        assert!(check_signed(&answered, 1, &hex, &none)
            .unwrap()
            .contains("upstream answer"));
        let other = public_key_hex(&SigningKey::from_bytes(&[8; 32]));
        assert!(check_signed(&allow, 1, &other, &none)
            .unwrap()
            .contains("key"));
        assert!(check_signed(&allow, 2, &hex, &none)
            .unwrap()
            .contains("seq"));
    }
}
