//! Admission: steps 1 to 7 of the pipeline, up to a ticket to dispatch or a
//! final decision.
//!
//! Admission plans before it asks: it verifies the capability, binds the
//! proof, selects the scope grant, reads the session journal and (for a
//! call presenting sibling shares) runs the guards over empty labels, all
//! locally; then it sends the store work those checks allow as one batch
//! ([`crate::batch`]) and reads the answers in pipeline order, so every
//! deny reason, trace entry and store effect is the one the step-by-step
//! pipeline gives. The batch carries operations only up to the first local
//! refusal: a request whose proof fails consumes no request id, one out of
//! scope holds no budget.

use std::collections::{BTreeMap, BTreeSet};

use super::money::PlannedMoney;
use super::plan::{GuardRun, HoldOf, Plan, WantedHold};
use super::{Admission, AdmissionTicket, Kernel, Outcome};
use crate::amount::{format_units, units_decimal};
use crate::batch::{OpAnswer, StoreOp};
use crate::error::{StoreError, StoreName};
use crate::guards::MoneyTotal;
use crate::planted::{inverted, weakened_anywhere, Weakness};
use crate::provenance::{AgentRole, Provenance};
use crate::reason::{DenyReason, MoneyDeny};
use crate::receipt::{canonical_sha256, ObservedFinding};
use crate::request::ToolCallRequest;
use crate::stores::{HoldOutcome, JournalEntry, ShareAdmission};
use crate::trace::{BudgetRead, DecisionTrace, ShareRead};
use crate::verdict::Verdict;
use crate::verification::{verify_capability, ShareClaim, VerifiedCapability};

#[path = "admit_reads.rs"]
mod reads;
use super::MoneyHolds;
use reads::{read_holds, read_shares};

/// Everything admission accumulates on the way, deny or not.
#[derive(Default)]
struct Admitting {
    holds: Vec<String>,
    /// The monetary holds among them, by hold id and by budget key: money
    /// moves only when the tool carried the call out.
    money_holds: MoneyHolds,
    /// Each monetary budget's total with this call, by budget id, for the
    /// guards that read it.
    money: BTreeMap<String, MoneyTotal>,
    observed: Vec<ObservedFinding>,
    trace: DecisionTrace,
    /// What the call carries to its server ([`AdmissionTicket::carried_labels`]).
    carried: BTreeSet<String>,
    /// Every hold the admission batch asked for, when a store failed in
    /// it: a caller with no answer must assume any prefix of the batch took
    /// effect (a stalled service may apply it after the deadline), so a
    /// deny releases all of them; releasing a hold never taken is a no-op.
    uncertain: Vec<String>,
}

/// The next answer of a batch; a batch that ended early answers nothing
/// more, which fails closed naming the operation's store.
pub(super) fn next_answer(
    answers: &mut (impl Iterator<Item = Result<OpAnswer, StoreError>> + ?Sized),
    store: StoreName,
) -> Result<OpAnswer, StoreError> {
    answers.next().unwrap_or_else(|| {
        Err(StoreError::unavailable(
            store,
            "the batch ended before this operation was answered",
        ))
    })
}

fn unexpected(store: StoreName) -> DenyReason {
    StoreError::unavailable(store, "the batch answered another operation").into()
}

/// The revocation lookups of a verified capability: its own id, then every
/// ancestor root first.
pub(super) fn revocation_ops(verified: &VerifiedCapability) -> Vec<StoreOp> {
    std::iter::once(&verified.id)
        .chain(&verified.ancestors)
        .map(|id| StoreOp::IsRevoked { id: id.clone() })
        .collect()
}

/// Reads the answers of [`revocation_ops`]; the first revoked id or failed
/// lookup is the deny reason.
pub(super) fn read_revocation(
    verified: &VerifiedCapability,
    answers: &mut impl Iterator<Item = Result<OpAnswer, StoreError>>,
) -> Result<(), DenyReason> {
    for (index, id) in std::iter::once(&verified.id)
        .chain(&verified.ancestors)
        .enumerate()
    {
        match next_answer(answers, StoreName::Revocation) {
            Ok(OpAnswer::Revoked(false)) => {}
            Ok(OpAnswer::Revoked(true)) if index == 0 => {
                return Err(DenyReason::Revoked { id: id.clone() })
            }
            Ok(OpAnswer::Revoked(true)) => {
                return Err(DenyReason::ChainRevoked {
                    ancestor: id.clone(),
                })
            }
            Ok(_) => return Err(unexpected(StoreName::Revocation)),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

pub(super) fn share_ops(shares: &[ShareClaim]) -> impl Iterator<Item = StoreOp> + '_ {
    shares.iter().map(|claim| StoreOp::AdmitShare {
        parent_id: claim.parent_id.clone(),
        child_id: claim.child_id.clone(),
        child_bps: claim.child_bps,
        parent_bps: claim.parent_bps,
    })
}

/// The labels a call carries to its server, from everything its caller
/// holds: `public` is left out, since it raises nothing.
fn carried_labels(held: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<String> {
    held.values()
        .flatten()
        .filter(|label| label.as_str() != crate::label::Label::Public.as_str())
        .cloned()
        .collect()
}

impl Kernel {
    /// Whether the call's tool may keep what it is sent, so the call must
    /// carry its caller's labels: every tool its catalog does not declare
    /// read-only, and every tool of a kernel with no catalog.
    fn may_keep(&self, request: &ToolCallRequest) -> bool {
        !weakened_anywhere(Weakness::WritersKeepNothing)
            && self.contracts.as_ref().is_none_or(|c| {
                inverted(
                    Weakness::KeepInverted,
                    !c.reads_only(&request.server, &request.tool),
                )
            })
    }

    /// Keeps what an admitted call carries with a server whose state the
    /// arena does not model (`server/<id>`), before the call reaches it, so
    /// every later call of that server's, by any caller on any kernel,
    /// takes it in with the answer. A store that cannot keep them denies:
    /// the call is not sent.
    fn keep_with_server(
        &mut self,
        request: &ToolCallRequest,
        carried: &BTreeSet<String>,
        trace: &mut DecisionTrace,
    ) -> Result<(), Box<Outcome>> {
        if carried.is_empty() || !self.keeps_unseen_state(request) {
            return Ok(());
        }
        let key = self.kept_key(request);
        let ops = carried
            .iter()
            .map(|label| StoreOp::JoinLabels {
                keys: vec![key.clone()],
                label: label.clone(),
            })
            .collect();
        let mut answers = self.stores.run_batch(ops).into_iter();
        for _ in carried {
            next_answer(&mut answers, StoreName::Label).map_err(|e| deny(e.into()))?;
        }
        trace.pass(format!(
            "{} label(s) kept with server {} ({key}), which may show what it is sent to any later caller",
            carried.len(),
            request.server
        ));
        Ok(())
    }

    /// Whether admission reads labels for this call: a guard needs them,
    /// the tool may keep what it is sent, or an argument was built from a
    /// handed-over value whose record must be read.
    pub(super) fn reads_labels(&self, request: &ToolCallRequest) -> bool {
        let guard = self.needs.labels;
        let keep = self.may_keep(request) || self.keeps_unseen_state(request);
        let handed = inverted(
            Weakness::UnrecordedArgumentUnread,
            !request.argument_sources.is_empty(),
        );
        if weakened_anywhere(Weakness::LabelsOnlyWithAGuard) {
            (guard && keep) || handed
        } else if weakened_anywhere(Weakness::LabelsOnlyForHandovers) {
            (guard || keep) && handed
        } else {
            guard || keep || handed
        }
    }

    /// The role a world declared for `principal` (ordinary when none).
    pub(super) fn role_of(&self, principal: &str) -> AgentRole {
        self.agent_roles.get(principal).copied().unwrap_or_default()
    }

    /// Whether `tool` on `server` is consequential on this kernel for a
    /// quarantined reader. With no `integrity` guard, by the tool's effects
    /// (not read-only, or reaching an open world). Beside integrity guards,
    /// a tool any of them lists, in any mode, and every tool that reaches
    /// an open world whatever they list: a guard's list says which of the
    /// closed world's writes act, and cannot open the world outside to the
    /// one agent that holds untrusted text, as it cannot for a planner.
    /// Every tool is, for a kernel with no declared tools.
    pub(super) fn consequential(&self, server: &str, tool: &str) -> bool {
        let answers: Vec<bool> = self
            .guards
            .iter()
            .filter_map(|g| {
                g.consequential(server, tool).or_else(|| {
                    weakened_anywhere(Weakness::OtherGuardsSayInconsequential).then_some(false)
                })
            })
            .collect();
        if weakened_anywhere(Weakness::OtherGuardsSayInconsequential) && !answers.is_empty() {
            return answers.contains(&true);
        }
        let Some(contracts) = self.contracts.as_ref() else {
            return true;
        };
        if answers.is_empty() {
            return contracts.has_effects(server, tool);
        }
        answers.contains(&true) || contracts.reaches_open_world(server, tool)
    }

    /// Steps 1 to 7; see the module doc.
    pub fn admit(&mut self, request: &ToolCallRequest, now_ms: u64) -> Admission {
        // Decided on the canonical value, which is what was signed and what
        // a request read back from the wire holds: `1.0` is `1`.
        let normalized;
        let request = if crate::canonical::has_whole_floats(&request.arguments) {
            let mut copy = request.clone();
            crate::canonical::normalize_whole_floats(&mut copy.arguments);
            normalized = copy;
            &normalized
        } else {
            request
        };
        // Arguments with no canonical form fail the proof's check at
        // binding (`proof-uncanonical`), so the empty hash below only ever
        // sits in a deny's receipt, beside the reason that names it.
        let parameter_hash = canonical_sha256(&request.arguments).unwrap_or_default();
        let mut state = Admitting::default();
        match self.admit_steps(request, now_ms, &mut state) {
            Ok((verified, principal)) => Admission::Admitted(Box::new(AdmissionTicket {
                request: request.clone(),
                verified,
                principal,
                holds: state.holds,
                money_holds: state.money_holds,
                observed: state.observed,
                parameter_hash,
                trace: state.trace,
                carried: state.carried,
            })),
            Err(mut outcome) => {
                let mut trace = state.trace;
                trace.settle_holds("released");
                outcome.observed = state.observed;
                let stopped = match outcome.verdict {
                    Verdict::PendingApproval => "pending_approval",
                    _ => "deny",
                };
                trace.stop(stopped, outcome.reason.as_deref().unwrap_or_default());
                let mut released = state.holds;
                for hold_id in state.uncertain {
                    if !released.contains(&hold_id) {
                        released.push(hold_id);
                    }
                }
                let releases = released
                    .into_iter()
                    .map(|hold_id| StoreOp::Release { hold_id })
                    .collect();
                Admission::Decided(Box::new(self.finish(
                    request,
                    &parameter_hash,
                    *outcome,
                    now_ms,
                    trace,
                    releases,
                )))
            }
        }
    }

    /// Steps 1 to 7 in pipeline order over one batch of store work; the
    /// verified capability and the principal when every step admits.
    fn admit_steps(
        &mut self,
        request: &ToolCallRequest,
        now_ms: u64,
        state: &mut Admitting,
    ) -> Result<(VerifiedCapability, String), Box<Outcome>> {
        // 1. The capability.
        let verified = self.verify_step(request, now_ms, &mut state.trace)?;
        let mut plan = self.plan(request, now_ms, &verified);
        let ops = std::mem::take(&mut plan.ops);
        let asked = ops.len();
        let record = ops
            .iter()
            .position(|op| matches!(op, StoreOp::RecordRequest { .. }));
        let answers = self.stores.run_batch(ops);
        // Only a request the store recorded as fresh owns its hold ids (a
        // replayed copy's ids are the original's, which must not be
        // released), and only a batch the store failed partway through may
        // have applied holds the kernel was not told of.
        let fresh =
            record.is_some_and(|i| matches!(answers.get(i), Some(Ok(OpAnswer::Fresh(true)))));
        if fresh && (answers.len() < asked || answers.iter().any(Result::is_err)) {
            state.uncertain = plan.holds.iter().map(|w| w.hold_id.clone()).collect();
        }
        let mut answers = answers.into_iter();
        // 2. Revocation, one lookup per id.
        read_revocation(&verified, &mut answers).map_err(deny)?;
        let trace = &mut state.trace;
        trace.pass(format!(
            "looked up {}: none revoked",
            trace.chain.join(", ")
        ));
        // 3. Binding.
        let principal = read_binding(request, &plan, &mut answers, trace)?;
        // 4. Scope.
        if let Some(Err(reason)) = plan.scope.take() {
            return Err(deny(reason));
        }
        trace.pass(format!(
            "tool {} on server {} is covered and its constraints hold",
            request.tool, request.server
        ));
        // 5. Budgets.
        if let Some(reason) = plan.budget_refusal.take() {
            return Err(deny(reason));
        }
        read_holds(&plan.holds, &mut answers, state)?;
        state.trace.pass(match state.holds.len() {
            0 => "no budget applies".to_string(),
            n => format!("{n} budget hold(s) granted"),
        });
        // 6. Guards.
        let journal = match plan.journal.take() {
            Some(Ok(journal)) => journal,
            Some(Err(e)) => return Err(deny(e.into())),
            None => Vec::new(),
        };
        state.trace.journal = journal.clone();
        let inputs = self.read_guard_inputs(
            request,
            &principal,
            &verified,
            journal,
            &mut answers,
            &mut state.trace,
        )?;
        let labels_empty = inputs.labels.is_empty();
        let carried = self.guard_step(
            request,
            now_ms,
            &principal,
            inputs,
            plan.early_guards.take(),
            state,
        )?;
        // 7. Sibling shares, last; they rode in the batch unless the
        // guards had to read non-empty labels first.
        let trace = &mut state.trace;
        if plan.shares_in_batch && labels_empty {
            read_shares(&verified.shares, &mut answers, trace)?;
        } else if inverted(
            Weakness::SharesSkippedAfterLabels,
            !verified.shares.is_empty(),
        ) {
            let late = self.stores.run_batch(share_ops(&verified.shares).collect());
            read_shares(&verified.shares, &mut late.into_iter(), trace)?;
        }
        trace.pass(match verified.shares.len() {
            0 => "no delegated share to admit".to_string(),
            n => format!("{n} share(s) admitted"),
        });
        self.keep_with_server(request, &carried, trace)?;
        state.carried = carried;
        Ok((verified, principal))
    }

    /// Step 1: verifies the capability and its chain, recording the chain.
    fn verify_step(
        &mut self,
        request: &ToolCallRequest,
        now_ms: u64,
        trace: &mut DecisionTrace,
    ) -> Result<VerifiedCapability, Box<Outcome>> {
        let verified = verify_capability(
            &request.capability,
            &self.trusted_issuers,
            now_ms,
            self.max_delegation_depth,
            Some(&mut self.cache),
        )
        .map_err(deny)?;
        trace.chain = verified.ancestors.clone();
        trace.chain.push(verified.id.clone());
        trace.pass(format!(
            "capability {} verified: issuer trusted, signatures valid, {} link(s) attenuating, valid at {now_ms} ms",
            verified.id,
            trace.chain.len() - 1
        ));
        Ok(verified)
    }

    /// Step 6's reads: the session journal read in planning, the labels the guards and the call's carry need, and
    /// each argument's provenance, from the batch's label answer.
    fn read_guard_inputs(
        &self,
        request: &ToolCallRequest,
        principal: &str,
        verified: &VerifiedCapability,
        journal: Vec<JournalEntry>,
        answers: &mut impl Iterator<Item = Result<OpAnswer, StoreError>>,
        trace: &mut DecisionTrace,
    ) -> Result<GuardInputs, Box<Outcome>> {
        let mut inputs = GuardInputs {
            journal,
            labels: BTreeMap::new(),
            carried: BTreeSet::new(),
            provenance: Provenance {
                role: self.role_of(principal),
                open_world: !weakened_anywhere(Weakness::NoOpenWorldFlag)
                    && self
                        .contracts
                        .as_ref()
                        .is_some_and(|c| c.reaches_open_world(&request.server, &request.tool)),
                ..Provenance::default()
            },
        };
        if self.reads_labels(request) {
            let sets = match next_answer(answers, StoreName::Label) {
                Ok(OpAnswer::Labels(sets)) => sets,
                Ok(_) => return Err(deny(unexpected(StoreName::Label))),
                Err(e) => return Err(deny(e.into())),
            };
            let held = self
                .collect_labels(request, principal, verified, &sets, trace)
                .map_err(deny)?;
            inputs.provenance.arguments = self
                .collect_argument_labels(request, &sets, trace)
                .map_err(deny)?;
            self.collect_allowlists(request, principal, &sets, &mut inputs.provenance, trace);
            self.collect_server_kept(request, &sets, trace)
                .map_err(deny)?;
            if self.may_keep(request) {
                inputs.carried = carried_labels(&held);
                inputs
                    .carried
                    .extend(inputs.provenance.arguments.values().flatten().cloned());
            }
            if self.needs.labels {
                inputs.labels = held;
            }
        }
        Ok(inputs)
    }

    /// Step 6's run: the guards over what admission read (the run made
    /// before the batch stands when nothing read changes it); the labels
    /// the call carries when they let it through.
    fn guard_step(
        &self,
        request: &ToolCallRequest,
        now_ms: u64,
        principal: &str,
        inputs: GuardInputs,
        early: Option<GuardRun>,
        state: &mut Admitting,
    ) -> Result<BTreeSet<String>, Box<Outcome>> {
        let run = match early {
            Some(run) if inputs.labels.is_empty() && inputs.provenance.arguments.is_empty() => run,
            _ => self.run_guards(
                request,
                now_ms,
                principal,
                &inputs.journal,
                &inputs.labels,
                &state.money,
                &inputs.provenance,
            ),
        };
        state.observed.extend(run.observed);
        state.trace.guards.extend(run.answers);
        run.result?;
        state.trace.pass(match self.guards.len() {
            0 => "no guard configured".to_string(),
            n => format!("{n} guard(s) let the call through"),
        });
        Ok(inputs.carried)
    }
}

/// What the guards of step 6 read beside the journal, and what the call
/// carries to its server if they let it through.
struct GuardInputs {
    journal: Vec<JournalEntry>,
    labels: BTreeMap<String, BTreeSet<String>>,
    carried: BTreeSet<String>,
    provenance: Provenance,
}

/// A deny outcome of admission, before any finding is attached.
fn deny(reason: DenyReason) -> Box<Outcome> {
    Box::new(Outcome::deny(reason, None, Vec::new()))
}

/// Step 3's read: the principal is the registered agent whose key signed
/// the proof, never the named id. The request id is consumed only by a
/// request whose proof verified, scoped by lineage and principal, in a
/// store shared by every kernel.
fn read_binding(
    request: &ToolCallRequest,
    plan: &Plan,
    answers: &mut impl Iterator<Item = Result<OpAnswer, StoreError>>,
    trace: &mut DecisionTrace,
) -> Result<String, Box<Outcome>> {
    let (principal, _) = plan.bound.clone().map_err(deny)?;
    trace.principal = Some(principal.clone());
    match next_answer(answers, StoreName::Nonce) {
        Ok(OpAnswer::Fresh(true)) => {}
        Ok(OpAnswer::Fresh(false)) => {
            return Err(deny(DenyReason::Replayed {
                request_id: request.request_id.clone(),
            }))
        }
        Ok(_) => return Err(deny(unexpected(StoreName::Nonce))),
        Err(e) => return Err(deny(e.into())),
    }
    trace.pass(format!(
        "principal {principal} signed the proof with the subject key; request id {} is fresh",
        request.request_id
    ));
    Ok(principal)
}

/// The deny reason of a refused share admission (`None` for an admitted one).
pub fn share_refusal_reason(
    claim: &crate::verification::ShareClaim,
    refusal: &ShareAdmission,
) -> Option<DenyReason> {
    match refusal {
        ShareAdmission::Oversubscribed {
            siblings_bps,
            parent_bps,
        } => Some(DenyReason::SharesOversubscribed {
            child: claim.child_id.clone(),
            bps: claim.child_bps,
            siblings: *siblings_bps,
            parent: claim.parent_id.clone(),
            parent_bps: *parent_bps,
        }),
        ShareAdmission::UnknownParent => Some(DenyReason::ShareParentUnknown {
            parent: claim.parent_id.clone(),
        }),
        ShareAdmission::Admitted => None,
    }
}
