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
//! Every deny carries a reason naming its cause. The fixed ones are exact;
//! `<...>` marks a value filled in.
//!
//! | step | reason |
//! |---|---|
//! | 1 capability | `capability schema "<s>" is not chio.capability/v1` |
//! | 1 capability | `delegated capability carries no root grant` / `capability carries a root grant but no delegation chain` |
//! | 1 capability | `capability issuer is not a trusted CA` |
//! | 1 capability | `capability signature is invalid` (root, any link, or top-level fields not those of the last link) |
//! | 1 capability | `capability not yet valid` |
//! | 1 capability | `capability has expired` |
//! | 1 chain | `delegation depth <n> exceeds the limit <m>` |
//! | 1 chain | `delegation chain is broken at link <i>: link <child> does not continue from <parent>` |
//! | 1 chain | `delegation chain has a cycle: capability id <id> appears twice` |
//! | 1 chain | `delegation chain has a cycle: link <child> delegates back to a key already in the chain` |
//! | 1 chain | `delegation link <child> is dated before its parent link` / `... is dated after the evaluation time` |
//! | 1 chain | `delegation link <child> widens scope: server <s> is not granted by its parent` |
//! | 1 chain | `delegation link <child> widens scope: tool <t> on server <s> is not granted by its parent` |
//! | 1 chain | `delegation link <child> widens scope: constraint <c> on server <s> is looser than its parent's` |
//! | 1 chain | `delegation link <child> expires at <t> after its parent's expiry <p>` |
//! | 1 chain | `delegation link <child> becomes valid at <t> before its parent's start <p>` |
//! | 1 chain | `delegation link <child> allows <n> invocations, more than its parent's <p>` / `... has an unlimited invocation budget under a parent limited to <p>` |
//! | 1 chain | `delegation link <child> share <n> bps exceeds its parent's <p> bps` |
//! | 2 revocation | `capability has been revoked: <id>` |
//! | 2 revocation | `delegation chain revoked at ancestor <id>` |
//! | 2 revocation | `revocation store unavailable: <cause>` |
//! | 3 binding | `proof of possession is missing` |
//! | 3 binding | `request names an agent that does not hold the proving key: agent <a> is not registered with key <k>` (the named agent is a claim; the principal is the registered agent whose key signed the proof) |
//! | 3 binding | `capability presented by another agent: agent <a> does not hold the subject key of capability <id>` |
//! | 3 binding | `capability presented by another agent: request signed by key <k>, capability <id> belongs to key <k>` |
//! | 3 binding | `proof of possession is invalid` |
//! | 3 binding | `request cannot be canonicalised for its proof: <cause>` |
//! | 3 binding | `request is stale: issued at <t> ms, evaluated at <now> ms, older than <max> ms` / `request is dated <t> ms, after the evaluation time <now> ms` |
//! | 3 binding | `request replayed: <id>` (the id was seen before under this capability lineage and principal, on any kernel, before any restart) / `nonce store unavailable: <cause>` / `nonce store refused the operation: <cause>` |
//! | 4 scope | `tool <t> on server <s> not covered by any scope grant` |
//! | 4 scope | `unknown constraint <name>; the kernel cannot evaluate it` |
//! | 4 scope | `constraint path_prefix is malformed; the kernel cannot evaluate it` (also `monetary`) |
//! | 4 scope | `constraint path_prefix requires a path argument and the call has none` |
//! | 4 scope | `path <p> escapes the root` / `path "<p>" contains a NUL byte` |
//! | 4 scope | `path <p> (argument <pointer>) is outside the granted prefix <prefix>` |
//! | 4 scope | `constraint monetary needs argument <a> as a whole number of minor units` / `amount <n> <cur> exceeds the per-invocation maximum <m>` |
//! | 5 budget | `invocation budget of <id> exhausted: <u> of <l> used, 1 more requested` (also `tool budget of <agent> for <s>/<t>`, `monetary budget in <cur>`) |
//! | 5 budget | `budget store unavailable: <cause>` |
//! | 5 budget | `budget store refused the operation: ... request replayed: hold <h> is already committed; sign a new request with a fresh request id` (a committed hold asked for again is never granted) |
//! | 6 guards | `path <p> matches forbidden glob <g>` (forbidden-path) |
//! | 6 guards | `path <p> is not in the <read/write> allowlist` / `tool <t> carries no path argument for the <access> allowlist to check` / `path <p> is outside the session filesystem roots` (path-allowlist) |
//! | 6 guards | `tool <t> requires an earlier allowed and performed <r> in session <s>` (behavioral-sequence) |
//! | 6 guards | `information flow: retained label <l> (<key>) exceeds the clearance <c> of server <s>` (information-flow; `<key>` is `session/`, `principal/`, `lineage/` or `delegation/<link id>`) |
//! | 6 guards | `prompt injection (<pattern>) in arguments at <pointer>` (prompt-injection) |
//! | 6 guards | `prompt injection (<pattern>) in arguments split across string values` (prompt-injection) |
//! | 6 guards | `prompt injection scan limit reached in arguments at <pointer>: <limit>` (prompt-injection, past the scan budget) |
//! | 6 guards | `tool <t> requires approval` / `argument <a> = <v> exceeds <n>; approval required` (approval: PendingApproval) |
//! | 6 guards | `guard <id> failed: argument <a> of tool <t> is a number with a fraction, which JSON carries as a rounded binary float; pass it as a decimal string; the approval threshold cannot be evaluated` (also `... is not a decimal string of digits with at most one point`, `... has more digits than can be compared exactly`, `... is missing or not a number`) |
//! | 6 guards | `guard <id> failed: <cause>` (any guard error) |
//! | 6 guards | `session journal store unavailable: <cause>` / `label store unavailable: <cause>` |
//! | 7 shares | `sibling shares oversubscribed: child <c> asks <n> bps, admitted siblings hold <s> of parent <p>'s <m> bps` |
//! | 7 shares | `sibling share registry does not know parent <p>` / `sibling share store unavailable: <cause>` |
//! | 8 dispatch | `dispatch failed: <cause>` |
//! | 8 revocation | `capability has been revoked: <id>; output withheld` / `delegation chain revoked at ancestor <id>; output withheld` (looked up again before an allow is finalised) |
//! | 8 output | `prompt injection (<pattern>) in tool output at <pointer>; output withheld` |
//! | 8 output | `prompt injection (<pattern>) in tool output split across string values; output withheld` |
//! | 8 output | `prompt injection scan limit reached in tool output at <pointer>: <limit>; output withheld` |
//! | 8 output | `tool output label "<l>" is not a known level; output withheld` / `label store unavailable: <cause>; output withheld` |
//! | 8 receipt | `receipt store unavailable: <cause>; no allow is released without a receipt` |
//! | portable | `capability presented by another agent: request agent <k> is not the subject of capability <id>` |
//! | portable | `guard <id> requires approval, which portable evaluation cannot run: <reason>` |
//!
//! A sanitized allow carries `redacted credentials in <n> output strings` as
//! its reason and the redacting guard's id.
//!
//! # Module map
//! - [`canonical`]: RFC 8785 canonical JSON.
//! - [`credentials`]: credential-shaped spans, for redaction and the arena loader.
//! - [`keys`]: arena key derivation and hex keys.
//! - [`token`]: capability tokens, scope grants, delegation links.
//! - [`request`]: tool-call requests and their proof of possession.
//! - [`verification`]: step 1, the capability and its chain.
//! - [`scope`]: step 4, grant selection and constraints.
//! - [`path`], [`glob`]: lexical paths and globs.
//! - [`guards`]: the guard trait and the seven guards.
//! - [`label`]: information-flow labels.
//! - [`stores`]: store traits, in-memory stores, [`stores::KernelStores`].
//! - [`batch`]: the store work of one decision as two batches, and where a batch stops.
//! - [`signature`]: strict verification and the verified-signature cache.
//! - [`receipt`]: signed receipts and their Merkle root.
//! - [`verdict`]: verdicts and their projection.
//! - [`kernel`]: the pipeline (configuration, admission, binding, labels, guard running, completion).
//! - [`trace`]: what a decision read and how each stage answered.
//! - [`portable`]: portable evaluation and its JSON envelope.
//! - [`error`]: the crate's errors.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod batch;
pub mod canonical;
pub mod credentials;
pub mod error;
pub mod glob;
pub mod guards;
pub mod kernel;
pub mod keys;
pub mod label;
pub mod ledger;
pub mod path;
pub mod planted;
pub mod portable;
pub mod reason;
pub mod receipt;
pub mod request;
pub mod revocation;
pub mod scope;
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
