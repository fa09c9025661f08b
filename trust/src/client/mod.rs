//! `TrustClient`: the node's connection to a remote trust-control service.
//!
//! It adds the bearer header to every call, sets `TCP_NODELAY`, bounds every
//! call by a deadline (enforced on the client, and sent as `grpc-timeout` so
//! the service can give up too), and turns every failure into a
//! [`TrustError`] whose message names trust-control and the cause, so the
//! node can deny with that message as its reason. A call that got no answer
//! within its deadline is `DeadlineExceeded`; one the transport broke
//! before it (refused, reset, closed, or cancelled under the call) is
//! `Unavailable`, so the kind says what happened. It implements
//! [`TrustStore`], so a node runs the same code against a remote service as
//! against an in-process store.
//!
//! Caching is the caller's business: this client never caches an answer.

use std::future::Future;
use std::time::Duration;

use chio_proto::trust::v1 as pb;
use chio_proto::trust::v1::trust_control_client::TrustControlClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Response, Status};

use crate::batch_wire::{answer_from_wire, op_to_wire, operation_name};
use crate::model::{
    AppendSummary, BatchAnswers, BatchOp, HoldOutcome, HoldState, IssuerKey, LabelSets,
    ReceiptPage, ReceiptRecord, ReleaseOutcome, Revocation, ShareOutcome, StoredReceipt,
};
use crate::service::error_chain;
use crate::store::TrustStore;
use crate::token::{BearerHeader, BearerToken};
use crate::TrustError;

/// Default deadline of every call but receipt appends.
pub const DEFAULT_CALL_DEADLINE: Duration = Duration::from_millis(2_000);
/// Default deadline of a receipt append (SPEC: 5,000 ms; a miss means no allow).
pub const DEFAULT_APPEND_DEADLINE: Duration = Duration::from_millis(5_000);
/// Default bound on establishing the connection.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_millis(2_000);

/// How long the client waits; every bound fails closed when it passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrustClientConfig {
    /// Deadline of each call except receipt appends.
    pub call_deadline: Duration,
    /// Deadline of each receipt append, which waits for an fsync.
    pub append_deadline: Duration,
    /// Bound on establishing (or re-establishing) the TCP connection.
    pub connect_timeout: Duration,
}

impl Default for TrustClientConfig {
    fn default() -> Self {
        TrustClientConfig {
            call_deadline: DEFAULT_CALL_DEADLINE,
            append_deadline: DEFAULT_APPEND_DEADLINE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

type Inner = TrustControlClient<InterceptedService<Channel, BearerHeader>>;

/// An authenticated client of trust-control; cheap to clone (clones share
/// one HTTP/2 connection).
#[derive(Debug, Clone)]
pub struct TrustClient {
    inner: Inner,
    config: TrustClientConfig,
}

impl TrustClient {
    /// Connects now, failing with [`TrustError::Unavailable`] when the
    /// service does not answer within the connect timeout.
    pub async fn connect(
        url: &str,
        token: &BearerToken,
        config: TrustClientConfig,
    ) -> Result<Self, TrustError> {
        let endpoint = endpoint(url, &config)?;
        let channel = endpoint
            .connect()
            .await
            .map_err(|error| TrustError::Unavailable {
                detail: format!("connecting to {url}: {}", error_chain(&error)),
            })?;
        Ok(Self::over(channel, token, config))
    }

    /// Connects on first use, so a node may start before trust-control does;
    /// calls made while the service is down fail as unavailable.
    pub fn connect_lazy(
        url: &str,
        token: &BearerToken,
        config: TrustClientConfig,
    ) -> Result<Self, TrustError> {
        let channel = endpoint(url, &config)?.connect_lazy();
        Ok(Self::over(channel, token, config))
    }

    fn over(channel: Channel, token: &BearerToken, config: TrustClientConfig) -> Self {
        TrustClient {
            inner: TrustControlClient::with_interceptor(channel, token.header()),
            config,
        }
    }

    /// The deadlines this client applies.
    pub fn config(&self) -> TrustClientConfig {
        self.config
    }

    /// Runs one RPC under `deadline` and maps every failure to a `TrustError`.
    async fn unary<Req, Resp, Fut>(
        &self,
        operation: &'static str,
        deadline: Duration,
        message: Req,
        call: impl FnOnce(Inner, Request<Req>) -> Fut,
    ) -> Result<Resp, TrustError>
    where
        Fut: Future<Output = Result<Response<Resp>, Status>>,
    {
        let mut request = Request::new(message);
        request.set_timeout(deadline);
        match tokio::time::timeout(deadline, call(self.inner.clone(), request)).await {
            Ok(Ok(response)) => Ok(response.into_inner()),
            Ok(Err(status)) => Err(error_of(operation, deadline, status)),
            Err(_) => Err(TrustError::DeadlineExceeded {
                operation,
                deadline,
            }),
        }
    }

    /// Whether `id` is revoked; asked per chain link, never cached.
    pub async fn is_revoked(&self, id: &str) -> Result<bool, TrustError> {
        Ok(self.revoked_at(id).await?.is_some())
    }
}

fn endpoint(url: &str, config: &TrustClientConfig) -> Result<Endpoint, TrustError> {
    // The client speaks plain HTTP/2 only; given an `https` URL it would
    // send the bearer token in clear to whoever answers. Any scheme but
    // `http` is refused rather than downgraded.
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    if !scheme.is_some_and(|s| s.eq_ignore_ascii_case("http")) {
        return Err(TrustError::InvalidArgument {
            field: "control url",
            problem: format!(
                "{url:?} does not start with http://; this client has no TLS and never downgrades https to clear text"
            ),
            fix: "pass the service address as http://HOST:PORT on a private network, or reach it through a TLS-terminating proxy or tunnel listening on loopback",
        });
    }
    Endpoint::from_shared(url.to_owned())
        .map(|endpoint| {
            endpoint
                .tcp_nodelay(true)
                .connect_timeout(config.connect_timeout)
        })
        .map_err(|_| TrustError::InvalidArgument {
            field: "control url",
            problem: format!("{url:?} is not a valid URL"),
            fix: "pass the service address as http://HOST:PORT",
        })
}

/// Maps a status to the error a node turns into a deny.
fn error_of(operation: &'static str, deadline: Duration, status: Status) -> TrustError {
    match status.code() {
        Code::Unauthenticated => TrustError::Unauthenticated,
        Code::Unavailable => TrustError::Unavailable {
            detail: format!("{operation}: {}", describe(&status)),
        },
        // A broken connection surfaces as `Unknown` (or, when the stream
        // breaks mid-request, `Internal` from the HTTP/2 layer) with the
        // transport error as source or as the message.
        Code::Unknown | Code::Internal if is_transport(&status) => TrustError::Unavailable {
            detail: format!("{operation}: {}", describe(&status)),
        },
        Code::DeadlineExceeded => TrustError::DeadlineExceeded {
            operation,
            deadline,
        },
        Code::Cancelled if timed_out(&status) => TrustError::DeadlineExceeded {
            operation,
            deadline,
        },
        // Cancelled any other way, the transport cancelled the call: the
        // connection closed under it.
        Code::Cancelled => TrustError::Unavailable {
            detail: format!("{operation}: {}", describe(&status)),
        },
        _ => TrustError::Rejected {
            operation,
            message: status.message().to_owned(),
        },
    }
}

/// Whether the client's transport gave up on the call at its deadline:
/// tonic's own timeout answers `CANCELLED` with [`tonic::TimeoutExpired`]
/// in the status's sources, while a connection closed under the call is
/// `CANCELLED` without it. Whichever of the two timers (the request's
/// `grpc-timeout` or the caller's) fires first, a late answer reads as late.
pub fn timed_out(status: &Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if error.is::<tonic::TimeoutExpired>() {
            return true;
        }
        source = error.source();
    }
    false
}

/// Whether a status was made by the client's transport rather than sent
/// by the service: the service's own statuses carry its error text, which
/// always starts with "trust-control", never an HTTP/2 or transport error.
fn is_transport(status: &Status) -> bool {
    let message = status.message();
    std::error::Error::source(status).is_some()
        || message.starts_with("h2 protocol error")
        || message.starts_with("transport error")
}

fn describe(status: &Status) -> String {
    match std::error::Error::source(status) {
        Some(source) if status.message().is_empty() => error_chain(source),
        Some(source) => format!("{}: {}", status.message(), error_chain(source)),
        None => status.message().to_owned(),
    }
}

fn malformed(operation: &'static str, problem: &'static str) -> TrustError {
    TrustError::MalformedAnswer { operation, problem }
}

pub(crate) fn label_sets(entries: Vec<pb::KeyLabels>) -> LabelSets {
    entries
        .into_iter()
        .map(|entry| (entry.key, entry.labels.into_iter().collect()))
        .collect()
}

impl TrustStore for TrustClient {
    async fn add_issuer_key(&self, key: IssuerKey) -> Result<bool, TrustError> {
        let message = pb::AddIssuerKeyRequest {
            public_key_hex: key.to_hex(),
        };
        let answer = self
            .unary(
                "add_issuer_key",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.add_issuer_key(r).await },
            )
            .await?;
        Ok(answer.added)
    }

    async fn list_issuer_keys(&self) -> Result<Vec<IssuerKey>, TrustError> {
        let answer = self
            .unary(
                "list_issuer_keys",
                self.config.call_deadline,
                pb::ListIssuerKeysRequest {},
                |mut c, r| async move { c.list_issuer_keys(r).await },
            )
            .await?;
        answer
            .public_keys_hex
            .iter()
            .map(|hex| {
                IssuerKey::parse_hex(hex).map_err(|_| {
                    malformed("list_issuer_keys", "an issuer key is not valid hex Ed25519")
                })
            })
            .collect()
    }

    async fn revoke(&self, id: &str, at_ms: u64) -> Result<Revocation, TrustError> {
        let message = pb::RevokeRequest {
            id: id.to_owned(),
            at_ms,
        };
        let answer = self
            .unary(
                "revoke",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.revoke(r).await },
            )
            .await?;
        Ok(Revocation {
            newly_revoked: answer.newly_revoked,
            revoked_at_ms: answer.revoked_at_ms,
        })
    }

    async fn revoked_at(&self, id: &str) -> Result<Option<u64>, TrustError> {
        let message = pb::IsRevokedRequest { id: id.to_owned() };
        let answer = self
            .unary(
                "is_revoked",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.is_revoked(r).await },
            )
            .await?;
        match (answer.revoked, answer.revoked_at_ms) {
            (true, Some(at)) => Ok(Some(at)),
            (false, None) => Ok(None),
            _ => Err(malformed(
                "is_revoked",
                "revoked and revoked_at_ms disagree",
            )),
        }
    }

    async fn record_request(&self, request_key: &str) -> Result<bool, TrustError> {
        let message = pb::RecordRequestRequest {
            request_key: request_key.to_owned(),
        };
        let answer = self
            .unary(
                "record_request",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.record_request(r).await },
            )
            .await?;
        Ok(answer.fresh)
    }

    async fn hold_budget(
        &self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> Result<HoldOutcome, TrustError> {
        let message = pb::HoldBudgetRequest {
            hold_id: hold_id.to_owned(),
            budget_key: budget_key.to_owned(),
            amount,
            limit,
        };
        let answer = self
            .unary(
                "hold_budget",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.hold_budget(r).await },
            )
            .await?;
        match answer.outcome {
            Some(pb::hold_budget_response::Outcome::Granted(g)) => Ok(HoldOutcome::Granted {
                used: g.used,
                limit: g.limit,
            }),
            Some(pb::hold_budget_response::Outcome::Refused(r)) => Ok(HoldOutcome::Refused {
                used: r.used,
                limit: r.limit,
            }),
            None => Err(malformed("hold_budget", "the outcome is missing")),
        }
    }

    async fn commit_budget(&self, hold_id: &str) -> Result<HoldState, TrustError> {
        let message = pb::CommitBudgetRequest {
            hold_id: hold_id.to_owned(),
        };
        let answer = self
            .unary(
                "commit_budget",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.commit_budget(r).await },
            )
            .await?;
        match pb::HoldState::try_from(answer.state) {
            Ok(pb::HoldState::Committed) => Ok(HoldState::Committed),
            _ => Err(malformed("commit_budget", "the state is not committed")),
        }
    }

    async fn release_budget(&self, hold_id: &str) -> Result<ReleaseOutcome, TrustError> {
        let message = pb::ReleaseBudgetRequest {
            hold_id: hold_id.to_owned(),
        };
        let answer = self
            .unary(
                "release_budget",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.release_budget(r).await },
            )
            .await?;
        match pb::HoldState::try_from(answer.state) {
            Ok(pb::HoldState::Released) => Ok(ReleaseOutcome::Released),
            Ok(pb::HoldState::Unspecified) => Ok(ReleaseOutcome::UnknownHold),
            _ => Err(malformed(
                "release_budget",
                "the state is neither released nor unknown",
            )),
        }
    }

    async fn admit_share(
        &self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> Result<ShareOutcome, TrustError> {
        let message = pb::AdmitShareRequest {
            parent_id: parent_id.to_owned(),
            child_id: child_id.to_owned(),
            child_bps,
            parent_bps,
        };
        let answer = self
            .unary(
                "admit_share",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.admit_share(r).await },
            )
            .await?;
        match answer.outcome {
            Some(pb::admit_share_response::Outcome::Admitted(a)) => Ok(ShareOutcome::Admitted {
                sum_bps: a.sum_bps,
                parent_bps: a.parent_bps,
            }),
            Some(pb::admit_share_response::Outcome::Refused(r)) => Ok(ShareOutcome::Refused {
                sibling_sum_bps: r.sibling_sum_bps,
                parent_bps: r.parent_bps,
            }),
            None => Err(malformed("admit_share", "the outcome is missing")),
        }
    }

    async fn append_receipts(
        &self,
        receipts: Vec<ReceiptRecord>,
    ) -> Result<AppendSummary, TrustError> {
        let message = pb::AppendReceiptsRequest {
            receipts: receipts
                .into_iter()
                .map(|receipt| pb::Receipt {
                    receipt_id: receipt.receipt_id,
                    body: receipt.body,
                })
                .collect(),
        };
        let answer = self
            .unary(
                "append_receipts",
                self.config.append_deadline,
                message,
                |mut c, r| async move { c.append_receipts(r).await },
            )
            .await?;
        Ok(AppendSummary {
            appended: answer.appended,
            already_present: answer.already_present,
        })
    }

    async fn list_receipts(&self, after_seq: u64, limit: u32) -> Result<ReceiptPage, TrustError> {
        let message = pb::ListReceiptsRequest { after_seq, limit };
        let answer = self
            .unary(
                "list_receipts",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.list_receipts(r).await },
            )
            .await?;
        Ok(ReceiptPage {
            receipts: answer
                .receipts
                .into_iter()
                .map(|receipt| StoredReceipt {
                    seq: receipt.seq,
                    receipt_id: receipt.receipt_id,
                    body: receipt.body,
                })
                .collect(),
            next_after_seq: answer.next_after_seq,
        })
    }

    async fn count_receipts(&self) -> Result<u64, TrustError> {
        let answer = self
            .unary(
                "count_receipts",
                self.config.call_deadline,
                pb::CountReceiptsRequest {},
                |mut c, r| async move { c.count_receipts(r).await },
            )
            .await?;
        Ok(answer.count)
    }

    async fn read_labels(&self, keys: Vec<String>) -> Result<LabelSets, TrustError> {
        let answer = self
            .unary(
                "read_labels",
                self.config.call_deadline,
                pb::ReadLabelsRequest { keys },
                |mut c, r| async move { c.read_labels(r).await },
            )
            .await?;
        Ok(label_sets(answer.entries))
    }

    async fn join_labels(&self, keys: Vec<String>, label: &str) -> Result<LabelSets, TrustError> {
        let message = pb::JoinLabelsRequest {
            keys,
            label: label.to_owned(),
        };
        let answer = self
            .unary(
                "join_labels",
                self.config.call_deadline,
                message,
                |mut c, r| async move { c.join_labels(r).await },
            )
            .await?;
        Ok(label_sets(answer.entries))
    }

    async fn run_batch(&self, ops: Vec<BatchOp>) -> Result<BatchAnswers, TrustError> {
        let names: Vec<&'static str> = ops.iter().map(operation_name).collect();
        let appends = ops
            .iter()
            .any(|op| matches!(op, chio_kernel::batch::StoreOp::AppendReceipt { .. }));
        let deadline = if appends {
            self.config.append_deadline
        } else {
            self.config.call_deadline
        };
        // A failure of the whole call names the first operation, as that
        // operation's own call would have failed first.
        let operation = names.first().copied().unwrap_or("batch");
        let message = pb::BatchRequest {
            ops: ops.into_iter().map(op_to_wire).collect(),
        };
        let answer = self
            .unary(operation, deadline, message, |mut c, r| async move {
                c.batch(r).await
            })
            .await?;
        if answer.answers.len() > names.len() {
            return Err(malformed("batch", "more answers than operations"));
        }
        answer
            .answers
            .into_iter()
            .zip(names)
            .map(|(answer, name)| match answer_from_wire(answer) {
                Ok(Ok(answer)) => Ok(Ok(answer)),
                Ok(Err(status)) => Ok(Err(error_of(name, deadline, status))),
                Err(problem) => Err(malformed("batch", problem)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
