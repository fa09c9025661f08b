//! The kernel: the evaluation pipeline over injected state.
//!
//! Order of work for one call (each step fails closed, and every deny is
//! answered with a signed receipt appended to the receipt store):
//! 1. verify the capability ([`crate::verification`]);
//! 2. revocation of the presented id, then of every ancestor root first, one
//!    uncached store lookup each;
//! 3. bind the request to the subject: proof present, the named agent is
//!    registered with the subject key, the proof's signer is the subject,
//!    the proof verifies, the request is fresh, and its id was never seen
//!    under this lineage and principal. The registered agent is the call's
//!    principal: tool budgets, label keys, guards and receipts use it, never
//!    a self-asserted id;
//! 4. select the scope grant and evaluate its constraints ([`crate::scope`]);
//! 5. hold budgets: every invocation limit along the chain, configured tool
//!    budgets, configured monetary budgets (the call's amount in the
//!    budget's minor units, in the call's window; an amount or currency
//!    argument that cannot be counted denies before anything is held), and
//!    a monetary hold per lineage for a grant's `monetary` constraint, each
//!    under a hold id scoped by lineage, principal and request id; released
//!    on any later deny, a pending approval included;
//! 6. guards in pipeline order (observe-mode answers are recorded, not
//!    enforced), reading the labels retained under the session, the
//!    principal, the lineage and the delegation record of every link of the
//!    chain (see [`crate::label::LabelCarry`]); PendingApproval stops here;
//! 7. admit delegated sibling shares, root side first: the only step that
//!    mutates shared allocation, so a call refused earlier consumes none.
//!
//! [`Kernel::admit`] runs steps 1 to 7 and hands back an [`AdmissionTicket`]
//! so an async actor can dispatch the tool call; [`Kernel::complete`] then
//! runs the post-invocation guards, looks up revocation of the token and
//! every ancestor again (a revocation that raced the dispatch withholds the
//! output), joins the output's label (and its integrity label, when the
//! server marked it untrusted) into the session, principal and lineage
//! label keys, commits the budget holds (the tool did run, so even a
//! withheld output consumes them), appends the signed receipt and the
//! session journal entry, and only then releases the output. A receipt
//! append that fails turns the verdict into a deny naming the receipt
//! store; the deny's own receipt is then attempted once and the decision
//! says whether it was recorded. [`Kernel::abort`] is the deny for a failed
//! dispatch, and [`Kernel::evaluate`] chains the three.
//!
//! Store work travels in two batches ([`crate::batch`]): admission checks
//! everything it can locally (the capability, the proof, the scope, the
//! journal, and, when the call presents sibling shares, the guards over
//! empty labels), then sends revocation lookups, the request id, the holds,
//! the label reads and the shares as one batch; settlement sends the
//! commits or releases, the second revocation lookup, the label joins and
//! the receipt as another. A store behind a network therefore answers a
//! decision in two round trips. A third is taken only off the common path:
//! a call whose retained labels are not empty and that presents sibling
//! shares admits them after the guards have read the labels, and a
//! decision that turns into a deny after its batch was sent (a revocation
//! that raced the dispatch, a failed commit, label join or receipt append)
//! appends its deny receipt alone. Each batch stops at the first answer
//! that ends the decision, so the state a store is left in is the state
//! one call per operation would leave.
//!
//! Every decision carries a [`DecisionTrace`] built along the way: the
//! stages reached, the label keys, budget keys and journal entries read,
//! and each guard's answer, so a recorded verdict can be explained.
//!
//! Module map: [`config`] (how a kernel is set up), `admit` (steps 1 to 7
//! and the admission batch), `money` (step 5's monetary budgets: coverage,
//! amounts, windows), `binding` (step 3's proof and principal),
//! `labels` (the label keys step 6 reads), `guard_run` (running the guard
//! pipeline), `complete` (step 8, abort, and the closing batch with the
//! receipt), `closing` (what an allow's closing batch holds and how its
//! answers are read).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ed25519_dalek::SigningKey;
use serde_json::Value;

use crate::contract::{widest_effects, CompiledCatalog};
use crate::error::KernelError;
use crate::guards::{Guard, GuardNeeds};
use crate::keys::{parse_public_key_hex, public_key_hex};
use crate::label::Label;
use crate::reason::{DenyReason, ReasonCode};
use crate::receipt::{ObservedFinding, SignedReceipt};
use crate::request::ToolCallRequest;
use crate::signature::SignatureCache;
use crate::stores::KernelStores;
use crate::trace::DecisionTrace;
use crate::verdict::{ProjectedVerdict, Verdict};
use crate::verification::VerifiedCapability;

mod admit;
mod binding;
mod closing;
mod complete;
pub mod config;
mod guard_run;
mod labels;
mod money;
mod plan;

pub use admit::share_refusal_reason;
pub use binding::{bind_proof, NOT_THE_PROVING_AGENT};
pub use config::{
    Authorisers, BudgetSubject, BudgetWindow, KernelConfig, MonetaryBudget, ToolBudget,
    DEFAULT_MAX_DELEGATION_DEPTH, DEFAULT_SIGNATURE_CACHE,
};

/// The kernel's answer to a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Allow, deny or pending approval.
    pub verdict: Verdict,
    /// Whether the released output was rewritten.
    pub sanitized: bool,
    /// Why (every deny and approval; a sanitized allow says what changed).
    pub reason: Option<String>,
    /// The guard that decided, when one did.
    pub guard: Option<String>,
    /// The signed receipt of this decision.
    pub receipt: SignedReceipt,
    /// Whether the receipt store acknowledged the receipt.
    pub recorded: bool,
    /// The released output (allows only).
    pub output: Option<Value>,
    /// What the decision read and how each stage answered, so the verdict
    /// can be explained from the evidence alone.
    pub trace: DecisionTrace,
}

impl Decision {
    /// The verdict on the scenario alphabet.
    pub fn projected(&self) -> ProjectedVerdict {
        self.verdict.project(self.sanitized)
    }
}

/// What a tool server returned.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result.
    pub content: Value,
    /// The information-flow label of what was returned, if classified.
    pub label: Option<Label>,
    /// The integrity label of what was returned (`integrity:untrusted`)
    /// when it came from an untrusted source; `None` for trusted content,
    /// which lowers nothing.
    pub integrity: Option<String>,
    /// Whether the server carried the call out (a server that answered
    /// that it could not, say for an unknown tool, did not). The session
    /// journal records it, and session rules count only performed calls.
    pub performed: bool,
    /// Whether a server received the call, whatever it answered. A call a
    /// server received spends its invocation holds (they are committed)
    /// even when it answered that it did not carry the call out (its
    /// monetary holds are released then: no money moved): the server may have
    /// acted before failing, and its caller often chooses whether it fails,
    /// so releasing them would let a caller make calls without limit by
    /// making each one fail, as [`Kernel::abort_after_send`] spends a call
    /// that was sent and never answered. Only an answer made without
    /// reaching a server (the arena's own failure of a simulated server, a
    /// recorded server with no answer for the call) gives its holds back. A
    /// performed call was received, whatever this says.
    pub received: bool,
}

/// The monetary holds of an admitted call, by hold id and by budget key
/// (a grant's monetary limit or a configured monetary budget). Money moves
/// only when the tool carried the call out, so these are committed only
/// for a performed call; an invocation is spent by any call its server
/// received ([`ToolOutput::received`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct MoneyHolds {
    ids: BTreeSet<String>,
    keys: BTreeSet<String>,
}

impl MoneyHolds {
    /// Counts the hold `hold_id` of budget `key` as monetary.
    pub(super) fn insert(&mut self, hold_id: &str, key: &str) {
        self.ids.insert(hold_id.to_string());
        self.keys.insert(key.to_string());
    }

    /// Whether `hold_id` is a monetary hold.
    pub(super) fn holds(&self, hold_id: &str) -> bool {
        self.ids.contains(hold_id)
    }

    /// Whether budget `key` is monetary.
    pub(super) fn counts(&self, key: &str) -> bool {
        self.keys.contains(key)
    }
}

/// How an admitted call's holds are settled: invocation holds are
/// committed when the call was `spent` (its server received it), monetary
/// ones when money `moved` (the call was carried out); the rest released.
#[derive(Debug, Clone, Copy)]
pub(super) struct Settle {
    pub(super) spent: bool,
    pub(super) moved: bool,
}

impl Settle {
    /// Every hold committed (`true`: the tool ran, or may have) or every
    /// hold released.
    pub(super) fn every(commit: bool) -> Self {
        Settle {
            spent: commit,
            moved: commit,
        }
    }

    /// A call its server answered: spent when the server received or
    /// performed it, money moved only when it performed it.
    pub(super) fn of(performed: bool, received: bool) -> Self {
        Settle {
            spent: performed || received,
            moved: performed,
        }
    }
}

/// A call that passed steps 1 to 7 and may be dispatched.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionTicket {
    request: ToolCallRequest,
    verified: VerifiedCapability,
    /// The verified principal (see [`bind_proof`]).
    principal: String,
    holds: Vec<String>,
    /// The monetary holds among `holds`.
    money_holds: MoneyHolds,
    observed: Vec<ObservedFinding>,
    parameter_hash: String,
    /// The trace of admission, continued by [`Kernel::complete`].
    trace: DecisionTrace,
    /// What the caller held when admitted, for a tool that may keep what
    /// it is sent (see [`AdmissionTicket::carried_labels`]).
    carried: BTreeSet<String>,
}

impl AdmissionTicket {
    /// The admitted request, to dispatch.
    pub fn request(&self) -> &ToolCallRequest {
        &self.request
    }

    /// The labels the call carries to its tool server: every label
    /// retained under the caller's session, principal and lineage and the
    /// delegation record of each link it presented, when admitted (levels
    /// above `public` and integrity labels). A server that stores what a
    /// call writes keeps them with the stored item, so a later read of it
    /// carries them on (see `docs/architecture.md`, labels at rest). Empty
    /// for a tool its catalog declares read-only, which keeps nothing.
    pub fn carried_labels(&self) -> &BTreeSet<String> {
        &self.carried
    }

    /// The id of the grant's lineage (root capability).
    pub fn lineage_id(&self) -> &str {
        &self.verified.root_id
    }
}

/// The outcome of admission.
#[derive(Debug, Clone, PartialEq)]
pub enum Admission {
    /// Dispatch, then call [`Kernel::complete`] or [`Kernel::abort`].
    Admitted(Box<AdmissionTicket>),
    /// Final: a deny or a pending approval, receipt already appended.
    Decided(Box<Decision>),
}

/// Everything a decision's receipt needs besides the verdict.
struct Outcome {
    verdict: Verdict,
    reason: Option<String>,
    /// The code of a deny's or approval's reason (a sanitized allow's
    /// reason has none).
    code: Option<ReasonCode>,
    guard: Option<String>,
    sanitized: bool,
    observed: Vec<ObservedFinding>,
    output: Option<Value>,
    /// Whether the tool server carried the call out (allows only).
    performed: bool,
}

impl Outcome {
    fn deny(reason: DenyReason, guard: Option<String>, observed: Vec<ObservedFinding>) -> Self {
        Outcome {
            verdict: Verdict::Deny,
            code: Some(reason.code()),
            reason: Some(reason.to_string()),
            guard,
            sanitized: false,
            observed,
            output: None,
            performed: false,
        }
    }
}

/// An authorization kernel with its guards and stores.
pub struct Kernel {
    kernel_id: String,
    signing_key: SigningKey,
    key_hex: String,
    trusted_issuers: Vec<String>,
    /// The issuers the kernel was configured with: the most it ever trusts.
    configured_issuers: Vec<String>,
    guards: Vec<Box<dyn Guard>>,
    needs: GuardNeeds,
    max_delegation_depth: usize,
    agent_keys: BTreeMap<String, String>,
    tool_budgets: Vec<ToolBudget>,
    monetary_budgets: Vec<config::MonetaryBudget>,
    max_request_age_ms: Option<u64>,
    cache: SignatureCache,
    stores: KernelStores,
    contracts: Option<CompiledCatalog>,
    agent_roles: BTreeMap<String, crate::provenance::AgentRole>,
    output_fields: BTreeMap<(String, String), crate::provenance::OutputRules>,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("kernel_id", &self.kernel_id)
            .field("kernel_key", &self.key_hex)
            .field("guards", &self.guards)
            .finish_non_exhaustive()
    }
}

/// Refuses monetary budgets the kernel cannot keep (an empty id or
/// currency, a zero-length window, entries sharing an id that disagree on
/// what they count) and a guard reading the total of a budget not
/// configured.
fn check_monetary_budgets(
    budgets: &[config::MonetaryBudget],
    guards: &[Box<dyn Guard>],
) -> Result<(), KernelError> {
    let invalid = |budget: &str, message: &str| KernelError::MonetaryBudget {
        budget: budget.to_string(),
        message: message.to_string(),
    };
    for (index, budget) in budgets.iter().enumerate() {
        if budget.id.is_empty() {
            return Err(invalid(&budget.id, "its id is empty; name the budget"));
        }
        if budget.currency.is_empty() {
            return Err(invalid(
                &budget.id,
                "its currency is empty; name a currency",
            ));
        }
        if budget.window.is_some_and(|w| w.length_ms == 0) {
            return Err(invalid(
                &budget.id,
                "its window is 0 ms long; use 1 ms or more",
            ));
        }
        let first = budgets.iter().take(index).find(|b| b.id == budget.id);
        if first.is_some_and(|first| {
            first.subject != budget.subject
                || first.currency != budget.currency
                || first.limit != budget.limit
                || first.window != budget.window
        }) {
            return Err(invalid(
                &budget.id,
                "entries sharing an id count one total; give them the same subject, currency, limit and window",
            ));
        }
    }
    for guard in guards {
        if let Some(missing) = guard
            .money_budgets()
            .into_iter()
            .find(|id| !budgets.iter().any(|b| b.id == *id))
        {
            return Err(KernelError::GuardConfig {
                guard: guard.meta().id.clone(),
                message: format!(
                    "budget {missing} is not a monetary budget of this kernel; name a budget with a limit"
                ),
            });
        }
    }
    Ok(())
}

impl Kernel {
    /// Builds a kernel, validating issuer keys and guard configurations.
    pub fn new(config: KernelConfig, stores: KernelStores) -> Result<Kernel, KernelError> {
        for issuer in &config.trusted_issuers {
            parse_public_key_hex(issuer)?;
        }
        for key in config.agent_keys.values() {
            parse_public_key_hex(key)?;
        }
        // Guards that take their tools from effects read them over every
        // version of each tool (`crate::contract::widest_effects`).
        let effects = config
            .tools
            .as_ref()
            .map(|tools| widest_effects(tools, &config.redefinitions));
        let guards = config
            .guards
            .iter()
            .map(|spec| spec.with_effects(effects.as_ref()).build())
            .collect::<Result<Vec<_>, _>>()?;
        check_monetary_budgets(&config.monetary_budgets, &guards)?;
        let needs = guards.iter().fold(GuardNeeds::default(), |acc, g| {
            let n = g.needs();
            GuardNeeds {
                journal: acc.journal || n.journal,
                labels: acc.labels || n.labels,
                money: acc.money || n.money,
            }
        });
        Ok(Kernel {
            key_hex: public_key_hex(&config.signing_key),
            kernel_id: config.kernel_id,
            signing_key: config.signing_key,
            configured_issuers: config.trusted_issuers.clone(),
            trusted_issuers: config.trusted_issuers,
            guards,
            needs,
            max_delegation_depth: config.max_delegation_depth,
            agent_keys: config.agent_keys,
            tool_budgets: config.tool_budgets,
            monetary_budgets: config.monetary_budgets,
            max_request_age_ms: config.max_request_age_ms,
            cache: SignatureCache::new(config.signature_cache_capacity),
            contracts: config
                .tools
                .as_ref()
                .map(|tools| CompiledCatalog::compile(tools, &config.redefinitions))
                .transpose()?,
            stores,
            agent_roles: config.agent_roles,
            output_fields: config.output_fields,
        })
    }

    /// The kernel id.
    pub fn kernel_id(&self) -> &str {
        &self.kernel_id
    }

    /// The kernel's receipt-signing public key (hex).
    pub fn public_key_hex(&self) -> &str {
        &self.key_hex
    }

    /// The stores, to inspect.
    pub fn stores(&self) -> &KernelStores {
        &self.stores
    }

    /// The stores, for revocations and other authority actions.
    pub fn stores_mut(&mut self) -> &mut KernelStores {
        &mut self.stores
    }

    /// Replaces the trusted issuer set (as a trust-control refresh does)
    /// with those of `issuers` the kernel was configured to trust, and
    /// answers the set now trusted: a shared store can withdraw trust from
    /// a configured issuer, never lend it to another key (another run's
    /// authority, whose key anyone knowing its seed can derive, or another
    /// edge's).
    pub fn set_trusted_issuers(&mut self, issuers: Vec<String>) -> &[String] {
        self.trusted_issuers = issuers
            .into_iter()
            .filter(|key| self.configured_issuers.contains(key))
            .collect();
        &self.trusted_issuers
    }

    /// Registers the agent named by its own public key (`key_hex`, 64
    /// lowercase hex characters) as the holder of that key, so a request
    /// whose `agent_id` is its key binds to it at step 3 like any
    /// configured agent. A kernel that meets its callers only at call time
    /// (the MCP edge) registers each caller this way: the id claims nothing
    /// the proof does not already prove. A text that is not a public key
    /// registers nothing and answers the key error; an agent configured
    /// under that id keeps its configured key.
    pub fn register_key_agent(&mut self, key_hex: &str) -> Result<(), KernelError> {
        // Only the 64 lowercase hex characters of a curve point parse.
        parse_public_key_hex(key_hex)?;
        self.agent_keys
            .entry(key_hex.to_string())
            .or_insert_with(|| key_hex.to_string());
        Ok(())
    }

    /// Whether `verified` or any capability it descends from is revoked,
    /// read from the revocation store as admission reads it (the same
    /// batch operations and the same reasons): what a listing of the tools
    /// a capability covers checks before it shows any, so a revoked
    /// capability lists nothing. A store that cannot answer is a deny.
    pub fn check_revocation(&mut self, verified: &VerifiedCapability) -> Result<(), DenyReason> {
        let answers = self.stores.run_batch(admit::revocation_ops(verified));
        admit::read_revocation(verified, &mut answers.into_iter())
    }

    /// How many signature verifications the cache answered.
    pub fn signature_cache_hits(&self) -> u64 {
        self.cache.hits()
    }

    /// Admits, dispatches through `dispatch` when admitted, and completes.
    pub fn evaluate(
        &mut self,
        request: &ToolCallRequest,
        now_ms: u64,
        dispatch: &mut dyn FnMut(&AdmissionTicket) -> Result<ToolOutput, String>,
    ) -> Decision {
        match self.admit(request, now_ms) {
            Admission::Decided(decision) => *decision,
            Admission::Admitted(ticket) => match dispatch(&ticket) {
                Ok(output) => self.complete(*ticket, output, now_ms),
                Err(reason) => self.abort(*ticket, &reason, now_ms),
            },
        }
    }

    /// Admits every request, in order, before dispatching any, then
    /// dispatches and completes the admitted ones in the same order: the
    /// deterministic form of calls that arrive together (a concurrent replay
    /// or a burst of copies), where each admission meets the holds and seen
    /// request ids of the admissions before it but no completion. Answers one
    /// decision per request, in request order.
    pub fn evaluate_together(
        &mut self,
        requests: &[(ToolCallRequest, u64)],
        dispatch: &mut dyn FnMut(&AdmissionTicket) -> Result<ToolOutput, String>,
    ) -> Vec<Decision> {
        let admitted: Vec<Admission> = requests
            .iter()
            .map(|(request, now_ms)| self.admit(request, *now_ms))
            .collect();
        admitted
            .into_iter()
            .zip(requests)
            .map(|(admission, (_, now_ms))| match admission {
                Admission::Decided(decision) => *decision,
                Admission::Admitted(ticket) => match dispatch(&ticket) {
                    Ok(output) => self.complete(*ticket, output, *now_ms),
                    Err(reason) => self.abort(*ticket, &reason, *now_ms),
                },
            })
            .collect()
    }
}
