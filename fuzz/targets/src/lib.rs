//! The bodies of Chio Arena's coverage-guided fuzz targets, as ordinary
//! functions over `&[u8]`.
//!
//! Each function feeds its bytes to the real decoder of one kind of
//! untrusted input and drives what decoded through the real validation and
//! evaluation code, then asserts the properties the proptest targets assert:
//! nothing panics, every refusal names its cause, and whatever decodes
//! round-trips or is refused by its verifier. A violated property is a
//! panic, which is how a fuzzer recognises a finding. The cargo-fuzz package
//! in `fuzz/` calls these functions under libFuzzer; `tests/replay_corpora.rs`
//! calls them on every committed corpus and regression input under plain
//! `cargo test`, so CI replays the corpora without a fuzzer. What each target
//! reaches is reported as a [`Reach`], which the tests use to prove the seeds
//! get past the decoders.
//!
//! This crate owns no product rule: the loader, the kernel, the node host and
//! its services, and trust-control's service are called through their public
//! interfaces.
//!
//! Module map:
//! - [`scenario`]: the scenario loader, from a TOML document;
//! - [`token`]: capability tokens and their delegation chains, decoded then
//!   verified and evaluated by a kernel;
//! - [`envelope`]: the portable-evaluation envelope;
//! - [`node`]: `NodeControl` and `KernelLink` requests, decoded and served by
//!   the node's services over a hosted world;
//! - [`trust`]: `TrustControl` requests, decoded and served by the service
//!   over the in-memory store;
//! - [`frames`]: how one input carries a sequence of requests;
//! - [`world`]: the fixed keys, tokens and worlds the targets evaluate in;
//! - [`seeds`]: the seed inputs of every target.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod envelope;
pub mod frames;
pub mod node;
pub mod scenario;
pub mod seeds;
pub mod token;
pub mod trust;
pub mod world;

pub use envelope::portable_envelope;
pub use node::{kernel_link, node_control};
pub use scenario::scenario_loader;
pub use token::capability_token;
pub use trust::trust_control;

/// How deep one input went, so tests can prove that seeds reach past the
/// decoders rather than being refused at the first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// Refused by the first decoder (bytes that are not the format).
    Undecoded,
    /// Decoded, then refused by validation or verification with a reason.
    Refused,
    /// Decoded and accepted: loaded, verified, allowed or answered.
    Accepted,
}

/// A target: one function over the fuzzer's bytes.
pub type Target = fn(&[u8]) -> Reach;

/// Every target by the name its corpus folder and cargo-fuzz binary carry.
pub const TARGETS: &[(&str, Target)] = &[
    ("scenario_loader", scenario_loader),
    ("capability_token", capability_token),
    ("portable_envelope", portable_envelope),
    ("node_control", node_control),
    ("kernel_link", kernel_link),
    ("trust_control", trust_control),
];
