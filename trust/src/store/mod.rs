//! The `TrustStore` trait: every operation on shared authority state, with
//! the same meaning whichever store (or remote service) answers it.
//!
//! The trait is async. The SQLite store answers a write only after a group
//! commit (one fsync for every request waiting in its queue), so its callers
//! wait on a reply channel rather than on a lock; an async trait lets
//! thousands of callers share one fsync without parking a thread each, and
//! lets the gRPC client implement the same trait, so a node runs unchanged
//! against an in-process store or a remote trust-control service.
//!
//! Rules live in `model` (shared by both stores); this module only states the
//! contract. Stores: [`memory::InMemoryTrustStore`], [`sqlite::SqliteTrustStore`].

use std::future::Future;

use crate::model::{
    AppendSummary, BatchAnswers, BatchOp, HoldOutcome, HoldState, IssuerKey, LabelSets,
    ReceiptPage, ReceiptRecord, ReleaseOutcome, Revocation, ShareOutcome,
};
use crate::TrustError;

pub mod memory;
mod receipt_log;
pub mod sqlite;

#[cfg(test)]
pub(crate) mod conformance;

/// Shared authority state: issuer keys, revocations, budgets, sibling shares,
/// seen request ids, receipts and retained labels.
///
/// Every mutating operation is idempotent for a retry with the same ids and
/// values, and returns only once its effect is as durable as the store can
/// make it. Every failure is an `Err`; callers on the authorization path turn
/// it into a deny.
pub trait TrustStore: Send + Sync + 'static {
    /// Trusts an issuer key; `true` when newly added.
    fn add_issuer_key(
        &self,
        key: IssuerKey,
    ) -> impl Future<Output = Result<bool, TrustError>> + Send;

    /// Every trusted issuer key, ascending.
    fn list_issuer_keys(&self) -> impl Future<Output = Result<Vec<IssuerKey>, TrustError>> + Send;

    /// Revokes `id` at virtual time `at_ms`; the first revocation's time is kept.
    fn revoke(
        &self,
        id: &str,
        at_ms: u64,
    ) -> impl Future<Output = Result<Revocation, TrustError>> + Send;

    /// The revocation time of `id`, or `None` when it is not revoked.
    fn revoked_at(&self, id: &str) -> impl Future<Output = Result<Option<u64>, TrustError>> + Send;

    /// Holds `amount` of `budget_key` against `limit` under `hold_id`.
    fn hold_budget(
        &self,
        hold_id: &str,
        budget_key: &str,
        amount: u64,
        limit: u64,
    ) -> impl Future<Output = Result<HoldOutcome, TrustError>> + Send;

    /// Makes a granted hold permanent.
    fn commit_budget(
        &self,
        hold_id: &str,
    ) -> impl Future<Output = Result<HoldState, TrustError>> + Send;

    /// Gives a held amount back.
    fn release_budget(
        &self,
        hold_id: &str,
    ) -> impl Future<Output = Result<ReleaseOutcome, TrustError>> + Send;

    /// Admits `child_id`'s share of `parent_id` when
    /// `child_bps + sum(other admitted siblings) <= parent_bps`, a revoked
    /// sibling counting nothing (read with the admission,
    /// `chio_kernel::ledger::sibling_sum_bps`).
    fn admit_share(
        &self,
        parent_id: &str,
        child_id: &str,
        child_bps: u32,
        parent_bps: u32,
    ) -> impl Future<Output = Result<ShareOutcome, TrustError>> + Send;

    /// Records a request id (already scoped by lineage and principal, see
    /// `chio_kernel::ledger::seen_request_key`); `true` when it was not seen
    /// before. Seen ids are kept durably and never forgotten, so a replay is
    /// refused on any kernel and after any restart.
    fn record_request(
        &self,
        request_key: &str,
    ) -> impl Future<Output = Result<bool, TrustError>> + Send;

    /// Appends a batch of receipts, all or nothing.
    fn append_receipts(
        &self,
        receipts: Vec<ReceiptRecord>,
    ) -> impl Future<Output = Result<AppendSummary, TrustError>> + Send;

    /// Up to `limit` receipts after sequence `after_seq`, in append order.
    fn list_receipts(
        &self,
        after_seq: u64,
        limit: u32,
    ) -> impl Future<Output = Result<ReceiptPage, TrustError>> + Send;

    /// The number of receipts in the log.
    fn count_receipts(&self) -> impl Future<Output = Result<u64, TrustError>> + Send;

    /// The retained labels of each distinct key (empty for unknown keys).
    fn read_labels(
        &self,
        keys: Vec<String>,
    ) -> impl Future<Output = Result<LabelSets, TrustError>> + Send;

    /// Adds `label` to each key's set and returns the sets after the join.
    fn join_labels(
        &self,
        keys: Vec<String>,
        label: &str,
    ) -> impl Future<Output = Result<LabelSets, TrustError>> + Send;

    /// Runs a decision batch in one call: each operation exactly as its own
    /// method would, in order, stopping where `chio_kernel::batch::stops`
    /// says (every store runs it through `model::run_ops`). The answers are
    /// the prefix that ran; `Err` for the whole call only when the store
    /// could not run the batch at all (unreachable, closed, commit failed),
    /// in which case the caller must assume any prefix of it took effect,
    /// as with any write that got no answer.
    fn run_batch(
        &self,
        ops: Vec<BatchOp>,
    ) -> impl Future<Output = Result<BatchAnswers, TrustError>> + Send;
}
