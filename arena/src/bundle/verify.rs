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

use super::{Bundle, BundleManifest, StepOutcome, StepRecord, RECEIPTS_FILE, SCENARIO_INPUT};

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
            (None, verdict) => {
                if let Some((field, why)) = unsigned_disagreement(step, verdict) {
                    say(field, format!("step {id} {why}"));
                }
            }
        }
        if step.pass == Some(true) && step.expected != step.actual {
            say(
                "pass",
                format!("step {id} passed, but its verdict is not the one expected"),
            );
        } else if step.pass == Some(true) && !reason_met(step) {
            say(
                "pass",
                format!("step {id} passed, but its reason is not the one expected"),
            );
        }
        if let Some(Some(receipt)) = receipt {
            if let Some((field, why)) = receipt_disagreement(step, receipt) {
                say(field, format!("step {id} records {why}"));
            }
        }
    }
    found.extend(unclaimed_receipts(manifest, signed));
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

/// Whether a step's reason is the one it expects (`expect_reason`): a
/// reason code matched exactly, or a part of the reason's text (the rule
/// the run judged it by).
fn reason_met(step: &StepRecord) -> bool {
    let Some(want) = step.expected_reason.as_deref() else {
        return true;
    };
    step.reason_code.as_deref() == Some(want)
        || step.reason.as_deref().is_some_and(|r| r.contains(want))
}

/// The first field of a call's record its signed receipt states otherwise:
/// the agent, the kernel, the server and tool, the reason, the guard and
/// the instant it was decided; and the reason code its decision trace
/// names.
fn receipt_disagreement(
    step: &StepRecord,
    receipt: &SignedReceipt,
) -> Option<(&'static str, &'static str)> {
    let body = &receipt.body;
    let target = format!("{}/{}", body.server, body.tool);
    let decided = step.decided_time.as_deref().unwrap_or(&step.virtual_time);
    let decided_ms = crate::VirtualClock::parse(decided).ok().map(|c| c.now_ms());
    if step.agent != body.agent_id {
        Some(("agent", "another agent than its signed receipt"))
    } else if step.kernel.as_deref() != Some(body.kernel_id.as_str()) {
        Some((
            "kernel",
            "another kernel than the one that signed its receipt",
        ))
    } else if step.target.as_deref() != Some(target.as_str()) {
        Some(("target", "another server or tool than its signed receipt"))
    } else if step.reason != body.decision.reason {
        Some(("reason", "another reason than its signed receipt"))
    } else if step.guard != body.decision.guard {
        Some(("guard", "another guard than its signed receipt"))
    } else if decided_ms != Some(body.timestamp_ms) {
        let field = if step.decided_time.is_some() {
            "decided_time"
        } else {
            "virtual_time"
        };
        Some((field, "another instant than its signed receipt"))
    } else if step
        .trace
        .as_ref()
        .is_some_and(|t| t.reason_code.map(|c| c.as_str()) != step.reason_code.as_deref())
    {
        Some(("reason_code", "another reason code than its decision trace"))
    } else {
        None
    }
}

/// What a step no receipt signs records against its own kind: a call
/// without a receipt was refused before any kernel decided it, so it is a
/// deny; a delegation, revocation or hand-over that took effect gives no
/// reason, and one refused gives its reason.
fn unsigned_disagreement(
    step: &StepRecord,
    verdict: Option<chio_kernel::verdict::Verdict>,
) -> Option<(&'static str, &'static str)> {
    use crate::scenario::{ActionKind, StepExpectation};
    use chio_kernel::verdict::{ProjectedVerdict, Verdict};
    let deny = StepOutcome::from(ProjectedVerdict::Deny);
    match step.action {
        ActionKind::Call if !matches!(verdict, None | Some(Verdict::Deny)) => {
            Some(("verdict", "records a verdict no signed receipt states"))
        }
        ActionKind::Call if step.actual.is_some_and(|a| a != deny) => Some((
            "actual",
            "records a call carried out, but names no signed receipt; only a call refused before any kernel has none",
        )),
        _ if step.actual == Some(StepExpectation::Done.into()) && step.reason.is_some() => {
            Some(("reason", "took effect, yet records the reason of a refusal"))
        }
        _ if step.actual == Some(StepExpectation::Refused.into()) && step.reason.is_none() => {
            Some(("reason", "was refused, yet records no reason"))
        }
        _ => None,
    }
}

/// Every receipt of the log no step names, and every receipt two steps
/// name: a step removed from the manifest leaves its signed receipt
/// behind.
fn unclaimed_receipts(
    manifest: &BundleManifest,
    signed: &BTreeMap<String, SignedReceipt>,
) -> Vec<EvidenceFault> {
    let mut claims: BTreeMap<&str, usize> = BTreeMap::new();
    for step in &manifest.steps {
        if let Some(id) = &step.receipt_id {
            *claims.entry(id.as_str()).or_default() += 1;
        }
    }
    signed
        .values()
        .filter_map(|receipt| {
            let request = &receipt.body.request_id;
            match claims.get(receipt.id.as_str()) {
                Some(1) => None,
                Some(_) => Some(fault(
                    "arena.json steps",
                    format!(
                        "the signed receipt of request {request} is named by more than one step"
                    ),
                )),
                None => Some(fault(
                    "arena.json steps",
                    format!("the signed receipt of request {request} is named by no step"),
                )),
            }
        })
        .collect()
}

/// Every claim of the manifest about its schedule that the scenario in
/// its inputs contradicts: the witness's step ids are the scenario's, in
/// order; every recorded step is one of them, once; a completed run
/// recorded every one; a stopped run stopped at a step that failed; each
/// step expects what the scenario declares (`expect_verdict`, `expect`,
/// `expect_reason`).
pub fn schedule_faults(manifest: &BundleManifest, scenario: &[u8]) -> Vec<EvidenceFault> {
    let Some(declared) = declared_steps(scenario) else {
        return vec![fault(
            format!("inputs/{SCENARIO_INPUT}"),
            "the bundle's scenario does not read as TOML with its steps",
        )];
    };
    let mut found = Vec::new();
    let ids: Vec<&str> = declared.iter().map(|d| d.id.as_str()).collect();
    if manifest
        .determinism
        .steps
        .iter()
        .map(String::as_str)
        .ne(ids.iter().copied())
    {
        found.push(fault(
            "arena.json determinism.steps",
            format!(
                "the step ids are not the {} steps of the bundle's scenario",
                ids.len()
            ),
        ));
    }
    let by_id: BTreeMap<&str, &Declared> = declared.iter().map(|d| (d.id.as_str(), d)).collect();
    let mut seen = BTreeSet::new();
    let mut previous: Option<u128> = None;
    for (index, step) in manifest.steps.iter().enumerate() {
        let id = &step.step_id;
        // Records are written in the order of the schedule's instants.
        let instant = crate::VirtualClock::parse(&step.virtual_time)
            .ok()
            .map(|c| c.now_nanos());
        if instant.is_none() || instant < previous {
            found.push(fault(
                step_place(index, "virtual_time", id),
                format!("step {id} is recorded out of the schedule's order of instants"),
            ));
        }
        previous = previous.max(instant);
        let mut say =
            |field: &str, why: String| found.push(fault(step_place(index, field, id), why));
        let Some(decl) = by_id.get(id.as_str()) else {
            say(
                "step_id",
                format!("step {id} is not a step of the bundle's scenario"),
            );
            continue;
        };
        if !seen.insert(id.as_str()) {
            say("step_id", format!("step {id} is recorded twice"));
        }
        let expected = step.expected.map(|e| e.as_str());
        let declared_word = decl.word.as_deref().or(expected.map(|_| "done"));
        if expected != declared_word {
            say(
                "expected",
                format!(
                    "step {id} expects {}, its scenario file {}",
                    expected.unwrap_or("nothing"),
                    crate::report::printable(declared_word.unwrap_or("nothing"))
                ),
            );
        }
        if step.expected_reason != decl.reason {
            say(
                "expected_reason",
                format!("step {id} expects another reason than its scenario step"),
            );
        }
    }
    status_faults(manifest, &seen, ids.len(), &mut found);
    found
}

/// A completed run recorded every step; a stopped one names a step that
/// failed.
fn status_faults(
    manifest: &BundleManifest,
    seen: &BTreeSet<&str>,
    declared: usize,
    found: &mut Vec<EvidenceFault>,
) {
    match manifest.status {
        super::BundleStatus::Completed if seen.len() != declared => found.push(fault(
            "arena.json status",
            format!(
                "the run is recorded as completed, but {} of the scenario's {declared} steps are recorded",
                seen.len()
            ),
        )),
        super::BundleStatus::Stopped => {
            let at = manifest.stopped.as_ref().map(|s| s.step_id.as_str());
            let failed = manifest
                .steps
                .iter()
                .any(|s| Some(s.step_id.as_str()) == at && s.pass == Some(false));
            if !failed {
                found.push(fault(
                    "arena.json stopped",
                    "the run is recorded as stopped, but not at a step that failed",
                ));
            }
        }
        _ => {}
    }
}

/// Every kernel with a recorded key has its policy recorded, and the
/// bundle holds a policy file for exactly the recorded policies.
fn policy_faults(bundle: &Bundle) -> Option<EvidenceFault> {
    let manifest = &bundle.manifest;
    let keyed: BTreeSet<&String> = manifest
        .arena_keys
        .get("kernel")
        .map(|k| k.keys().collect())
        .unwrap_or_default();
    let recorded: BTreeSet<&String> = manifest.policies.keys().collect();
    let held: BTreeSet<&String> = bundle.policies.keys().collect();
    (keyed != recorded || recorded != held).then(|| {
        fault(
            "arena.json policies",
            "the policies recorded are not one per kernel, as the bundle's policies/ folder holds them",
        )
    })
}

/// A step of the bundle's scenario as written: its id, the word it
/// expects (`expect_verdict`, else `expect`) and its `expect_reason`.
struct Declared {
    id: String,
    word: Option<String>,
    reason: Option<String>,
}

/// The steps of a scenario file, read as TOML without validating it (the
/// bundle's scenario already ran).
fn declared_steps(bytes: &[u8]) -> Option<Vec<Declared>> {
    let table: toml::Table = toml::from_str(std::str::from_utf8(bytes).ok()?).ok()?;
    let Some(steps) = table.get("steps") else {
        return Some(Vec::new());
    };
    let text =
        |step: &toml::Table, key: &str| step.get(key).and_then(|v| v.as_str()).map(str::to_string);
    steps
        .as_array()?
        .iter()
        .map(|step| {
            let step = step.as_table()?;
            Some(Declared {
                id: text(step, "id")?,
                word: text(step, "expect_verdict").or_else(|| text(step, "expect")),
                reason: text(step, "expect_reason"),
            })
        })
        .collect()
}

/// The first claim of `bundle` its own contents contradict: its receipts
/// ([`signed_receipts`]), its step records ([`step_faults`]), its schedule
/// against its scenario ([`schedule_faults`]), and the digests of its
/// scenario and policy files.
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
    let scenario = bundle
        .inputs
        .get(SCENARIO_INPUT)
        .map_or(&[][..], Vec::as_slice);
    if let Some(first) = schedule_faults(manifest, scenario).into_iter().next() {
        return Err(first);
    }
    if let Some(fault) = policy_faults(bundle) {
        return Err(fault);
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
