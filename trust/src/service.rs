//! The `TrustControl` gRPC service: translates each RPC (a decision batch
//! included, through `batch_wire`) into one `TrustStore` call and its answer back into a message, and `serve`, which
//! runs the service on a bound listener until `shutdown` completes.
//!
//! No rule lives here: validation of ids and amounts, idempotence and every
//! limit are the store's (`model` and `store`). Authentication is the
//! interceptor of `token`, which runs before a request body is decoded.
//! Accepted sockets get `TCP_NODELAY`: without it every unary call waits on
//! Nagle's algorithm against delayed ACKs (about 44 ms per call measured).

use chio_kernel::ledger::LedgerRefusal;
use std::future::Future;
use std::sync::Arc;

use chio_proto::trust::v1 as pb;
use chio_proto::trust::v1::trust_control_server::{TrustControl, TrustControlServer};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use crate::batch_wire;
use crate::model::{
    HoldOutcome, HoldState, IssuerKey, LabelSets, ReceiptRecord, ReleaseOutcome, ShareOutcome,
};
use crate::store::TrustStore;
use crate::token::BearerToken;
use crate::TrustError;

/// The gRPC face of a `TrustStore`.
#[derive(Debug)]
pub struct TrustControlService<S> {
    store: Arc<S>,
}

impl<S: TrustStore> TrustControlService<S> {
    /// Wraps a store; the service holds it for as long as it serves.
    pub fn new(store: S) -> Self {
        TrustControlService {
            store: Arc::new(store),
        }
    }
}

/// Maps a store error to the gRPC status a client can act on. The message is
/// the error's own text: it names the cause and the fix, and never a secret.
pub fn status_of(error: TrustError) -> Status {
    let message = error.to_string();
    match error {
        TrustError::InvalidArgument { .. } => Status::invalid_argument(message),
        TrustError::ReceiptConflict { .. } => Status::already_exists(message),
        TrustError::Refused(refusal) => match refusal {
            LedgerRefusal::HoldConflict { .. } | LedgerRefusal::ShareConflict { .. } => {
                Status::already_exists(message)
            }
            LedgerRefusal::HoldReplayed { .. } | LedgerRefusal::HoldStateConflict { .. } => {
                Status::failed_precondition(message)
            }
            LedgerRefusal::BudgetOverflow { .. } => Status::out_of_range(message),
        },
        TrustError::UnknownHold { .. } => Status::not_found(message),
        TrustError::StoreClosed | TrustError::Unavailable { .. } => Status::unavailable(message),
        TrustError::DeadlineExceeded { .. } => Status::deadline_exceeded(message),
        TrustError::Unauthenticated => Status::unauthenticated(message),
        TrustError::Storage { .. }
        | TrustError::Spill { .. }
        | TrustError::UnsupportedSchema { .. }
        | TrustError::MigrationRefused { .. }
        | TrustError::ForeignDatabase { .. }
        | TrustError::MissingToken
        | TrustError::WeakToken { .. }
        | TrustError::AmbiguousToken
        | TrustError::Io { .. }
        | TrustError::UnusableFile { .. }
        | TrustError::Rejected { .. }
        | TrustError::MalformedAnswer { .. } => Status::internal(message),
    }
}

fn hold_state(state: HoldState) -> pb::HoldState {
    match state {
        HoldState::Held => pb::HoldState::Held,
        HoldState::Committed => pb::HoldState::Committed,
        HoldState::Released => pb::HoldState::Released,
    }
}

pub(crate) fn key_labels(sets: LabelSets) -> Vec<pb::KeyLabels> {
    sets.into_iter()
        .map(|(key, labels)| pb::KeyLabels {
            key,
            labels: labels.into_iter().collect(),
        })
        .collect()
}

#[tonic::async_trait]
impl<S: TrustStore> TrustControl for TrustControlService<S> {
    async fn add_issuer_key(
        &self,
        request: Request<pb::AddIssuerKeyRequest>,
    ) -> Result<Response<pb::AddIssuerKeyResponse>, Status> {
        let key = IssuerKey::parse_hex(&request.into_inner().public_key_hex).map_err(status_of)?;
        let added = self.store.add_issuer_key(key).await.map_err(status_of)?;
        Ok(Response::new(pb::AddIssuerKeyResponse { added }))
    }

    async fn list_issuer_keys(
        &self,
        _request: Request<pb::ListIssuerKeysRequest>,
    ) -> Result<Response<pb::ListIssuerKeysResponse>, Status> {
        let keys = self.store.list_issuer_keys().await.map_err(status_of)?;
        Ok(Response::new(pb::ListIssuerKeysResponse {
            public_keys_hex: keys.iter().map(IssuerKey::to_hex).collect(),
        }))
    }

    async fn revoke(
        &self,
        request: Request<pb::RevokeRequest>,
    ) -> Result<Response<pb::RevokeResponse>, Status> {
        let request = request.into_inner();
        let revocation = self
            .store
            .revoke(&request.id, request.at_ms)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::RevokeResponse {
            newly_revoked: revocation.newly_revoked,
            revoked_at_ms: revocation.revoked_at_ms,
        }))
    }

    async fn is_revoked(
        &self,
        request: Request<pb::IsRevokedRequest>,
    ) -> Result<Response<pb::IsRevokedResponse>, Status> {
        let at = self
            .store
            .revoked_at(&request.into_inner().id)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::IsRevokedResponse {
            revoked: at.is_some(),
            revoked_at_ms: at,
        }))
    }

    async fn record_request(
        &self,
        request: Request<pb::RecordRequestRequest>,
    ) -> Result<Response<pb::RecordRequestResponse>, Status> {
        let fresh = self
            .store
            .record_request(&request.into_inner().request_key)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::RecordRequestResponse { fresh }))
    }

    async fn hold_budget(
        &self,
        request: Request<pb::HoldBudgetRequest>,
    ) -> Result<Response<pb::HoldBudgetResponse>, Status> {
        let request = request.into_inner();
        let outcome = self
            .store
            .hold_budget(
                &request.hold_id,
                &request.budget_key,
                request.amount,
                request.limit,
            )
            .await
            .map_err(status_of)?;
        let outcome = match outcome {
            HoldOutcome::Granted { used, limit } => {
                pb::hold_budget_response::Outcome::Granted(pb::BudgetGranted { used, limit })
            }
            HoldOutcome::Refused { used, limit } => {
                pb::hold_budget_response::Outcome::Refused(pb::BudgetRefused { used, limit })
            }
        };
        Ok(Response::new(pb::HoldBudgetResponse {
            outcome: Some(outcome),
        }))
    }

    async fn commit_budget(
        &self,
        request: Request<pb::CommitBudgetRequest>,
    ) -> Result<Response<pb::CommitBudgetResponse>, Status> {
        let state = self
            .store
            .commit_budget(&request.into_inner().hold_id)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::CommitBudgetResponse {
            state: hold_state(state).into(),
        }))
    }

    async fn release_budget(
        &self,
        request: Request<pb::ReleaseBudgetRequest>,
    ) -> Result<Response<pb::ReleaseBudgetResponse>, Status> {
        let outcome = self
            .store
            .release_budget(&request.into_inner().hold_id)
            .await
            .map_err(status_of)?;
        let state = match outcome {
            ReleaseOutcome::Released => pb::HoldState::Released,
            ReleaseOutcome::UnknownHold => pb::HoldState::Unspecified,
        };
        Ok(Response::new(pb::ReleaseBudgetResponse {
            state: state.into(),
        }))
    }

    async fn admit_share(
        &self,
        request: Request<pb::AdmitShareRequest>,
    ) -> Result<Response<pb::AdmitShareResponse>, Status> {
        let request = request.into_inner();
        let outcome = self
            .store
            .admit_share(
                &request.parent_id,
                &request.child_id,
                request.child_bps,
                request.parent_bps,
            )
            .await
            .map_err(status_of)?;
        let outcome = match outcome {
            ShareOutcome::Admitted {
                sum_bps,
                parent_bps,
            } => pb::admit_share_response::Outcome::Admitted(pb::ShareAdmitted {
                sum_bps,
                parent_bps,
            }),
            ShareOutcome::Refused {
                sibling_sum_bps,
                parent_bps,
            } => pb::admit_share_response::Outcome::Refused(pb::ShareRefused {
                sibling_sum_bps,
                parent_bps,
            }),
        };
        Ok(Response::new(pb::AdmitShareResponse {
            outcome: Some(outcome),
        }))
    }

    async fn append_receipts(
        &self,
        request: Request<pb::AppendReceiptsRequest>,
    ) -> Result<Response<pb::AppendReceiptsResponse>, Status> {
        let receipts = request
            .into_inner()
            .receipts
            .into_iter()
            .map(|receipt| ReceiptRecord {
                receipt_id: receipt.receipt_id,
                body: receipt.body,
            })
            .collect();
        let summary = self
            .store
            .append_receipts(receipts)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::AppendReceiptsResponse {
            appended: summary.appended,
            already_present: summary.already_present,
        }))
    }

    async fn list_receipts(
        &self,
        request: Request<pb::ListReceiptsRequest>,
    ) -> Result<Response<pb::ListReceiptsResponse>, Status> {
        let request = request.into_inner();
        let page = self
            .store
            .list_receipts(request.after_seq, request.limit)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::ListReceiptsResponse {
            receipts: page
                .receipts
                .into_iter()
                .map(|receipt| pb::StoredReceipt {
                    seq: receipt.seq,
                    receipt_id: receipt.receipt_id,
                    body: receipt.body,
                })
                .collect(),
            next_after_seq: page.next_after_seq,
        }))
    }

    async fn count_receipts(
        &self,
        _request: Request<pb::CountReceiptsRequest>,
    ) -> Result<Response<pb::CountReceiptsResponse>, Status> {
        let count = self.store.count_receipts().await.map_err(status_of)?;
        Ok(Response::new(pb::CountReceiptsResponse { count }))
    }

    async fn read_labels(
        &self,
        request: Request<pb::ReadLabelsRequest>,
    ) -> Result<Response<pb::ReadLabelsResponse>, Status> {
        let sets = self
            .store
            .read_labels(request.into_inner().keys)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::ReadLabelsResponse {
            entries: key_labels(sets),
        }))
    }

    async fn join_labels(
        &self,
        request: Request<pb::JoinLabelsRequest>,
    ) -> Result<Response<pb::JoinLabelsResponse>, Status> {
        let request = request.into_inner();
        let sets = self
            .store
            .join_labels(request.keys, &request.label)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::JoinLabelsResponse {
            entries: key_labels(sets),
        }))
    }

    async fn batch(
        &self,
        request: Request<pb::BatchRequest>,
    ) -> Result<Response<pb::BatchResponse>, Status> {
        let ops = request
            .into_inner()
            .ops
            .into_iter()
            .map(batch_wire::op_from_wire)
            .collect::<Result<Vec<_>, _>>()?;
        let answers = self.store.run_batch(ops).await.map_err(status_of)?;
        Ok(Response::new(pb::BatchResponse {
            answers: answers
                .into_iter()
                .map(batch_wire::answer_to_wire)
                .collect(),
        }))
    }
}

/// How long in-flight calls may drain after shutdown before connections are cut.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Serves `TrustControl` over `store` on `listener` until `shutdown`
/// completes, then drains in-flight calls for at most [`SHUTDOWN_GRACE`]
/// and returns.
///
/// The token is a validated [`BearerToken`], so a service without a usable
/// token cannot be started at all: the refusal happens where the token is
/// read ([`BearerToken::new`]). Every RPC without `authorization: Bearer
/// <token>` is refused with `unauthenticated`.
pub async fn serve<S: TrustStore>(
    store: S,
    token: BearerToken,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), TrustError> {
    let local = listener.local_addr().ok();
    let span = tracing::info_span!("trust_control", addr = ?local);
    let incoming = TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::warn!(%error, "could not set TCP_NODELAY on an accepted socket");
            }
        })
    });
    let service = TrustControlServer::with_interceptor(
        TrustControlService::new(store),
        token.checker(crate::token::TRUST_REFUSAL),
    );
    let (draining, drain_started) = tokio::sync::oneshot::channel::<()>();
    let signal = async move {
        shutdown.await;
        let _ = draining.send(());
    };
    let server = tonic::transport::Server::builder()
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, signal);
    // A client that stops reading can hold a graceful HTTP/2 shutdown open
    // forever (the GOAWAY handshake needs its answer); bound the drain.
    let grace_over = async move {
        if drain_started.await.is_err() {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    async {
        tracing::info!("trust-control serving");
        let served = tokio::select! {
            served = server => served,
            () = grace_over => {
                tracing::warn!(
                    grace_ms = SHUTDOWN_GRACE.as_millis() as u64,
                    "connections still open after the shutdown grace period; closing them"
                );
                Ok(())
            }
        };
        tracing::info!("trust-control stopped");
        served
    }
    .instrument(span)
    .await
    .map_err(|error| TrustError::Io {
        action: "serve trust-control".to_owned(),
        detail: error_chain(&error),
        fix: "check the listener and restart the service",
    })?;
    Ok(())
}

/// Renders an error with its sources, since transport errors put the cause
/// (connection refused, reset) in the source chain.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
