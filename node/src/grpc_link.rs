//! `GrpcLink`: the [`KernelLink`] of a node process, reaching the kernels and
//! agents of other nodes over the `chio.node.v1.KernelLink` service.
//!
//! The link knows, from the resolved world, which node hosts each kernel and
//! each agent, and from the controller's `LoadWorld`, the URL of each node.
//! Channels connect lazily, set `TCP_NODELAY`, carry the cluster token and
//! bound every call by a deadline, so a dead peer is an error naming it
//! within that bound, never a hang. A failure of the link itself (refused,
//! reset or closed, or no answer in time) is a typed `NodeError::LinkDown`
//! of its kind, the transport's text only logged, so the node's deny reads
//! the same whatever the operating system said. The link only carries; the
//! remote node's kernel decides.
//!
//! A call the link itself failed renews that peer's channel: the next call
//! connects afresh instead of meeting what the failed connection left
//! behind (a connection a cut dropped is seen as closed only when it is
//! next used, so without this the first call after a heal could fail on
//! it). Nothing is sent again: a failed call stays failed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;
use chio_proto::node::v1 as pb;
use chio_proto::node::v1::kernel_link_client::KernelLinkClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::actors::CallOutcome;
use crate::cluster::{ClusterHeader, ClusterToken};
use crate::error::NodeError;
use crate::link::{KernelLink, LinkFuture};
use crate::outage::Outage;
use crate::wire::outcome::call_outcome_from_proto;
use crate::wire::{decode_answer, encode, error_of, MAX_LINK_MESSAGE_BYTES};
use crate::world::World;

/// Default bound on one cross-node call, in milliseconds (it includes the
/// remote kernel's store calls and receipt append).
pub const DEFAULT_LINK_DEADLINE_MS: u64 = 30_000;
/// [`DEFAULT_LINK_DEADLINE_MS`] as a duration.
pub const DEFAULT_LINK_DEADLINE: Duration = Duration::from_millis(DEFAULT_LINK_DEADLINE_MS);
/// Bound on establishing a connection to a peer.
pub const LINK_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

type LinkClient = KernelLinkClient<InterceptedService<Channel, ClusterHeader>>;

/// Opens a lazily connecting channel to `url` with `TCP_NODELAY`.
pub fn channel(url: &str) -> Result<Channel, NodeError> {
    Endpoint::from_shared(url.to_string())
        .map(|endpoint| {
            endpoint
                .tcp_nodelay(true)
                .connect_timeout(LINK_CONNECT_TIMEOUT)
                .connect_lazy()
        })
        .map_err(|_| NodeError::Config {
            problem: format!("{url:?} is not a valid node URL"),
            fix: "give each node as http://HOST:PORT",
        })
}

/// One peer node: where it is, and the client its next call uses.
struct Peer {
    url: String,
    header: ClusterHeader,
    client: Mutex<LinkClient>,
}

impl std::fmt::Debug for Peer {
    // The header carries the cluster token: only the address is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").field("url", &self.url).finish()
    }
}

impl Peer {
    fn client(url: &str, header: ClusterHeader) -> Result<LinkClient, NodeError> {
        Ok(KernelLinkClient::with_interceptor(channel(url)?, header)
            .max_decoding_message_size(MAX_LINK_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_LINK_MESSAGE_BYTES))
    }

    fn current(&self) -> LinkClient {
        self.client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Replaces the client with one on a fresh channel.
    fn renew(&self) {
        if let Ok(fresh) = Self::client(&self.url, self.header.clone()) {
            *self
                .client
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = fresh;
        }
    }
}

/// A link to the other nodes of a run over gRPC.
#[derive(Debug, Clone)]
pub struct GrpcLink {
    kernel_nodes: BTreeMap<String, String>,
    agent_nodes: BTreeMap<String, String>,
    peers: BTreeMap<String, Arc<Peer>>,
    deadline: Duration,
    run_id: String,
}

impl GrpcLink {
    /// A link for the world's kernels and agents, reaching node `n` at
    /// `peers[n]`.
    pub fn new(
        world: &World,
        peers: &BTreeMap<String, String>,
        token: &ClusterToken,
        deadline: Duration,
    ) -> Result<Self, NodeError> {
        let mut clients = BTreeMap::new();
        for node in &world.nodes {
            let url = peers.get(node).ok_or_else(|| NodeError::Config {
                problem: format!("no address was given for node {node}"),
                fix: "list every node of the scenario in the topology",
            })?;
            let header = token.header();
            let client = Mutex::new(Peer::client(url, header.clone())?);
            clients.insert(
                node.clone(),
                Arc::new(Peer {
                    url: url.clone(),
                    header,
                    client,
                }),
            );
        }
        Ok(Self {
            kernel_nodes: world.kernel_nodes(),
            agent_nodes: world.agent_nodes(),
            peers: clients,
            deadline,
            run_id: String::new(),
        })
    }

    /// This link naming the run `run_id` in every call it makes, so a peer
    /// hosting another run's world refuses them.
    #[must_use]
    pub fn for_run(mut self, run_id: &str) -> Self {
        self.run_id = run_id.to_string();
        self
    }

    fn peer(
        &self,
        table: &BTreeMap<String, String>,
        what: &str,
        id: &str,
    ) -> Result<(String, LinkClient), NodeError> {
        let node = table
            .get(id)
            .ok_or_else(|| NodeError::Unroutable(format!("{what} {id}")))?;
        let client = self
            .peers
            .get(node)
            .map(|peer| peer.current())
            .ok_or_else(|| NodeError::Unroutable(format!("node {node}")))?;
        Ok((node.clone(), client))
    }
}

impl GrpcLink {
    /// Evaluates calls that arrive together on kernel `kernel_id`, on the
    /// node hosting it: every call is admitted before any is dispatched
    /// (`KernelLink.EvaluateTogether`). Answers one outcome per call.
    pub async fn evaluate_together(
        &self,
        kernel_id: &str,
        requests: &[(ToolCallRequest, u64)],
    ) -> Result<Vec<CallOutcome>, NodeError> {
        let (node, client) = self.peer(&self.kernel_nodes, "kernel", kernel_id)?;
        let target = format!("node {node} (kernel {kernel_id})");
        let evaluations = requests
            .iter()
            .map(|(request, now_ms)| {
                Ok(pb::Evaluation {
                    request_json: encode("a signed tool call request", request)?,
                    now_ms: *now_ms,
                })
            })
            .collect::<Result<Vec<_>, NodeError>>()?;
        let message = pb::EvaluateTogetherRequest {
            kernel_id: kernel_id.to_string(),
            evaluations,
            run_id: self.run_id.clone(),
        };
        let answer = self
            .unary(&node, &target, client, message, |mut c, r| async move {
                c.evaluate_together(r).await
            })
            .await?;
        if answer.outcomes.len() != requests.len() {
            return Err(NodeError::Remote {
                target,
                cause: format!(
                    "answered {} outcomes for {} calls",
                    answer.outcomes.len(),
                    requests.len()
                ),
            });
        }
        answer
            .outcomes
            .into_iter()
            .enumerate()
            .map(|(i, outcome)| {
                decode_answer(
                    &target,
                    call_outcome_from_proto(&format!("outcomes[{i}]"), Some(outcome)),
                )
            })
            .collect()
    }

    /// Sends one call to `node` with `client`, bounded by the link's
    /// deadline: no answer in time, or a failure of the transport, is
    /// [`NodeError::LinkDown`] of its kind; anything the peer answered is
    /// its error.
    async fn unary<Req, Resp, Fut>(
        &self,
        node: &str,
        target: &str,
        client: LinkClient,
        message: Req,
        call: impl FnOnce(LinkClient, tonic::Request<Req>) -> Fut,
    ) -> Result<Resp, NodeError>
    where
        Fut: std::future::Future<Output = Result<tonic::Response<Resp>, Status>>,
    {
        let mut request = tonic::Request::new(message);
        request.set_timeout(self.deadline);
        let answer = tokio::time::timeout(self.deadline, call(client, request))
            .await
            .map_err(|_| self.late(node, target))
            .and_then(|answer| {
                answer
                    .map(tonic::Response::into_inner)
                    .map_err(|status| link_failure(node, target, &status))
            });
        if let Err(NodeError::LinkDown { .. }) = &answer {
            if let Some(peer) = self.peers.get(node) {
                peer.renew();
            }
        }
        answer
    }

    /// The error of a call to `target` on `node` that got no answer
    /// within the link's deadline.
    fn late(&self, node: &str, target: &str) -> NodeError {
        tracing::warn!(
            target = %target,
            deadline_ms = self.deadline.as_millis() as u64,
            "link call got no answer within its deadline"
        );
        NodeError::LinkDown {
            node: node.to_string(),
            outage: Outage::DeadlineExceeded,
        }
    }
}

/// Whether the transport made `status` rather than the peer's node: a
/// node's own statuses arrive over the wire, so they carry no source error
/// and never start with the transport's words, and a node never answers
/// `CANCELLED` (the transport does when a connection closes under a call).
fn transport_made(status: &Status) -> bool {
    let message = status.message();
    std::error::Error::source(status).is_some()
        || status.code() == Code::Cancelled
        || message.starts_with("h2 protocol error")
        || message.starts_with("transport error")
}

/// The error of a call to `target` on `node` answered by `status`: a
/// failure of the link itself is [`NodeError::LinkDown`] of its kind (the
/// transport's text is logged, never carried), anything the peer node
/// answered is its error.
fn link_failure(node: &str, target: &str, status: &Status) -> NodeError {
    let outage = match status.code() {
        Code::DeadlineExceeded => Some(Outage::DeadlineExceeded),
        Code::Cancelled if chio_trust::client::timed_out(status) => Some(Outage::DeadlineExceeded),
        _ if transport_made(status) => Some(Outage::Unavailable),
        _ => None,
    };
    match outage {
        Some(outage) => {
            tracing::warn!(
                target = %target,
                status = %error_of(target, status),
                "link call failed in transport"
            );
            NodeError::LinkDown {
                node: node.to_string(),
                outage,
            }
        }
        None => error_of(target, status),
    }
}

impl KernelLink for GrpcLink {
    fn evaluate(
        &self,
        kernel_id: &str,
        request: ToolCallRequest,
        now_ms: u64,
    ) -> LinkFuture<'_, CallOutcome> {
        let routed = self.peer(&self.kernel_nodes, "kernel", kernel_id);
        let kernel_id = kernel_id.to_string();
        Box::pin(async move {
            let (node, client) = routed?;
            let target = format!("node {node} (kernel {kernel_id})");
            let message = pb::EvaluateRequest {
                kernel_id,
                request_json: encode("a signed tool call request", &request)?,
                now_ms,
                run_id: self.run_id.clone(),
            };
            let answer = self
                .unary(&node, &target, client, message, |mut c, r| async move {
                    c.evaluate(r).await
                })
                .await?;
            decode_answer(&target, call_outcome_from_proto("outcome", answer.outcome))
        })
    }

    fn hand_over(&self, agent_id: &str, token: CapabilityToken) -> LinkFuture<'_, ()> {
        let routed = self.peer(&self.agent_nodes, "agent", agent_id);
        let agent_id = agent_id.to_string();
        Box::pin(async move {
            let (node, client) = routed?;
            let target = format!("node {node} (agent {agent_id})");
            let message = pb::HandOverRequest {
                agent_id,
                token_json: encode("a capability token", &token)?,
                run_id: self.run_id.clone(),
            };
            self.unary(&node, &target, client, message, |mut c, r| async move {
                c.hand_over(r).await
            })
            .await
            .map(|_| ())
        })
    }
}
