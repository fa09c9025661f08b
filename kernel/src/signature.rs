//! Ed25519 verification with an optional cache of verified signatures.
//!
//! All signature checks of the kernel use `verify_strict`. A capability's
//! root signature and its delegation links are presented again on every call,
//! so a kernel may remember signatures it has already verified. The cache is
//! keyed by the exact bytes: SHA-256 over (public key || signature ||
//! message), so any change to any of them misses. Only successful
//! verifications are cached, eviction is first-in first-out at a fixed
//! capacity (deterministic), and a capacity of zero disables it. The portable
//! evaluator never uses a cache: it reads only what the caller supplies.

use std::collections::{BTreeSet, VecDeque};

use ed25519_dalek::{Signature, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::keys::decode_lower_hex;

/// A bounded set of (key, signature, message) triples that verified.
#[derive(Debug, Clone, Default)]
pub struct SignatureCache {
    capacity: usize,
    seen: BTreeSet<[u8; 32]>,
    order: VecDeque<[u8; 32]>,
    hits: u64,
}

impl SignatureCache {
    /// A cache of at most `capacity` entries (0 disables caching).
    pub fn new(capacity: usize) -> Self {
        SignatureCache {
            capacity,
            ..Default::default()
        }
    }

    /// How many verifications the cache answered.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    fn remember(&mut self, digest: [u8; 32]) {
        if self.capacity == 0 || !self.seen.insert(digest) {
            return;
        }
        self.order.push_back(digest);
        if self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.seen.remove(&old);
            }
        }
    }
}

/// Verifies `signature_hex` by `key_hex` over `message`, strictly; consults
/// and fills `cache` when given. Malformed hex or keys simply do not verify.
pub fn verify_hex(
    cache: Option<&mut SignatureCache>,
    key_hex: &str,
    message: &[u8],
    signature_hex: &str,
) -> bool {
    let Some(key_bytes) = decode_lower_hex(key_hex) else {
        return false;
    };
    let Some(sig_bytes) = decode_lower_hex(signature_hex) else {
        return false;
    };
    let digest: Option<[u8; 32]> = cache.as_ref().filter(|c| c.capacity > 0).map(|_| {
        let mut h = Sha256::new();
        h.update(&key_bytes);
        h.update(&sig_bytes);
        h.update(message);
        h.finalize().into()
    });
    let mut cache = cache;
    if let (Some(c), Some(d)) = (cache.as_deref_mut(), digest) {
        if c.seen.contains(&d) {
            c.hits += 1;
            return true;
        }
    }
    let Ok(key_array) = <[u8; 32]>::try_from(key_bytes.as_slice()) else {
        return false;
    };
    let Ok(sig_array) = <[u8; 64]>::try_from(sig_bytes.as_slice()) else {
        return false;
    };
    let Ok(key) = VerifyingKey::from_bytes(&key_array) else {
        return false;
    };
    let ok = key
        .verify_strict(message, &Signature::from_bytes(&sig_array))
        .is_ok();
    if ok {
        if let (Some(c), Some(d)) = (cache, digest) {
            c.remember(d);
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{derive_arena_key, public_key_hex};
    use ed25519_dalek::Signer;

    // The cache answers only for the exact bytes it verified, and evicts in order.
    #[test]
    fn cache_is_exact_and_bounded() {
        let key = derive_arena_key(1, "agent", "a");
        let pk = public_key_hex(&key);
        let sig = hex::encode(key.sign(b"m1").to_bytes());
        let mut cache = SignatureCache::new(1);
        assert!(verify_hex(Some(&mut cache), &pk, b"m1", &sig));
        assert!(verify_hex(Some(&mut cache), &pk, b"m1", &sig));
        assert_eq!(cache.hits(), 1);
        assert!(!verify_hex(Some(&mut cache), &pk, b"m2", &sig));
        let sig2 = hex::encode(key.sign(b"m2").to_bytes());
        assert!(verify_hex(Some(&mut cache), &pk, b"m2", &sig2));
        assert!(verify_hex(Some(&mut cache), &pk, b"m1", &sig));
        assert_eq!(cache.hits(), 1, "m1 was evicted by m2");
        assert!(!verify_hex(None, &pk, b"m1", &sig.to_uppercase()));
    }
}
