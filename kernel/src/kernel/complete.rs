//! Step 8 and the closing batch: completing an admitted call after its
//! dispatch, aborting one whose dispatch failed, and signing and appending
//! every decision's receipt.
//!
//! An allow is settled in one batch ([`crate::batch`]): the hold commits,
//! the second revocation lookup of the token and every ancestor, the label
//! joins and the allow receipt, signed before the batch is sent. The batch
//! stops at the first answer that ends the decision (a failed commit, a
//! revoked id, a failed join or append); the kernel then denies with that
//! answer's reason, as the step-by-step pipeline would, and appends the
//! deny receipt alone. A deny closes with the releases (or, for a deny of
//! the output guards, the commits) and its receipt in one batch. An allow
//! whose server received the call commits its holds whether or not the
//! server carried it out ([`ToolOutput::received`]); one answered without
//! reaching a server releases them.
//!
//! The session journal is the kernel's own memory, written once the
//! verdict is final: an allow is journalled after its receipt was stored.
//! Should the journal refuse it, the output is withheld and a deny receipt
//! follows the stored allow receipt.

use serde_json::Value;

use super::admit::{next_answer, revocation_ops};
use super::closing::{
    allowlist_ops, join_ops, read_closing, released_label_keys, unexpected_label, Closing, Released,
};
use super::guard_run::{run_output_guards, Rewrite};
use super::{AdmissionTicket, Decision, Kernel, MoneyHolds, Outcome, Settle, ToolOutput};
use crate::batch::{OpAnswer, StoreOp};
use crate::canonical::CanonicalError;
use crate::error::{KernelError, StoreError, StoreName};
use crate::guards::GuardContext;
use crate::label::{is_known_label, Integrity, Label};
use crate::reason::DenyReason;
use crate::receipt::{
    canonical_sha256, ObservedFinding, ReceiptBody, ReceiptDecision, SignedReceipt, RECEIPT_SCHEMA,
};
use crate::request::ToolCallRequest;
use crate::seal::Seal;
use crate::stores::JournalEntry;
use crate::trace::DecisionTrace;
use crate::verdict::Verdict;

/// A decided deny: its outcome recorded in the trace.
fn withheld(
    reason: DenyReason,
    observed: Vec<ObservedFinding>,
    trace: &mut DecisionTrace,
) -> Outcome {
    trace.output("deny", reason.to_string());
    Outcome::deny(reason, None, observed)
}

/// The guarded output with the hash its receipt binds; an output with no
/// canonical form is withheld, never signed with a hash of nothing.
fn hash_released(
    (content, sanitized, rewrite): (Value, bool, Rewrite),
) -> Result<(Value, bool, Rewrite, String), Box<Outcome>> {
    // A float past 2^53 has a canonical form, but it is what an integer
    // literal past the 64-bit range became when the answer was parsed: its
    // value already changed, so it is withheld as an integer past 2^53 is.
    let inexact = crate::canonical::first_inexact_integer(&content, "")
        .map(|_| KernelError::Canonical(CanonicalError::IntegerOutOfRange(String::new())));
    match inexact.map_or_else(|| canonical_sha256(&content), Err) {
        Ok(hash) => Ok((content, sanitized, rewrite, hash)),
        Err(e) => Err(Box::new(Outcome::deny(
            DenyReason::OutputUncanonical {
                cause: uncanonical_cause(&e).to_string(),
            }
            .withheld(),
            None,
            Vec::new(),
        ))),
    }
}

/// Why an output has no canonical form, by the kind of value only: the
/// output is withheld, so no part of it is quoted.
fn uncanonical_cause(error: &KernelError) -> &'static str {
    match error {
        KernelError::Canonical(CanonicalError::IntegerOutOfRange(_)) => {
            "it holds an integer past 2^53"
        }
        KernelError::Canonical(CanonicalError::NonFinite) => "it holds a non-finite number",
        _ => "it does not serialize to JSON",
    }
}

/// The detail of an allow released with these labels.
fn released(label: Option<Label>, integrity: &Option<String>, performed: bool) -> String {
    match (label, performed) {
        (Some(label), true) => match integrity {
            Some(integrity) => format!("output released, labelled {label} and {integrity}"),
            None => format!("output released, labelled {label}"),
        },
        (None, true) if integrity.is_some() => format!(
            "output released, labelled {}",
            integrity.as_deref().unwrap_or_default()
        ),
        (None, true) => "output released".to_string(),
        (_, false) => "output released; the server did not carry the call out".to_string(),
    }
}

impl Kernel {
    /// Runs the output guards over what the tool returned; they read
    /// neither journal, labels, money nor provenance.
    fn run_output_guards_over(
        &self,
        request: &ToolCallRequest,
        principal: &str,
        content: Value,
        observed: &mut Vec<ObservedFinding>,
        trace: &mut DecisionTrace,
    ) -> Result<(Value, bool, Rewrite), Box<Outcome>> {
        let journal = Vec::new();
        let labels = std::collections::BTreeMap::new();
        let ctx = GuardContext {
            server: &request.server,
            tool: &request.tool,
            arguments: &request.arguments,
            agent_id: principal,
            session_id: &request.session_id,
            journal: &journal,
            labels: &labels,
            money: &Default::default(),
            session_filesystem_roots: None,
            provenance: &crate::provenance::NO_PROVENANCE,
            definition: None,
        };
        run_output_guards(&self.guards, &ctx, content, observed, &mut trace.guards)
    }

    /// Step 8 after a dispatch that returned; see the module doc.
    pub fn complete(
        &mut self,
        ticket: AdmissionTicket,
        output: ToolOutput,
        now_ms: u64,
    ) -> Decision {
        let AdmissionTicket {
            request,
            verified,
            principal,
            holds,
            money_holds,
            mut observed,
            parameter_hash,
            mut trace,
            carried: _,
        } = ticket;
        let ToolOutput {
            mut content,
            label,
            integrity,
            performed,
            received,
        } = with_server_kept(output, &trace.server_kept);
        // The canonical value, as a reader across a process boundary gets it.
        crate::canonical::normalize_whole_floats(&mut content);
        let guarded = self
            .run_output_guards_over(&request, &principal, content, &mut observed, &mut trace)
            .and_then(hash_released);
        let (content, sanitized, rewrite, output_hash) = match guarded {
            Ok(done) => done,
            Err(outcome) => {
                // The output guards decide what is released, never what was
                // spent: the holds settle by what the server did, as an
                // answer released whole does.
                let mut outcome = *outcome;
                outcome.observed = observed;
                trace.output("deny", outcome.reason.clone().unwrap_or_default());
                let commits = settle_ops(&holds, &money_holds, Settle::of(performed, received));
                return self.finish(&request, &parameter_hash, outcome, now_ms, trace, commits);
            }
        };
        let joined = self.read_labels(&request, &content, label, integrity.as_deref(), &trace);
        let unknown = joined.iter().find(|n| !is_known_label(n)).cloned();
        let label_keys = released_label_keys(&request, &principal, &verified);
        // Only a performed answer is a record the server made: a failure
        // is released to its reader, and feeds no allowlist.
        let allowlisted = if performed {
            self.allowlist_records(
                &request,
                &principal,
                &content,
                integrity.as_deref(),
                &trace.server_kept,
            )
        } else {
            Vec::new()
        };
        let (reason, guard) = match rewrite {
            Some((guard, why)) => (Some(why), Some(guard)),
            None => (None, None),
        };
        let allow = Outcome {
            verdict: Verdict::Allow,
            reason,
            code: None,
            guard,
            sanitized,
            observed,
            output: Some(content),
            performed,
        };
        self.close_allow(
            Released {
                request,
                verified,
                holds,
                money_holds,
                parameter_hash,
                output_hash,
                label,
                integrity,
                joined,
                unknown,
                label_keys,
                allowlisted,
                settle: Settle::of(performed, received),
            },
            allow,
            now_ms,
            trace,
        )
    }

    /// The closing batch of an allow: commits, revocation again, then (for
    /// a known label) the joins and the allow receipt; then the receipt's
    /// settlement, or a deny naming the store that failed.
    fn close_allow(
        &mut self,
        released_output: Released,
        allow: Outcome,
        now_ms: u64,
        mut trace: DecisionTrace,
    ) -> Decision {
        let Released {
            request,
            verified,
            holds,
            money_holds,
            parameter_hash,
            output_hash,
            label,
            integrity,
            joined,
            unknown,
            label_keys,
            allowlisted,
            settle,
        } = released_output;
        let sanitized = allow.sanitized;
        let performed = allow.performed;
        let mut ops = settle_ops(&holds, &money_holds, settle);
        ops.extend(revocation_ops(&verified));
        let receipt = unknown.is_none().then(|| {
            ops.extend(join_ops(&label_keys, &joined));
            ops.extend(allowlist_ops(&allowlisted));
            let receipt =
                self.sign_receipt(&request, &parameter_hash, &allow, Some(output_hash), now_ms);
            ops.push(StoreOp::AppendReceipt {
                receipt: receipt.clone(),
            });
            receipt
        });
        let mut answers = self.stores.run_batch(ops).into_iter();
        let expected = Closing {
            holds: holds.len(),
            settle,
            money_holds: &money_holds,
            verified: &verified,
            unknown,
            label_keys,
            joined: joined.len(),
            allowlisted: allowlisted.into_iter().map(|(k, d)| (k, d.len())).collect(),
        };
        let read = read_closing(&mut answers, expected, &mut trace);
        let closed = match (read, receipt) {
            (Ok(()), Some(receipt)) => Ok(receipt),
            (Err(reason), _) => Err(reason),
            (Ok(()), None) => Err(unexpected_label(None)),
        };
        let receipt = match closed {
            Ok(receipt) => receipt,
            Err(reason) => {
                let outcome = withheld(reason, allow.observed, &mut trace);
                return self.finish(
                    &request,
                    &parameter_hash,
                    outcome,
                    now_ms,
                    trace,
                    Vec::new(),
                );
            }
        };
        trace.output_label = label.map(|l| l.as_str().to_string());
        // A value taken by reference carries what the server kept.
        trace.output_integrity = kept_floor(integrity.clone(), &trace.server_kept);
        let outcome = if sanitized { "rewrite" } else { "pass" };
        trace.output(outcome, released(label, &integrity, performed));
        trace.not_performed = !performed;
        let appended = next_answer(&mut answers, StoreName::Receipt).map(|_| ());
        self.settle_allow(
            &request,
            &parameter_hash,
            allow,
            receipt,
            appended,
            now_ms,
            trace,
        )
    }

    /// Closes an allow whose receipt append answered `appended`: journals
    /// it and releases the output, or denies naming the store that failed.
    #[allow(clippy::too_many_arguments)]
    fn settle_allow(
        &mut self,
        request: &ToolCallRequest,
        parameter_hash: &str,
        allow: Outcome,
        receipt: SignedReceipt,
        appended: Result<(), StoreError>,
        now_ms: u64,
        mut trace: DecisionTrace,
    ) -> Decision {
        let journalled = self.journal(request, &allow, now_ms);
        let reason = match (appended, journalled) {
            (Ok(()), Ok(())) => return self.decision(request, allow, receipt, true, trace),
            (Err(e), _) => DenyReason::ReceiptUnrecorded(e),
            (Ok(()), Err(e)) => DenyReason::from(e).withheld(),
        };
        let deny = withheld(reason, allow.observed, &mut trace);
        let receipt = self.sign_receipt(request, parameter_hash, &deny, None, now_ms);
        let recorded = self.append_alone(&receipt);
        self.decision(request, deny, receipt, recorded, trace)
    }

    /// Step 8 after a dispatch that failed before the call left: deny,
    /// budget released, since nothing was carried out.
    pub fn abort(&mut self, ticket: AdmissionTicket, reason: &str, now_ms: u64) -> Decision {
        self.abort_dispatch(ticket, reason, false, now_ms)
    }

    /// Step 8 after a dispatch that failed once the call had reached the
    /// tool's server (it timed out, or the answer was an error or never
    /// came): deny, and the budget is spent, because the server may have
    /// carried the call out; releasing it would let a caller make calls
    /// without limit by making each one fail.
    pub fn abort_after_send(
        &mut self,
        ticket: AdmissionTicket,
        reason: &str,
        now_ms: u64,
    ) -> Decision {
        self.abort_dispatch(ticket, reason, true, now_ms)
    }

    fn abort_dispatch(
        &mut self,
        ticket: AdmissionTicket,
        reason: &str,
        sent: bool,
        now_ms: u64,
    ) -> Decision {
        let reason = DenyReason::DispatchFailed {
            cause: reason.to_string(),
        };
        let mut trace = ticket.trace;
        trace.settle_holds(if sent { "committed" } else { "released" });
        trace.output("deny", reason.to_string());
        let outcome = Outcome::deny(reason, None, ticket.observed);
        let releases = settle_ops(&ticket.holds, &ticket.money_holds, Settle::every(sent));
        self.finish(
            &ticket.request,
            &ticket.parameter_hash,
            outcome,
            now_ms,
            trace,
            releases,
        )
    }

    /// Closes a decision whose verdict is final (a deny or a pending
    /// approval): journals it, then runs `settle` (releases or commits) and
    /// appends the signed receipt in one batch. Should a commit stop the
    /// batch, the receipt is appended alone.
    pub(super) fn finish(
        &mut self,
        request: &ToolCallRequest,
        parameter_hash: &str,
        outcome: Outcome,
        now_ms: u64,
        mut trace: DecisionTrace,
        settle: Vec<StoreOp>,
    ) -> Decision {
        // A deny journalled or not is still a deny; only an allow is ever
        // turned by the journal, in `settle_allow`.
        let _ = self.journal(request, &outcome, now_ms);
        let receipt = self.sign_receipt(request, parameter_hash, &outcome, None, now_ms);
        let committing = settle.iter().any(|op| matches!(op, StoreOp::Commit { .. }));
        let settled = settle.len();
        let mut ops = settle;
        ops.push(StoreOp::AppendReceipt {
            receipt: receipt.clone(),
        });
        let answers = self.stores.run_batch(ops);
        if committing {
            let failed = answers.len() <= settled || answers[..settled].iter().any(|a| a.is_err());
            trace.settle_holds(if failed { "commit-failed" } else { "committed" });
        }
        let recorded = match answers.into_iter().nth(settled) {
            Some(appended) => appended.is_ok(),
            None => self.append_alone(&receipt),
        };
        self.decision(request, outcome, receipt, recorded, trace)
    }

    /// Appends one receipt in a batch of its own; whether it was stored.
    fn append_alone(&mut self, receipt: &SignedReceipt) -> bool {
        let append = vec![StoreOp::AppendReceipt {
            receipt: receipt.clone(),
        }];
        matches!(
            self.stores.run_batch(append).first(),
            Some(Ok(OpAnswer::Done))
        )
    }

    /// Appends the decision's entry to the session journal.
    fn journal(
        &mut self,
        request: &ToolCallRequest,
        outcome: &Outcome,
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let projected = outcome.verdict.project(outcome.sanitized);
        self.stores.journal.append(
            &request.session_id,
            JournalEntry {
                request_id: request.request_id.clone(),
                server: request.server.clone(),
                tool: request.tool.clone(),
                verdict: projected,
                at_ms: now_ms,
                performed: outcome.verdict == Verdict::Allow && outcome.performed,
            },
        )
    }

    fn decision(
        &self,
        request: &ToolCallRequest,
        mut outcome: Outcome,
        receipt: SignedReceipt,
        recorded: bool,
        mut trace: DecisionTrace,
    ) -> Decision {
        trace.reason_code = outcome.code;
        let seal = Seal::of(&request.arguments, &request.sealed);
        if !seal.is_empty() {
            seal.scrub_opt(&mut outcome.reason);
            trace.scrub(&seal);
        }
        Decision {
            verdict: outcome.verdict,
            sanitized: outcome.sanitized,
            reason: outcome.reason,
            guard: outcome.guard,
            receipt,
            recorded,
            output: outcome.output,
            trace,
        }
    }

    /// Signs the decision's receipt; `output_hash` is the released
    /// output's (allows only).
    fn sign_receipt(
        &self,
        request: &ToolCallRequest,
        parameter_hash: &str,
        outcome: &Outcome,
        output_hash: Option<String>,
        now_ms: u64,
    ) -> SignedReceipt {
        // No evidence text carries a sealed argument (`crate::seal`).
        let seal = Seal::of(&request.arguments, &request.sealed);
        let body = ReceiptBody {
            schema: RECEIPT_SCHEMA.to_string(),
            timestamp_ms: now_ms,
            kernel_id: self.kernel_id.clone(),
            kernel_key: self.key_hex.clone(),
            capability_id: request.capability.id.clone(),
            request_id: request.request_id.clone(),
            agent_id: request.agent_id.clone(),
            session_id: request.session_id.clone(),
            server: request.server.clone(),
            tool: request.tool.clone(),
            parameter_hash: parameter_hash.to_string(),
            decision: ReceiptDecision {
                verdict: outcome.verdict,
                reason: outcome.reason.as_deref().map(|r| seal.scrub(r)),
                guard: outcome.guard.clone(),
                sanitized: outcome.sanitized,
            },
            observed: outcome
                .observed
                .iter()
                .map(|finding| ObservedFinding {
                    reason: seal.scrub(&finding.reason),
                    ..finding.clone()
                })
                .collect(),
            output_hash,
        };
        match SignedReceipt::sign(body.clone(), &self.signing_key) {
            Ok(receipt) => receipt,
            // Only a timestamp beyond 2^53 ms has no canonical form; such a
            // receipt stays unsigned, so it can never verify.
            Err(_) => SignedReceipt {
                id: String::new(),
                body,
                signature: String::new(),
            },
        }
    }
}

/// The settlement of a call's holds ([`Settle`]): an invocation hold is
/// committed when the call was spent (its server received it, or may
/// have), a monetary hold when money moved (the tool carried the call
/// out); each other hold is released, so it spends nothing, as a deny's
/// holds are.
fn settle_ops(holds: &[String], money: &MoneyHolds, settle: Settle) -> Vec<StoreOp> {
    holds
        .iter()
        .map(|hold_id| {
            let commit = if money.holds(hold_id) {
                settle.moved
            } else {
                settle.spent
            };
            let hold_id = hold_id.clone();
            if commit {
                StoreOp::Commit { hold_id }
            } else {
                StoreOp::Release { hold_id }
            }
        })
        .collect()
}

/// The output with the level of what its server kept from earlier calls
/// (`DecisionTrace::server_kept`), when higher; its integrity is lowered
/// by what the server kept where it is read (`Kernel::read_labels`,
/// `Kernel::allowlist_records`, [`kept_floor`]).
fn with_server_kept(mut output: ToolOutput, kept: &[String]) -> ToolOutput {
    let kept_level = kept.iter().filter_map(|l| Label::parse(l)).max();
    output.label = output.label.max(kept_level);
    output
}

/// `integrity` no higher than what the server kept (`kept`) allows. An
/// integrity that is no level stays as it is, for the closing batch to
/// refuse.
fn kept_floor(integrity: Option<String>, kept: &[String]) -> Option<String> {
    let lowered = super::labels::kept_integrity(kept);
    match integrity.as_deref().map(Integrity::from_label) {
        Some(None) => integrity,
        current => current.flatten().unwrap_or_default().max(lowered).label(),
    }
}
