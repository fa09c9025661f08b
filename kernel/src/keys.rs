//! Arena key derivation and the hex form of public keys.
//!
//! Every key of an arena run (the authority that issues grants, each kernel
//! that signs receipts, each agent that proves possession of its
//! capabilities) is derived from the run's seed, so a scenario replays with
//! byte-identical signatures. The derivation is:
//!
//! ```text
//! secret = SHA-256( b"chio.arena.key/v1" || 0x00
//!                   || rng_seed as 8 big-endian bytes || 0x00
//!                   || role (UTF-8) || 0x00
//!                   || id (UTF-8) )
//! signing key = Ed25519 key whose 32-byte secret seed is `secret`
//! ```
//!
//! Roles used by the arena are `authority`, `kernel` and `agent`. These are
//! arena keys: anyone who knows the seed knows them. They exist to make runs
//! reproducible and must never protect anything real.
//!
//! Public keys travel as lowercase hex strings of their 32 compressed bytes;
//! this module owns parsing them strictly (length, case, curve point) so the
//! rest of the kernel compares keys as strings.

use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::error::KernelError;

/// Domain separator of the arena key derivation; versioned so a future
/// derivation can never collide with this one.
pub const ARENA_KEY_DOMAIN: &[u8] = b"chio.arena.key/v1";

/// Derives the deterministic arena signing key for `(seed, role, id)`.
pub fn derive_arena_key(seed: u64, role: &str, id: &str) -> SigningKey {
    let mut hasher = Sha256::new();
    hasher.update(ARENA_KEY_DOMAIN);
    hasher.update([0u8]);
    hasher.update(seed.to_be_bytes());
    hasher.update([0u8]);
    hasher.update(role.as_bytes());
    hasher.update([0u8]);
    hasher.update(id.as_bytes());
    let secret: [u8; 32] = hasher.finalize().into();
    SigningKey::from_bytes(&secret)
}

/// The lowercase hex form of a signing key's public half, as tokens carry it.
pub fn public_key_hex(key: &SigningKey) -> String {
    hex::encode(key.verifying_key().as_bytes())
}

/// The lowercase hex form of a public key.
pub fn verifying_key_hex(key: &VerifyingKey) -> String {
    hex::encode(key.as_bytes())
}

/// Parses a public key from its lowercase hex form, refusing uppercase hex,
/// a wrong length, bytes that are not a curve point, a second spelling of
/// a point (its canonical encoding differs) and a point of small order
/// (the identity, the all-zero bytes and the other torsion points), which
/// no holder of a secret key has: one key, one accepted spelling, and
/// every accepted key someone's.
pub fn parse_public_key_hex(text: &str) -> Result<VerifyingKey, KernelError> {
    let invalid = |detail: &str| KernelError::InvalidPublicKey {
        detail: detail.to_string(),
    };
    let bytes = decode_lower_hex(text).ok_or_else(|| invalid("not lowercase hex"))?;
    let array: [u8; 32] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| KernelError::InvalidPublicKey {
            detail: format!("{} bytes instead of 32", b.len()),
        })?;
    let key = VerifyingKey::from_bytes(&array).map_err(|_| invalid("not a point of the curve"))?;
    if key.to_edwards().compress().to_bytes() != array {
        return Err(invalid("not the canonical encoding of its point"));
    }
    if key.is_weak() {
        return Err(invalid("a point of small order, which no secret key has"));
    }
    Ok(key)
}

/// Decodes hex only when it is in the canonical lowercase form, so that one
/// signature or key has exactly one accepted spelling.
pub fn decode_lower_hex(text: &str) -> Option<Vec<u8>> {
    if text
        .bytes()
        .any(|b| !(b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    {
        return None;
    }
    hex::decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The identity point, the all-zero bytes, a point of order 8, and the
    // identity spelt a second way are refused; a derived key is accepted.
    #[test]
    fn weak_and_second_spellings_of_keys_are_refused() {
        let identity = format!("01{}", "0".repeat(62));
        let zero = "0".repeat(64);
        // A point of order 8 (the first of the torsion points dalek lists).
        let order8 = "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a";
        // y = p + 1 reduces to 1: the identity's non-canonical spelling.
        let second = "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f";
        for (text, why) in [
            (identity.as_str(), "small order"),
            (zero.as_str(), "small order"),
            (order8, "small order"),
            (second, "canonical encoding"),
        ] {
            let err = parse_public_key_hex(text).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
        }
        let hex = public_key_hex(&derive_arena_key(42, "agent", "alice"));
        assert!(parse_public_key_hex(&hex).is_ok());
    }

    // The derivation is pinned: changing it would silently change every arena bundle.
    #[test]
    fn derivation_is_pinned_and_separates_roles() {
        let a = derive_arena_key(7, "agent", "alice");
        let b = derive_arena_key(7, "agent", "alice");
        assert_eq!(a.to_bytes(), b.to_bytes());
        assert_ne!(
            public_key_hex(&a),
            public_key_hex(&derive_arena_key(7, "kernel", "alice"))
        );
        assert_ne!(
            public_key_hex(&a),
            public_key_hex(&derive_arena_key(8, "agent", "alice"))
        );
        let mut hasher = Sha256::new();
        hasher.update(b"chio.arena.key/v1\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00agent\x00alice");
        let secret: [u8; 32] = hasher.finalize().into();
        assert_eq!(a.to_bytes(), secret);
    }

    // Hex keys round-trip and non-canonical spellings are refused.
    #[test]
    fn hex_keys_are_strict() {
        let key = derive_arena_key(1, "authority", "root");
        let text = public_key_hex(&key);
        assert_eq!(parse_public_key_hex(&text).unwrap(), key.verifying_key());
        assert!(parse_public_key_hex(&text.to_uppercase()).is_err());
        assert!(parse_public_key_hex(&text[..62]).is_err());
        assert!(parse_public_key_hex("zz").is_err());
    }
}
