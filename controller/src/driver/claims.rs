//! What the steps in flight hold: the claims a waiting step of the
//! pipelined driver's window must not overlap to be dispatched.
//!
//! A step of the window may go when its footprint overlaps no earlier step
//! not yet recorded. The resources the window's steps claim are numbered
//! while some step of the window claims them ([`Numbering`]), so that the
//! scan of the window, run each time a step is recorded, looks claims up by
//! number rather than comparing resource names. Adding up the whole window
//! for every dispatch would cost a lookup per claim of every step in the
//! window; instead the claims of the dispatched steps are counted as they
//! go out and come back ([`Busy`]), and only the waiting steps are added up
//! when the window is scanned ([`dispatchable`]). A dispatched step
//! overlaps no step that was waiting before it when it went, so the two
//! decide every step as the whole sum would; a property test holds them to
//! it.

use std::collections::BTreeMap;

use super::footprint::{Access, Footprint, Resource};

/// A step's footprint with its resources numbered by the window's
/// [`Numbering`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Numbered {
    /// Every earlier step must finish first, and every later step waits.
    Barrier,
    /// Each resource's number and how the step uses it, one entry per
    /// resource.
    Claims(Vec<(u32, Access)>),
}

/// Numbers for the resources the window's steps claim. A number is given
/// back when the last step claiming its resource leaves the window, and
/// given again to the next new resource, so the numbers stay as few as the
/// window's distinct resources however long the schedule.
#[derive(Debug, Default)]
pub struct Numbering {
    numbers: BTreeMap<Resource, u32>,
    /// Per number, its resource and how many window steps claim it.
    held: Vec<Option<(Resource, u32)>>,
    free: Vec<u32>,
}

impl Numbering {
    /// Numbers a step's footprint as it enters the window.
    pub fn enter(&mut self, footprint: &Footprint) -> Numbered {
        let Footprint::Claims(claims) = footprint else {
            return Numbered::Barrier;
        };
        let numbered = claims
            .iter()
            .map(|(resource, access)| (self.number(resource), *access))
            .collect();
        Numbered::Claims(numbered)
    }

    fn number(&mut self, resource: &Resource) -> u32 {
        if let Some(&n) = self.numbers.get(resource) {
            if let Some((_, count)) = &mut self.held[n as usize] {
                *count += 1;
            }
            return n;
        }
        let n = match self.free.pop() {
            Some(n) => n,
            None => {
                self.held.push(None);
                (self.held.len() - 1) as u32
            }
        };
        self.held[n as usize] = Some((resource.clone(), 1));
        self.numbers.insert(resource.clone(), n);
        n
    }

    /// Gives back the numbers of a step that leaves the window.
    pub fn leave(&mut self, numbered: &Numbered) {
        let Numbered::Claims(claims) = numbered else {
            return;
        };
        for (n, _) in claims {
            let slot = &mut self.held[*n as usize];
            if let Some((_, count)) = slot {
                *count -= 1;
                if *count == 0 {
                    if let Some((resource, _)) = slot.take() {
                        self.numbers.remove(&resource);
                    }
                    self.free.push(*n);
                }
            }
        }
    }

    /// How many resources are numbered now.
    #[cfg(test)]
    fn live(&self) -> usize {
        self.numbers.len()
    }

    /// How many numbers there are, given or free.
    fn len(&self) -> usize {
        self.held.len()
    }
}

/// The claims of the dispatched steps not yet recorded, counted per
/// resource number so that a recorded step's claims can be taken out
/// again: the pipelined driver keeps it as steps go out and come back,
/// instead of adding up its whole window for every dispatch.
#[derive(Debug, Default)]
pub struct Busy {
    /// Per resource number, how many dispatched steps read it and how many
    /// write it.
    counts: Vec<(u32, u32)>,
}

impl Busy {
    /// Whether a step with `claims` overlaps no dispatched step.
    fn admits(&self, claims: &[(u32, Access)]) -> bool {
        claims.iter().all(|(n, access)| {
            self.counts.get(*n as usize).is_none_or(|(reads, writes)| {
                *writes == 0 && (*reads == 0 || *access == Access::Read)
            })
        })
    }

    /// Counts a dispatched step's claims.
    pub fn add(&mut self, claims: &[(u32, Access)]) {
        for (n, access) in claims {
            let n = *n as usize;
            if self.counts.len() <= n {
                self.counts.resize(n + 1, (0, 0));
            }
            match access {
                Access::Read => self.counts[n].0 += 1,
                Access::Write => self.counts[n].1 += 1,
            }
        }
    }

    /// Takes a recorded step's claims out again.
    pub fn remove(&mut self, claims: &[(u32, Access)]) {
        for (n, access) in claims {
            if let Some(counts) = self.counts.get_mut(*n as usize) {
                match access {
                    Access::Read => counts.0 = counts.0.saturating_sub(1),
                    Access::Write => counts.1 = counts.1.saturating_sub(1),
                }
            }
        }
    }

    /// Whether no dispatched step's claim is counted.
    #[cfg(test)]
    fn is_idle(&self) -> bool {
        self.counts.iter().all(|c| *c == (0, 0))
    }
}

/// What the waiting steps scanned so far claim, by resource number: the
/// scan's scratch, kept between scans so that none allocates. An entry
/// counts only when its mark is the current scan's.
#[derive(Debug, Default)]
pub struct Scan {
    scan: u32,
    marks: Vec<(u32, Access)>,
}

impl Scan {
    /// Starts a scan over a window numbered by `numbering`: nothing
    /// claimed yet.
    fn start(&mut self, numbering: &Numbering) {
        if self.marks.len() < numbering.len() {
            self.marks.resize(numbering.len(), (0, Access::Read));
        }
        self.scan = self.scan.wrapping_add(1);
        if self.scan == 0 {
            // The marks wrapped: clear them so no old mark reads as this scan's.
            self.marks.fill((0, Access::Read));
            self.scan = 1;
        }
    }

    fn admits(&self, claims: &[(u32, Access)]) -> bool {
        claims
            .iter()
            .all(|(n, access)| match self.marks.get(*n as usize) {
                Some((scan, held)) if *scan == self.scan => {
                    *held == Access::Read && *access == Access::Read
                }
                _ => true,
            })
    }

    fn add(&mut self, claims: &[(u32, Access)]) {
        for (n, access) in claims {
            if let Some(mark) = self.marks.get_mut(*n as usize) {
                *mark = if mark.0 == self.scan {
                    (self.scan, mark.1.max(*access))
                } else {
                    (self.scan, *access)
                };
            }
        }
    }
}

/// The offsets, in order, of the waiting steps of a window (each step's
/// numbered footprint, and whether it waits) that overlap no earlier step
/// not yet recorded, given the claims of its dispatched steps. A barrier
/// goes only first in the window, and nothing after a barrier goes.
pub fn dispatchable<'f>(
    window: impl IntoIterator<Item = (&'f Numbered, bool)>,
    numbering: &Numbering,
    busy: &Busy,
    scan: &mut Scan,
) -> Vec<usize> {
    scan.start(numbering);
    let mut out = Vec::new();
    for (offset, (numbered, waiting)) in window.into_iter().enumerate() {
        match numbered {
            Numbered::Barrier => {
                if waiting && offset == 0 {
                    out.push(offset);
                }
                break;
            }
            Numbered::Claims(claims) if waiting => {
                if busy.admits(claims) && scan.admits(claims) {
                    out.push(offset);
                }
                scan.add(claims);
            }
            Numbered::Claims(_) => {}
        }
    }
    out
}

/// The union of the footprints of earlier steps not yet folded, by
/// resource: the rule [`dispatchable`] implements, kept for the tests that
/// hold it and the footprints to that rule.
#[cfg(test)]
#[derive(Debug, Default)]
pub struct Claimed<'f> {
    /// How many footprints were added, claims or not.
    steps: usize,
    barrier: bool,
    claims: BTreeMap<&'f Resource, Access>,
}

#[cfg(test)]
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
        // Proves the counted claims of the dispatched steps and the sum of the waiting ones dispatch exactly the steps the whole sum of earlier claims would, launch after launch, as steps enter the window, go, and are recorded from its front; and that the numbering holds exactly the window's resources.
        #[test]
        fn counted_claims_dispatch_as_the_whole_sum(
            footprints in proptest::collection::vec(footprint(), 1..40),
            moves in proptest::collection::vec(0u8..3, 1..80),
        ) {
            let mut pending = footprints.into_iter();
            let mut window: Vec<(Footprint, Numbered, bool)> = Vec::new();
            let (mut numbering, mut busy, mut scan) =
                (Numbering::default(), Busy::default(), Scan::default());
            for step in moves {
                match step {
                    // A step enters the window.
                    0 => {
                        if let Some(next) = pending.next() {
                            let numbered = numbering.enter(&next);
                            window.push((next, numbered, true));
                        }
                    }
                    // A launch: both rules pick the same steps.
                    1 => {
                        let counted = dispatchable(
                            window.iter().map(|(_, n, w)| (n, *w)),
                            &numbering,
                            &busy,
                            &mut scan,
                        );
                        let whole: Vec<(Footprint, bool)> =
                            window.iter().map(|(f, _, w)| (f.clone(), *w)).collect();
                        prop_assert_eq!(&counted, &summed(&whole));
                        for offset in counted {
                            if let Numbered::Claims(claims) = &window[offset].1 {
                                busy.add(claims);
                            }
                            window[offset].2 = false;
                        }
                    }
                    // The front step, dispatched, is recorded.
                    _ => {
                        if window.first().is_some_and(|(_, _, waiting)| !waiting) {
                            let (_, numbered, _) = window.remove(0);
                            if let Numbered::Claims(claims) = &numbered {
                                busy.remove(claims);
                            }
                            numbering.leave(&numbered);
                        }
                    }
                }
                let resources: std::collections::BTreeSet<&Resource> = window
                    .iter()
                    .filter_map(|(f, _, _)| match f {
                        Footprint::Claims(claims) => Some(claims.keys()),
                        Footprint::Barrier => None,
                    })
                    .flatten()
                    .collect();
                prop_assert_eq!(numbering.live(), resources.len());
            }
            for (_, numbered, waiting) in window.drain(..) {
                if let (false, Numbered::Claims(claims)) = (waiting, &numbered) {
                    busy.remove(claims);
                }
                numbering.leave(&numbered);
            }
            prop_assert!(busy.is_idle());
            prop_assert_eq!(numbering.live(), 0);
        }
    }

    // Proves a schedule whose every step claims a resource of its own (its output) needs no more numbers than the window holds steps: a number is given again once its step has left.
    #[test]
    fn numbers_are_given_again_after_their_steps_leave() {
        let mut numbering = Numbering::default();
        let mut window = std::collections::VecDeque::new();
        for i in 0..1_000 {
            let footprint = Footprint::Claims(BTreeMap::from([
                (Resource::Agent("a".into()), Access::Write),
                (Resource::Output(format!("s{i}")), Access::Write),
            ]));
            window.push_back(numbering.enter(&footprint));
            if window.len() > 4 {
                numbering.leave(&window.pop_front().unwrap());
            }
        }
        assert_eq!(numbering.live(), 5);
        assert!(numbering.len() <= 6, "{} numbers", numbering.len());
    }
}
