//! The node's gRPC services: `NodeControl` (called by the controller) and
//! `KernelLink` (called by other nodes), and [`serve`], which runs both on
//! one listener until shutdown.
//!
//! The services only translate (see `CONTRIBUTING.md`): each RPC decodes its
//! message with [`crate::wire`], asks the [`NodeHost`] for the hosted
//! [`crate::Node`] or to load a world, awaits the answer and encodes it; a
//! closed actor becomes a status. Authentication is the cluster token's interceptor, which runs
//! before a body is decoded. Accepted sockets get `TCP_NODELAY`. Messages
//! over the size limits of [`crate::wire`] are refused by tonic with
//! `OUT_OF_RANGE`.

use std::future::Future;

use chio_kernel::request::ToolCallRequest;
use chio_kernel::token::CapabilityToken;
use chio_proto::node::v1 as pb;
use chio_proto::node::v1::kernel_link_server::{KernelLink, KernelLinkServer};
use chio_proto::node::v1::node_control_server::{NodeControl, NodeControlServer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_stream::StreamExt;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use crate::cluster::ClusterToken;
use crate::error::NodeError;
use crate::host::{NodeHost, WorldLoad};
use crate::tools::FileChange;
use crate::wire::command::{call_command, delegate_command, fixtures_from_proto, message_command};
use crate::wire::outcome::{
    call_outcome_to_proto, call_response, delegate_response, message_response, revoke_response,
};
use crate::wire::{
    decode, decode_request, status_of, MAX_CONTROL_MESSAGE_BYTES, MAX_EVALUATED_TOGETHER,
    MAX_LINK_MESSAGE_BYTES,
};

fn internal(error: NodeError) -> Status {
    status_of(&error)
}

/// `chio.node.v1.NodeControl` over a host.
#[derive(Debug, Clone)]
pub struct NodeControlService {
    host: NodeHost,
    stop: watch::Sender<bool>,
}

impl NodeControlService {
    /// The service over `host`; a `Shutdown` request sets `stop` to true.
    pub fn new(host: NodeHost, stop: watch::Sender<bool>) -> Self {
        Self { host, stop }
    }
}

#[tonic::async_trait]
impl NodeControl for NodeControlService {
    async fn load_world(
        &self,
        request: Request<pb::LoadWorldRequest>,
    ) -> Result<Response<pb::LoadWorldResponse>, Status> {
        let message = request.into_inner();
        let fixtures = fixtures_from_proto(message.fixtures);
        let redefinitions = if message.redefinitions_json.is_empty() {
            Vec::new()
        } else {
            serde_json::from_str(&message.redefinitions_json).map_err(|e| {
                Status::invalid_argument(format!(
                    "redefinitions_json is not a list of redefinitions (line {}, column {})",
                    e.line(),
                    e.column()
                ))
            })?
        };
        let loaded = self
            .host
            .load(WorldLoad {
                node: message.node,
                scenario: message.scenario,
                fixtures,
                peers: message.peers.into_iter().collect(),
                run_id: message.run_id,
                redefinitions,
                witness_key: message.witness_key,
            })
            .await
            .map_err(internal)?;
        Ok(Response::new(pb::LoadWorldResponse {
            scenario_id: loaded.scenario_id,
            scenario_sha256: loaded.scenario_sha256,
            kernels: loaded.kernels,
            agents: loaded.agents,
            witness_found: loaded.witness_found,
        }))
    }

    async fn call(
        &self,
        request: Request<pb::CallRequest>,
    ) -> Result<Response<pb::CallResponse>, Status> {
        let message = request.into_inner();
        let run_id = message.run_id.clone();
        let command = decode_request(call_command(message))?;
        let node = self.host.node(&run_id).await.map_err(internal)?;
        let answer = node.call(command).await.map_err(internal)?;
        Ok(Response::new(call_response(&answer).map_err(internal)?))
    }

    async fn delegate(
        &self,
        request: Request<pb::DelegateRequest>,
    ) -> Result<Response<pb::DelegateResponse>, Status> {
        let message = request.into_inner();
        let run_id = message.run_id.clone();
        let command = decode_request(delegate_command(message))?;
        let node = self.host.node(&run_id).await.map_err(internal)?;
        let outcome = node.delegate(command).await.map_err(internal)?;
        Ok(Response::new(
            delegate_response(&outcome).map_err(internal)?,
        ))
    }

    async fn message(
        &self,
        request: Request<pb::MessageRequest>,
    ) -> Result<Response<pb::MessageResponse>, Status> {
        let message = request.into_inner();
        let run_id = message.run_id.clone();
        let command = decode_request(message_command(message))?;
        let node = self.host.node(&run_id).await.map_err(internal)?;
        let outcome = node.message(command).await.map_err(internal)?;
        Ok(Response::new(message_response(&outcome)))
    }

    async fn revoke(
        &self,
        request: Request<pb::RevokeRequest>,
    ) -> Result<Response<pb::RevokeResponse>, Status> {
        let message = request.into_inner();
        let node = self.host.node(&message.run_id).await.map_err(internal)?;
        let refusal = node
            .revoke(&message.target, message.at_ms)
            .await
            .map_err(internal)?;
        Ok(Response::new(revoke_response(&refusal)))
    }

    async fn change_fixture(
        &self,
        request: Request<pb::ChangeFixtureRequest>,
    ) -> Result<Response<pb::ChangeFixtureResponse>, Status> {
        let message = request.into_inner();
        let change = file_change(message.change);
        let node = self.host.node(&message.run_id).await.map_err(internal)?;
        let previous = node
            .change_fixture(&message.server_id, &message.path, change)
            .await
            .map_err(internal)?;
        Ok(Response::new(pb::ChangeFixtureResponse { previous }))
    }

    async fn shutdown(
        &self,
        _request: Request<pb::ShutdownRequest>,
    ) -> Result<Response<pb::ShutdownResponse>, Status> {
        tracing::info!("shutdown requested by the controller");
        let _ = self.stop.send(true);
        Ok(Response::new(pb::ShutdownResponse {}))
    }
}

/// `chio.node.v1.KernelLink` over a host.
#[derive(Debug, Clone)]
pub struct KernelLinkService {
    host: NodeHost,
}

impl KernelLinkService {
    /// The service over `host`.
    pub fn new(host: NodeHost) -> Self {
        Self { host }
    }
}

#[tonic::async_trait]
impl KernelLink for KernelLinkService {
    async fn evaluate(
        &self,
        request: Request<pb::EvaluateRequest>,
    ) -> Result<Response<pb::EvaluateResponse>, Status> {
        let message = request.into_inner();
        let call: ToolCallRequest = decode_request(decode("request_json", &message.request_json))?;
        let node = self.host.node(&message.run_id).await.map_err(internal)?;
        let outcome = node
            .evaluate_forwarded(&message.kernel_id, call, message.now_ms)
            .await
            .map_err(internal)?;
        Ok(Response::new(pb::EvaluateResponse {
            outcome: Some(call_outcome_to_proto(&outcome).map_err(internal)?),
        }))
    }

    async fn hand_over(
        &self,
        request: Request<pb::HandOverRequest>,
    ) -> Result<Response<pb::HandOverResponse>, Status> {
        let message = request.into_inner();
        let token: CapabilityToken = decode_request(decode("token_json", &message.token_json))?;
        let node = self.host.node(&message.run_id).await.map_err(internal)?;
        node.hand_over(&message.agent_id, token)
            .await
            .map_err(internal)?;
        Ok(Response::new(pb::HandOverResponse {}))
    }

    async fn evaluate_together(
        &self,
        request: Request<pb::EvaluateTogetherRequest>,
    ) -> Result<Response<pb::EvaluateTogetherResponse>, Status> {
        let message = request.into_inner();
        let calls = decode_request(evaluations(message.evaluations))?;
        let node = self.host.node(&message.run_id).await.map_err(internal)?;
        let outcomes = node
            .evaluate_together(&message.kernel_id, calls)
            .await
            .map_err(internal)?;
        let outcomes = outcomes
            .iter()
            .map(call_outcome_to_proto)
            .collect::<Result<Vec<_>, _>>()
            .map_err(internal)?;
        Ok(Response::new(pb::EvaluateTogetherResponse { outcomes }))
    }
}

/// The change a `ChangeFixture` asks for.
fn file_change(change: Option<pb::change_fixture_request::Change>) -> FileChange {
    use pb::change_fixture_request::Change;
    match change {
        None => FileChange::Keep,
        Some(Change::Write(content)) => FileChange::Write(content),
        Some(Change::Delete(_)) => FileChange::Delete,
    }
}

/// The calls of an `EvaluateTogether`, each request decoded and named by its
/// position; more than [`MAX_EVALUATED_TOGETHER`] is refused.
fn evaluations(evaluations: Vec<pb::Evaluation>) -> Result<Vec<(ToolCallRequest, u64)>, NodeError> {
    if evaluations.len() > MAX_EVALUATED_TOGETHER {
        return Err(crate::wire::malformed(
            "evaluations",
            format!(
                "{} calls, more than the {MAX_EVALUATED_TOGETHER} one group may carry",
                evaluations.len()
            ),
        ));
    }
    evaluations
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let request = decode(&format!("evaluations[{i}].request_json"), &e.request_json)?;
            Ok((request, e.now_ms))
        })
        .collect()
}

/// Serves both node services on `listener` until `shutdown` completes or
/// the controller calls `Shutdown`.
pub async fn serve(
    host: NodeHost,
    token: ClusterToken,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), NodeError> {
    let local = listener.local_addr().ok();
    let span = tracing::info_span!("node_server", name = %host.name(), addr = ?local);
    let (stop, mut stopped) = watch::channel(false);
    let incoming = TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::warn!(%error, "could not set TCP_NODELAY on an accepted socket");
            }
        })
    });
    let control = InterceptedService::new(
        NodeControlServer::new(NodeControlService::new(host.clone(), stop))
            .max_decoding_message_size(MAX_CONTROL_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_LINK_MESSAGE_BYTES),
        token.check(),
    );
    let link = InterceptedService::new(
        KernelLinkServer::new(KernelLinkService::new(host))
            .max_decoding_message_size(MAX_LINK_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_LINK_MESSAGE_BYTES),
        token.check(),
    );
    let signal = async move {
        tokio::select! {
            () = shutdown => {}
            _ = stopped.wait_for(|stop| *stop) => {}
        }
    };
    async {
        tracing::info!("node serving");
        let served = tonic::transport::Server::builder()
            .tcp_nodelay(true)
            .add_service(control)
            .add_service(link)
            .serve_with_incoming_shutdown(incoming, signal)
            .await;
        tracing::info!("node stopped");
        served
    }
    .instrument(span)
    .await
    .map_err(|e| NodeError::Remote {
        target: "node server".to_string(),
        cause: e.to_string(),
    })
}
