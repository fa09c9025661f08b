//! Seeded randomness for the arena.
//!
//! [`ArenaRng`] holds the scenario's `rng_seed` and hands out ChaCha20
//! streams: the root stream seeded from the seed itself, one sub-stream per
//! agent, and one per co-evolution generation. Each sub-stream seed is
//! FNV-1a 64 over the seed's 8 big-endian bytes, the byte `:`, and either the
//! agent id's UTF-8 bytes or the generation index's 4 big-endian bytes. The
//! streams are independent of each other and of the order they are asked
//! for, so adding an agent never shifts another agent's draws. Nothing here
//! touches OS randomness.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// FNV-1a 64-bit offset basis.
pub const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 over `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME)
    })
}

/// The scenario's seeded random streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArenaRng {
    /// The scenario's `rng_seed`; every stream derives from it alone.
    seed: u64,
}

impl ArenaRng {
    /// Wraps a scenario seed.
    pub fn new(seed: u64) -> Self {
        Self { seed }
    }

    /// The seed every stream derives from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The root stream, `ChaCha20Rng::seed_from_u64(rng_seed)`.
    pub fn root(&self) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(self.seed)
    }

    /// The seed of an agent's sub-stream: FNV-1a 64 of `seed_be ++ ":" ++ agent_id`.
    pub fn agent_seed(&self, agent_id: &str) -> u64 {
        self.fold(agent_id.as_bytes())
    }

    /// An agent's sub-stream.
    pub fn agent_stream(&self, agent_id: &str) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(self.agent_seed(agent_id))
    }

    /// The seed of a generation's stream: FNV-1a 64 of `seed_be ++ ":" ++ generation_be`.
    pub fn generation_seed(&self, generation: u32) -> u64 {
        self.fold(&generation.to_be_bytes())
    }

    /// A co-evolution generation's stream.
    pub fn generation_stream(&self, generation: u32) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(self.generation_seed(generation))
    }

    fn fold(&self, suffix: &[u8]) -> u64 {
        let mut bytes = Vec::with_capacity(9 + suffix.len());
        bytes.extend_from_slice(&self.seed.to_be_bytes());
        bytes.push(b':');
        bytes.extend_from_slice(suffix);
        fnv1a64(&bytes)
    }
}
