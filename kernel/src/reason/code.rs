//! The stable code of a reason: the code table, its spellings, and the
//! code of each [`DenyReason`].

use serde::{Deserialize, Serialize};

use super::{DenyReason, Injection, Widening};
use crate::error::StoreError;

crate::code_enum! {
    /// The stable code of a reason, one per reason template.
    pub enum ReasonCode;
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
    /// A key field of the capability is not a key in lowercase hex.
    KeyMalformed => "key-malformed",
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
    /// A quarantined reader calling a consequential tool.
    QuarantinedConsequential => "quarantined-consequential",
    /// An argument naming a hand-over record that holds nothing.
    ArgumentUnrecorded => "argument-unrecorded",
    /// A message built from a hand-over record that holds nothing.
    MessageUnrecorded => "message-unrecorded",
    /// A handed-over value its schema refuses (a message step).
    HandOverRefused => "hand-over-refused",
    /// A pinned tool definition that changed since the capability was issued.
    DefinitionChanged => "definition-changed",
    /// A tool a definition-pinning capability pins nothing for.
    DefinitionNotPinned => "definition-not-pinned",
    /// A pinning capability before a kernel with no definition of the tool.
    DefinitionUnknown => "definition-unknown",
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
    /// A monetary budget's amount argument is absent.
    BudgetAmountMissing => "budget-amount-missing",
    /// A monetary budget's amount is not an exact decimal.
    BudgetAmountMalformed => "budget-amount-malformed",
    /// An amount with more decimal places than its budget's limit.
    BudgetAmountTooPrecise => "budget-amount-too-precise",
    /// An amount of zero or less.
    BudgetAmountNotPositive => "budget-amount-not-positive",
    /// A monetary budget's currency argument is absent.
    BudgetCurrencyMissing => "budget-currency-missing",
    /// A currency argument naming another currency than its budget's.
    BudgetCurrencyMismatch => "budget-currency-mismatch",
    /// A call before a windowed budget's first window.
    BudgetWindowBeforeStart => "budget-window-before-start",
    /// A monetary budget the call's amount would take past its limit.
    BudgetExceeded => "budget-exceeded",
    /// A delegated capability's share of a monetary budget the call's amount would take past its limit.
    BudgetShareExceeded => "budget-share-exceeded",
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
    /// A planner's protected argument carrying untrusted content (integrity).
    UntrustedArgument => "untrusted-argument",
    /// A planner's open-world argument carrying untrusted content (integrity).
    UntrustedOpenWorldArgument => "untrusted-open-world-argument",
    /// A prompt injection found at one place (prompt-injection).
    PromptInjection => "prompt-injection",
    /// A prompt injection split across string values (prompt-injection).
    PromptInjectionSplit => "prompt-injection-split",
    /// A credential in the arguments (secret-redaction scanning arguments).
    CredentialInArguments => "credential-in-arguments",
    /// A credential split across string values of the arguments (secret-redaction scanning arguments).
    CredentialSplitInArguments => "credential-in-arguments-split",
    /// The injection scan ran past its budget (prompt-injection).
    ScanLimit => "scan-limit",
    /// A call to a tool whose definition in force carries an injection (prompt-injection, `scan_definitions`).
    PoisonedDefinition => "poisoned-definition",
    /// A tool that always needs approval (approval).
    ApprovalRequired => "approval-required",
    /// An argument above the approval threshold (approval).
    ApprovalThreshold => "approval-threshold",
    /// A monetary budget's total above the approval threshold (approval).
    ApprovalTotalThreshold => "approval-total-threshold",
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
    /// The released output has no canonical form to hash.
    OutputUncanonical => "output-uncanonical",
    /// The allow's receipt could not be appended.
    ReceiptUnrecorded => "receipt-unrecorded",
    /// A portable request whose agent is not the subject.
    PortableNotSubject => "portable-not-subject",
    /// An approval that portable evaluation cannot run.
    PortableApproval => "portable-approval",
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
            R::KeyMalformed { .. } => C::KeyMalformed,
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
            R::QuarantinedConsequential { .. } => C::QuarantinedConsequential,
            R::ArgumentUnrecorded { .. } => C::ArgumentUnrecorded,
            R::MessageUnrecorded { .. } => C::MessageUnrecorded,
            R::HandOverRefused { .. } => C::HandOverRefused,
            R::DefinitionChanged { .. } => C::DefinitionChanged,
            R::DefinitionNotPinned { .. } => C::DefinitionNotPinned,
            R::DefinitionUnknown { .. } => C::DefinitionUnknown,
            R::ConstraintUnknown { .. } => C::ConstraintUnknown,
            R::ConstraintMalformed { .. } => C::ConstraintMalformed,
            R::PathArgumentMissing => C::PathArgumentMissing,
            R::PathEscapesRoot { .. } => C::PathEscapesRoot,
            R::PathNulByte { .. } => C::PathNulByte,
            R::OutsidePrefix { .. } => C::OutsidePrefix,
            R::AmountMalformed { .. } => C::AmountMalformed,
            R::AmountTooLarge { .. } => C::AmountTooLarge,
            R::BudgetExhausted { .. } => C::BudgetExhausted,
            R::Money(reason) => reason.code(),
            R::ForbiddenPath { .. } => C::ForbiddenPath,
            R::NotAllowlisted { .. } => C::NotAllowlisted,
            R::AllowlistPathMissing { .. } => C::AllowlistPathMissing,
            R::OutsideSessionRoots { .. } => C::OutsideSessionRoots,
            R::SequenceRequired { .. } => C::SequenceRequired,
            R::InformationFlow { .. } => C::InformationFlow,
            R::UntrustedContext { .. } => C::UntrustedContext,
            R::UntrustedArgument { .. } => C::UntrustedArgument,
            R::UntrustedOpenWorldArgument { .. } => C::UntrustedOpenWorldArgument,
            R::PromptInjection(Injection {
                pointer: Some(_), ..
            }) => C::PromptInjection,
            R::PromptInjection(Injection { pointer: None, .. }) => C::PromptInjectionSplit,
            R::CredentialInArguments { .. } => C::CredentialInArguments,
            R::CredentialSplitInArguments { .. } => C::CredentialSplitInArguments,
            R::ScanLimit { .. } => C::ScanLimit,
            R::PoisonedDefinition { .. } => C::PoisonedDefinition,
            R::ApprovalRequired { .. } => C::ApprovalRequired,
            R::ApprovalThreshold { .. } => C::ApprovalThreshold,
            R::GuardFailed { .. } => C::GuardFailed,
            R::SharesOversubscribed { .. } => C::SharesOversubscribed,
            R::ShareParentUnknown { .. } => C::ShareParentUnknown,
            R::DispatchFailed { .. } => C::DispatchFailed,
            R::OutputLabelUnknown { .. } => C::OutputLabelUnknown,
            R::OutputUncanonical { .. } => C::OutputUncanonical,
            R::ReceiptUnrecorded(_) => C::ReceiptUnrecorded,
            R::Withheld(cause) => cause.code(),
            R::PortableNotSubject { .. } => C::PortableNotSubject,
            R::PortableApproval { .. } => C::PortableApproval,
            _ => unreachable!("steps 1 to 3 are coded by DenyReason::code"),
        }
    }
}
