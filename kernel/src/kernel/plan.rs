//! Steps 3 to 7 of admission before the batch: every local check, the
//! store work the checks allow, and the guards' run over what is known.

use std::collections::{BTreeMap, BTreeSet};

use super::admit::{revocation_ops, share_ops};
use super::config::Authorisers;
use super::guard_run::run_request_guards;
use super::money::{plan_money, Lineage, PlannedMoney};
use super::{Kernel, Outcome};
use crate::batch::StoreOp;
use crate::error::StoreError;
use crate::guards::{GuardContext, MoneyTotal};
use crate::ledger::seen_request_key;
use crate::provenance::{AgentRole, Provenance};
use crate::reason::{BudgetName, DenyReason};
use crate::receipt::ObservedFinding;
use crate::request::ToolCallRequest;
use crate::scope::{select_grant, CallUnderScope, MonetaryHold};
use crate::stores::JournalEntry;
use crate::trace::GuardAnswer;
use crate::verification::VerifiedCapability;

/// A budget hold the call needs (step 5).
pub(super) struct WantedHold {
    pub(super) key: String,
    pub(super) amount: u64,
    pub(super) limit: u64,
    pub(super) what: HoldOf,
    pub(super) hold_id: String,
}

/// What a hold counts against, for its deny reason and the guards.
pub(super) enum HoldOf {
    /// An invocation or grant-level monetary budget.
    Units(BudgetName),
    /// A configured monetary budget.
    Money(PlannedMoney),
}

/// The guards' answer over one set of labels, kept so a run made before
/// the batch can stand when the labels turn out empty.
pub(super) struct GuardRun {
    pub(super) result: Result<(), Box<Outcome>>,
    pub(super) observed: Vec<ObservedFinding>,
    pub(super) answers: Vec<GuardAnswer>,
}

/// What steps 3 to 7 found locally, and the batch of store work they allow.
pub(super) struct Plan {
    pub(super) ops: Vec<StoreOp>,
    /// Step 3: the principal and the scoped request key, or the deny reason.
    pub(super) bound: Result<(String, String), DenyReason>,
    /// Step 4: `Some` once binding passed.
    pub(super) scope: Option<Result<(), DenyReason>>,
    pub(super) holds: Vec<WantedHold>,
    /// Step 5: a monetary budget that cannot count the call, found before
    /// anything was held.
    pub(super) budget_refusal: Option<DenyReason>,
    /// Step 6: the journal, `Some` once the scope passed.
    pub(super) journal: Option<Result<Vec<JournalEntry>, StoreError>>,
    /// The guards run over empty labels, when the shares ride in the batch.
    pub(super) early_guards: Option<GuardRun>,
    /// Whether the batch admits the shares after the label read.
    pub(super) shares_in_batch: bool,
}

impl Kernel {
    /// Runs every local check of steps 3 to 7 and plans the batch: the
    /// revocation lookups always, then the store work of each step whose
    /// local checks passed.
    pub(super) fn plan(
        &mut self,
        request: &ToolCallRequest,
        now_ms: u64,
        verified: &VerifiedCapability,
    ) -> Plan {
        let mut plan = Plan {
            ops: revocation_ops(verified),
            bound: self.bind(request, verified, now_ms).map(|principal| {
                let key = seen_request_key(&verified.root_id, &principal, &request.request_id);
                (principal, key)
            }),
            scope: None,
            holds: Vec::new(),
            budget_refusal: None,
            journal: None,
            early_guards: None,
            shares_in_batch: false,
        };
        let Ok((principal, seen_key)) = plan.bound.clone() else {
            return plan;
        };
        plan.ops.push(StoreOp::RecordRequest {
            key: seen_key.clone(),
        });
        let monetary = match self.check_scope(request, now_ms, &principal, verified) {
            Ok(monetary) => monetary,
            Err(reason) => {
                plan.scope = Some(Err(reason));
                return plan;
            }
        };
        plan.scope = Some(Ok(()));
        plan.holds = self.invocation_holds(request, &principal, &seen_key, verified);
        match self.money_holds(request, now_ms, &principal, &seen_key, verified) {
            Ok(holds) => plan.holds.extend(holds),
            Err(reason) => {
                plan.holds.clear();
                plan.budget_refusal = Some(reason);
                return plan;
            }
        }
        if let Some(money) = monetary {
            plan.holds
                .push(grant_monetary_hold(request, &seen_key, verified, &money));
        }
        plan.ops.extend(plan.holds.iter().map(|h| StoreOp::Hold {
            hold_id: h.hold_id.clone(),
            key: h.key.clone(),
            amount: h.amount,
            limit: h.limit,
        }));
        self.plan_journal_and_labels(&mut plan, request, now_ms, &principal, verified);
        plan
    }

    /// Step 4: the tool's contract, the reader's quarantine and the
    /// capability's scope, in that order; the selected grant's monetary
    /// hold, if any, when all three admit the call.
    fn check_scope(
        &self,
        request: &ToolCallRequest,
        now_ms: u64,
        principal: &str,
        verified: &VerifiedCapability,
    ) -> Result<Option<MonetaryHold>, DenyReason> {
        // The tool's contract first: an undeclared tool, or arguments its
        // schema refuses, is never in scope, whatever the capability says.
        if let Some(Err(reason)) = self
            .contracts
            .as_ref()
            .map(|c| c.check(&request.server, &request.tool, &request.arguments, now_ms))
        {
            return Err(reason);
        }
        // A quarantined reader calls nothing consequential, whatever its
        // capability and guards say.
        if self.role_of(principal) == AgentRole::Quarantined
            && self.consequential(&request.server, &request.tool)
        {
            return Err(DenyReason::QuarantinedConsequential {
                agent: principal.to_string(),
                tool: request.tool.clone(),
                server: request.server.clone(),
            });
        }
        let definition = self
            .contracts
            .as_ref()
            .and_then(|c| c.digest_in_force(&request.server, &request.tool, now_ms));
        let grant = select_grant(
            &verified.state.scope,
            CallUnderScope {
                server: &request.server,
                tool: &request.tool,
                arguments: &request.arguments,
                definition,
            },
        )?;
        Ok(grant.monetary)
    }

    /// Who authorised a call by `principal` presenting `verified`, for the
    /// budgets that name an agent.
    fn authorisers<'a>(
        &'a self,
        principal: &'a str,
        verified: &'a VerifiedCapability,
    ) -> Authorisers<'a> {
        Authorisers {
            principal,
            delegators: &verified.delegators,
            agent_keys: &self.agent_keys,
        }
    }

    /// Step 5's counted holds: one per invocation limit on the lineage and
    /// one per tool budget that names this tool and an agent who authorised
    /// the call ([`Authorisers::include`]).
    fn invocation_holds(
        &self,
        request: &ToolCallRequest,
        principal: &str,
        seen_key: &str,
        verified: &VerifiedCapability,
    ) -> Vec<WantedHold> {
        let mut holds = Vec::new();
        for limit in &verified.invocation_limits {
            // A delegated capability's id is its delegator's choice, so it
            // is counted within its lineage: another lineage's link named
            // like this capability never shares its counter. A root's id is
            // the issuer's, unique as issued.
            let key = if limit.capability_id == verified.root_id {
                format!("invocations/{}", limit.capability_id)
            } else {
                format!(
                    "invocations/{}:{}/{}",
                    verified.root_id.len(),
                    verified.root_id,
                    limit.capability_id
                )
            };
            holds.push(WantedHold {
                hold_id: format!("{seen_key}#{key}"),
                key,
                amount: 1,
                limit: limit.max_invocations,
                what: HoldOf::Units(BudgetName::Invocations {
                    capability: limit.capability_id.clone(),
                }),
            });
        }
        let tool_budgets =
            !crate::planted::weakened_anywhere(crate::planted::Weakness::NoToolBudgets);
        let by = self.authorisers(principal, verified);
        for budget in self.tool_budgets.iter().filter(|b| {
            use crate::planted::{inverted, Weakness};
            tool_budgets
                && inverted(Weakness::ToolBudgetAgentInverted, by.include(&b.agent))
                && inverted(
                    Weakness::ToolBudgetServerInverted,
                    b.server == request.server,
                )
                && inverted(Weakness::ToolBudgetToolInverted, b.tool == request.tool)
        }) {
            let key = format!(
                "tool-invocations/{}/{}/{}",
                budget.agent, budget.server, budget.tool
            );
            holds.push(WantedHold {
                // The hold id carries the scoped request key, so two
                // principals (or two lineages) using one request id never
                // share a hold.
                hold_id: format!("{seen_key}#{key}"),
                key,
                amount: 1,
                limit: budget.max_invocations,
                what: HoldOf::Units(BudgetName::Tool {
                    agent: budget.agent.clone(),
                    server: budget.server.clone(),
                    tool: budget.tool.clone(),
                }),
            });
        }
        holds
    }

    /// Step 5's configured monetary budgets: the amount and currency are
    /// read before anything is held, so a call that cannot be counted holds
    /// nothing.
    fn money_holds(
        &self,
        request: &ToolCallRequest,
        now_ms: u64,
        principal: &str,
        seen_key: &str,
        verified: &VerifiedCapability,
    ) -> Result<Vec<WantedHold>, DenyReason> {
        let (chain, bps) = lineage_shares(verified);
        let planned = plan_money(
            &self.monetary_budgets,
            &self.authorisers(principal, verified),
            Lineage {
                ids: &chain,
                bps: &bps,
            },
            &request.server,
            &request.tool,
            &request.arguments,
            now_ms,
        )?;
        Ok(planned
            .into_iter()
            .map(|money| WantedHold {
                hold_id: format!("{seen_key}#{}", money.key),
                key: money.key.clone(),
                amount: money.units,
                limit: money.limit,
                what: HoldOf::Money(money),
            })
            .collect())
    }

    /// Steps 6 and 7: reads the journal, runs the guards ahead of the batch
    /// when nothing they read can change in it, and plans the label read
    /// and the shares.
    fn plan_journal_and_labels(
        &self,
        plan: &mut Plan,
        request: &ToolCallRequest,
        now_ms: u64,
        principal: &str,
        verified: &VerifiedCapability,
    ) {
        let journal = if self.needs.journal {
            self.stores.journal.entries(&request.session_id)
        } else {
            Ok(Vec::new())
        };
        let Ok(entries) = &journal else {
            plan.journal = Some(journal);
            return;
        };
        // Guards that read a monetary total need the holds' answers, and
        // arguments built from handed-over values are judged with their
        // labels, so in either case the guards never run ahead of the batch.
        if !verified.shares.is_empty() && !self.needs.money && request.argument_sources.is_empty() {
            let run = self.run_guards(
                request,
                now_ms,
                principal,
                entries,
                &BTreeMap::new(),
                &BTreeMap::new(),
                &crate::provenance::NO_PROVENANCE,
            );
            plan.shares_in_batch = run.result.is_ok();
            plan.early_guards = Some(run);
        }
        plan.journal = Some(journal);
        if self.reads_labels(request) {
            plan.ops.push(StoreOp::ReadLabels {
                keys: self.label_keys(request, principal, verified),
                // Only labels the guards read can change what follows.
                stop_unless_empty: plan.shares_in_batch && self.needs.labels,
            });
        }
        if plan.shares_in_batch {
            plan.ops.extend(share_ops(&verified.shares));
        }
    }

    /// Runs the pre-dispatch guards over what admission knows of the call
    /// decided at `now_ms` (the instant that picks the definition in force).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_guards(
        &self,
        request: &ToolCallRequest,
        now_ms: u64,
        principal: &str,
        journal: &[JournalEntry],
        labels: &BTreeMap<String, BTreeSet<String>>,
        money: &BTreeMap<String, MoneyTotal>,
        provenance: &Provenance,
    ) -> GuardRun {
        let ctx = GuardContext {
            server: &request.server,
            tool: &request.tool,
            arguments: &request.arguments,
            agent_id: principal,
            session_id: &request.session_id,
            journal,
            labels,
            money,
            session_filesystem_roots: None,
            provenance,
            definition: self
                .contracts
                .as_ref()
                .and_then(|c| c.poisoning_in_force(&request.server, &request.tool, now_ms)),
        };
        let mut run = GuardRun {
            result: Ok(()),
            observed: Vec::new(),
            answers: Vec::new(),
        };
        run.result = run_request_guards(&self.guards, &ctx, &mut run.observed, &mut run.answers);
        run
    }
}

/// The lineage's capability ids and each one's share in basis points, root
/// first: the first link names the root's share, every link its child's; a
/// capability without links carries its own share.
fn lineage_shares(verified: &VerifiedCapability) -> (Vec<String>, Vec<u32>) {
    let chain: Vec<String> = verified
        .ancestors
        .iter()
        .chain(std::iter::once(&verified.id))
        .cloned()
        .collect();
    let bps: Vec<u32> = verified
        .shares
        .first()
        .map(|s| s.parent_bps)
        .into_iter()
        .chain(verified.shares.iter().map(|s| s.child_bps))
        .collect();
    let bps = if bps.is_empty() {
        vec![verified.state.share_bps]
    } else {
        bps
    };
    (chain, bps)
}

/// The hold a grant's own `monetary` constraint asks for, counted per root
/// capability, server and currency.
fn grant_monetary_hold(
    request: &ToolCallRequest,
    seen_key: &str,
    verified: &VerifiedCapability,
    money: &MonetaryHold,
) -> WantedHold {
    let key = format!(
        "monetary/{}/{}/{}",
        verified.root_id, request.server, money.currency
    );
    WantedHold {
        hold_id: format!("{seen_key}#{key}"),
        key,
        amount: money.amount,
        limit: money.max_total,
        what: HoldOf::Units(BudgetName::Monetary {
            currency: money.currency.clone(),
        }),
    }
}
