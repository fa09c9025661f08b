//! The edge's kernel on its own OS thread (the batch store is synchronous
//! and the trust-control adapter blocks on the runtime, as in a node's
//! kernel actor): admission, completion and abort of the one
//! `chio_kernel::Kernel`, each a command answered on a oneshot, with the
//! trusted issuer keys refreshed from trust-control before each command.
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

enum Command {
    Admit {
        request: Box<ToolCallRequest>,
        now_ms: u64,
        reply: oneshot::Sender<(Admission, u64)>,
    },
    Complete {
        ticket: Box<AdmissionTicket>,
        output: ToolOutput,
        now_ms: u64,
        reply: oneshot::Sender<Decision>,
    },
    Abort {
        ticket: Box<AdmissionTicket>,
        reason: String,
        now_ms: u64,
        reply: oneshot::Sender<Decision>,
    },
    Verify {
        token: Box<CapabilityToken>,
        now_ms: u64,
        reply: oneshot::Sender<Result<(), DenyReason>>,
    },
}

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
            self.trusted = keys.clone();
            self.kernel.set_trusted_issuers(keys);
        }
    }

    fn run(mut self, rx: mpsc::Receiver<Command>) {
        while let Ok(command) = rx.recv() {
            self.refresh();
            match command {
                Command::Admit {
                    request,
                    now_ms,
                    reply,
                } => {
                    // A caller named by anything but its key stays
                    // unregistered, and the kernel refuses it at binding.
                    let _ = self.kernel.register_key_agent(&request.agent_id);
                    self.admitted += 1;
                    let _ = reply.send((self.kernel.admit(&request, now_ms), self.admitted));
                }
                Command::Complete {
                    ticket,
                    output,
                    now_ms,
                    reply,
                } => {
                    let _ = reply.send(self.kernel.complete(*ticket, output, now_ms));
                }
                Command::Abort {
                    ticket,
                    reason,
                    now_ms,
                    reply,
                } => {
                    let _ = reply.send(self.kernel.abort(*ticket, &reason, now_ms));
                }
                Command::Verify {
                    token,
                    now_ms,
                    reply,
                } => {
                    let verified =
                        verify_capability(&token, &self.trusted, now_ms, self.max_depth, None)
                            .and_then(|v| self.kernel.check_revocation(&v));
                    let _ = reply.send(verified);
                }
            }
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

    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, KernelThreadError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(make(reply))
            .map_err(|_| KernelThreadError::Gone)?;
        answer.await.map_err(|_| KernelThreadError::Gone)
    }

    /// `Kernel::admit`, with the call's place in the kernel's admission
    /// order (from 1).
    pub async fn admit(
        &self,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> Result<(Admission, u64), KernelThreadError> {
        self.ask(|reply| Command::Admit {
            request: Box::new(request),
            now_ms,
            reply,
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
        self.ask(|reply| Command::Complete {
            ticket: Box::new(ticket),
            output,
            now_ms,
            reply,
        })
        .await
    }

    /// `Kernel::abort`.
    pub async fn abort(
        &self,
        ticket: AdmissionTicket,
        reason: String,
        now_ms: u64,
    ) -> Result<Decision, KernelThreadError> {
        self.ask(|reply| Command::Abort {
            ticket: Box::new(ticket),
            reason,
            now_ms,
            reply,
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
        self.ask(|reply| Command::Verify {
            token: Box::new(token),
            now_ms,
            reply,
        })
        .await
    }
}
