//! The actors a node hosts: one per kernel, per agent and per live tool
//! server.
//!
//! Each actor owns its state and a bounded mailbox and is reached through a
//! cloneable handle (the actor shape of `CONTRIBUTING.md`); a dropped handle
//! ends its actor.
//! Agent actors and the actors of live tool servers are tokio tasks. A
//! kernel actor is a named OS thread, because the kernel's batch store is
//! synchronous and a remote store blocks on its RPC: a dedicated thread
//! keeps that blocking off the async runtime. A simulated tool server is
//! no actor: its kernel's thread calls it under a lock, which spares each
//! call two thread hand-overs. Module map:
//! - [`server`]: [`ToolServerHandle`], a tool server as its kernel reaches it;
//! - [`kernel`]: [`KernelHandle`], a kernel and the servers it dispatches to;
//! - [`agent`]: [`AgentHandle`], an agent's key, capabilities and requests.

pub mod agent;
pub mod kernel;
pub mod server;

pub use agent::AgentHandle;
pub use kernel::{CallOutcome, IssuerSource, KernelHandle};
pub use server::ToolServerHandle;

/// Mailbox capacity of every actor; the controller dispatches one action
/// at a time, so the bound only matters under load tests and adversaries.
pub const MAILBOX: usize = 64;
