//! The ring buffer behind scheduling traces (the kernel's `sched::trace`): one writer (the core the
//! ring belongs to) and any number of readers that may read while the writer still records
//! (the end-of-run dump, or the watchdog's dump while every core is still running).
//!
//! Every word of the ring is an atomic, so a concurrent read is never undefined behaviour; the
//! orderings make what it returns correct:
//!
//! * Publication. The writer fills entry `k`, then stores `written = k + 1` with Release; a
//!   reader that Acquire-loads `written >= k + 1` sees all of entry `k` (or something newer).
//! * Overwrite detection (a seqlock whose sequence is `written`). Before it writes entry `j` into
//!   the slot of entry `j - capacity`, the writer has stored `written = j` and issues a Release
//!   fence. A reader that copied the slot then issues an Acquire fence and re-reads `written`
//!   (`w2`). If the copy saw any word of entry `j`, the fences synchronise and `w2 >= j`; so an
//!   entry `k` with `k + capacity > w2` was not overwritten while it was copied. Older copies
//!   are discarded (they count as dropped).
//!
//! The conservative rule also discards the oldest entry of a full ring even when the writer had
//! stopped (the reader cannot tell "stopped" from "about to overwrite it").
//!
//! Pure and generic over its atomics (`core`'s, or loom's under `cfg(loom)`), so the host tests
//! and the loom model below check the same code the kernel runs. [`Publication`] lets the loom
//! model build deliberately weakened rings and show that it catches them.

#![cfg_attr(not(any(test, loom)), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::boxed::Box;
use alloc::collections::TryReserveError;
use alloc::vec::Vec;
use core::marker::PhantomData;

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU64, Ordering, fence};
#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering, fence};

/// Words in one entry.
pub const WORDS: usize = 3;
/// One entry, as the writer gave it.
pub type Entry = [u64; WORDS];

/// The orderings a ring publishes and reads with. The kernel uses [`ReleaseAcquire`]; the
/// weakened ones exist so the loom model can show it would catch a weakening.
pub trait Publication {
    /// Ordering of the writer's store of `written` after filling an entry.
    const PUBLISH: Ordering;
    /// Ordering of the reader's first load of `written`.
    const OBSERVE: Ordering;
    /// Whether the writer fences before overwriting a slot and the reader before re-reading
    /// `written` (the overwrite detection).
    const FENCES: bool;
}

/// The correct orderings (see the module documentation).
pub struct ReleaseAcquire;

impl Publication for ReleaseAcquire {
    // ORDERING: Release publication of an entry, paired with the Acquire of `OBSERVE` (both
    // used in `record` / `snapshot`, where the pairing is explained).
    const PUBLISH: Ordering = Ordering::Release;
    // ORDERING: Acquire, paired with `PUBLISH` above.
    const OBSERVE: Ordering = Ordering::Acquire;
    const FENCES: bool = true;
}

/// A ring of `capacity` entries with one writer.
pub struct Ring<P: Publication = ReleaseAcquire> {
    slots: Box<[[AtomicU64; WORDS]]>,
    /// Entries recorded so far; entry `k` lives in slot `k % capacity`. Only the writer stores
    /// it and never reads it back.
    written: AtomicU64,
    /// The writer's own copy of `written` (read and written by the writer only). Keeping it
    /// apart means every access the writer makes to `written` is the publishing store, so a
    /// reader's load of `written` races with that store directly (loom's partial-order
    /// reduction only explores the race when no load of the writer's comes in between).
    recorded: AtomicU64,
    _orderings: PhantomData<P>,
}

/// What [`Ring::snapshot`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Entries the writer had recorded when the snapshot began.
    pub written: u64,
    /// Entries copied out (the newest ones, oldest first).
    pub kept: u64,
}

impl Snapshot {
    /// Entries recorded but not in the snapshot (overwritten, or possibly being overwritten).
    pub fn dropped(&self) -> u64 {
        self.written - self.kept
    }
}

impl<P: Publication> Ring<P> {
    /// An empty ring of `capacity` (> 0) entries; fails if the heap cannot hold it.
    pub fn try_new(capacity: usize) -> Result<Self, TryReserveError> {
        assert!(capacity > 0, "a trace ring needs at least one slot");
        let mut slots = Vec::new();
        slots.try_reserve_exact(capacity)?;
        slots.extend((0..capacity).map(|_| [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]));
        Ok(Ring {
            slots: slots.into_boxed_slice(),
            written: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
            _orderings: PhantomData,
        })
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn slot(&self, k: u64) -> &[AtomicU64; WORDS] {
        &self.slots[(k % self.slots.len() as u64) as usize]
    }

    /// Appends `entry`, overwriting the oldest one when the ring is full.
    ///
    /// Only one thread (core) may record into a ring, and not reentrantly (the kernel records
    /// with IRQs masked, on the ring's own core). Breaking this cannot cause undefined
    /// behaviour, only garbled entries.
    pub fn record(&self, entry: Entry) {
        // Relaxed: `recorded` is the writer's private count; it reads its own last store.
        let k = self.recorded.load(Ordering::Relaxed);
        if P::FENCES {
            // ORDERING: Release fence, paired with the Acquire fence in `snapshot`. It orders the
            // store `written = k` (made by the previous `record`) before the stores below that
            // overwrite entry `k - capacity`: a reader whose copy saw any of them then sees
            // `written >= k` on its re-read and discards the torn entry.
            fence(Ordering::Release);
        }
        for (word, value) in self.slot(k).iter().zip(entry) {
            word.store(value, Ordering::Relaxed);
        }
        // ORDERING: Release, paired with the Acquire load of `written` in `snapshot`: a reader
        // that sees `written > k` sees every word of entry `k` (not the older slot contents).
        self.written.store(k + 1, P::PUBLISH);
        self.recorded.store(k + 1, Ordering::Relaxed);
    }

    /// Entries recorded so far (Relaxed: a count for reports, it publishes nothing).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// Appends the entries present in the ring to `out`, oldest first, and says how many it
    /// kept. May run while the writer records: entries overwritten during the copy are left
    /// out (see the module documentation). Allocates at most `capacity` entries in `out`.
    pub fn snapshot(&self, out: &mut Vec<Entry>) -> Result<Snapshot, TryReserveError> {
        let capacity = self.slots.len() as u64;
        // ORDERING: Acquire, paired with the Release store of `written` in `record`: entries
        // below `w1` are completely written before we copy them.
        let w1 = self.written.load(P::OBSERVE);
        let first = w1.saturating_sub(capacity);
        out.try_reserve((w1 - first) as usize)?;
        let base = out.len();
        for k in first..w1 {
            let slot = self.slot(k);
            out.push([
                slot[0].load(Ordering::Relaxed),
                slot[1].load(Ordering::Relaxed),
                slot[2].load(Ordering::Relaxed),
            ]);
        }
        if P::FENCES {
            // ORDERING: Acquire fence, paired with the Release fence in `record`: if any word
            // copied above came from an entry `j` that overwrote a slot, the re-read below sees
            // `written >= j` and the overwritten entry is discarded.
            fence(Ordering::Acquire);
        }
        let w2 = self.written.load(Ordering::Relaxed);
        // Entry k is intact if no entry j >= k + capacity had started: k + capacity > w2.
        let valid_from = first.max((w2 + 1).saturating_sub(capacity)).min(w1);
        out.drain(base..base + (valid_from - first) as usize);
        Ok(Snapshot { written: w1, kept: w1 - valid_from })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;
    use std::vec;
    use std::vec::Vec;

    use super::{Entry, Ring, Snapshot};

    fn entry(k: u64) -> Entry {
        [k, k.wrapping_mul(0x9e37_79b9_7f4a_7c15), !k]
    }

    #[test]
    fn keeps_everything_until_full() {
        let ring: Ring = Ring::try_new(4).unwrap();
        let mut out = Vec::new();
        assert_eq!(ring.snapshot(&mut out).unwrap(), Snapshot { written: 0, kept: 0 });
        for k in 0..3 {
            ring.record(entry(k));
        }
        assert_eq!(ring.snapshot(&mut out).unwrap(), Snapshot { written: 3, kept: 3 });
        assert_eq!(out, vec![entry(0), entry(1), entry(2)]);
    }

    #[test]
    fn a_full_ring_keeps_the_newest_but_one_slot() {
        let ring: Ring = Ring::try_new(4).unwrap();
        for k in 0..10 {
            ring.record(entry(k));
        }
        let mut out = vec![entry(99)];
        let snapshot = ring.snapshot(&mut out).unwrap();
        assert_eq!(snapshot, Snapshot { written: 10, kept: 3 });
        assert_eq!(snapshot.dropped(), 7);
        // Appended after what `out` held; entry 6 (slot of the next write) is left out.
        assert_eq!(out, vec![entry(99), entry(7), entry(8), entry(9)]);
    }

    /// A writer thread records without pause while readers snapshot: every kept entry must be
    /// exactly what was recorded at its position (no torn or stale copies), in order.
    #[test]
    fn concurrent_snapshots_are_never_torn() {
        let ring: Arc<Ring> = Arc::new(Ring::try_new(16).unwrap());
        const EVENTS: u64 = 200_000;
        let writer = {
            let ring = Arc::clone(&ring);
            std::thread::spawn(move || {
                for k in 0..EVENTS {
                    ring.record(entry(k));
                }
            })
        };
        let mut checked = 0u64;
        while !writer.is_finished() || checked == 0 {
            let mut out = Vec::new();
            let snapshot = ring.snapshot(&mut out).unwrap();
            assert_eq!(out.len() as u64, snapshot.kept);
            let first = snapshot.written - snapshot.kept;
            for (i, e) in out.iter().enumerate() {
                assert_eq!(
                    *e,
                    entry(first + i as u64),
                    "entry {} of a snapshot at {}",
                    first + i as u64,
                    snapshot.written
                );
            }
            checked += snapshot.kept;
        }
        writer.join().unwrap();
        assert!(checked > 0);
    }
}

#[cfg(all(test, loom))]
mod loom_models {
    //! `RUSTFLAGS="--cfg loom" cargo test --release` in crates/trace-ring/.
    //!
    //! One writer records four entries into a ring of two (it laps the ring) while a reader snapshots it. On every
    //! execution loom allows, each kept entry must be the one recorded at its position. The same
    //! model is run against rings with the Release/Acquire publication or the fences removed,
    //! and must fail there: the model can tell the correct orderings from weaker ones.

    use std::sync::Arc;
    use std::vec::Vec;

    use loom::sync::atomic::Ordering;

    use super::{Entry, Publication, ReleaseAcquire, Ring};

    fn entry(k: u64) -> Entry {
        [k + 1, 2 * k + 1, 3 * k + 1]
    }

    fn model<P: Publication + Send + Sync + 'static>() {
        loom::model(|| {
            let ring: Arc<Ring<P>> = Arc::new(Ring::try_new(2).unwrap());
            let writer = {
                let ring = Arc::clone(&ring);
                loom::thread::spawn(move || {
                    for k in 0..4 {
                        ring.record(entry(k));
                    }
                })
            };
            let mut out = Vec::new();
            let snapshot = ring.snapshot(&mut out).unwrap();
            let first = snapshot.written - snapshot.kept;
            for (i, e) in out.iter().enumerate() {
                assert_eq!(*e, entry(first + i as u64), "kept entry {} is torn or stale", first + i as u64);
            }
            writer.join().unwrap();
        });
    }

    #[test]
    fn release_acquire_ring_is_correct() {
        model::<ReleaseAcquire>();
    }

    /// `written` published and read Relaxed (fences kept).
    struct RelaxedIndex;
    impl Publication for RelaxedIndex {
        const PUBLISH: Ordering = Ordering::Relaxed;
        const OBSERVE: Ordering = Ordering::Relaxed;
        const FENCES: bool = true;
    }

    /// Release/Acquire publication kept, overwrite-detection fences removed.
    struct NoFences;
    impl Publication for NoFences {
        // ORDERING: as in `ReleaseAcquire`: this model only removes the fences.
        const PUBLISH: Ordering = Ordering::Release;
        const OBSERVE: Ordering = Ordering::Acquire;
        const FENCES: bool = false;
    }

    fn must_fail<P: Publication + Send + Sync + 'static>(what: &str) {
        let outcome = std::panic::catch_unwind(model::<P>);
        assert!(outcome.is_err(), "the loom model did not catch a ring with {what}");
    }

    #[test]
    fn relaxed_publication_is_caught() {
        must_fail::<RelaxedIndex>("a Relaxed write index");
    }

    #[test]
    fn missing_fences_are_caught() {
        must_fail::<NoFences>("no overwrite-detection fences");
    }
}
