//! The Chio authorization kernel.
//!
//! A library with no I/O and no async: it verifies capability tokens and
//! their delegation chains, binds each request to its subject by a proof of
//! possession, selects the scope grant, holds budgets, runs the guard
//! pipeline, admits delegated sibling shares last, and answers Allow, Deny or
//! PendingApproval with a signed, content-addressed receipt. Every piece of
//! state a verdict depends on sits behind a store trait ([`stores`]), and
//! time is always a value the caller passes in, so the same inputs and state
//! give the same verdict and the same receipt bytes.
//!
//! # Deny reasons
//!
//! Every deny carries a reason naming its cause: a [`reason::DenyReason`],
//! whose text is what the receipt signs and whose [`reason::ReasonCode`] is
//! a stable kebab-case code written beside it in the decision trace. The
//! table of every reason with its code and its pipeline step is kept once,
//! in `docs/errors.md` ("Deny reasons"), and a test holds it equal to
//! [`reason::ReasonCode::ALL`].
//!
//! A sanitized allow carries `redacted credentials in <n> output strings` as
//! its reason and the redacting guard's id (and no code: it is no deny).
//!
//! # Module map
//! - [`amount`]: exact decimal amounts and minor units, for approval thresholds and monetary budgets.
//! - [`canonical`]: RFC 8785 canonical JSON.
//! - [`credentials`]: credential-shaped spans and the forms a credential is read in (percent-decoded, unescaped, NFKC, base64 and hex decoded, values read together), for redaction and the arena loader.
//! - [`keys`]: arena key derivation and hex keys.
//! - [`token`]: capability tokens, scope grants, delegation links.
//! - [`request`]: tool-call requests and their proof of possession.
//! - [`verification`]: step 1, the capability and its chain.
//! - [`scope`]: step 4, grant selection and constraints.
//! - [`path`], [`glob`]: lexical paths and globs.
//! - [`guards`]: the guard trait and the seven guards.
//! - [`label`]: information-flow labels.
//! - [`handover`]: the schema a quarantined reader's hand-over must satisfy.
//! - [`provenance`]: agent roles and where each argument's value came from.
//! - [`allowlist`]: run-time allowlists read from trusted parts of outputs.
//! - [`stores`]: [`stores::KernelStores`] (a session journal and one batch
//!   store of authority state), the kernel crate's in-memory authority.
//! - [`batch`]: the store work of one decision as two batches, and where a batch stops.
//! - [`signature`]: strict verification and the verified-signature cache.
//! - [`receipt`]: signed receipts and their Merkle root.
//! - [`verdict`]: verdicts and their projection.
//! - [`reason`]: deny reasons and their codes.
//! - [`kernel`]: the pipeline (configuration, admission, binding, labels, guard running, completion).
//! - [`trace`]: what a decision read and how each stage answered.
//! - [`portable`]: portable evaluation and its JSON envelope.
//! - [`error`]: the crate's errors.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod allowlist;
pub mod amount;
pub mod batch;
pub mod canonical;
mod code_enum;
pub mod contract;
pub mod credentials;
mod decode;
pub mod error;
pub mod glob;
pub mod guards;
pub mod handover;
pub mod kernel;
pub mod keys;
pub mod label;
pub mod ledger;
pub mod path;
pub mod planted;
pub mod portable;
pub mod provenance;
pub mod reason;
pub mod receipt;
pub mod request;
pub mod revocation;
pub mod scope;
pub mod seal;
pub mod signature;
pub mod stores;
pub mod token;
pub mod trace;
pub mod verdict;
pub mod verification;

pub use error::{EnvelopeError, KernelError, StoreError, StoreName};
pub use kernel::{Admission, AdmissionTicket, Decision, Kernel, KernelConfig, ToolOutput};
pub use keys::derive_arena_key;
pub use receipt::{merkle_root, SignedReceipt};
pub use request::ToolCallRequest;
pub use token::{CapabilityToken, DelegationLink, ScopeGrant};
pub use verdict::{ProjectedVerdict, Verdict};
