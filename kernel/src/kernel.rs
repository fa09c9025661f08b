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
//!    budgets, and a monetary hold per lineage, each under a hold id scoped
//!    by lineage, principal and request id; released on any later deny;
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
//! label keys, commits the budget holds
//! (the tool did run, so even a withheld output consumes them), appends the
//! session journal entry and the signed receipt, and only then releases the
//! output. A receipt append that fails turns the verdict into a deny naming
//! the receipt store; the deny's own receipt is then attempted once and the
//! decision says whether it was recorded. [`Kernel::abort`] is the deny for
//! a failed dispatch, and [`Kernel::evaluate`] chains the three.
//!
//! Every decision carries a [`DecisionTrace`] built along the way: the
//! stages reached, the label keys, budget keys and journal entries read,
//! and each guard's answer, so a recorded verdict can be explained.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use ed25519_dalek::SigningKey;
use serde_json::Value;

use crate::error::KernelError;
use crate::guards::{
    Guard, GuardContext, GuardMode, GuardNeeds, GuardSpec, GuardVerdict, OutputVerdict,
};
use crate::keys::{parse_public_key_hex, public_key_hex};
use crate::label::{delegation_record_id, is_known_label, LabelKey};
use crate::ledger::seen_request_key;
use crate::receipt::{
    canonical_sha256, ObservedFinding, ReceiptBody, ReceiptDecision, SignedReceipt, RECEIPT_SCHEMA,
};
use crate::request::ToolCallRequest;
use crate::scope::select_grant;
use crate::signature::{verify_hex, SignatureCache};
use crate::stores::{HoldOutcome, JournalEntry, KernelStores, ShareAdmission};
use crate::trace::{BudgetRead, DecisionTrace, GuardAnswer, ShareRead};
use crate::verdict::{ProjectedVerdict, Verdict};
use crate::verification::{verify_capability, VerifiedCapability};

/// Default limit on delegation depth.
pub const DEFAULT_MAX_DELEGATION_DEPTH: usize = 8;
/// Default signature-cache capacity.
pub const DEFAULT_SIGNATURE_CACHE: usize = 4096;

/// An invocation budget for one agent on one tool (a scenario's `[[budgets]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolBudget {
    /// The agent.
    pub agent: String,
    /// The server.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// How many calls it may make.
    pub max_invocations: u64,
}

/// How a kernel is set up.
#[derive(Clone)]
pub struct KernelConfig {
    /// Names the kernel in receipts.
    pub kernel_id: String,
    /// Signs receipts.
    pub signing_key: SigningKey,
    /// Issuer keys (hex) whose capabilities the kernel accepts.
    pub trusted_issuers: Vec<String>,
    /// The guard pipeline, in order.
    pub guards: Vec<GuardSpec>,
    /// Longest delegation chain accepted.
    pub max_delegation_depth: usize,
    /// Known agents' public keys (hex) by agent id; when an agent is listed,
    /// its requests must present a capability whose subject is that key.
    pub agent_keys: BTreeMap<String, String>,
    /// Per-agent tool budgets.
    pub tool_budgets: Vec<ToolBudget>,
    /// Oldest request accepted, in milliseconds of virtual time (`None`: any age).
    pub max_request_age_ms: Option<u64>,
    /// Capacity of the verified-signature cache (0 disables it).
    pub signature_cache_capacity: usize,
}

impl KernelConfig {
    /// A configuration with defaults: no trusted issuer, no guards, depth
    /// limit 8, no request-age limit, signature cache of 4096.
    pub fn new(kernel_id: &str, signing_key: SigningKey) -> Self {
        KernelConfig {
            kernel_id: kernel_id.to_string(),
            signing_key,
            trusted_issuers: Vec::new(),
            guards: Vec::new(),
            max_delegation_depth: DEFAULT_MAX_DELEGATION_DEPTH,
            agent_keys: BTreeMap::new(),
            tool_budgets: Vec::new(),
            max_request_age_ms: None,
            signature_cache_capacity: DEFAULT_SIGNATURE_CACHE,
        }
    }
}

impl fmt::Debug for KernelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelConfig")
            .field("kernel_id", &self.kernel_id)
            .field("kernel_key", &public_key_hex(&self.signing_key))
            .field("trusted_issuers", &self.trusted_issuers)
            .field("guards", &self.guards)
            .field("max_delegation_depth", &self.max_delegation_depth)
            .finish_non_exhaustive()
    }
}

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
    pub label: Option<String>,
    /// The integrity label of what was returned (`integrity:untrusted`)
    /// when it came from an untrusted source; `None` for trusted content,
    /// which lowers nothing.
    pub integrity: Option<String>,
    /// Whether the server carried the call out (a server that answered
    /// that it could not, say for an unknown tool, did not). The session
    /// journal records it, and session rules count only performed calls.
    pub performed: bool,
}

/// A call that passed steps 1 to 7 and may be dispatched.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionTicket {
    request: ToolCallRequest,
    verified: VerifiedCapability,
    /// The verified principal (see [`bind_proof`]).
    principal: String,
    holds: Vec<String>,
    observed: Vec<ObservedFinding>,
    parameter_hash: String,
    /// The trace of admission, continued by [`Kernel::complete`].
    trace: DecisionTrace,
}

impl AdmissionTicket {
    /// The admitted request, to dispatch.
    pub fn request(&self) -> &ToolCallRequest {
        &self.request
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
    guard: Option<String>,
    sanitized: bool,
    observed: Vec<ObservedFinding>,
    output: Option<Value>,
    /// Whether the tool server carried the call out (allows only).
    performed: bool,
}

impl Outcome {
    fn deny(reason: String, guard: Option<String>, observed: Vec<ObservedFinding>) -> Self {
        Outcome {
            verdict: Verdict::Deny,
            reason: Some(reason),
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
    guards: Vec<Box<dyn Guard>>,
    needs: GuardNeeds,
    max_delegation_depth: usize,
    agent_keys: BTreeMap<String, String>,
    tool_budgets: Vec<ToolBudget>,
    max_request_age_ms: Option<u64>,
    cache: SignatureCache,
    stores: KernelStores,
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

impl Kernel {
    /// Builds a kernel, validating issuer keys and guard configurations.
    pub fn new(config: KernelConfig, stores: KernelStores) -> Result<Kernel, KernelError> {
        for issuer in &config.trusted_issuers {
            parse_public_key_hex(issuer)?;
        }
        for key in config.agent_keys.values() {
            parse_public_key_hex(key)?;
        }
        let guards = config
            .guards
            .iter()
            .map(GuardSpec::build)
            .collect::<Result<Vec<_>, _>>()?;
        let needs = guards.iter().fold(GuardNeeds::default(), |acc, g| {
            let n = g.needs();
            GuardNeeds {
                journal: acc.journal || n.journal,
                labels: acc.labels || n.labels,
            }
        });
        Ok(Kernel {
            key_hex: public_key_hex(&config.signing_key),
            kernel_id: config.kernel_id,
            signing_key: config.signing_key,
            trusted_issuers: config.trusted_issuers,
            guards,
            needs,
            max_delegation_depth: config.max_delegation_depth,
            agent_keys: config.agent_keys,
            tool_budgets: config.tool_budgets,
            max_request_age_ms: config.max_request_age_ms,
            cache: SignatureCache::new(config.signature_cache_capacity),
            stores,
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

    /// Replaces the trusted issuer set (as a trust-control refresh does).
    pub fn set_trusted_issuers(&mut self, issuers: Vec<String>) {
        self.trusted_issuers = issuers;
    }

    /// How many signature verifications the cache answered.
    pub fn signature_cache_hits(&self) -> u64 {
        self.cache.hits()
    }

    /// Steps 1 to 7; see the module doc.
    pub fn admit(&mut self, request: &ToolCallRequest, now_ms: u64) -> Admission {
        let parameter_hash = canonical_sha256(&request.arguments).unwrap_or_default();
        let mut holds = Vec::new();
        let mut observed = Vec::new();
        let mut trace = DecisionTrace::default();
        let result = self.admit_steps(request, now_ms, &mut holds, &mut observed, &mut trace);
        match result {
            Ok((verified, principal)) => Admission::Admitted(Box::new(AdmissionTicket {
                request: request.clone(),
                verified,
                principal,
                holds,
                observed,
                parameter_hash,
                trace,
            })),
            Err(mut outcome) => {
                self.release(&holds);
                trace.settle_holds("released");
                outcome.observed = observed;
                let stopped = match outcome.verdict {
                    Verdict::PendingApproval => "pending_approval",
                    _ => "deny",
                };
                trace.stop(stopped, outcome.reason.as_deref().unwrap_or_default());
                Admission::Decided(Box::new(self.finish(
                    request,
                    &parameter_hash,
                    *outcome,
                    now_ms,
                    trace,
                )))
            }
        }
    }

    fn admit_steps(
        &mut self,
        request: &ToolCallRequest,
        now_ms: u64,
        holds: &mut Vec<String>,
        observed: &mut Vec<ObservedFinding>,
        trace: &mut DecisionTrace,
    ) -> Result<(VerifiedCapability, String), Box<Outcome>> {
        let deny = |reason: String| Box::new(Outcome::deny(reason, None, Vec::new()));
        // 1. The capability.
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
        // 2. Revocation, one lookup per id.
        self.check_revocation(&verified).map_err(deny)?;
        trace.pass(format!(
            "looked up {}: none revoked",
            trace.chain.join(", ")
        ));
        // 3. Bind the request to the subject; the principal is the
        // registered agent whose key signed the proof, never the named id.
        let principal = self.bind(request, &verified, now_ms).map_err(deny)?;
        trace.principal = Some(principal.clone());
        // The request id is consumed only by a request whose proof verified,
        // so a forged request cannot burn a genuine request id; it is scoped
        // by lineage and principal, and the store is shared by every kernel
        // and durable in a distributed run.
        let seen_key = seen_request_key(&verified.root_id, &principal, &request.request_id);
        match self.stores.nonces.check_and_record(&seen_key) {
            Ok(true) => {}
            Ok(false) => return Err(deny(format!("request replayed: {}", request.request_id))),
            Err(e) => return Err(deny(e.to_string())),
        }
        trace.pass(format!(
            "principal {principal} signed the proof with the subject key; request id {} is fresh",
            request.request_id
        ));
        // 4. Scope.
        let grant = select_grant(
            &verified.state.scope,
            &request.server,
            &request.tool,
            &request.arguments,
        )
        .map_err(deny)?;
        trace.pass(format!(
            "tool {} on server {} is covered and its constraints hold",
            request.tool, request.server
        ));
        // 5. Budgets.
        let mut wanted: Vec<(String, u64, u64, String)> = Vec::new();
        for limit in &verified.invocation_limits {
            wanted.push((
                format!("invocations/{}", limit.capability_id),
                1,
                limit.max_invocations,
                format!("invocation budget of {}", limit.capability_id),
            ));
        }
        let tool_budgets =
            !crate::planted::weakened_anywhere(crate::planted::Weakness::NoToolBudgets);
        for budget in self.tool_budgets.iter().filter(|b| {
            tool_budgets
                && b.agent == principal
                && b.server == request.server
                && b.tool == request.tool
        }) {
            wanted.push((
                format!(
                    "tool-invocations/{}/{}/{}",
                    budget.agent, budget.server, budget.tool
                ),
                1,
                budget.max_invocations,
                format!(
                    "tool budget of {} for {}/{}",
                    budget.agent, budget.server, budget.tool
                ),
            ));
        }
        if let Some(money) = &grant.monetary {
            wanted.push((
                format!(
                    "monetary/{}/{}/{}",
                    verified.root_id, request.server, money.currency
                ),
                money.amount,
                money.max_total,
                format!("monetary budget in {}", money.currency),
            ));
        }
        for (key, amount, limit, what) in wanted {
            // The hold id carries the scoped request key, so two principals
            // (or two lineages) using one request id never share a hold.
            let hold_id = format!("{seen_key}#{key}");
            let read = |used: u64, limit: u64, outcome: &str| BudgetRead {
                key: key.clone(),
                amount,
                limit,
                used,
                outcome: outcome.to_string(),
                settled: None,
            };
            match self.stores.budgets.hold(&hold_id, &key, amount, limit) {
                Ok(HoldOutcome::Granted { used, limit }) => {
                    trace.budget_keys.push(read(used, limit, "held"));
                    holds.push(hold_id);
                }
                Ok(HoldOutcome::Refused { used, limit }) => {
                    trace.budget_keys.push(read(used, limit, "refused"));
                    return Err(deny(format!(
                        "{what} exhausted: {used} of {limit} used, {amount} more requested"
                    )));
                }
                Err(e) => return Err(deny(e.to_string())),
            }
        }
        trace.pass(match holds.len() {
            0 => "no budget applies".to_string(),
            n => format!("{n} budget hold(s) granted"),
        });
        // 6. Guards.
        let journal = if self.needs.journal {
            self.stores
                .journal
                .entries(&request.session_id)
                .map_err(|e| deny(e.to_string()))?
        } else {
            Vec::new()
        };
        trace.journal = journal.clone();
        let mut labels = BTreeMap::new();
        if self.needs.labels {
            labels = self
                .read_labels(request, &principal, &verified, trace)
                .map_err(deny)?;
        }
        let ctx = GuardContext {
            server: &request.server,
            tool: &request.tool,
            arguments: &request.arguments,
            agent_id: &principal,
            session_id: &request.session_id,
            journal: &journal,
            labels: &labels,
            session_filesystem_roots: None,
        };
        run_request_guards(&self.guards, &ctx, observed, &mut trace.guards)?;
        trace.pass(match self.guards.len() {
            0 => "no guard configured".to_string(),
            n => format!("{n} guard(s) let the call through"),
        });
        // 7. Sibling shares, last.
        for claim in &verified.shares {
            let admitted = self.stores.shares.admit(
                &claim.parent_id,
                &claim.child_id,
                claim.child_bps,
                claim.parent_bps,
            );
            trace.shares.push(ShareRead {
                parent: claim.parent_id.clone(),
                child: claim.child_id.clone(),
                child_bps: claim.child_bps,
                outcome: match &admitted {
                    Ok(ShareAdmission::Admitted) => "admitted",
                    Ok(ShareAdmission::Oversubscribed { .. }) => "oversubscribed",
                    Ok(ShareAdmission::UnknownParent) => "unknown-parent",
                    Err(_) => "error",
                }
                .to_string(),
            });
            match admitted {
                Ok(ShareAdmission::Admitted) => {}
                Ok(refusal) => return Err(deny(share_refusal_reason(claim, &refusal))),
                Err(e) => return Err(deny(e.to_string())),
            }
        }
        trace.pass(match verified.shares.len() {
            0 => "no delegated share to admit".to_string(),
            n => format!("{n} share(s) admitted"),
        });
        Ok((verified, principal))
    }

    /// Reads every place a label is kept for this call, recording each key
    /// in `trace`, and answers the non-empty sets the guards see.
    ///
    /// The session, the principal and the lineage are read (a fresh session
    /// id of the caller's choosing washes neither the principal nor the
    /// lineage), and the delegation record of every link of the presented
    /// chain: what each delegator held when it delegated, kept under the
    /// link's own digest ([`crate::label::delegation_record_id`]). A link
    /// with no record was signed outside the run (a record always holds at
    /// least [`crate::label::DELEGATION_RECORD_FLOOR`]); for it the
    /// delegator's principal labels are read now instead, which holds
    /// everything it held then, so a hand-made link carries no less taint
    /// than a recorded one. The guards see a link's labels under
    /// `delegation/<child id>` either way, so reasons stay readable; the
    /// trace names the keys actually read.
    fn read_labels(
        &self,
        request: &ToolCallRequest,
        principal: &str,
        verified: &VerifiedCapability,
        trace: &mut DecisionTrace,
    ) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
        let mut read = |key: String| -> Result<BTreeSet<String>, String> {
            let set = self.stores.labels.read(&key).map_err(|e| e.to_string())?;
            trace
                .label_keys
                .insert(key, set.iter().cloned().collect::<Vec<_>>());
            Ok(set)
        };
        let mut labels = BTreeMap::new();
        for key in [
            LabelKey::Session(request.session_id.clone()),
            LabelKey::Principal(principal.to_string()),
            LabelKey::Lineage(verified.root_id.clone()),
        ] {
            let key = key.as_key();
            let set = read(key.clone())?;
            if !set.is_empty() {
                labels.insert(key, set);
            }
        }
        for link in &request.capability.delegation_chain {
            let key = format!("delegation/{}", link.child_id);
            let mut set = match delegation_record_id(link) {
                Some(record) => read(LabelKey::Delegation(record).as_key())?,
                None => BTreeSet::new(),
            };
            if set.is_empty() {
                let delegator = self
                    .agent_keys
                    .iter()
                    .find(|(_, k)| **k == link.delegator)
                    .map(|(agent, _)| agent.clone());
                if let Some(agent) = delegator {
                    set = read(LabelKey::Principal(agent).as_key())?;
                }
            }
            if !set.is_empty() {
                labels.insert(key, set);
            }
        }
        Ok(labels)
    }

    fn bind(
        &self,
        request: &ToolCallRequest,
        verified: &VerifiedCapability,
        now_ms: u64,
    ) -> Result<String, String> {
        let principal = bind_proof(request, verified, &self.agent_keys)?;
        if let Some(max_age) = self.max_request_age_ms {
            if now_ms.saturating_sub(request.issued_at_ms) > max_age {
                return Err(format!(
                    "request is stale: issued at {} ms, evaluated at {now_ms} ms, older than {max_age} ms",
                    request.issued_at_ms
                ));
            }
            if request.issued_at_ms.saturating_sub(now_ms) > max_age {
                return Err(format!(
                    "request is dated {} ms, after the evaluation time {now_ms} ms",
                    request.issued_at_ms
                ));
            }
        }
        Ok(principal)
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
            mut observed,
            parameter_hash,
            mut trace,
        } = ticket;
        let journal = Vec::new();
        let labels = BTreeMap::new();
        let ctx = GuardContext {
            server: &request.server,
            tool: &request.tool,
            arguments: &request.arguments,
            agent_id: &principal,
            session_id: &request.session_id,
            journal: &journal,
            labels: &labels,
            session_filesystem_roots: None,
        };
        let result = run_output_guards(
            &self.guards,
            &ctx,
            output.content,
            &mut observed,
            &mut trace.guards,
        );
        let commit = self.commit(&holds);
        trace.settle_holds(if commit.is_ok() {
            "committed"
        } else {
            "commit-failed"
        });
        let (content, sanitized, rewrite) = match result {
            Ok(done) => done,
            Err(outcome) => {
                let mut outcome = *outcome;
                outcome.observed = observed;
                trace.output("deny", outcome.reason.clone().unwrap_or_default());
                return self.finish(&request, &parameter_hash, outcome, now_ms, trace);
            }
        };
        let fail = |reason: String, observed: Vec<ObservedFinding>, trace: &mut DecisionTrace| {
            trace.output("deny", reason.clone());
            Outcome::deny(reason, None, observed)
        };
        if let Err(e) = commit {
            let outcome = fail(e, observed, &mut trace);
            return self.finish(&request, &parameter_hash, outcome, now_ms, trace);
        }
        // Revocation again before the allow is finalised: a revocation that
        // raced the dispatch withholds the output (the tool did run, so the
        // budget stays committed).
        if let Err(reason) = self.check_revocation(&verified) {
            let outcome = fail(format!("{reason}; output withheld"), observed, &mut trace);
            return self.finish(&request, &parameter_hash, outcome, now_ms, trace);
        }
        let joined: Vec<&String> = output.label.iter().chain(output.integrity.iter()).collect();
        if let Some(name) = joined.iter().find(|n| !is_known_label(n)) {
            let outcome = fail(
                format!("tool output label {name:?} is not a known level; output withheld"),
                observed,
                &mut trace,
            );
            return self.finish(&request, &parameter_hash, outcome, now_ms, trace);
        }
        if !joined.is_empty() {
            for key in [
                LabelKey::Session(request.session_id.clone()),
                LabelKey::Principal(principal.clone()),
                LabelKey::Lineage(verified.root_id.clone()),
            ] {
                let key = key.as_key();
                for name in &joined {
                    if let Err(e) = self.stores.labels.join(&key, name) {
                        let outcome = fail(format!("{e}; output withheld"), observed, &mut trace);
                        return self.finish(&request, &parameter_hash, outcome, now_ms, trace);
                    }
                }
                trace.label_writes.push(key);
            }
            trace.output_label = output.label.clone();
            trace.output_integrity = output.integrity.clone();
        }
        trace.output(
            if sanitized { "rewrite" } else { "pass" },
            match (&output.label, output.performed) {
                (Some(label), true) => match &output.integrity {
                    Some(integrity) => format!("output released, labelled {label} and {integrity}"),
                    None => format!("output released, labelled {label}"),
                },
                (None, true) if output.integrity.is_some() => format!(
                    "output released, labelled {}",
                    output.integrity.as_deref().unwrap_or_default()
                ),
                (None, true) => "output released".to_string(),
                (_, false) => "output released; the server did not carry the call out".to_string(),
            },
        );
        let (reason, guard) = match rewrite {
            Some((guard, why)) => (Some(why), Some(guard)),
            None => (None, None),
        };
        let outcome = Outcome {
            verdict: Verdict::Allow,
            reason,
            guard,
            sanitized,
            observed,
            output: Some(content),
            performed: output.performed,
        };
        self.finish(&request, &parameter_hash, outcome, now_ms, trace)
    }

    /// Step 8 after a dispatch that failed: deny, budget released.
    pub fn abort(&mut self, ticket: AdmissionTicket, reason: &str, now_ms: u64) -> Decision {
        self.release(&ticket.holds);
        let reason = format!("dispatch failed: {reason}");
        let mut trace = ticket.trace;
        trace.settle_holds("released");
        trace.output("deny", reason.clone());
        let outcome = Outcome::deny(reason, None, ticket.observed);
        self.finish(
            &ticket.request,
            &ticket.parameter_hash,
            outcome,
            now_ms,
            trace,
        )
    }

    /// Admits, dispatches through `dispatch` when admitted, and completes.
    pub fn evaluate(
        &mut self,
        request: &ToolCallRequest,
        now_ms: u64,
        dispatch: &mut dyn FnMut(&ToolCallRequest) -> Result<ToolOutput, String>,
    ) -> Decision {
        match self.admit(request, now_ms) {
            Admission::Decided(decision) => *decision,
            Admission::Admitted(ticket) => match dispatch(ticket.request()) {
                Ok(output) => self.complete(*ticket, output, now_ms),
                Err(reason) => self.abort(*ticket, &reason, now_ms),
            },
        }
    }

    /// Looks up the presented id and every ancestor in the revocation store,
    /// one uncached lookup each; the first revoked id or failed lookup is the
    /// deny reason. Run at admission and again before an allow is finalised.
    fn check_revocation(&self, verified: &VerifiedCapability) -> Result<(), String> {
        match self.stores.revocations.is_revoked(&verified.id) {
            Ok(false) => {}
            Ok(true) => return Err(format!("capability has been revoked: {}", verified.id)),
            Err(e) => return Err(e.to_string()),
        }
        for ancestor in &verified.ancestors {
            match self.stores.revocations.is_revoked(ancestor) {
                Ok(false) => {}
                Ok(true) => return Err(format!("delegation chain revoked at ancestor {ancestor}")),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }

    fn release(&mut self, holds: &[String]) {
        for hold in holds {
            // A failed release leaves a hold counted: that errs towards
            // refusing later calls, never towards allowing one.
            let _ = self.stores.budgets.release(hold);
        }
    }

    fn commit(&mut self, holds: &[String]) -> Result<(), String> {
        for hold in holds {
            self.stores
                .budgets
                .commit(hold)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Journals, signs and appends the receipt, and builds the decision.
    fn finish(
        &mut self,
        request: &ToolCallRequest,
        parameter_hash: &str,
        outcome: Outcome,
        now_ms: u64,
        mut trace: DecisionTrace,
    ) -> Decision {
        let mut outcome = outcome;
        let projected = outcome.verdict.project(outcome.sanitized);
        if let Err(e) = self.stores.journal.append(
            &request.session_id,
            JournalEntry {
                request_id: request.request_id.clone(),
                server: request.server.clone(),
                tool: request.tool.clone(),
                verdict: projected.as_str().to_string(),
                at_ms: now_ms,
                performed: outcome.verdict == Verdict::Allow && outcome.performed,
            },
        ) {
            if outcome.verdict == Verdict::Allow {
                let reason = format!("{e}; output withheld");
                trace.output("deny", reason.clone());
                outcome = Outcome::deny(reason, None, outcome.observed);
            }
        }
        let receipt = self.sign_receipt(request, parameter_hash, &outcome, now_ms);
        match self.stores.receipts.append(&receipt) {
            Ok(()) => self.decision(outcome, receipt, true, trace),
            Err(e) => {
                if outcome.verdict == Verdict::Allow {
                    let reason = format!("{e}; no allow is released without a receipt");
                    trace.output("deny", reason.clone());
                    let deny = Outcome::deny(reason, None, outcome.observed);
                    let receipt = self.sign_receipt(request, parameter_hash, &deny, now_ms);
                    let recorded = self.stores.receipts.append(&receipt).is_ok();
                    self.decision(deny, receipt, recorded, trace)
                } else {
                    self.decision(outcome, receipt, false, trace)
                }
            }
        }
    }

    fn decision(
        &self,
        outcome: Outcome,
        receipt: SignedReceipt,
        recorded: bool,
        trace: DecisionTrace,
    ) -> Decision {
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

    fn sign_receipt(
        &self,
        request: &ToolCallRequest,
        parameter_hash: &str,
        outcome: &Outcome,
        now_ms: u64,
    ) -> SignedReceipt {
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
                reason: outcome.reason.clone(),
                guard: outcome.guard.clone(),
                sanitized: outcome.sanitized,
            },
            observed: outcome.observed.clone(),
            output_hash: outcome
                .output
                .as_ref()
                .map(|o| canonical_sha256(o).unwrap_or_default()),
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

/// Exact reason prefix: the request names an agent that is not the
/// registered holder of the key that signed its proof.
pub const NOT_THE_PROVING_AGENT: &str = "request names an agent that does not hold the proving key";

/// Checks the proof of possession against the verified subject and answers
/// the call's principal: the registered agent whose key signed the proof.
///
/// The named `agent_id` is a claim; only the key is evidence. A request
/// whose named agent is registered with another key, or is not registered
/// at all, is refused, so budgets, labels, journals and receipts can key on
/// the answer without trusting the request. A kernel with no registered
/// agents therefore admits no call.
pub fn bind_proof(
    request: &ToolCallRequest,
    verified: &VerifiedCapability,
    agent_keys: &BTreeMap<String, String>,
) -> Result<String, String> {
    if request.proof.signer.is_empty() || request.proof.signature.is_empty() {
        return Err("proof of possession is missing".to_string());
    }
    match agent_keys.get(&request.agent_id) {
        Some(key) if *key != verified.subject => {
            return Err(format!(
                "capability presented by another agent: agent {} does not hold the subject key of capability {}",
                request.agent_id, verified.id
            ));
        }
        Some(_) => {}
        None => {
            return Err(format!(
                "{NOT_THE_PROVING_AGENT}: agent {} is not registered with key {}",
                printable_id(&request.agent_id),
                short(&request.proof.signer)
            ));
        }
    }
    if request.proof.signer != verified.subject {
        return Err(format!(
            "capability presented by another agent: request signed by key {}, capability {} belongs to key {}",
            short(&request.proof.signer),
            verified.id,
            short(&verified.subject)
        ));
    }
    let message = request
        .proof_message()
        .map_err(|e| format!("request cannot be canonicalised for its proof: {e}"))?;
    if !verify_hex(None, &verified.subject, &message, &request.proof.signature) {
        return Err("proof of possession is invalid".to_string());
    }
    Ok(request.agent_id.clone())
}

/// An attacker-chosen id as it may appear in a reason: at most 64
/// characters, control characters replaced, so a reason stays one line.
fn printable_id(id: &str) -> String {
    let mut out: String = id
        .chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if id.chars().count() > 64 {
        out.push_str("...");
    }
    out
}

fn short(key: &str) -> &str {
    key.get(..16).unwrap_or(key)
}

/// The deny reason of a refused share admission.
pub fn share_refusal_reason(
    claim: &crate::verification::ShareClaim,
    refusal: &ShareAdmission,
) -> String {
    match refusal {
        ShareAdmission::Oversubscribed {
            siblings_bps,
            parent_bps,
        } => format!(
            "sibling shares oversubscribed: child {} asks {} bps, admitted siblings hold {siblings_bps} of parent {}'s {parent_bps} bps",
            claim.child_id, claim.child_bps, claim.parent_id
        ),
        ShareAdmission::UnknownParent => format!(
            "sibling share registry does not know parent {}",
            claim.parent_id
        ),
        ShareAdmission::Admitted => String::new(),
    }
}

/// Runs the pre-dispatch guards; observe-mode answers go to `observed`.
fn run_request_guards(
    guards: &[Box<dyn Guard>],
    ctx: &GuardContext<'_>,
    observed: &mut Vec<ObservedFinding>,
    answers: &mut Vec<GuardAnswer>,
) -> Result<(), Box<Outcome>> {
    for guard in guards {
        let meta = guard.meta();
        let answer = guard.check_request(ctx);
        answers.push(GuardAnswer {
            guard: meta.id.clone(),
            kind: guard.kind().as_str().to_string(),
            mode: meta.mode.as_str().to_string(),
            phase: "request".to_string(),
            answer: match &answer {
                Ok(GuardVerdict::Allow) => "allow",
                Ok(GuardVerdict::Deny(_)) => "deny",
                Ok(GuardVerdict::PendingApproval(_)) => "pending_approval",
                Err(_) => "error",
            }
            .to_string(),
            reason: match &answer {
                Ok(GuardVerdict::Allow) => None,
                Ok(GuardVerdict::Deny(r)) | Ok(GuardVerdict::PendingApproval(r)) => Some(r.clone()),
                Err(e) => Some(format!("guard {} failed: {e}", meta.id)),
            },
        });
        let (would, reason) = match answer {
            Ok(GuardVerdict::Allow) => continue,
            Ok(GuardVerdict::Deny(reason)) => ("deny", reason),
            Ok(GuardVerdict::PendingApproval(reason)) => ("pending_approval", reason),
            Err(e) => ("error", format!("guard {} failed: {e}", meta.id)),
        };
        if meta.mode == GuardMode::Observe {
            observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would: would.to_string(),
                reason,
            });
            continue;
        }
        let mut outcome = Outcome::deny(reason, Some(meta.id.clone()), Vec::new());
        if would == "pending_approval" {
            outcome.verdict = Verdict::PendingApproval;
        }
        return Err(Box::new(outcome));
    }
    Ok(())
}

/// A rewrite that a post-invocation guard made: (guard id, what changed).
type Rewrite = Option<(String, String)>;

/// Runs the post-invocation guards over the output in pipeline order.
fn run_output_guards(
    guards: &[Box<dyn Guard>],
    ctx: &GuardContext<'_>,
    content: Value,
    observed: &mut Vec<ObservedFinding>,
    answers: &mut Vec<GuardAnswer>,
) -> Result<(Value, bool, Rewrite), Box<Outcome>> {
    let mut content = content;
    let mut sanitized = false;
    let mut rewrite: Rewrite = None;
    for guard in guards.iter().filter(|g| g.inspects_output()) {
        let meta = guard.meta();
        let observe = meta.mode == GuardMode::Observe;
        let answer = guard.check_output(ctx, &content);
        answers.push(GuardAnswer {
            guard: meta.id.clone(),
            kind: guard.kind().as_str().to_string(),
            mode: meta.mode.as_str().to_string(),
            phase: "output".to_string(),
            answer: match &answer {
                Ok(OutputVerdict::Pass) => "pass",
                Ok(OutputVerdict::Deny(_)) => "deny",
                Ok(OutputVerdict::Rewrite(..)) => "rewrite",
                Err(_) => "error",
            }
            .to_string(),
            reason: match &answer {
                Ok(OutputVerdict::Pass) => None,
                Ok(OutputVerdict::Deny(r)) | Ok(OutputVerdict::Rewrite(_, r)) => Some(r.clone()),
                Err(e) => Some(format!("guard {} failed: {e}", meta.id)),
            },
        });
        match answer {
            Ok(OutputVerdict::Pass) => {}
            Ok(OutputVerdict::Deny(reason)) if observe => observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would: "deny".to_string(),
                reason,
            }),
            Ok(OutputVerdict::Deny(reason)) => {
                return Err(Box::new(Outcome::deny(
                    reason,
                    Some(meta.id.clone()),
                    Vec::new(),
                )))
            }
            Ok(OutputVerdict::Rewrite(_, why)) if observe => observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would: "rewrite".to_string(),
                reason: why,
            }),
            Ok(OutputVerdict::Rewrite(new, why)) => {
                content = new;
                sanitized = true;
                rewrite = Some(match rewrite {
                    Some((g, w)) => (g, format!("{w}; {why}")),
                    None => (meta.id.clone(), why),
                });
            }
            Err(e) if observe => observed.push(ObservedFinding {
                guard: meta.id.clone(),
                would: "error".to_string(),
                reason: format!("guard {} failed: {e}", meta.id),
            }),
            Err(e) => {
                return Err(Box::new(Outcome::deny(
                    format!("guard {} failed: {e}; output withheld", meta.id),
                    Some(meta.id.clone()),
                    Vec::new(),
                )))
            }
        }
    }
    Ok((content, sanitized, rewrite))
}
