//! The issuer-key cache of one kernel: trust-control's trusted issuer keys,
//! fetched at most every [`ISSUER_CACHE_MAX_AGE`]. A failed refresh keeps
//! the kernel's previous set but raises the flag that fails every
//! revocation lookup until a refresh succeeds (`docs/topology.md`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use chio_kernel::error::StoreName;
use chio_trust::TrustStore;

use super::{TrustBinding, ISSUER_CACHE_MAX_AGE};
use crate::actors::IssuerSource;

/// A kernel's view of trust-control's issuer keys, fetched at most every
/// [`ISSUER_CACHE_MAX_AGE`]; owned by the kernel's thread.
pub struct IssuerKeyCache<S> {
    pub(super) binding: TrustBinding<S>,
    pub(super) fetched_at: Option<Instant>,
    pub(super) failure: Arc<Mutex<Option<String>>>,
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
        let fetched = b.block(
            StoreName::Revocation,
            b.deadlines.call,
            b.store.list_issuer_keys(),
        );
        let (keys, failure) = match fetched {
            Ok(keys) => {
                self.fetched_at = Some(Instant::now());
                (Some(keys.iter().map(|k| k.to_hex()).collect()), None)
            }
            Err(error) => {
                self.fetched_at = None;
                (None, Some(error.to_string()))
            }
        };
        if let Ok(mut flag) = self.failure.lock() {
            *flag = failure;
        }
        keys
    }
}
