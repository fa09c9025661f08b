//! What a bundle's manifest claims, checked against what the bundle itself
//! holds, without running anything: each receipt is what its kernel signed
//! (its id is the digest of its body, its signature verifies under the key
//! the manifest records for that kernel), the receipts hash to the
//! manifest's Merkle root, each call's recorded verdict is the one its
//! signed receipt states, each step that passed got what it expected, the
//! mismatches are the failing steps, and the scenario and policy files
//! hash to what the manifest records.
//!
//! A manifest edited after its run (a deny turned into a pass) contradicts
//! one of these. A bundle rebuilt whole with other keys does not: only
//! `chio arena replay`, which re-decides every call from the bundle's
//! inputs, shows that. The commands that present a bundle (`chio report`,
//! `chio arena explain`) refuse one that fails [`verify`]; a campaign's
//! evidence check reports each fault of [`signed_receipts`] and
//! [`step_faults`] as a contradiction.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use chio_kernel::receipt::{merkle_root_of_ids, SignedReceipt};
use sha2::{Digest, Sha256};

use super::{Bundle, BundleManifest, StepOutcome, RECEIPTS_FILE, SCENARIO_INPUT};

/// One claim of a bundle its own contents contradict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceFault {
    /// Where: `receipts.ndjson line 3`, `arena.json steps[1].actual (step
    /// read-dotenv)`,
    /// `arena.json receipt_root`.
    pub place: String,
    /// What does not hold, in words (never a value of the bundle but ids,
    /// verdicts and digests).
    pub why: String,
}

impl fmt::Display for EvidenceFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.why)
    }
}

fn fault(place: impl Into<String>, why: impl Into<String>) -> EvidenceFault {
    EvidenceFault {
        place: place.into(),
        why: why.into(),
    }
}

/// Every receipt of `receipts` (the lines of `receipts.ndjson`), by id,
/// once each is checked: it is a signed receipt, it verifies (id and
/// signature), its kernel's key is the one the manifest records, and all of
/// them hash to the manifest's receipt root and count.
pub fn signed_receipts(
    manifest: &BundleManifest,
    receipts: &[String],
) -> Result<BTreeMap<String, SignedReceipt>, EvidenceFault> {
    let kernels = manifest.arena_keys.get("kernel");
    let mut ids = Vec::with_capacity(receipts.len());
    let mut signed = BTreeMap::new();
    for (n, line) in receipts.iter().enumerate() {
        let place = || format!("{RECEIPTS_FILE} line {}", n + 1);
        let receipt: SignedReceipt =
            serde_json::from_str(line).map_err(|_| fault(place(), "it is not a signed receipt"))?;
        receipt
            .verify()
            .map_err(|e| fault(place(), e.to_string()))?;
        let recorded = kernels.and_then(|k| k.get(&receipt.body.kernel_id));
        if recorded != Some(&receipt.body.kernel_key) {
            return Err(fault(
                place(),
                "the receipt is not signed by the key the manifest records for its kernel",
            ));
        }
        ids.push(receipt.id.clone());
        signed.insert(receipt.id.clone(), receipt);
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let root = merkle_root_of_ids(&refs);
    if root != manifest.receipt_root || ids.len() as u64 != manifest.receipt_count {
        return Err(fault(
            "arena.json receipt_root",
            format!(
                "the {} receipt(s) of {RECEIPTS_FILE} hash to {root}, not to the receipt root {} of {} receipt(s) the manifest records",
                ids.len(),
                manifest.receipt_root,
                manifest.receipt_count
            ),
        ));
    }
    Ok(signed)
}

/// The place of `field` of step `index` of the manifest.
fn step_place(index: usize, field: &str, id: &str) -> String {
    format!("arena.json steps[{index}].{field} (step {id})")
}

/// Every step record the signed receipts or the manifest's own judgements
/// contradict: a call's verdict (and its projection, `actual`) that is not
/// its receipt's, a receipt of another request or none in the log, an
/// allowed call without a receipt, a passing step that did not get what it
/// expected, and mismatches that are not the failing steps.
pub fn step_faults(
    manifest: &BundleManifest,
    signed: &BTreeMap<String, SignedReceipt>,
) -> Vec<EvidenceFault> {
    let mut found = Vec::new();
    for (index, step) in manifest.steps.iter().enumerate() {
        let id = &step.step_id;
        let mut say = |field: &str, why: String| {
            found.push(fault(step_place(index, field, id), why));
        };
        let receipt = step.receipt_id.as_ref().map(|r| signed.get(r));
        match (receipt, step.verdict) {
            (Some(None), _) => say(
                "receipt_id",
                format!("step {id} names a receipt {RECEIPTS_FILE} does not hold"),
            ),
            (Some(Some(receipt)), verdict) => {
                let decision = &receipt.body.decision;
                let projected = StepOutcome::from(decision.verdict.project(decision.sanitized));
                if verdict != Some(decision.verdict) {
                    let claimed = verdict.map_or("nothing", |v| v.as_str());
                    say(
                        "verdict",
                        format!(
                            "step {id} was decided {claimed}, its signed receipt {}",
                            decision.verdict
                        ),
                    );
                } else if step.actual != Some(projected) {
                    let claimed = step.actual.map_or("nothing", |a| a.as_str());
                    say(
                        "actual",
                        format!("step {id} records the verdict {claimed}, its signed receipt {projected}"),
                    );
                } else if receipt.body.request_id != *id {
                    say(
                        "receipt_id",
                        format!("step {id} names the receipt of another request"),
                    );
                }
            }
            (None, Some(chio_kernel::verdict::Verdict::Allow)) => say(
                "receipt_id",
                format!("step {id} was allowed, but names no receipt {RECEIPTS_FILE} holds"),
            ),
            (None, _) => {}
        }
        if step.pass == Some(true) && step.expected != step.actual {
            say(
                "pass",
                format!("step {id} passed, but its verdict is not the one expected"),
            );
        }
    }
    let failing: BTreeSet<&str> = manifest
        .steps
        .iter()
        .filter(|s| s.pass == Some(false))
        .map(|s| s.step_id.as_str())
        .collect();
    let listed: BTreeSet<&str> = manifest.mismatches.iter().map(String::as_str).collect();
    if failing != listed {
        found.push(fault(
            "arena.json mismatches",
            "the mismatches are not the failing steps",
        ));
    }
    found
}

/// The first claim of `bundle` its own contents contradict: its receipts
/// ([`signed_receipts`]), its step records ([`step_faults`]), and the
/// digests of its scenario and policy files.
pub fn verify(bundle: &Bundle) -> Result<(), EvidenceFault> {
    let manifest = &bundle.manifest;
    let signed = signed_receipts(manifest, &bundle.receipts)?;
    if let Some(first) = step_faults(manifest, &signed).into_iter().next() {
        return Err(first);
    }
    let scenario = bundle.inputs.get(SCENARIO_INPUT).map(|b| sha256(b));
    if scenario.as_deref() != Some(manifest.scenario_sha256.as_str()) {
        return Err(fault(
            "arena.json scenario_sha256",
            format!("the bundle's inputs/{SCENARIO_INPUT} does not hash to it"),
        ));
    }
    for (kernel, recorded) in &manifest.policies {
        let held = bundle.policies.get(kernel).map(|p| sha256(p.as_bytes()));
        if held.as_deref() != Some(recorded.as_str()) {
            return Err(fault(
                format!("arena.json policies.{kernel}"),
                format!("the bundle's policies/{kernel}.json does not hash to it"),
            ));
        }
    }
    Ok(())
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
