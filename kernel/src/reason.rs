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

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::token::CAPABILITY_SCHEMA;

macro_rules! reason_codes {
    ($($(#[$doc:meta])* $variant:ident => $code:literal,)+) => {
        /// The stable code of a reason, one per reason template.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum ReasonCode {
            $($(#[$doc])* $variant,)+
        }

        impl ReasonCode {
            /// Every code, in documentation order.
            pub const ALL: &'static [ReasonCode] = &[$(ReasonCode::$variant,)+];

            /// The kebab-case code.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $(ReasonCode::$variant => $code,)+
                }
            }
        }
    };
}

reason_codes! {
    /// `capability schema "<s>" is not chio.capability/v1`.
    SchemaUnknown => "schema-unknown",
    /// A delegated capability without its root grant.
    RootGrantMissing => "root-grant-missing",
    /// A root grant on a capability that is not delegated.
    RootGrantUnexpected => "root-grant-unexpected",
    /// The issuer is not trusted.
    UntrustedIssuer => "untrusted-issuer",
    /// A signature over the capability does not verify.
    InvalidSignature => "invalid-signature",
    /// The clock is before the capability's window.
    NotYetValid => "not-yet-valid",
    /// The clock is after the capability's window.
    Expired => "expired",
    /// The chain is longer than the kernel admits.
    DelegationTooDeep => "delegation-too-deep",
    /// A link does not continue from its parent.
    ChainBroken => "chain-broken",
    /// A capability id appears twice in the chain.
    ChainCycleId => "chain-cycle-id",
    /// A link delegates back to a key already in the chain.
    ChainCycleKey => "chain-cycle-key",
    /// A link is dated before its parent link.
    LinkBeforeParent => "link-before-parent",
    /// A link is dated after the evaluation time.
    LinkInFuture => "link-in-future",
    /// A link grants a server its parent does not.
    WidensServer => "widens-server",
    /// A link grants a tool its parent does not.
    WidensTool => "widens-tool",
    /// A link loosens a constraint of its parent.
    WidensConstraint => "widens-constraint",
    /// A link expires after its parent.
    WidensExpiry => "widens-expiry",
    /// A link becomes valid before its parent.
    WidensStart => "widens-start",
    /// A link allows more invocations than its parent.
    WidensBudget => "widens-budget",
    /// A link has no invocation limit under a limited parent.
    UnlimitedBudget => "unlimited-budget",
    /// A link's share exceeds its parent's.
    WidensShare => "widens-share",
    /// The presented capability is revoked.
    Revoked => "revoked",
    /// An ancestor of the presented capability is revoked.
    ChainRevoked => "chain-revoked",
    /// A store did not answer.
    StoreUnavailable => "store-unavailable",
    /// A store refused the operation as inconsistent.
    StoreRefused => "store-refused",
    /// The request carries no proof of possession.
    ProofMissing => "proof-missing",
    /// The named agent is not registered with the proving key.
    NotTheProvingAgent => "not-the-proving-agent",
    /// The named agent does not hold the capability's subject key.
    AgentNotSubject => "agent-not-subject",
    /// The proof's key is not the capability's subject key.
    SignerNotSubject => "signer-not-subject",
    /// The proof of possession does not verify.
    ProofInvalid => "proof-invalid",
    /// The request has no canonical form to prove.
    ProofUncanonical => "proof-uncanonical",
    /// The request is older than the kernel admits.
    RequestStale => "request-stale",
    /// The request is dated after the evaluation time.
    RequestFromFuture => "request-from-future",
    /// The request id was seen before.
    Replayed => "replayed",
    /// The kernel does not serve the server.
    ServerNotServed => "server-not-served",
    /// The server does not declare the tool.
    ToolNotDeclared => "tool-not-declared",
    /// The arguments fail the tool's input schema.
    ArgumentsRefused => "arguments-refused",
    /// No scope grant covers the tool.
    OutOfScope => "out-of-scope",
    /// A constraint the kernel does not know.
    ConstraintUnknown => "constraint-unknown",
    /// A constraint whose value the kernel cannot read.
    ConstraintMalformed => "constraint-malformed",
    /// `path_prefix` with no path argument to check.
    PathArgumentMissing => "path-argument-missing",
    /// A path whose `..` climbs above its start.
    PathEscapesRoot => "path-escapes-root",
    /// A path with a NUL byte.
    PathNulByte => "path-nul-byte",
    /// A path outside the granted prefix.
    OutsidePrefix => "outside-prefix",
    /// A monetary argument that is not a whole number.
    AmountMalformed => "amount-malformed",
    /// An amount above the per-invocation maximum.
    AmountTooLarge => "amount-too-large",
    /// A budget with no room left.
    BudgetExhausted => "budget-exhausted",
    /// A path matching a forbidden glob (forbidden-path).
    ForbiddenPath => "forbidden-path",
    /// A path outside the allowlist (path-allowlist).
    NotAllowlisted => "not-allowlisted",
    /// A listed tool without a path argument (path-allowlist).
    AllowlistPathMissing => "allowlist-path-missing",
    /// A path outside the session's roots (path-allowlist).
    OutsideSessionRoots => "outside-session-roots",
    /// A tool whose required predecessor has not run (behavioral-sequence).
    SequenceRequired => "sequence-required",
    /// A retained label above the destination's clearance (information-flow).
    InformationFlow => "information-flow",
    /// Untrusted content before a consequential tool (integrity).
    UntrustedContext => "untrusted-context",
    /// A prompt injection found at one place (prompt-injection).
    PromptInjection => "prompt-injection",
    /// A prompt injection split across string values (prompt-injection).
    PromptInjectionSplit => "prompt-injection-split",
    /// The injection scan ran past its budget (prompt-injection).
    ScanLimit => "scan-limit",
    /// A tool that always needs approval (approval).
    ApprovalRequired => "approval-required",
    /// An argument above the approval threshold (approval).
    ApprovalThreshold => "approval-threshold",
    /// A guard that could not decide.
    GuardFailed => "guard-failed",
    /// Sibling shares above the parent's.
    SharesOversubscribed => "shares-oversubscribed",
    /// A share under a parent the registry does not know.
    ShareParentUnknown => "share-parent-unknown",
    /// The tool call could not be dispatched.
    DispatchFailed => "dispatch-failed",
    /// An output label that is not a known level.
    OutputLabelUnknown => "output-label-unknown",
    /// The allow's receipt could not be appended.
    ReceiptUnrecorded => "receipt-unrecorded",
    /// A portable request whose agent is not the subject.
    PortableNotSubject => "portable-not-subject",
    /// An approval that portable evaluation cannot run.
    PortableApproval => "portable-approval",
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ReasonCode {
    /// The code spelt `text`, if it is one.
    pub fn parse(text: &str) -> Option<ReasonCode> {
        ReasonCode::ALL.iter().copied().find(|c| c.as_str() == text)
    }
}

impl Serialize for ReasonCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ReasonCode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ReasonCode::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown reason code {text:?}")))
    }
}

/// Where a delegation link widens its parent's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Widening {
    /// A server the parent does not grant.
    Server {
        /// The server.
        server: String,
    },
    /// A tool the parent does not grant on that server.
    Tool {
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// A constraint looser than the parent's.
    Constraint {
        /// The constraint's name.
        name: String,
        /// The server.
        server: String,
    },
}

impl fmt::Display for Widening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Widening::Server { server } => {
                write!(f, "server {server} is not granted by its parent")
            }
            Widening::Tool { tool, server } => {
                write!(
                    f,
                    "tool {tool} on server {server} is not granted by its parent"
                )
            }
            Widening::Constraint { name, server } => {
                write!(
                    f,
                    "constraint {name} on server {server} is looser than its parent's"
                )
            }
        }
    }
}

/// The budget a hold was refused by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BudgetName {
    /// A capability's invocation limit.
    Invocations {
        /// The capability (root or child) whose limit it is.
        capability: String,
    },
    /// A configured tool budget.
    Tool {
        /// The agent.
        agent: String,
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// A lineage's monetary total.
    Monetary {
        /// The currency.
        currency: String,
    },
}

impl fmt::Display for BudgetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetName::Invocations { capability } => {
                write!(f, "invocation budget of {capability}")
            }
            BudgetName::Tool {
                agent,
                server,
                tool,
            } => write!(f, "tool budget of {agent} for {server}/{tool}"),
            BudgetName::Monetary { currency } => write!(f, "monetary budget in {currency}"),
        }
    }
}

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
    /// No grant covers the tool.
    OutOfScope {
        /// The tool.
        tool: String,
        /// The server.
        server: String,
    },
    /// A constraint the kernel does not know.
    ConstraintUnknown {
        /// Its name.
        name: String,
    },
    /// A constraint value the kernel cannot read.
    ConstraintMalformed {
        /// `path_prefix` or `monetary`.
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
    /// A prompt injection at one place, or split across values.
    PromptInjection(Injection),
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
    /// The reason's stable code.
    pub fn code(&self) -> ReasonCode {
        use DenyReason as R;
        use ReasonCode as C;
        match self {
            R::SchemaUnknown { .. } => C::SchemaUnknown,
            R::RootGrantMissing => C::RootGrantMissing,
            R::RootGrantUnexpected => C::RootGrantUnexpected,
            R::UntrustedIssuer => C::UntrustedIssuer,
            R::InvalidSignature => C::InvalidSignature,
            R::NotYetValid => C::NotYetValid,
            R::Expired => C::Expired,
            R::DelegationTooDeep { .. } => C::DelegationTooDeep,
            R::ChainBroken { .. } => C::ChainBroken,
            R::ChainCycleId { .. } => C::ChainCycleId,
            R::ChainCycleKey { .. } => C::ChainCycleKey,
            R::LinkBeforeParent { .. } => C::LinkBeforeParent,
            R::LinkInFuture { .. } => C::LinkInFuture,
            R::WidensScope { widening, .. } => match widening {
                Widening::Server { .. } => C::WidensServer,
                Widening::Tool { .. } => C::WidensTool,
                Widening::Constraint { .. } => C::WidensConstraint,
            },
            R::WidensExpiry { .. } => C::WidensExpiry,
            R::WidensStart { .. } => C::WidensStart,
            R::WidensBudget { .. } => C::WidensBudget,
            R::UnlimitedBudget { .. } => C::UnlimitedBudget,
            R::WidensShare { .. } => C::WidensShare,
            R::Revoked { .. } => C::Revoked,
            R::ChainRevoked { .. } => C::ChainRevoked,
            R::Store(StoreError::Unavailable { .. }) => C::StoreUnavailable,
            R::Store(StoreError::Refused { .. }) => C::StoreRefused,
            R::ProofMissing => C::ProofMissing,
            R::NotTheProvingAgent { .. } => C::NotTheProvingAgent,
            R::AgentNotSubject { .. } => C::AgentNotSubject,
            R::SignerNotSubject { .. } => C::SignerNotSubject,
            R::ProofInvalid => C::ProofInvalid,
            R::ProofUncanonical { .. } => C::ProofUncanonical,
            R::RequestStale { .. } => C::RequestStale,
            R::RequestFromFuture { .. } => C::RequestFromFuture,
            R::Replayed { .. } => C::Replayed,
            _ => self.later_code(),
        }
    }

    /// The codes of steps 4 to 8 and portable evaluation.
    fn later_code(&self) -> ReasonCode {
        use DenyReason as R;
        use ReasonCode as C;
        match self {
            R::ServerNotServed { .. } => C::ServerNotServed,
            R::ToolNotDeclared { .. } => C::ToolNotDeclared,
            R::ArgumentsRefused { .. } => C::ArgumentsRefused,
            R::OutOfScope { .. } => C::OutOfScope,
            R::ConstraintUnknown { .. } => C::ConstraintUnknown,
            R::ConstraintMalformed { .. } => C::ConstraintMalformed,
            R::PathArgumentMissing => C::PathArgumentMissing,
            R::PathEscapesRoot { .. } => C::PathEscapesRoot,
            R::PathNulByte { .. } => C::PathNulByte,
            R::OutsidePrefix { .. } => C::OutsidePrefix,
            R::AmountMalformed { .. } => C::AmountMalformed,
            R::AmountTooLarge { .. } => C::AmountTooLarge,
            R::BudgetExhausted { .. } => C::BudgetExhausted,
            R::ForbiddenPath { .. } => C::ForbiddenPath,
            R::NotAllowlisted { .. } => C::NotAllowlisted,
            R::AllowlistPathMissing { .. } => C::AllowlistPathMissing,
            R::OutsideSessionRoots { .. } => C::OutsideSessionRoots,
            R::SequenceRequired { .. } => C::SequenceRequired,
            R::InformationFlow { .. } => C::InformationFlow,
            R::UntrustedContext { .. } => C::UntrustedContext,
            R::PromptInjection(Injection {
                pointer: Some(_), ..
            }) => C::PromptInjection,
            R::PromptInjection(Injection { pointer: None, .. }) => C::PromptInjectionSplit,
            R::ScanLimit { .. } => C::ScanLimit,
            R::ApprovalRequired { .. } => C::ApprovalRequired,
            R::ApprovalThreshold { .. } => C::ApprovalThreshold,
            R::GuardFailed { .. } => C::GuardFailed,
            R::SharesOversubscribed { .. } => C::SharesOversubscribed,
            R::ShareParentUnknown { .. } => C::ShareParentUnknown,
            R::DispatchFailed { .. } => C::DispatchFailed,
            R::OutputLabelUnknown { .. } => C::OutputLabelUnknown,
            R::ReceiptUnrecorded(_) => C::ReceiptUnrecorded,
            R::Withheld(cause) => cause.code(),
            R::PortableNotSubject { .. } => C::PortableNotSubject,
            R::PortableApproval { .. } => C::PortableApproval,
            _ => unreachable!("steps 1 to 3 are coded by DenyReason::code"),
        }
    }

    /// The same reason with `; output withheld` after it.
    pub fn withheld(self) -> DenyReason {
        DenyReason::Withheld(Box::new(self))
    }
}

impl From<StoreError> for DenyReason {
    fn from(error: StoreError) -> Self {
        DenyReason::Store(error)
    }
}

impl fmt::Display for DenyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DenyReason as R;
        match self {
            R::SchemaUnknown { schema } => {
                write!(f, "capability schema {schema:?} is not {CAPABILITY_SCHEMA}")
            }
            R::RootGrantMissing => f.write_str("delegated capability carries no root grant"),
            R::RootGrantUnexpected => {
                f.write_str("capability carries a root grant but no delegation chain")
            }
            R::UntrustedIssuer => f.write_str("capability issuer is not a trusted CA"),
            R::InvalidSignature => f.write_str("capability signature is invalid"),
            R::NotYetValid => f.write_str("capability not yet valid"),
            R::Expired => f.write_str("capability has expired"),
            R::DelegationTooDeep { depth, limit } => {
                write!(f, "delegation depth {depth} exceeds the limit {limit}")
            }
            R::ChainBroken {
                index,
                child,
                parent,
            } => write!(
                f,
                "delegation chain is broken at link {index}: link {child} does not continue from {parent}"
            ),
            R::ChainCycleId { child } => write!(
                f,
                "delegation chain has a cycle: capability id {child} appears twice"
            ),
            R::ChainCycleKey { child } => write!(
                f,
                "delegation chain has a cycle: link {child} delegates back to a key already in the chain"
            ),
            R::LinkBeforeParent { child } => {
                write!(f, "delegation link {child} is dated before its parent link")
            }
            R::LinkInFuture { child } => {
                write!(f, "delegation link {child} is dated after the evaluation time")
            }
            _ => self.fmt_link(f),
        }
    }
}

impl DenyReason {
    /// The attenuation reasons of a link, then step 2 and 3.
    fn fmt_link(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DenyReason as R;
        match self {
            R::WidensScope { child, widening } => {
                write!(f, "delegation link {child} widens scope: {widening}")
            }
            R::WidensExpiry {
                child,
                expires,
                parent,
            } => write!(
                f,
                "delegation link {child} expires at {expires} ms after its parent's expiry {parent} ms"
            ),
            R::WidensStart {
                child,
                not_before,
                parent,
            } => write!(
                f,
                "delegation link {child} becomes valid at {not_before} ms before its parent's start {parent} ms"
            ),
            R::WidensBudget {
                child,
                allows,
                parent,
            } => write!(
                f,
                "delegation link {child} allows {allows} invocations, more than its parent's {parent}"
            ),
            R::UnlimitedBudget { child, parent } => write!(
                f,
                "delegation link {child} has an unlimited invocation budget under a parent limited to {parent}"
            ),
            R::WidensShare { child, bps, parent } => write!(
                f,
                "delegation link {child} share {bps} bps exceeds its parent's {parent} bps"
            ),
            R::Revoked { id } => write!(f, "capability has been revoked: {id}"),
            R::ChainRevoked { ancestor } => {
                write!(f, "delegation chain revoked at ancestor {ancestor}")
            }
            R::Store(error) => write!(f, "{error}"),
            _ => self.fmt_binding(f),
        }
    }

    /// Step 3.
    fn fmt_binding(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DenyReason as R;
        match self {
            R::ProofMissing => f.write_str("proof of possession is missing"),
            R::NotTheProvingAgent { agent, key } => write!(
                f,
                "{}: agent {agent} is not registered with key {key}",
                crate::kernel::NOT_THE_PROVING_AGENT
            ),
            R::AgentNotSubject { agent, capability } => write!(
                f,
                "capability presented by another agent: agent {agent} does not hold the subject key of capability {capability}"
            ),
            R::SignerNotSubject {
                signer,
                capability,
                subject,
            } => write!(
                f,
                "capability presented by another agent: request signed by key {signer}, capability {capability} belongs to key {subject}"
            ),
            R::ProofInvalid => f.write_str("proof of possession is invalid"),
            R::ProofUncanonical { cause } => {
                write!(f, "request cannot be canonicalised for its proof: {cause}")
            }
            R::RequestStale {
                issued,
                now,
                max_age,
            } => write!(
                f,
                "request is stale: issued at {issued} ms, evaluated at {now} ms, older than {max_age} ms"
            ),
            R::RequestFromFuture { issued, now } => write!(
                f,
                "request is dated {issued} ms, after the evaluation time {now} ms"
            ),
            R::Replayed { request_id } => write!(f, "request replayed: {request_id}"),
            _ => self.fmt_scope(f),
        }
    }

    /// Steps 4 and 5.
    fn fmt_scope(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DenyReason as R;
        match self {
            R::ServerNotServed { server } => {
                write!(f, "server {server} is not served by this kernel")
            }
            R::ToolNotDeclared { tool, server } => {
                write!(f, "tool {tool} is not declared by server {server}")
            }
            R::ArgumentsRefused {
                server,
                tool,
                pointer,
                keyword,
            } => write!(
                f,
                "arguments of {server}/{tool} fail the tool's input schema at {pointer}: {keyword}"
            ),
            R::OutOfScope { tool, server } => write!(
                f,
                "tool {tool} on server {server} not covered by any scope grant"
            ),
            R::ConstraintUnknown { name } => {
                write!(
                    f,
                    "unknown constraint {name}; the kernel cannot evaluate it"
                )
            }
            R::ConstraintMalformed { name } => write!(
                f,
                "constraint {name} is malformed; the kernel cannot evaluate it"
            ),
            R::PathArgumentMissing => {
                f.write_str("constraint path_prefix requires a path argument and the call has none")
            }
            R::PathEscapesRoot { path } => write!(f, "path {path} escapes the root"),
            R::PathNulByte { path } => write!(f, "path {path:?} contains a NUL byte"),
            R::OutsidePrefix {
                path,
                pointer,
                prefix,
            } => write!(
                f,
                "path {path} (argument {pointer}) is outside the granted prefix {prefix}"
            ),
            R::AmountMalformed { argument } => write!(
                f,
                "constraint monetary needs argument {argument} as a whole number of minor units"
            ),
            R::AmountTooLarge {
                amount,
                currency,
                max,
            } => write!(
                f,
                "amount {amount} {currency} exceeds the per-invocation maximum {max}"
            ),
            R::BudgetExhausted {
                budget,
                used,
                limit,
                amount,
            } => write!(
                f,
                "{budget} exhausted: {used} of {limit} used, {amount} more requested"
            ),
            _ => self.fmt_guard(f),
        }
    }

    /// Step 6.
    fn fmt_guard(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DenyReason as R;
        match self {
            R::ForbiddenPath { path, glob } => {
                write!(f, "path {path} matches forbidden glob {glob}")
            }
            R::NotAllowlisted { path, access } => {
                write!(f, "path {path} is not in the {access} allowlist")
            }
            R::AllowlistPathMissing { tool, access } => write!(
                f,
                "tool {tool} carries no path argument for the {access} allowlist to check"
            ),
            R::OutsideSessionRoots { path } => {
                write!(f, "path {path} is outside the session filesystem roots")
            }
            R::SequenceRequired {
                tool,
                requires,
                session,
            } => write!(
                f,
                "tool {tool} requires an earlier allowed and performed {requires} in session {session}"
            ),
            R::InformationFlow {
                label,
                key,
                clearance,
                server,
            } => write!(
                f,
                "information flow: retained label {label} ({key}) exceeds the clearance {clearance} of server {server}"
            ),
            R::UntrustedContext {
                key,
                level,
                tool,
                server,
            } => write!(
                f,
                "integrity: {key} holds {level} content; tool {tool} on server {server} is consequential"
            ),
            R::PromptInjection(Injection {
                place,
                pointer: Some(pointer),
                pattern,
            }) => write!(f, "prompt injection ({pattern}) in {place} at {pointer}"),
            R::PromptInjection(Injection {
                place,
                pointer: None,
                pattern,
            }) => write!(
                f,
                "prompt injection ({pattern}) in {place} split across string values"
            ),
            R::ScanLimit {
                place,
                pointer,
                limit,
            } => write!(
                f,
                "prompt injection scan limit reached in {place} at {pointer}: {limit}"
            ),
            _ => self.fmt_late(f),
        }
    }

    /// Approval, guard errors, steps 7 and 8, portable evaluation.
    fn fmt_late(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DenyReason as R;
        match self {
            R::ApprovalRequired { tool } => write!(f, "tool {tool} requires approval"),
            R::ApprovalThreshold {
                argument,
                value,
                threshold,
            } => write!(
                f,
                "argument {argument} = {value} exceeds {threshold}; approval required"
            ),
            R::GuardFailed { guard, cause } => write!(f, "guard {guard} failed: {cause}"),
            R::SharesOversubscribed {
                child,
                bps,
                siblings,
                parent,
                parent_bps,
            } => write!(
                f,
                "sibling shares oversubscribed: child {child} asks {bps} bps, admitted siblings hold {siblings} of parent {parent}'s {parent_bps} bps"
            ),
            R::ShareParentUnknown { parent } => {
                write!(f, "sibling share registry does not know parent {parent}")
            }
            R::DispatchFailed { cause } => write!(f, "dispatch failed: {cause}"),
            R::OutputLabelUnknown { label } => {
                write!(f, "tool output label {label:?} is not a known level")
            }
            R::ReceiptUnrecorded(error) => {
                write!(f, "{error}; no allow is released without a receipt")
            }
            R::Withheld(cause) => write!(f, "{cause}; output withheld"),
            R::PortableNotSubject { agent, capability } => write!(
                f,
                "capability presented by another agent: request agent {agent} is not the subject of capability {capability}"
            ),
            R::PortableApproval { guard, reason } => write!(
                f,
                "guard {guard} requires approval, which portable evaluation cannot run: {reason}"
            ),
            _ => unreachable!("every reason is printed by one of the fmt_* steps"),
        }
    }
}

/// An attacker-chosen id as it may appear in a reason: at most 64
/// characters, control characters replaced, so a reason stays one line.
pub fn printable_id(id: &str) -> String {
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

#[cfg(test)]
mod tests;
