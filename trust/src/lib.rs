//! Trust-control: the shared authority state of a Chio Arena (trusted issuer
//! keys, revocations, invocation and monetary budgets, delegated sibling
//! shares, the receipt log, retained information-flow labels), its stores,
//! and the authenticated gRPC service and client that share it between nodes.
//!
//! Nodes call trust-control; it never calls a node. The kernel decides what
//! to ask; this crate only keeps the answers consistent and durable.
//!
//! Module map:
//! - [`model`]: the stored values, request limits and the rules both stores apply;
//! - [`store`]: the [`TrustStore`] trait, the SQLite store and the in-memory store;
//! - [`token`]: the bearer token and its constant-time check;
//! - [`service`]: the `TrustControl` gRPC service and [`serve`];
//! - [`client`]: [`TrustClient`], the node's side of the wire;
//! - [`batch_wire`]: decision batches to and from their messages;
//! - [`daemon`]: running the service as a process (`chio trust serve`);
//! - [`error`]: [`TrustError`], the one error type.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod batch_wire;
pub mod client;
pub mod daemon;
pub mod error;
pub mod model;
pub mod service;
pub mod store;
pub mod token;

pub use client::{TrustClient, TrustClientConfig};
pub use error::TrustError;
pub use service::serve;
pub use store::memory::InMemoryTrustStore;
pub use store::sqlite::SqliteTrustStore;
pub use store::TrustStore;
pub use token::{read_token_file, BearerToken};
