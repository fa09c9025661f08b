//! The step recorder: turns each prepared and performed step into its
//! bundle record, judges it against the step's expectation, and keeps the
//! run's hash chains.
//!
//! Admission state and each agent's session history are hash chains over
//! what happened before a step (SHA-256 of the previous link, a newline,
//! the canonical JSON of the new entry), so recording a step costs the same
//! whatever the run's length. A call's verdict, or a delegate or revoke
//! step's outcome, that differs from its expectation, or a reason that lacks
//! the step's `expect_reason`, counts as a mismatch and, unless
//! `keep_going`, stops the run. A call denied without a kernel decision
//! (by the agent's node, or by the controller when that node is down) is
//! recorded and judged like any call, without receipt or trace; a fault
//! step has no verdict and extends the admission chain.
//!
//! Records leave the recorder in the schedule's order: a call over a
//! delayed link is judged when it is decided, after later steps, and the
//! records after it wait for it (its receipt with them), so the bundle
//! lists every step at its scheduled place. The hash chains are extended
//! in the order steps are decided, which is the same on every topology.
//!
//! Records and receipts are appended to the bundle being written
//! ([`BundleWriter`]) as each step is recorded and not kept, so a run's
//! memory does not grow with its records; whoever wants them reads them
//! back from the bundle.

use std::collections::{BTreeMap, VecDeque};

use chio_arena::bundle::{BundleWriter, StepInputs, StepRecord, StopRecord};
use chio_arena::scenario::{CallAction, StepExpectation};
use chio_arena::{Action, ActionKind, ArenaError};
use chio_kernel::canonical::to_canonical_string;
use chio_kernel::keys::public_key_hex;
use chio_kernel::receipt::SignedReceipt;
use chio_kernel::verdict::{ProjectedVerdict, Verdict};
use chio_node::executor::{canonical_sha256, Performed, PreparedCall, PreparedStep, RunStep};
use chio_node::outage::Refusal;
use chio_node::CallAnswer;
use chio_node::{NodeError, World};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{reason_mismatch, EVALUATOR_VERSION, UNEXPECTED_REASON};

/// What a step's invocation fingerprint is called in an error.
const INVOCATION: &str = "a step's invocation";

/// The next link of a hash chain: SHA-256 of the previous link (hex), a
/// newline, and the canonical JSON of the new entry; an entry with no
/// canonical form fails the run rather than extend the chain with
/// something else.
fn extend_chain(previous: &str, entry: &Value) -> Result<String, NodeError> {
    let entry = to_canonical_string(entry).map_err(NodeError::canonical("a hash chain's entry"))?;
    let mut hasher = Sha256::new();
    hasher.update(previous.as_bytes());
    hasher.update(b"\n");
    hasher.update(entry.as_bytes());
    Ok(hex::encode(hasher.finalize()))
}

/// What a finished recording holds.
pub(super) struct Recorded {
    /// The bundle being written: every step record and receipt so far.
    pub writer: BundleWriter,
    /// The first bundle write that failed; the run stopped there.
    pub failed: Option<ArenaError>,
    /// Steps whose expectation failed.
    pub mismatches: Vec<String>,
    /// Why the run stopped early, when it did.
    pub stopped: Option<StopRecord>,
    /// The calls the kernels allowed (a rewrite included), by step id, in
    /// the schedule's order: the calls a server was sent.
    pub admitted: Vec<String>,
}

/// A begun step's place in the schedule's order, with its record and
/// receipt once it is judged.
type Held = (String, Option<(StepRecord, Option<SignedReceipt>)>);

/// The recorder of one run.
pub(super) struct StepRecorder<'r> {
    policy_hashes: &'r BTreeMap<String, String>,
    authority_hex: String,
    keep_going: bool,
    empty: String,
    admission: String,
    sessions: BTreeMap<String, String>,
    /// Begun steps not yet written, in the schedule's order: only a call
    /// still in flight over a delayed link keeps the ones after it here.
    held: VecDeque<Held>,
    recorded: Recorded,
}

impl<'r> StepRecorder<'r> {
    /// A recorder for a run of `world` under the kernels' `policy_hashes`.
    pub fn new(
        world: &World,
        policy_hashes: &'r BTreeMap<String, String>,
        keep_going: bool,
        writer: BundleWriter,
    ) -> Self {
        // The canonical JSON of the empty array is `[]`.
        let empty = hex::encode(Sha256::digest(b"[]"));
        Self {
            policy_hashes,
            authority_hex: public_key_hex(&world.authority),
            keep_going,
            admission: empty.clone(),
            empty,
            sessions: BTreeMap::new(),
            held: VecDeque::new(),
            recorded: Recorded {
                writer,
                failed: None,
                mismatches: Vec::new(),
                stopped: None,
                admitted: Vec::new(),
            },
        }
    }

    /// Whether a mismatch, or a bundle write that failed, stopped the run.
    pub fn stopped(&self) -> bool {
        self.recorded.stopped.is_some() || self.recorded.failed.is_some()
    }

    /// The recording so far.
    pub fn finish(self) -> Recorded {
        self.recorded
    }

    /// A step's record before anything is known of its action.
    pub fn begin(
        &mut self,
        step_id: &str,
        action: ActionKind,
        agent: &str,
        virtual_time: String,
        expected_reason: Option<&str>,
    ) -> StepRecord {
        let session = self
            .sessions
            .entry(agent.to_string())
            .or_insert_with(|| self.empty.clone())
            .clone();
        let inputs = StepInputs {
            invocation: String::new(),
            evaluator: String::new(),
            authority_time: String::new(),
            admission: self.admission.clone(),
            session,
        };
        let mut record = StepRecord::new(step_id, action, agent, virtual_time, inputs);
        record.expected_reason = expected_reason.map(str::to_string);
        self.held.push_back((step_id.to_string(), None));
        record
    }

    /// Takes in a judged record and writes every record whose turn has
    /// come: the bundle gets records, receipts and mismatches in the
    /// schedule's order whatever order steps were decided in. After a
    /// write fails nothing more is written; the run stops there.
    fn write(&mut self, record: StepRecord, receipt: Option<SignedReceipt>) {
        match self
            .held
            .iter_mut()
            .find(|(id, done)| done.is_none() && *id == record.step_id)
        {
            Some(slot) => slot.1 = Some((record, receipt)),
            // A record that was never begun has no place to wait for.
            None => self
                .held
                .push_back((record.step_id.clone(), Some((record, receipt)))),
        }
        self.flush();
    }

    /// Whether a call still in flight must be decided: every one until the
    /// run stops; after, only one whose place in the schedule comes before
    /// the step that stopped it, whose record waits for it. A call placed
    /// after that step was sent, but the run ended before it arrived.
    pub fn owes(&self, step_id: &str) -> bool {
        if self.recorded.failed.is_some() {
            return false;
        }
        let Some(stop) = &self.recorded.stopped else {
            return true;
        };
        let place = |id: &str| self.held.iter().position(|(held, _)| held == id);
        match (place(step_id), place(&stop.step_id)) {
            (Some(call), Some(stop)) => call < stop,
            _ => false,
        }
    }

    /// Drops the record of a call the run no longer owes (`Self::owes`):
    /// it is never decided, and the records waiting behind it are written.
    pub fn abandon(&mut self, record: StepRecord) {
        self.held
            .retain(|(id, done)| done.is_some() || *id != record.step_id);
        self.flush();
    }

    /// Writes every record at the front of the queue that was judged.
    fn flush(&mut self) {
        while self.held.front().is_some_and(|(_, done)| done.is_some()) {
            let Some((_, Some((record, receipt)))) = self.held.pop_front() else {
                break;
            };
            if record.pass == Some(false) {
                self.recorded.mismatches.push(record.step_id.clone());
            }
            if record.action == ActionKind::Call && record.verdict == Some(Verdict::Allow) {
                self.recorded.admitted.push(record.step_id.clone());
            }
            let recorded = &mut self.recorded;
            if recorded.failed.is_none() {
                let written = match &receipt {
                    Some(receipt) => recorded.writer.receipt(receipt),
                    None => Ok(()),
                };
                recorded.failed = written.and_then(|()| recorded.writer.step(&record)).err();
            }
        }
    }

    /// What is known of a step before it is dispatched.
    pub fn prepared(
        &self,
        record: &mut StepRecord,
        action: &Action,
        prepared: &PreparedStep,
    ) -> Result<(), NodeError> {
        let agent = record.agent.clone();
        // A call's authority inputs name its token too (`call_inputs`).
        if !matches!(action, Action::Call(_)) {
            record.inputs.authority_time = canonical_sha256(
                "a step's authority inputs",
                &json!({
                    "trusted_issuers": [self.authority_hex],
                    "now": record.virtual_time,
                }),
            )?;
        }
        match (action, prepared) {
            (Action::Call(call), RunStep::Call(p, ())) => {
                self.call_inputs(record, &agent, call, p)?;
            }
            (Action::Delegate(delegate), _) => {
                record.inputs.invocation =
                    canonical_sha256(INVOCATION, &json!({"agent": agent, "delegate": delegate}))?;
            }
            (Action::Revoke(revoke), _) => {
                record.detail = Some(revoke.target.clone());
                record.inputs.invocation =
                    canonical_sha256(INVOCATION, &json!({"agent": agent, "revoke": revoke}))?;
            }
            (Action::Message(message), RunStep::Message(p, ())) => {
                record.target = Some(message.to.clone());
                record.inputs.invocation =
                    canonical_sha256(INVOCATION, &json!({"agent": agent, "message": message}))?;
                record.detail = Some(p.content_sha256.clone());
            }
            (Action::Fault(fault), _) => {
                record.detail = Some(fault.describe());
                record.inputs.invocation =
                    canonical_sha256(INVOCATION, &json!({"agent": agent, "fault": fault}))?;
            }
            (Action::Redefine(redefine), _) => {
                record.target = Some(format!("{}/{}", redefine.server, redefine.tool));
                record.detail = Some(redefine.digest.clone());
                record.inputs.invocation =
                    canonical_sha256(INVOCATION, &json!({"agent": agent, "redefine": redefine}))?;
            }
            (Action::Advance(advance), _) => {
                record.detail = Some(advance.advance_ms.to_string());
                record.inputs.invocation = canonical_sha256(
                    INVOCATION,
                    &json!({"agent": agent, "advance_ms": advance.advance_ms}),
                )?;
            }
            // The executor prepares each action as its own kind; one
            // prepared as another is the driver's error, never a record
            // with a missing fingerprint.
            (Action::Call(_) | Action::Message(_), _) => {
                return Err(NodeError::Internal(
                    "a scheduled step was prepared as another kind of step",
                ))
            }
        }
        Ok(())
    }

    /// What is known of a call before it is dispatched: its kernel, target
    /// and expected verdict, and the fingerprints of its invocation, its
    /// evaluator and its authority inputs.
    fn call_inputs(
        &self,
        record: &mut StepRecord,
        agent: &str,
        call: &CallAction,
        p: &PreparedCall,
    ) -> Result<(), NodeError> {
        record.kernel = Some(p.kernel.clone());
        record.target = Some(format!("{}/{}", call.server, call.tool));
        record.expected = Some(call.expect_verdict.into());
        record.inputs.invocation = canonical_sha256(
            INVOCATION,
            &json!({
                "agent": agent,
                "server": call.server,
                "tool": call.tool,
                "arguments": call.arguments,
                "capability": p.command.capability_id,
                "captured": p.captured(),
            }),
        )?;
        record.inputs.evaluator = canonical_sha256(
            "a call's evaluator inputs",
            &json!({
                "kernel": p.kernel,
                "policy": self.policy_hashes.get(&p.kernel),
                "evaluator": EVALUATOR_VERSION,
            }),
        )?;
        let mut authority_time = json!({
            "trusted_issuers": [self.authority_hex],
            "token": p.token_sha256,
            "now": record.virtual_time,
        });
        // A delayed call is evaluated later than its instant.
        if let Some(delayed) = &p.delayed {
            authority_time["evaluated_ms"] = json!(p.command.now_ms);
            record.detail = Some(delayed.arrived());
        }
        record.inputs.authority_time =
            canonical_sha256("a call's authority inputs", &authority_time)?;
        Ok(())
    }

    /// Records what a dispatched step did and judges it. A fingerprint that
    /// cannot be formed records the step as an infrastructure failure and
    /// answers the error.
    pub fn performed(
        &mut self,
        mut record: StepRecord,
        action: &Action,
        performed: Performed,
    ) -> Result<(), NodeError> {
        match self.judged(&mut record, action, performed) {
            Ok(receipt) => {
                self.write(record, receipt);
                Ok(())
            }
            Err(e) => {
                self.infrastructure(record, &e);
                Err(e)
            }
        }
    }

    /// What [`Self::performed`] records of a step, and its receipt.
    fn judged(
        &mut self,
        record: &mut StepRecord,
        action: &Action,
        performed: Performed,
    ) -> Result<Option<SignedReceipt>, NodeError> {
        let mut receipt = None;
        match (action, performed) {
            (Action::Call(call), RunStep::Call(p, CallAnswer::Decided(outcome))) => {
                let outcome = *outcome;
                record.verdict = Some(outcome.verdict);
                record.guard = outcome.guard;
                record.receipt_id = Some(outcome.receipt.id.clone());
                record.recorded = Some(outcome.recorded);
                record.reason_code = outcome.trace.reason_code.map(|c| c.as_str().to_string());
                record.trace = Some(Box::new(outcome.trace));
                receipt = Some(outcome.receipt);
                self.judge_call(record, call, &p, outcome.projected, outcome.reason)?;
            }
            (Action::Call(call), RunStep::Call(p, CallAnswer::Refused(reason))) => {
                self.judge_refused(record, call, &p, reason)?;
            }
            (Action::Redefine(redefine), RunStep::Redefine) => {
                self.admission = extend_chain(
                    &self.admission,
                    &json!({"redefine": record.step_id, "server": redefine.server, "tool": redefine.tool, "digest": redefine.digest}),
                )?;
            }
            (Action::Fault(fault), RunStep::Fault(_)) => {
                self.admission = extend_chain(
                    &self.admission,
                    &json!({"fault": record.step_id, "what": fault}),
                )?;
            }
            (Action::Delegate(delegate), RunStep::Delegate(_, done)) => {
                let refusal = match done {
                    Ok(made) => {
                        record.detail = Some(made.child.token_sha256.clone());
                        let mut link = json!({"delegate": delegate.delegation, "token": made.child.token_sha256});
                        if !made.labels.is_empty() {
                            link["labels"] = json!(made.labels);
                        }
                        self.admission = extend_chain(&self.admission, &link)?;
                        record.labels = Some(made.labels);
                        None
                    }
                    Err(reason) => Some(reason),
                };
                self.judge(record, delegate.expect, refusal);
            }
            (Action::Revoke(revoke), RunStep::Revoke(_, refusal)) => {
                if refusal.is_none() {
                    self.admission =
                        extend_chain(&self.admission, &json!({"revoke": revoke.target}))?;
                }
                self.judge(record, revoke.expect, refusal);
            }
            (Action::Message(message), RunStep::Message(_, outcome)) => {
                let mut entry = json!({"message": record.step_id, "from": record.agent, "to": message.to, "labels": outcome.labels});
                if let Some(refusal) = &outcome.refusal {
                    entry["refused"] = json!(refusal.code);
                }
                self.admission = extend_chain(&self.admission, &entry)?;
                let receiver = self
                    .sessions
                    .entry(message.to.clone())
                    .or_insert_with(|| self.empty.clone());
                *receiver = extend_chain(receiver, &entry)?;
                record.labels = Some(outcome.labels);
                // A hand-over is delivered or refused, like a delegation.
                if let Some(handover) = &message.handover {
                    let refusal = outcome.refusal.map(|r| (r.code, r.message));
                    self.judge_outcome(record, handover.expect, refusal);
                }
            }
            (Action::Advance(_), RunStep::Advance { .. }) => {}
            // A step carries its own answer, so only the scheduled action
            // and the step can differ in kind: the executor prepares each
            // action as its own kind, and a step performed for another is
            // the driver's error, recorded as an infrastructure failure,
            // never a silent pass.
            (_, _) => {
                return Err(NodeError::Internal(
                    "a scheduled step was performed as another kind of step",
                ));
            }
        }
        Ok(receipt)
    }

    /// Records and judges a call no kernel decided: the agent's node denied
    /// it itself (its kernel could not be reached, or it does not hold the
    /// capability), or the controller did (the agent's node is down, the
    /// call was lost in flight or the run stopped before it arrived). No
    /// kernel ran, so there is no receipt and no trace, and a delayed call
    /// never arrived.
    fn judge_refused(
        &mut self,
        record: &mut StepRecord,
        call: &CallAction,
        prepared: &PreparedCall,
        reason: Refusal,
    ) -> Result<(), NodeError> {
        if let Some(delayed) = &prepared.delayed {
            record.detail = Some(delayed.not_arrived());
        }
        record.verdict = Some(Verdict::Deny);
        record.reason_code = Some(reason.code.as_str().to_string());
        let reason = Some(reason.message);
        self.judge_call(record, call, prepared, ProjectedVerdict::Deny, reason)
    }

    /// Records a call's verdict on the scenario alphabet and its reason,
    /// extends the hash chains, and judges both against the step.
    fn judge_call(
        &mut self,
        record: &mut StepRecord,
        call: &CallAction,
        prepared: &PreparedCall,
        actual: ProjectedVerdict,
        reason: Option<String>,
    ) -> Result<(), NodeError> {
        let verdict_ok = actual == call.expect_verdict;
        record.actual = Some(actual.into());
        record.reason = reason.clone();
        let entry = json!({"step": record.step_id, "server": call.server, "tool": call.tool, "verdict": actual});
        if let Some(chain) = self.sessions.get_mut(&record.agent) {
            *chain = extend_chain(chain, &entry)?;
        }
        self.admission = extend_chain(
            &self.admission,
            &json!({"call": entry, "capability": prepared.command.capability_id}),
        )?;
        let reason_miss = reason_mismatch(record);
        record.pass = Some(verdict_ok && reason_miss.is_none());
        if !verdict_ok {
            let message = format!(
                "step {} expected {} but {}{}",
                record.step_id,
                call.expect_verdict,
                record.answer(),
                reason.map(|r| format!(": {r}")).unwrap_or_default()
            );
            self.mismatch(record, "unexpected-verdict", message);
        } else if let Some(message) = reason_miss {
            self.mismatch(record, UNEXPECTED_REASON, message);
        }
        Ok(())
    }

    /// Records a step whose dispatch failed outside any verdict.
    pub fn infrastructure(&mut self, record: StepRecord, error: &NodeError) {
        self.recorded.stopped = Some(StopRecord {
            step_id: record.step_id.clone(),
            cause: "infrastructure".to_string(),
            message: error.to_string(),
        });
        self.write(record, None);
    }

    /// Stops the run with `cause` at the first mismatch decided, unless
    /// `keep_going`; the mismatch is counted when its record is written
    /// (its `pass` is false).
    fn mismatch(&mut self, record: &StepRecord, cause: &str, message: String) {
        if !self.keep_going && self.recorded.stopped.is_none() {
            self.recorded.stopped = Some(StopRecord {
                step_id: record.step_id.clone(),
                cause: cause.to_string(),
                message,
            });
        }
    }

    /// Records what a delegate or revoke step did against what it expected:
    /// `refusal` is the reason it was refused, `None` when it took effect.
    fn judge(
        &mut self,
        record: &mut StepRecord,
        expected: StepExpectation,
        refusal: Option<Refusal>,
    ) {
        let refusal = refusal.map(|r| (r.code.as_str().to_string(), r.message));
        self.judge_outcome(record, expected, refusal);
    }

    /// [`StepRecorder::judge`] for a refusal given as its code and message
    /// (a hand-over's refusal may carry a kernel's code or a node's).
    fn judge_outcome(
        &mut self,
        record: &mut StepRecord,
        expected: StepExpectation,
        refusal: Option<(String, String)>,
    ) {
        record.reason_code = refusal
            .as_ref()
            .map(|(code, _)| code.clone())
            .filter(|code| !code.is_empty());
        let refusal = refusal.map(|(_, message)| message);
        let actual = if refusal.is_some() {
            StepExpectation::Refused
        } else {
            StepExpectation::Done
        };
        let outcome_ok = actual == expected;
        record.expected = Some(expected.into());
        record.actual = Some(actual.into());
        record.reason = refusal.clone();
        let reason_miss = reason_mismatch(record);
        record.pass = Some(outcome_ok && reason_miss.is_none());
        if !outcome_ok {
            let message = format!(
                "step {} expected {} but it was {}{}",
                record.step_id,
                expected.as_str(),
                actual.as_str(),
                refusal.map(|r| format!(": {r}")).unwrap_or_default()
            );
            self.mismatch(record, "unexpected-outcome", message);
        } else if let Some(message) = reason_miss {
            self.mismatch(record, UNEXPECTED_REASON, message);
        }
    }
}
