//! The kernel's error types.
//!
//! `KernelError` is what the library's fallible constructors return (keys,
//! guard configurations, signing). `StoreError` names the store that failed,
//! because every store failure on the authorization path becomes a deny whose
//! reason must say which store it was. `EnvelopeError` names the field of a
//! malformed portable-evaluation envelope. Denials themselves are not errors:
//! they are verdicts with reasons ([`crate::reason`]).

use std::fmt;

use crate::canonical::CanonicalError;

/// Everything the kernel library can refuse outside of a verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// A public key that is not lowercase hex of a valid Ed25519 point.
    #[error(
        "invalid public key: {detail}; pass 64 lowercase hex characters of an Ed25519 public key"
    )]
    InvalidPublicKey {
        /// What was wrong with it (never the key material itself).
        detail: String,
    },
    /// A guard kind the kernel does not ship.
    #[error("unknown guard kind {kind:?}; use one of forbidden-path, path-allowlist, behavioral-sequence, information-flow, integrity, prompt-injection, approval, secret-redaction")]
    UnknownGuardKind {
        /// The kind as written.
        kind: String,
    },
    /// A guard mode other than enforce or observe.
    #[error("unknown guard mode {mode:?}; use enforce or observe")]
    UnknownGuardMode {
        /// The mode as written.
        mode: String,
    },
    /// A guard configuration the guard's builder refused.
    #[error("guard {guard:?} has an invalid config: {message}")]
    GuardConfig {
        /// The guard id, so the scenario author finds the table.
        guard: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A monetary budget the kernel cannot keep.
    #[error("monetary budget {budget:?} is invalid: {message}")]
    MonetaryBudget {
        /// The budget's id.
        budget: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A tool's input schema that does not compile.
    #[error("{detail}; write a draft 2020-12 JSON Schema with no remote $ref")]
    ToolSchema {
        /// Which tool, where its schema fails, and the keyword.
        detail: String,
    },
    /// A receipt that does not verify.
    #[error("receipt does not verify: {detail}; the receipt was altered or signed by another key")]
    ReceiptInvalid {
        /// Which check failed.
        detail: String,
    },
    /// A value that has no canonical JSON form, so it cannot be signed.
    #[error("cannot canonicalise a signed value: {0}")]
    Canonical(#[from] CanonicalError),
}

/// Which store failed; printed at the start of every store-failure reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StoreName {
    /// Revoked capability and delegation ids.
    Revocation,
    /// Invocation and monetary budget holds.
    Budget,
    /// Delegated sibling shares.
    SiblingShare,
    /// The signed receipt log.
    Receipt,
    /// The per-session call history.
    SessionJournal,
    /// Retained information-flow labels.
    Label,
    /// Seen request ids (replay protection).
    Nonce,
}

impl fmt::Display for StoreName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreName::Revocation => "revocation",
            StoreName::Budget => "budget",
            StoreName::SiblingShare => "sibling share",
            StoreName::Receipt => "receipt",
            StoreName::SessionJournal => "session journal",
            StoreName::Label => "label",
            StoreName::Nonce => "nonce",
        })
    }
}

/// A store that could not answer; on the authorization path it always denies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store did not answer (connection, deadline, I/O).
    #[error("{store} store unavailable: {cause}")]
    Unavailable {
        /// Which store.
        store: StoreName,
        /// Why, as the backend reported it.
        cause: String,
    },
    /// The store answered but refused the operation as inconsistent.
    #[error("{store} store refused the operation: {detail}")]
    Refused {
        /// Which store.
        store: StoreName,
        /// What was inconsistent.
        detail: String,
    },
}

impl StoreError {
    /// Shorthand for the common "did not answer" case.
    pub fn unavailable(store: StoreName, cause: impl Into<String>) -> Self {
        StoreError::Unavailable {
            store,
            cause: cause.into(),
        }
    }

    /// The store that failed.
    pub fn store(&self) -> StoreName {
        match self {
            StoreError::Unavailable { store, .. } | StoreError::Refused { store, .. } => *store,
        }
    }
}

/// A malformed portable-evaluation envelope, naming the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The bytes are not JSON at all.
    #[error("envelope is not valid JSON: {detail}; pass one JSON object")]
    NotJson {
        /// The parser's complaint (kind and position, never the input).
        detail: String,
    },
    /// The JSON is not an object.
    #[error("envelope is not a JSON object; pass an object with request, capability and trusted_issuers_hex")]
    NotAnObject,
    /// A required field is absent.
    #[error("envelope field {field} is missing; add it")]
    MissingField {
        /// Dotted path of the field.
        field: String,
    },
    /// A field the envelope format does not define.
    #[error("envelope field {field} is not part of the envelope format; remove it")]
    UnknownField {
        /// Dotted path of the field.
        field: String,
    },
    /// A field of the wrong JSON type or shape, or (anywhere inside
    /// `capability`) a token that does not parse.
    #[error("envelope field {field} is invalid: {detail}")]
    InvalidField {
        /// Dotted path of the field, with `[i]` for array elements.
        field: String,
        /// What was expected; never the value found.
        detail: String,
    },
    /// No clock in the envelope and none supplied by the caller.
    #[error("envelope has no clock_override_unix_secs and the caller supplied no clock; add clock_override_unix_secs")]
    MissingClock,
    /// An integer beyond 2^53 in magnitude: canonical JSON (the answer, a
    /// signature's bytes) cannot print it exactly. The value is not echoed.
    #[error("envelope field {field} is outside -2^53..=2^53 and has no exact canonical JSON form; use an integer of at most 9007199254740992 in magnitude")]
    OutOfRange {
        /// Path of the integer, such as `clock_override_unix_secs` or
        /// `capability.delegation_chain[0].timestamp_ms`.
        field: String,
    },
}
