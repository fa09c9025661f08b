//! Deny reasons: every reason the kernel signs into a deny (or a pending
//! approval) as a value with a stable code.
//!
//! A [`DenyReason`] carries what its message names (ids, paths, amounts)
//! and prints, with [`std::fmt::Display`], exactly the text a receipt
//! signs; [`DenyReason::code`] is its [`ReasonCode`], a short kebab-case
//! word that stays the same whatever the filled-in values are. The code is
//! not signed: it travels beside the message, in the decision trace and in
//! a run's step records, so a scenario can pin a reason by its code
//! (`expect_reason = "revoked"`) instead of by a part of its text.
//!
//! A reason that withholds a tool's output after the tool ran carries the
//! code of its cause: `capability has been revoked: <id>; output withheld`
//! is `revoked`, like the same reason before dispatch; the trace's stage
//! tells them apart. `docs/errors.md` lists every code with its message; a
//! test keeps that table and [`ReasonCode::ALL`] equal.

mod code;
mod display;
mod money;
mod subject;

pub use code::ReasonCode;
pub use display::printable_id;
pub use money::MoneyDeny;
pub use subject::{BudgetName, Widening};

use crate::error::StoreError;

/// What a prompt-injection reason names: the pattern and the place found,
/// or the scan limit reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// `arguments` or `tool output`.
    pub place: &'static str,
    /// The JSON pointer, when the finding has one place.
    pub pointer: Option<String>,
    /// The pattern's name.
    pub pattern: String,
}

/// A deny (or pending-approval) reason; see the module doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyReason {
    /// The token's schema is not a capability's.
    SchemaUnknown {
        /// The schema as presented.
        schema: String,
    },
    /// A delegated capability carries no root grant.
    RootGrantMissing,
    /// A capability carries a root grant but no delegation chain.
    RootGrantUnexpected,
    /// The issuer is not in the trusted set.
    UntrustedIssuer,
    /// A signature over the capability does not verify.
    InvalidSignature,
    /// The clock is before `not_before_ms`.
    NotYetValid,
    /// The clock is after `expires_at_ms`.
    Expired,
    /// The chain is longer than the limit.
    DelegationTooDeep {
        /// The chain's length.
        depth: usize,
        /// The kernel's limit.
        limit: usize,
    },
    /// A key field of the capability is not an Ed25519 public key in
    /// lowercase hex.
    KeyMalformed {
        /// The field's path inside the capability (`subject`,
        /// `delegation_chain[0].delegatee`); never the value.
        field: String,
    },
    /// A link does not continue from its parent.
    ChainBroken {
        /// The link's index.
        index: usize,
        /// The link's child id.
        child: String,
        /// The id it should continue from.
        parent: String,
    },
    /// A capability id appears twice.
    ChainCycleId {
        /// The repeated id.
        child: String,
    },
    /// A link delegates back to a key already in the chain.
    ChainCycleKey {
        /// The link's child id.
        child: String,
    },
    /// A link dated before its parent link.
    LinkBeforeParent {
        /// The link's child id.
        child: String,
    },
    /// A link dated after the evaluation time.
    LinkInFuture {
        /// The link's child id.
        child: String,
    },
    /// A link widens its parent's scope.
    WidensScope {
        /// The link's child id.
        child: String,
        /// Where.
        widening: Widening,
    },
    /// A link expires after its parent.
    WidensExpiry {
        /// The link's child id.
        child: String,
        /// The link's expiry (ms).
        expires: u64,
        /// The parent's expiry (ms).
        parent: u64,
    },
    /// A link becomes valid before its parent.
    WidensStart {
        /// The link's child id.
        child: String,
        /// The link's start (ms).
        not_before: u64,
        /// The parent's start (ms).
        parent: u64,
    },
    /// A link allows more invocations than its parent.
    WidensBudget {
        /// The link's child id.
        child: String,
        /// The link's limit.
        allows: u64,
        /// The parent's limit.
        parent: u64,
    },
    /// A link has no limit under a limited parent.
    UnlimitedBudget {
        /// The link's child id.
        child: String,
        /// The parent's limit.
        parent: u64,
    },
    /// A link's share exceeds its parent's.
    WidensShare {
        /// The link's child id.
        child: String,
        /// The link's share (bps).
        bps: u32,
        /// The parent's share (bps).
        parent: u32,
    },
    /// The presented capability is revoked.
    Revoked {
        /// Its id.
        id: String,
    },
    /// An ancestor is revoked.
    ChainRevoked {
        /// The revoked ancestor's id.
        ancestor: String,
    },
    /// A store failed; the message names it.
    Store(StoreError),
    /// No proof of possession.
    ProofMissing,
    /// The named agent is not registered with the proving key.
    NotTheProvingAgent {
        /// The named agent, made printable.
        agent: String,
        /// The proving key, shortened.
        key: String,
    },
    /// The named agent does not hold the subject key.
    AgentNotSubject {
        /// The named agent.
        agent: String,
        /// The capability.
        capability: String,
    },
    /// The proof was signed by a key other than the subject's.
    SignerNotSubject {
        /// The signing key, shortened.
        signer: String,
        /// The capability.
        capability: String,
        /// The subject key, shortened.
        subject: String,
    },
    /// The proof does not verify.
    ProofInvalid,
    /// The request cannot be canonicalised.
    ProofUncanonical {
        /// Why.
        cause: String,
    },
    /// The request is too old.
    RequestStale {
        /// When it was issued (ms).
        issued: u64,
        /// The evaluation time (ms).
        now: u64,
        /// The kernel's bound (ms).
        max_age: u64,
    },
    /// The request is dated after the evaluation time.
    RequestFromFuture {
        /// When it claims to be issued (ms).
        issued: u64,
        /// The evaluation time (ms).
        now: u64,
    },
    /// The request id was seen before.
    Replayed {
        /// The request id.
        request_id: String,
    },
    /// The kernel's catalog lists no such server.
    ServerNotServed {
        /// The server.
        server: String,
    },
    /// The server's contract declares no such tool.
    ToolNotDeclared {
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// The arguments fail the tool's input schema.
    ArgumentsRefused {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The JSON pointer of the failing argument (`/` for the whole).
        pointer: String,
        /// The schema keyword it breaks.
        keyword: String,
    },
    /// A quarantined reader calling a consequential tool.
    QuarantinedConsequential {
        /// The agent.
        agent: String,
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// An argument built from a handed-over value whose record holds nothing.
    ArgumentUnrecorded {
        /// The argument's JSON pointer.
        argument: String,
        /// The record key it names.
        record: String,
    },
    /// A message or hand-over whose value is built from a hand-over
    /// record that holds nothing (never written): its labels are unknown,
    /// so nothing is carried.
    MessageUnrecorded {
        /// The JSON pointer of the part built from it within the value
        /// (`""` for the whole value or forwarded output).
        pointer: String,
        /// The record key it names.
        record: String,
    },
    /// A handed-over value its schema refuses.
    HandOverRefused {
        /// Where in the value it fails.
        pointer: String,
        /// The keyword that refused it.
        keyword: String,
    },
    /// No grant covers the tool.
    OutOfScope {
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// A capability that pins tool definitions met a definition other than
    /// the one it was issued for (a rug pull).
    DefinitionChanged {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// A capability that pins tool definitions pins none for this tool.
    DefinitionNotPinned {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// A capability that pins tool definitions, before a kernel that holds
    /// no definition of the tool (a portable evaluation has no catalog).
    DefinitionUnknown {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// A constraint the kernel does not know.
    ConstraintUnknown {
        /// Its name.
        name: String,
    },
    /// A constraint value the kernel cannot read.
    ConstraintMalformed {
        /// `path_prefix`, `monetary` or `tool_digests`.
        name: &'static str,
    },
    /// `path_prefix` and no path argument.
    PathArgumentMissing,
    /// A path climbing above its start.
    PathEscapesRoot {
        /// The path as presented.
        path: String,
    },
    /// A path with a NUL byte.
    PathNulByte {
        /// The path as presented.
        path: String,
    },
    /// A path outside the granted prefix.
    OutsidePrefix {
        /// The path as presented.
        path: String,
        /// Its JSON pointer.
        pointer: String,
        /// The prefix as granted.
        prefix: String,
    },
    /// A monetary argument that is not a whole number.
    AmountMalformed {
        /// The argument's name.
        argument: String,
    },
    /// An amount above the per-invocation maximum.
    AmountTooLarge {
        /// The amount.
        amount: u64,
        /// The currency.
        currency: String,
        /// The maximum.
        max: u64,
    },
    /// A budget with no room.
    BudgetExhausted {
        /// Which budget.
        budget: BudgetName,
        /// Units in use.
        used: u64,
        /// Its limit.
        limit: u64,
        /// Units asked for.
        amount: u64,
    },
    /// A monetary budget's reason (see [`MoneyDeny`]).
    Money(Box<MoneyDeny>),
    /// A path matching a forbidden glob.
    ForbiddenPath {
        /// The path as presented.
        path: String,
        /// The glob.
        glob: String,
    },
    /// A path outside the allowlist.
    NotAllowlisted {
        /// The path as presented.
        path: String,
        /// `read` or `write`.
        access: &'static str,
    },
    /// A listed tool without a path argument.
    AllowlistPathMissing {
        /// The tool.
        tool: String,
        /// `read` or `write`.
        access: &'static str,
    },
    /// A path outside the session's roots.
    OutsideSessionRoots {
        /// The path as presented.
        path: String,
    },
    /// A required predecessor has not run.
    SequenceRequired {
        /// The tool.
        tool: String,
        /// The predecessor.
        requires: String,
        /// The session.
        session: String,
    },
    /// A retained label above a clearance.
    InformationFlow {
        /// The label.
        label: String,
        /// The label key it was found under.
        key: String,
        /// The server's clearance.
        clearance: String,
        /// The server.
        server: String,
    },
    /// Untrusted content before a consequential tool.
    UntrustedContext {
        /// The label key holding it.
        key: String,
        /// The integrity level.
        level: String,
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// A planner's protected argument carrying untrusted content.
    UntrustedArgument {
        /// The argument's JSON pointer.
        argument: String,
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// A planner's argument of an open-world tool carrying untrusted content.
    UntrustedOpenWorldArgument {
        /// The argument's JSON pointer.
        argument: String,
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// A prompt injection at one place, or split across values.
    PromptInjection(Injection),
    /// A credential in a call's arguments, which the secret-redaction
    /// guard scanning arguments refuses to send.
    CredentialInArguments {
        /// The shape that matched (`github-token`, ...).
        shape: &'static str,
        /// The JSON pointer of the string holding it.
        pointer: String,
    },
    /// A credential only the string values of a call's arguments read
    /// together carry (secret-redaction scanning arguments).
    CredentialSplitInArguments {
        /// The shape that matched.
        shape: &'static str,
        /// The JSON pointers of the strings it is split across.
        pointers: Vec<String>,
    },
    /// A call to a tool whose definition in force carries an injection
    /// (tool poisoning), refused by a prompt-injection guard that reads
    /// definitions. It names where in the definition and the pattern,
    /// never the text.
    PoisonedDefinition {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The JSON pointer into the definition (`/description`, ...).
        pointer: String,
        /// The pattern that fired, or `scan-limit`.
        pattern: String,
    },
    /// The injection scan's limit.
    ScanLimit {
        /// `arguments` or `tool output`.
        place: &'static str,
        /// Where the scan stopped.
        pointer: String,
        /// Which limit.
        limit: String,
    },
    /// A tool that always needs approval.
    ApprovalRequired {
        /// The tool.
        tool: String,
    },
    /// An argument above the approval threshold.
    ApprovalThreshold {
        /// The argument.
        argument: String,
        /// Its value.
        value: String,
        /// The threshold.
        threshold: String,
    },
    /// A guard that could not decide.
    GuardFailed {
        /// The guard id.
        guard: String,
        /// Why.
        cause: String,
    },
    /// Sibling shares above the parent's.
    SharesOversubscribed {
        /// The child.
        child: String,
        /// The child's share.
        bps: u32,
        /// What admitted siblings hold.
        siblings: u32,
        /// The parent.
        parent: String,
        /// The parent's share.
        parent_bps: u32,
    },
    /// A parent unknown to the share registry.
    ShareParentUnknown {
        /// The parent.
        parent: String,
    },
    /// The dispatch failed.
    DispatchFailed {
        /// Why.
        cause: String,
    },
    /// An output label that is not a known level.
    OutputLabelUnknown {
        /// The label as the server gave it.
        label: String,
    },
    /// The released output has no canonical JSON form (an integer beyond
    /// 2^53), so no receipt can bind its hash.
    OutputUncanonical {
        /// Why.
        cause: String,
    },
    /// The allow's receipt could not be appended.
    ReceiptUnrecorded(StoreError),
    /// `<reason>; output withheld`: the tool ran, its output is withheld.
    Withheld(Box<DenyReason>),
    /// A portable request whose agent is not the subject.
    PortableNotSubject {
        /// The request's agent key, shortened.
        agent: String,
        /// The capability.
        capability: String,
    },
    /// An approval portable evaluation cannot run.
    PortableApproval {
        /// The guard id.
        guard: String,
        /// The approval's own reason.
        reason: Box<DenyReason>,
    },
}

impl DenyReason {
    /// The same reason with `; output withheld` after it.
    pub fn withheld(self) -> DenyReason {
        DenyReason::Withheld(Box::new(self))
    }
}

impl From<MoneyDeny> for DenyReason {
    fn from(reason: MoneyDeny) -> Self {
        DenyReason::Money(Box::new(reason))
    }
}

impl From<StoreError> for DenyReason {
    fn from(error: StoreError) -> Self {
        DenyReason::Store(error)
    }
}

#[cfg(test)]
mod tests;
