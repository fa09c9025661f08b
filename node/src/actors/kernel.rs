//! The kernel actor: one authorization kernel and the tool servers it serves.
//!
//! Order of work for one call, all on the kernel's own thread: admit
//! (steps 1 to 7 of the pipeline, `chio_kernel::kernel`), dispatch to the
//! tool-server actor when admitted, then complete (post-invocation guards,
//! labels, budget commit, receipt append) or abort on a dispatch failure.
//! The kernel's receipt is the only evidence the actor returns; what the
//! verdict means is the controller's business.

use std::collections::BTreeMap;
use std::thread;

use chio_kernel::kernel::{Admission, Decision, Kernel, KernelConfig, ToolOutput};
use chio_kernel::receipt::SignedReceipt;
use chio_kernel::request::ToolCallRequest;
use chio_kernel::stores::KernelStores;
use chio_kernel::trace::DecisionTrace;
use chio_kernel::verdict::{ProjectedVerdict, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::server::ToolServerHandle;
use crate::error::NodeError;
use crate::tools::ToolResult;

/// A kernel's answer to one call, in a form that crosses process
/// boundaries unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallOutcome {
    /// The kernel that evaluated the call (the one serving the server).
    pub kernel_id: String,
    /// Allow, deny or pending approval.
    pub verdict: Verdict,
    /// The verdict on the scenario alphabet.
    pub projected: ProjectedVerdict,
    /// Whether the output was rewritten by the post-invocation pipeline.
    pub sanitized: bool,
    /// Why, for every deny and approval.
    pub reason: Option<String>,
    /// The guard that decided, if one did.
    pub guard: Option<String>,
    /// Whether the receipt store acknowledged the receipt.
    pub recorded: bool,
    /// The signed receipt.
    pub receipt: SignedReceipt,
    /// The released output (allows only).
    pub output: Option<Value>,
    /// What the decision read and how each stage answered, for the bundle.
    #[serde(default)]
    pub trace: DecisionTrace,
}

impl CallOutcome {
    /// The outcome of `decision`, made by kernel `kernel_id`.
    pub(crate) fn from_decision(kernel_id: &str, decision: Decision) -> Self {
        CallOutcome {
            kernel_id: kernel_id.to_string(),
            projected: decision.projected(),
            verdict: decision.verdict,
            sanitized: decision.sanitized,
            reason: decision.reason,
            guard: decision.guard,
            recorded: decision.recorded,
            receipt: decision.receipt,
            output: decision.output,
            trace: decision.trace,
        }
    }
}

/// What a tool server's answer is to the kernel that dispatched to it.
pub(crate) fn tool_output(result: ToolResult) -> ToolOutput {
    ToolOutput {
        content: result.content,
        label: result.label,
        integrity: result.integrity.label(),
        performed: result.performed,
    }
}

/// Where a kernel actor refreshes its trusted issuer keys before each call
/// (trust-control in a distributed run; absent in the embedded topology,
/// whose kernels trust the world's configured issuers).
pub trait IssuerSource: Send {
    /// The new issuer set when the cached one expired and a fetch
    /// succeeded; `None` keeps the kernel's current set.
    fn refresh(&mut self) -> Option<Vec<String>>;
}

enum KernelCommand {
    Evaluate {
        request: Box<ToolCallRequest>,
        now_ms: u64,
        reply: oneshot::Sender<CallOutcome>,
    },
}

/// A handle to a running kernel actor.
#[derive(Debug, Clone)]
pub struct KernelHandle {
    id: String,
    tx: mpsc::Sender<KernelCommand>,
}

struct KernelActor {
    kernel: Kernel,
    issuers: Option<Box<dyn IssuerSource>>,
    servers: BTreeMap<String, ToolServerHandle>,
    rx: mpsc::Receiver<KernelCommand>,
}

impl KernelActor {
    fn run(mut self) {
        while let Some(command) = self.rx.blocking_recv() {
            match command {
                KernelCommand::Evaluate {
                    request,
                    now_ms,
                    reply,
                } => {
                    let outcome = self.evaluate(&request, now_ms);
                    let _ = reply.send(outcome);
                }
            }
        }
    }

    fn evaluate(&mut self, request: &ToolCallRequest, now_ms: u64) -> CallOutcome {
        if let Some(keys) = self.issuers.as_mut().and_then(|source| source.refresh()) {
            self.kernel.set_trusted_issuers(keys);
        }
        let decision = match self.kernel.admit(request, now_ms) {
            Admission::Decided(decision) => *decision,
            Admission::Admitted(ticket) => {
                let dispatched = match self.servers.get(&ticket.request().server) {
                    Some(server) => server
                        .call_blocking(&ticket.request().tool, &ticket.request().arguments)
                        .map_err(|e| e.to_string()),
                    None => Err(format!(
                        "server {} is not served by kernel {}",
                        ticket.request().server,
                        self.kernel.kernel_id()
                    )),
                };
                match dispatched {
                    Ok(result) => self.kernel.complete(*ticket, tool_output(result), now_ms),
                    Err(reason) => {
                        self.kernel
                            .abort(*ticket, &format!("dispatch failed: {reason}"), now_ms)
                    }
                }
            }
        };
        CallOutcome::from_decision(self.kernel.kernel_id(), decision)
    }
}

impl KernelHandle {
    /// Starts a kernel on its own named thread, serving `servers`.
    pub fn spawn(
        config: KernelConfig,
        stores: KernelStores,
        servers: BTreeMap<String, ToolServerHandle>,
    ) -> Result<Self, NodeError> {
        Self::spawn_with_issuers(config, stores, servers, None)
    }

    /// Starts a kernel that refreshes its trusted issuer keys from `issuers`
    /// before each call.
    pub fn spawn_with_issuers(
        config: KernelConfig,
        stores: KernelStores,
        servers: BTreeMap<String, ToolServerHandle>,
        issuers: Option<Box<dyn IssuerSource>>,
    ) -> Result<Self, NodeError> {
        let id = config.kernel_id.clone();
        let (tx, rx) = mpsc::channel(super::MAILBOX);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        thread::Builder::new()
            .name(format!("kernel-{id}"))
            .spawn(move || match Kernel::new(config, stores) {
                Ok(kernel) => {
                    let _ = ready_tx.send(Ok(()));
                    KernelActor {
                        kernel,
                        issuers,
                        servers,
                        rx,
                    }
                    .run();
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| NodeError::ActorGone(format!("kernel {id}: cannot start thread: {e}")))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Self { id, tx }),
            Ok(Err(source)) => Err(NodeError::KernelStart { kernel: id, source }),
            Err(_) => Err(NodeError::ActorGone(format!("kernel {id}"))),
        }
    }

    /// The kernel id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Evaluates one call at virtual time `now_ms` (Unix milliseconds).
    pub async fn evaluate(
        &self,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> Result<CallOutcome, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(KernelCommand::Evaluate {
                request: Box::new(request),
                now_ms,
                reply,
            })
            .await
            .map_err(|_| NodeError::ActorGone(format!("kernel {}", self.id)))?;
        answer
            .await
            .map_err(|_| NodeError::ActorGone(format!("kernel {}", self.id)))
    }
}
