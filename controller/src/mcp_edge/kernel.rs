//! The edge's kernel on its own OS thread (the batch store is synchronous
//! and the trust-control adapter blocks on the runtime, as in a node's
//! kernel actor): admission, completion and abort of the one
//! `chio_kernel::Kernel`, each a closure run on the thread and answered on
//! a oneshot, with the trusted issuer keys refreshed from trust-control
//! before each command.
//! The thread adds no rule: it calls `Kernel::admit`, `Kernel::complete`
//! and `Kernel::abort`, and registers each caller named by its key
//! (`Kernel::register_key_agent`) before admitting its call.

use std::sync::mpsc;
use std::thread;

use chio_kernel::kernel::{Admission, AdmissionTicket, Decision, Kernel, KernelConfig, ToolOutput};
use chio_kernel::reason::DenyReason;
use chio_kernel::request::ToolCallRequest;
use chio_kernel::stores::KernelStores;
use chio_kernel::token::CapabilityToken;
use chio_kernel::verification::verify_capability;
use chio_node::actors::IssuerSource;
use tokio::sync::oneshot;

/// One piece of work for the kernel thread, run with the actor.
type Command = Box<dyn FnOnce(&mut Actor) + Send>;

/// Why the kernel thread could not answer.
#[derive(Debug, thiserror::Error)]
pub enum KernelThreadError {
    /// The thread could not start or the kernel refused its configuration.
    #[error("the edge's kernel did not start: {0}")]
    Start(String),
    /// The thread is gone.
    #[error("the edge's kernel stopped")]
    Gone,
}

/// A handle to the kernel thread.
#[derive(Clone)]
pub struct EdgeKernel {
    tx: mpsc::Sender<Command>,
}

struct Actor {
    kernel: Kernel,
    /// How many admissions the kernel has decided, so each call knows its
    /// place in the order the kernel admitted calls in.
    admitted: u64,
    issuers: Box<dyn IssuerSource>,
    trusted: Vec<String>,
    max_depth: usize,
}

impl Actor {
    fn refresh(&mut self) {
        if let Some(keys) = self.issuers.refresh() {
            self.trusted = self.kernel.set_trusted_issuers(keys).to_vec();
        }
    }

    fn run(mut self, rx: mpsc::Receiver<Command>) {
        while let Ok(command) = rx.recv() {
            self.refresh();
            command(&mut self);
        }
    }
}

impl EdgeKernel {
    /// Starts the kernel on its own thread over `stores`, refreshing its
    /// trusted issuers from `issuers`.
    pub fn spawn(
        config: KernelConfig,
        stores: KernelStores,
        issuers: Box<dyn IssuerSource>,
    ) -> Result<Self, KernelThreadError> {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        thread::Builder::new()
            .name("mcp-edge-kernel".to_string())
            .spawn(move || {
                let trusted = config.trusted_issuers.clone();
                let max_depth = config.max_delegation_depth;
                match Kernel::new(config, stores) {
                    Ok(kernel) => {
                        let _ = ready_tx.send(Ok(()));
                        Actor {
                            kernel,
                            admitted: 0,
                            issuers,
                            trusted,
                            max_depth,
                        }
                        .run(rx);
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                    }
                }
            })
            .map_err(|e| KernelThreadError::Start(e.to_string()))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Self { tx }),
            Ok(Err(e)) => Err(KernelThreadError::Start(e)),
            Err(_) => Err(KernelThreadError::Gone),
        }
    }

    /// Runs `work` on the kernel thread (after the issuer refresh every
    /// command gets) and awaits its answer.
    async fn ask<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Actor) -> T + Send + 'static,
    ) -> Result<T, KernelThreadError> {
        let (reply, answer) = oneshot::channel();
        let command: Command = Box::new(move |actor| {
            let _ = reply.send(work(actor));
        });
        self.tx.send(command).map_err(|_| KernelThreadError::Gone)?;
        answer.await.map_err(|_| KernelThreadError::Gone)
    }

    /// `Kernel::admit`, with the call's place in the kernel's admission
    /// order (from 1). A caller named by anything but its key stays
    /// unregistered, and the kernel refuses it at binding.
    pub async fn admit(
        &self,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> Result<(Admission, u64), KernelThreadError> {
        self.ask(move |actor| {
            let _ = actor.kernel.register_key_agent(&request.agent_id);
            actor.admitted += 1;
            (actor.kernel.admit(&request, now_ms), actor.admitted)
        })
        .await
    }

    /// `Kernel::complete`.
    pub async fn complete(
        &self,
        ticket: AdmissionTicket,
        output: ToolOutput,
        now_ms: u64,
    ) -> Result<Decision, KernelThreadError> {
        self.ask(move |actor| actor.kernel.complete(ticket, output, now_ms))
            .await
    }

    /// `Kernel::abort` for a call that never left, `Kernel::abort_after_send`
    /// for one the upstream received.
    pub async fn abort(
        &self,
        ticket: AdmissionTicket,
        failure: super::upstream::CallFailure,
        now_ms: u64,
    ) -> Result<Decision, KernelThreadError> {
        self.ask(move |actor| match failure.sent {
            true => actor
                .kernel
                .abort_after_send(ticket, &failure.reason, now_ms),
            false => actor.kernel.abort(ticket, &failure.reason, now_ms),
        })
        .await
    }

    /// The kernel's capability verification (issuer, signature, window,
    /// chain, against the issuers the kernel trusts) and its revocation
    /// check of the whole lineage: what a `tools/list` checks before it
    /// shows the tools a token covers.
    pub async fn verify(
        &self,
        token: CapabilityToken,
        now_ms: u64,
    ) -> Result<Result<(), DenyReason>, KernelThreadError> {
        self.ask(move |actor| {
            verify_capability(&token, &actor.trusted, now_ms, actor.max_depth, None)
                .and_then(|v| actor.kernel.check_revocation(&v))
        })
        .await
    }
}
