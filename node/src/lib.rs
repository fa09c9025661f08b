//! A Chio Arena node: the actors that host kernels, agents and simulated
//! tool servers, and the routing between nodes.
//!
//! A node hosts one actor per kernel, per agent and per tool server placed
//! on it by the scenario's world, routes each call to the kernel serving
//! the target server (locally by channel, remotely over `KernelLink`), and
//! hands delegated capabilities to the delegatee's node. The controller
//! owns time and order; a node only handles the actions it is sent.
//!
//! Module map:
//! - [`world`]: resolving a scenario's world (keys, grants, placement);
//! - [`tools`]: the deterministic simulated tool servers;
//! - [`actors`]: kernel, agent and live tool-server actors, and the
//!   handle a kernel reaches a tool server through;
//! - [`link`]: the `KernelLink` trait and its in-memory implementation;
//! - [`mux`]: the `KernelMultiplexer`;
//! - [`handling`]: a node's handling of a call, a delegation, a message and
//!   a revocation, written once over a port (a node's actors and links, or
//!   the direct dispatcher's world in one process);
//! - [`node`]: one node's operations;
//! - [`outage`]: unreachable peers and trust-control, and the node's own
//!   fail-closed answers to the steps they reach;
//! - [`embedded`]: every node in one process;
//! - [`simulated_faults`]: crashes, partitions and stalls as the embedded
//!   topology simulates them;
//! - [`executor`]: the step executor, one handler per action kind (faults
//!   included), and the synchronous direct dispatcher;
//! - [`evaluator`]: adversary actions judged by the real kernel in the world;
//! - [`host`]: the node process's actor that loads a world sent over the wire;
//! - [`service`]: the `NodeControl` and `KernelLink` gRPC services;
//! - [`client`]: the `NodeControl` client the controller uses;
//! - [`grpc_link`]: `KernelLink` over gRPC between node processes;
//! - [`trust_stores`]: kernel stores over trust-control or local SQLite;
//! - [`cluster`]: the shared cluster bearer token;
//! - [`wire`]: every conversion between the node protocols' messages and
//!   node types, the size limits and the status mapping;
//! - [`daemon`]: running a node as a process (`chio node serve`);
//! - [`error`]: the node error type, [`NodeError`].
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod actors;
pub mod client;
pub mod cluster;
pub mod daemon;
pub mod embedded;
pub mod error;
pub mod evaluator;
pub mod executor;
pub mod grpc_link;
pub mod handling;
pub mod host;
pub mod link;
pub mod mux;
pub mod node;
pub mod outage;
pub mod service;
pub mod simulated_faults;
pub mod tools;
pub mod trust_stores;
pub mod wire;
pub mod world;

pub use client::NodeClient;
pub use cluster::ClusterToken;
pub use embedded::EmbeddedTopology;
pub use error::NodeError;
pub use grpc_link::GrpcLink;
pub use host::NodeHost;
pub use node::{
    CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand, MessageOutcome, Node,
};
pub use world::{FixtureSet, World};
