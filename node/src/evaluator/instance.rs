//! Where the adversary evaluator's fresh instances of a world live: the
//! [`Worlds`] that makes one per batch and the [`WorldInstance`] the batch
//! is evaluated in.
//!
//! The evaluator's logic (which step an action meets, how a replay or a
//! scope escape is made, what the feedback says) is the same wherever the
//! world runs; this module names the five things it asks of the place:
//! the dispatcher that scheduled steps go through, a way to wait for a
//! dispatcher's answers, one signed call decided by a named kernel, calls
//! that arrive together at one kernel, and a fixture file read or changed
//! outside any call. [`DirectWorlds`] answers them in process and synchronously
//! ([`DirectDispatcher`], the embedded topology's rules); the controller's
//! topology worlds answer them from node processes over gRPC. What a kernel
//! decides is the kernel's own in both, which is why an evolution gives the
//! same bytes on every topology.

use std::future::Future;

use chio_kernel::kernel::Decision;
use chio_kernel::request::ToolCallRequest;

use crate::error::NodeError;
use crate::executor::direct::DirectDispatcher;
use crate::executor::{complete_now, Dispatcher};
use crate::tools::FileChange;
use crate::world::World;

/// Makes a fresh instance of a world for each batch of actions.
pub trait Worlds {
    /// The instance one batch is evaluated in.
    type Instance<'w>: WorldInstance
    where
        Self: 'w;

    /// A fresh instance of `world`: its grants held, nothing evaluated, no
    /// state of an earlier batch visible.
    fn instance<'w>(&'w mut self, world: &'w World) -> Result<Self::Instance<'w>, NodeError>;
}

/// One fresh instance of a world, as the adversary evaluator uses it.
pub trait WorldInstance {
    /// The dispatcher the scenario's own steps go through.
    fn dispatcher(&self) -> &dyn Dispatcher;

    /// Waits for a future of this instance's dispatcher.
    fn complete<T>(
        &self,
        future: impl Future<Output = Result<T, NodeError>>,
    ) -> Result<T, NodeError>;

    /// `kernel` decides one signed call at `now_ms`, dispatching to the
    /// tool servers it serves when it admits it.
    fn decide(
        &mut self,
        kernel: &str,
        request: &ToolCallRequest,
        now_ms: u64,
    ) -> Result<Decision, NodeError>;

    /// `kernel` decides calls that arrive together: every one admitted, in
    /// order, before any is dispatched (`Kernel::evaluate_together`).
    fn decide_together(
        &mut self,
        kernel: &str,
        requests: &[(ToolCallRequest, u64)],
    ) -> Result<Vec<Decision>, NodeError>;

    /// Changes a file of tool server `server` outside any call; answers
    /// the content it had.
    fn change_file(
        &mut self,
        server: &str,
        path: &str,
        change: FileChange,
    ) -> Result<Option<String>, NodeError>;
}

/// Instances in process: a [`DirectDispatcher`] per batch.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirectWorlds;

impl Worlds for DirectWorlds {
    type Instance<'w> = DirectDispatcher<'w>;

    fn instance<'w>(&'w mut self, world: &'w World) -> Result<DirectDispatcher<'w>, NodeError> {
        DirectDispatcher::new(world)
    }
}

impl WorldInstance for DirectDispatcher<'_> {
    fn dispatcher(&self) -> &dyn Dispatcher {
        self
    }

    fn complete<T>(
        &self,
        future: impl Future<Output = Result<T, NodeError>>,
    ) -> Result<T, NodeError> {
        complete_now(future)
    }

    fn decide(
        &mut self,
        kernel: &str,
        request: &ToolCallRequest,
        now_ms: u64,
    ) -> Result<Decision, NodeError> {
        let world = self.world();
        self.state()?.decide(world, kernel, request, now_ms)
    }

    fn decide_together(
        &mut self,
        kernel: &str,
        requests: &[(ToolCallRequest, u64)],
    ) -> Result<Vec<Decision>, NodeError> {
        let world = self.world();
        self.state()?.decide_together(world, kernel, requests)
    }

    fn change_file(
        &mut self,
        server: &str,
        path: &str,
        change: FileChange,
    ) -> Result<Option<String>, NodeError> {
        let mut state = self.state()?;
        let server = state
            .servers
            .get_mut(server)
            .ok_or_else(|| NodeError::Unroutable(format!("server {server}")))?;
        Ok(server.change_file(path, change))
    }
}
