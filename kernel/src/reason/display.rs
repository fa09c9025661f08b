//! The text of a reason: what a receipt signs, step by step.

use std::fmt;

use super::{BudgetName, DenyReason, Injection, Widening};
use crate::token::CAPABILITY_SCHEMA;

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
            R::KeyMalformed { field } => write!(
                f,
                "capability key {field} is not an Ed25519 public key in 64 lowercase hex characters"
            ),
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

    /// Step 4: the tool's contract, the reader's role and the scope grant.
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
            R::QuarantinedConsequential {
                agent,
                tool,
                server,
            } => write!(
                f,
                "agent {agent} is a quarantined reader; tool {tool} on server {server} is consequential"
            ),
            R::ArgumentUnrecorded { argument, record } => write!(
                f,
                "argument {argument} is built from the hand-over {record}, which was never recorded; its labels are unknown"
            ),
            R::MessageUnrecorded { pointer, record } => write!(
                f,
                "message refused: {} is built from the hand-over {record}, which was never recorded; its labels are unknown, so nothing was carried",
                if pointer.is_empty() { "the value".to_string() } else { format!("the value at {pointer}") }
            ),
            R::HandOverRefused { pointer, keyword } => write!(
                f,
                "hand-over refused: the value fails its schema at {}: {keyword}",
                if pointer.is_empty() { "the root" } else { pointer.as_str() }
            ),
            R::OutOfScope { tool, server } => write!(
                f,
                "tool {tool} on server {server} not covered by any scope grant"
            ),
            R::DefinitionChanged { server, tool } => write!(
                f,
                "tool definition changed: {server}/{tool} is not the definition the capability was issued for"
            ),
            R::DefinitionNotPinned { server, tool } => write!(
                f,
                "capability pins tool definitions and none for {server}/{tool}"
            ),
            R::DefinitionUnknown { server, tool } => write!(
                f,
                "capability pins tool definitions and this kernel holds no definition of {server}/{tool}"
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
            _ => self.fmt_budget(f),
        }
    }

    /// Step 5: a grant's amount and the budgets the call counts against.
    fn fmt_budget(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DenyReason as R;
        match self {
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
            R::Money(reason) => write!(f, "{reason}"),
            _ => self.fmt_guard(f),
        }
    }

    /// Step 6: paths, sequences, information flow and integrity.
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
            R::UntrustedArgument {
                argument,
                tool,
                server,
            } => write!(
                f,
                "integrity: argument {argument} carries untrusted content; it is protected on tool {tool} of server {server}"
            ),
            R::UntrustedOpenWorldArgument {
                argument,
                tool,
                server,
            } => write!(
                f,
                "integrity: argument {argument} carries untrusted content; tool {tool} on server {server} reaches the open world"
            ),
            _ => self.fmt_injection(f),
        }
    }

    /// Step 6, continued: injected text, credentials and poisoned definitions.
    fn fmt_injection(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DenyReason as R;
        match self {
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
            R::CredentialInArguments { shape, pointer } => write!(
                f,
                "credential ({shape}) in arguments at {pointer}; a call may not send a credential"
            ),
            R::CredentialSplitInArguments { shape, pointers } => write!(
                f,
                "credential ({shape}) in arguments split across string values at {}; a call may not send a credential",
                pointers.join(", ")
            ),
            R::ScanLimit {
                place,
                pointer,
                limit,
            } => write!(
                f,
                "prompt injection scan limit reached in {place} at {pointer}: {limit}"
            ),
            R::PoisonedDefinition {
                server,
                tool,
                pointer,
                pattern,
            } => write!(
                f,
                "tool poisoning: the definition of {server}/{tool} in force carries a prompt injection ({pattern}) at {pointer}"
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
            R::OutputUncanonical { cause } => {
                write!(f, "tool output has no canonical form for its receipt: {cause}")
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
