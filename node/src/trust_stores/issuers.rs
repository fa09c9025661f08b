//! The issuer-key cache of one kernel: trust-control's trusted issuer keys,
//! fetched at most every [`ISSUER_CACHE_MAX_AGE`]. A failed refresh keeps
//! the kernel's previous set but raises the flag that fails every
//! revocation lookup until a refresh succeeds (`docs/topology.md`); when
//! trust-control could not be reached, the lookup fails as it would have
//! itself, naming the kind of outage.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use chio_kernel::error::{StoreError, StoreName};
use chio_trust::TrustStore;

use super::{CallFailure, TrustBinding, ISSUER_CACHE_MAX_AGE};
use crate::actors::IssuerSource;

/// A kernel's view of trust-control's issuer keys, fetched at most every
/// [`ISSUER_CACHE_MAX_AGE`]; owned by the kernel's thread.
pub struct IssuerKeyCache<S> {
    pub(super) binding: TrustBinding<S>,
    pub(super) fetched_at: Option<Instant>,
    pub(super) failure: Arc<Mutex<Option<StoreError>>>,
}

/// The error every revocation lookup fails with after a refresh failed.
/// When trust-control could not be reached it is the error a revocation
/// lookup itself would meet (the kind of outage, nothing more), so a deny
/// reads the same whether or not a refresh fell due during the fault, which
/// depends on wall time; the refresh is named in the log. Any other failure
/// names the refresh.
fn refresh_error(failure: &CallFailure) -> StoreError {
    let error = failure.named(StoreName::Revocation);
    tracing::warn!(error = %error, "trusted issuer keys could not be refreshed");
    match failure.outage() {
        Some(outage) => StoreError::unavailable(StoreName::Revocation, outage.trust_cause()),
        None => StoreError::unavailable(
            StoreName::Revocation,
            format!("trusted issuer keys could not be refreshed: {error}"),
        ),
    }
}

impl<S: TrustStore> IssuerSource for IssuerKeyCache<S> {
    fn refresh(&mut self) -> Option<Vec<String>> {
        if self
            .fetched_at
            .is_some_and(|at| at.elapsed() < ISSUER_CACHE_MAX_AGE)
        {
            return None;
        }
        let b = &self.binding;
        let fetched = b.block_raw(b.deadlines.call, b.store.list_issuer_keys());
        let (keys, failure) = match fetched {
            Ok(keys) => {
                self.fetched_at = Some(Instant::now());
                (Some(keys.iter().map(|k| k.to_hex()).collect()), None)
            }
            Err(failure) => {
                self.fetched_at = None;
                (None, Some(refresh_error(&failure)))
            }
        };
        if let Ok(mut flag) = self.failure.lock() {
            *flag = failure;
        }
        keys
    }
}
