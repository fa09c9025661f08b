//! The kernel actor: one authorization kernel and the tool servers it serves.
//!
//! Order of work for one call, all on the kernel's own thread: admit
//! (steps 1 to 7 of the pipeline, `chio_kernel::kernel`), dispatch to the
//! tool server when admitted (on this thread for a simulated server, to its
//! actor for a live one), then complete (post-invocation guards,
//! labels, budget commit, receipt append) or abort on a dispatch failure.
//! Calls that arrive together (an adversary's concurrent replay or burst)
//! are admitted, in order, before any is dispatched, then completed in
//! order. The kernel's receipt is the only evidence the actor returns; what
//! the verdict means is the controller's business.

use std::collections::BTreeMap;
use std::thread;

use chio_kernel::kernel::{AdmissionTicket, Decision, Kernel, KernelConfig};
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
use crate::tools::tool_output;

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

    /// The kernel's decision this outcome carries (the inverse of
    /// `from_decision`), for callers that judge decisions wherever they
    /// were made.
    pub fn into_decision(self) -> Decision {
        Decision {
            verdict: self.verdict,
            sanitized: self.sanitized,
            reason: self.reason,
            guard: self.guard,
            receipt: self.receipt,
            recorded: self.recorded,
            output: self.output,
            trace: self.trace,
        }
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
    EvaluateTogether {
        requests: Vec<(ToolCallRequest, u64)>,
        reply: oneshot::Sender<Vec<CallOutcome>>,
    },
}

/// A handle to a running kernel actor.
#[derive(Debug, Clone)]
pub struct KernelHandle {
    id: String,
    tx: mpsc::Sender<KernelCommand>,
    /// The tool servers the kernel serves, so a fixture edit can reach one
    /// outside any call.
    servers: BTreeMap<String, ToolServerHandle>,
}

struct KernelActor {
    /// The kernel's id, kept apart so a dispatch can name it while the
    /// kernel is busy deciding.
    id: String,
    kernel: Kernel,
    issuers: Option<Box<dyn IssuerSource>>,
    servers: BTreeMap<String, ToolServerHandle>,
    rx: mpsc::Receiver<KernelCommand>,
}

impl KernelActor {
    fn run(mut self) {
        while let Some(command) = self.rx.blocking_recv() {
            self.refresh_issuers();
            match command {
                KernelCommand::Evaluate {
                    request,
                    now_ms,
                    reply,
                } => {
                    let (id, servers) = (&self.id, &self.servers);
                    let decision = self.kernel.evaluate(&request, now_ms, &mut |admitted| {
                        dispatch(servers, id, admitted)
                    });
                    let _ = reply.send(CallOutcome::from_decision(id, decision));
                }
                KernelCommand::EvaluateTogether { requests, reply } => {
                    let (id, servers) = (&self.id, &self.servers);
                    let decisions = self.kernel.evaluate_together(&requests, &mut |admitted| {
                        dispatch(servers, id, admitted)
                    });
                    let outcomes = decisions
                        .into_iter()
                        .map(|decision| CallOutcome::from_decision(id, decision))
                        .collect();
                    let _ = reply.send(outcomes);
                }
            }
        }
    }

    /// Refreshes the trusted issuer keys once before each command.
    fn refresh_issuers(&mut self) {
        if let Some(keys) = self.issuers.as_mut().and_then(|source| source.refresh()) {
            self.kernel.set_trusted_issuers(keys);
        }
    }
}

/// Dispatches an admitted call to the tool server serving it.
fn dispatch(
    servers: &BTreeMap<String, ToolServerHandle>,
    kernel_id: &str,
    admitted: &AdmissionTicket,
) -> Result<chio_kernel::kernel::ToolOutput, String> {
    let request = admitted.request();
    let dispatched = match servers.get(&request.server) {
        Some(server) => server
            .call_blocking(
                crate::tools::Caller::of(request),
                &request.tool,
                &request.arguments,
                admitted.carried_labels(),
            )
            .map_err(|e| e.to_string()),
        None => Err(format!(
            "server {} is not served by kernel {kernel_id}",
            request.server
        )),
    };
    dispatched
        .map(tool_output)
        .map_err(|reason| format!("dispatch failed: {reason}"))
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
        let handles = servers.clone();
        thread::Builder::new()
            .name(format!("kernel-{id}"))
            .spawn(move || match Kernel::new(config, stores) {
                Ok(kernel) => {
                    let _ = ready_tx.send(Ok(()));
                    KernelActor {
                        id: kernel.kernel_id().to_string(),
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
            Ok(Ok(())) => Ok(Self {
                id,
                tx,
                servers: handles,
            }),
            Ok(Err(source)) => Err(NodeError::KernelStart { kernel: id, source }),
            Err(_) => Err(NodeError::ActorGone(format!("kernel {id}"))),
        }
    }

    /// The kernel id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A tool server this kernel serves.
    pub fn server(&self, id: &str) -> Option<&ToolServerHandle> {
        self.servers.get(id)
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

    /// Evaluates calls that arrive together: every one is admitted, in
    /// order, before any is dispatched (`Kernel::evaluate_together`).
    pub async fn evaluate_together(
        &self,
        requests: Vec<(ToolCallRequest, u64)>,
    ) -> Result<Vec<CallOutcome>, NodeError> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(KernelCommand::EvaluateTogether { requests, reply })
            .await
            .map_err(|_| NodeError::ActorGone(format!("kernel {}", self.id)))?;
        answer
            .await
            .map_err(|_| NodeError::ActorGone(format!("kernel {}", self.id)))
    }
}
