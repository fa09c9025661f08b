//! What the steps in flight hold: the claims a waiting step of the
//! pipelined driver's window must not overlap to be dispatched.
//!
//! A step of the window may go when its footprint overlaps no earlier step
//! not yet recorded. Adding up the whole window for every dispatch costs a
//! map insertion per claim of every step in the window; instead the claims
//! of the dispatched steps are counted as they go out and come back
//! ([`Busy`]), and only the waiting steps are added up ([`Claimed`]) when
//! the window is scanned ([`dispatchable`]). A dispatched step overlaps no
//! step that was waiting before it when it went, so the two decide every
//! step as the whole sum would; a property test holds them to it.

use std::collections::BTreeMap;

use super::footprint::{Access, Footprint, Resource};

/// The union of the footprints of earlier steps not yet folded, which a
/// later step must not overlap to be dispatched; it borrows the
/// footprints it is made of.
#[derive(Debug, Default)]
pub struct Claimed<'f> {
    /// How many footprints were added, claims or not.
    steps: usize,
    barrier: bool,
    claims: BTreeMap<&'f Resource, Access>,
}

impl<'f> Claimed<'f> {
    /// Nothing claimed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no earlier step is unfolded at all.
    fn is_empty(&self) -> bool {
        self.steps == 0
    }

    /// Whether a step with `footprint` overlaps nothing claimed.
    pub fn admits(&self, footprint: &Footprint) -> bool {
        match footprint {
            Footprint::Barrier => self.is_empty(),
            Footprint::Claims(claims) => {
                !self.barrier
                    && claims
                        .iter()
                        .all(|(resource, access)| match self.claims.get(resource) {
                            None => true,
                            Some(held) => *held == Access::Read && *access == Access::Read,
                        })
            }
        }
    }

    /// Adds a step's footprint.
    pub fn add(&mut self, footprint: &'f Footprint) {
        self.steps += 1;
        match footprint {
            Footprint::Barrier => self.barrier = true,
            Footprint::Claims(claims) => {
                for (resource, access) in claims {
                    let entry = self.claims.entry(resource).or_insert(*access);
                    *entry = (*entry).max(*access);
                }
            }
        }
    }
}

/// The claims of the dispatched steps not yet recorded, counted per
/// resource so that a recorded step's claims can be taken out again: the
/// pipelined driver keeps it as steps go out and come back, instead of
/// adding up its whole window for every dispatch.
#[derive(Debug, Default)]
pub struct Busy {
    /// Per resource, how many dispatched steps read it and how many write it.
    claims: BTreeMap<Resource, (usize, usize)>,
}

impl Busy {
    /// Whether a step with `claims` overlaps no dispatched step.
    pub fn admits(&self, claims: &BTreeMap<Resource, Access>) -> bool {
        claims.iter().all(|(resource, access)| {
            self.claims.get(resource).is_none_or(|(reads, writes)| {
                *writes == 0 && (*reads == 0 || *access == Access::Read)
            })
        })
    }

    /// Counts a dispatched step's claims.
    pub fn add(&mut self, claims: &BTreeMap<Resource, Access>) {
        for (resource, access) in claims {
            let counts = self.claims.entry(resource.clone()).or_default();
            match access {
                Access::Read => counts.0 += 1,
                Access::Write => counts.1 += 1,
            }
        }
    }

    /// Takes a recorded step's claims out again.
    pub fn remove(&mut self, claims: &BTreeMap<Resource, Access>) {
        for (resource, access) in claims {
            if let Some(counts) = self.claims.get_mut(resource) {
                match access {
                    Access::Read => counts.0 = counts.0.saturating_sub(1),
                    Access::Write => counts.1 = counts.1.saturating_sub(1),
                }
                if *counts == (0, 0) {
                    self.claims.remove(resource);
                }
            }
        }
    }
}

/// The offsets, in order, of the waiting steps of a window (each step's
/// footprint, and whether it waits) that overlap no earlier step not yet
/// recorded, given the claims of its dispatched steps. A barrier goes only
/// first in the window, and nothing after a barrier goes.
pub fn dispatchable<'f>(
    window: impl IntoIterator<Item = (&'f Footprint, bool)>,
    busy: &Busy,
) -> Vec<usize> {
    let mut earlier = Claimed::new();
    let mut out = Vec::new();
    for (offset, (footprint, waiting)) in window.into_iter().enumerate() {
        match footprint {
            Footprint::Barrier => {
                if waiting && offset == 0 {
                    out.push(offset);
                }
                break;
            }
            Footprint::Claims(claims) if waiting => {
                if busy.admits(claims) && earlier.admits(footprint) {
                    out.push(offset);
                }
                earlier.add(footprint);
            }
            Footprint::Claims(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The window's rule as the whole sum of every earlier step's claims:
    /// what [`dispatchable`] must agree with.
    fn summed(window: &[(Footprint, bool)]) -> Vec<usize> {
        let mut claimed = Claimed::new();
        let mut out = Vec::new();
        for (offset, (footprint, waiting)) in window.iter().enumerate() {
            if claimed.barrier {
                break;
            }
            if *waiting && claimed.admits(footprint) {
                out.push(offset);
            }
            claimed.add(footprint);
        }
        out
    }

    fn footprint() -> impl Strategy<Value = Footprint> {
        let claim = (0u8..4, any::<bool>()).prop_map(|(r, write)| {
            let access = if write { Access::Write } else { Access::Read };
            (Resource::Server(format!("s{r}")), access)
        });
        prop_oneof![
            1 => Just(Footprint::Barrier),
            8 => proptest::collection::vec(claim, 0..3).prop_map(|claims| {
                let mut out = BTreeMap::new();
                for (resource, access) in claims {
                    let entry = out.entry(resource).or_insert(access);
                    *entry = (*entry).max(access);
                }
                Footprint::Claims(out)
            }),
        ]
    }

    proptest! {
        // Proves the counted claims of the dispatched steps and the sum of the waiting ones dispatch exactly the steps the whole sum of earlier claims would, launch after launch, as steps enter the window, go, and are recorded from its front.
        #[test]
        fn counted_claims_dispatch_as_the_whole_sum(
            footprints in proptest::collection::vec(footprint(), 1..40),
            moves in proptest::collection::vec(0u8..3, 1..80),
        ) {
            let mut pending = footprints.into_iter();
            let mut window: Vec<(Footprint, bool)> = Vec::new();
            let mut busy = Busy::default();
            for step in moves {
                match step {
                    // A step enters the window.
                    0 => {
                        if let Some(next) = pending.next() {
                            window.push((next, true));
                        }
                    }
                    // A launch: both rules pick the same steps.
                    1 => {
                        let counted = dispatchable(window.iter().map(|(f, w)| (f, *w)), &busy);
                        prop_assert_eq!(&counted, &summed(&window));
                        for offset in counted {
                            if let Footprint::Claims(claims) = &window[offset].0 {
                                busy.add(claims);
                            }
                            window[offset].1 = false;
                        }
                    }
                    // The front step, dispatched, is recorded.
                    _ => {
                        if window.first().is_some_and(|(_, waiting)| !waiting) {
                            let (footprint, _) = window.remove(0);
                            if let Footprint::Claims(claims) = &footprint {
                                busy.remove(claims);
                            }
                        }
                    }
                }
            }
        }
    }
}
