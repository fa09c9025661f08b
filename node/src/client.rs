//! `NodeClient`: the controller's side of `NodeControl`, one per logical
//! node.
//!
//! It carries the cluster token, sets `TCP_NODELAY`, bounds every call by a
//! deadline and turns every failure into a [`NodeError::Remote`] naming the
//! logical node, so a dead or silent node ends a run with an
//! infrastructure failure that says which node, within the deadline.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use chio_kernel::contract::Redefinition;
use chio_proto::node::v1 as pb;
use chio_proto::node::v1::node_control_client::NodeControlClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::cluster::{ClusterHeader, ClusterToken};
use crate::error::NodeError;
use crate::grpc_link::channel;
use crate::host::LoadedWorld;
use crate::node::{
    CallAnswer, CallCommand, DelegateCommand, DelegateOutcome, MessageCommand, MessageOutcome,
};
use crate::outage::Refusal;
use crate::tools::FileChange;
use crate::wire::command::{call_request, delegate_request, fixtures_to_proto, message_request};
use crate::wire::outcome::{call_answer, delegate_outcome, message_outcome, revoke_outcome};
use crate::wire::{decode_answer, error_of, MAX_CONTROL_MESSAGE_BYTES, MAX_LINK_MESSAGE_BYTES};
use crate::world::FixtureSet;

/// Default bound on one scheduled action sent to a node.
pub const DEFAULT_CONTROL_DEADLINE: Duration = Duration::from_secs(60);

type Inner = NodeControlClient<InterceptedService<Channel, ClusterHeader>>;

/// The label the controller records under a run's witness key.
pub const WITNESS_LABEL: &str = "witness";

/// The key of the run's witness record: the label record the controller
/// writes into the trust-control its topology names before loading a world,
/// and every node must find in its own authority store. It lies outside
/// every run's namespace (`<run id>/...`), so no node's write can make it.
pub fn witness_key(run_id: &str) -> String {
    format!("witness/{run_id}")
}

/// What the controller sends a node with `LoadWorld`.
#[derive(Debug, Clone)]
pub struct WorldOffer<'a> {
    /// The scenario file's bytes.
    pub scenario: &'a [u8],
    /// Its fixture files.
    pub fixtures: &'a FixtureSet,
    /// KernelLink URL of every logical node.
    pub peers: &'a BTreeMap<String, String>,
    /// The run's namespace in trust-control.
    pub run_id: &'a str,
    /// The tool definitions servers change during the run
    /// (`chio_arena::Scenario::redefinitions`).
    pub redefinitions: &'a [Redefinition],
    /// The key of the run's witness record ([`witness_key`]); empty for no
    /// look-up.
    pub witness_key: &'a str,
}

/// An authenticated `NodeControl` client for one logical node. Every
/// command names the run of the world it last loaded (clones share it), so
/// a node that has since loaded another run's world refuses the command.
#[derive(Debug, Clone)]
pub struct NodeClient {
    node: String,
    target: String,
    inner: Inner,
    deadline: Duration,
    run_id: Arc<RwLock<String>>,
}

impl NodeClient {
    /// A client of logical node `node` at `url`; connects on first use.
    pub fn new(
        node: &str,
        url: &str,
        token: &ClusterToken,
        deadline: Duration,
    ) -> Result<Self, NodeError> {
        let inner = NodeControlClient::with_interceptor(channel(url)?, token.header())
            .max_decoding_message_size(MAX_LINK_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_CONTROL_MESSAGE_BYTES);
        Ok(Self {
            node: node.to_string(),
            target: format!("node {node} at {url}"),
            inner,
            deadline,
            run_id: Arc::default(),
        })
    }

    /// The run of the world this client last loaded (empty before).
    pub fn run_id(&self) -> String {
        self.run_id
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The logical node this client reaches.
    pub fn node(&self) -> &str {
        &self.node
    }

    async fn unary<Req, Resp, Fut>(
        &self,
        message: Req,
        call: impl FnOnce(Inner, tonic::Request<Req>) -> Fut,
    ) -> Result<Resp, NodeError>
    where
        Fut: std::future::Future<Output = Result<tonic::Response<Resp>, tonic::Status>>,
    {
        let mut request = tonic::Request::new(message);
        request.set_timeout(self.deadline);
        match tokio::time::timeout(self.deadline, call(self.inner.clone(), request)).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(error_of(&self.target, &status)),
            Err(_) => Err(NodeError::Remote {
                target: self.target.clone(),
                cause: format!("no answer within {} ms", self.deadline.as_millis()),
            }),
        }
    }

    /// Loads the world on the node.
    pub async fn load_world(&self, offer: WorldOffer<'_>) -> Result<LoadedWorld, NodeError> {
        let message = pb::LoadWorldRequest {
            node: self.node.clone(),
            scenario: offer.scenario.to_vec(),
            fixtures: fixtures_to_proto(offer.fixtures),
            peers: offer
                .peers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            run_id: offer.run_id.to_string(),
            witness_key: offer.witness_key.to_string(),
            redefinitions_json: if offer.redefinitions.is_empty() {
                String::new()
            } else {
                serde_json::to_string(offer.redefinitions).map_err(|e| NodeError::Remote {
                    target: self.target.clone(),
                    cause: format!("the redefinitions cannot be sent: {e}"),
                })?
            },
        };
        let answer = self
            .unary(message, |mut c, r| async move { c.load_world(r).await })
            .await?;
        *self
            .run_id
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = offer.run_id.to_string();
        Ok(LoadedWorld {
            scenario_id: answer.scenario_id,
            scenario_sha256: answer.scenario_sha256,
            kernels: answer.kernels,
            agents: answer.agents,
            witness_found: answer.witness_found,
        })
    }

    /// Runs one scheduled call: the kernel's decision, or the node's own
    /// refusal.
    pub async fn call(&self, command: &CallCommand) -> Result<CallAnswer, NodeError> {
        let mut message = call_request(command)?;
        message.run_id = self.run_id();
        let answer = self
            .unary(message, |mut c, r| async move { c.call(r).await })
            .await?;
        decode_answer(&self.target, call_answer(answer))
    }

    /// Runs one scheduled delegation: the child, or the node's refusal.
    pub async fn delegate(
        &self,
        command: &DelegateCommand,
    ) -> Result<Result<DelegateOutcome, Refusal>, NodeError> {
        let mut message = delegate_request(command);
        message.run_id = self.run_id();
        let answer = self
            .unary(message, |mut c, r| async move { c.delegate(r).await })
            .await?;
        decode_answer(&self.target, delegate_outcome(answer))
    }

    /// Sends one scheduled message.
    pub async fn message(&self, command: &MessageCommand) -> Result<MessageOutcome, NodeError> {
        let mut message = message_request(command)?;
        message.run_id = self.run_id();
        let answer = self
            .unary(message, |mut c, r| async move { c.message(r).await })
            .await?;
        Ok(message_outcome(answer))
    }

    /// Revokes an id through the node's authority state; answers the
    /// node's refusal, if it refused.
    pub async fn revoke(&self, target: &str, at_ms: u64) -> Result<Option<Refusal>, NodeError> {
        let message = pb::RevokeRequest {
            target: target.to_string(),
            at_ms,
            run_id: self.run_id(),
        };
        let answer = self
            .unary(message, |mut c, r| async move { c.revoke(r).await })
            .await?;
        decode_answer(&self.target, revoke_outcome(answer))
    }

    /// Reads, writes or deletes a fixture file of a tool server the node
    /// hosts; answers what the file held.
    pub async fn change_fixture(
        &self,
        server: &str,
        path: &str,
        change: FileChange,
    ) -> Result<Option<String>, NodeError> {
        use pb::change_fixture_request::Change;
        let message = pb::ChangeFixtureRequest {
            server_id: server.to_string(),
            path: path.to_string(),
            change: match change {
                FileChange::Keep => None,
                FileChange::Write(content) => Some(Change::Write(content)),
                FileChange::Delete => Some(Change::Delete(true)),
            },
            run_id: self.run_id(),
        };
        self.unary(message, |mut c, r| async move { c.change_fixture(r).await })
            .await
            .map(|answer| answer.previous)
    }

    /// Asks the node process to stop.
    pub async fn shutdown(&self) -> Result<(), NodeError> {
        self.unary(pb::ShutdownRequest {}, |mut c, r| async move {
            c.shutdown(r).await
        })
        .await
        .map(|_| ())
    }
}
