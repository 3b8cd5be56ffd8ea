//! The Chase-Lev deque itself: the owner's [`Worker`] and the thieves' [`Stealer`]s over one ring.
//!
//! Orderings are those of Lê, Pop, Cohen and Zappa Nardelli, "Correct and Efficient
//! Work-Stealing for Weak Memory Models" (PPoPP 2013), figure 1 (the C11 version), with a fixed
//! capacity instead of a growing array (a full deque refuses the push and hands the item back).
//!
//! ```text
//!            steal() takes here                         push()/pop() work here
//!                   v                                              v
//!   index:   ... | top | top+1 | ... | bottom-1 | bottom (next free) | ...
//!   slot:          index & mask  (a ring of `capacity` word-sized slots)
//! ```
//!
//! `top` only grows, by a compare-and-swap; `bottom` is written by the owner alone and dips by
//! one only for the duration of a `pop`. Both are 64-bit: at one operation per nanosecond they
//! would wrap after 584 years, so a CAS on `top` can never succeed on a recycled value (no ABA).
//! Differences are still computed with wrapping arithmetic and read as signed, because `bottom`
//! transiently sits one below `top` while the owner pops an empty deque.

#![forbid(unsafe_code)]

use core::cell::Cell;
use core::fmt;

use super::outcome::{CapacityError, Full, Pop, Steal};
use super::portable::Portable;
use super::primitives::{CasFailure, DequeAtomics};
use super::shared::{SharedView, signed_distance};
use super::shim::Ordering;

/// The owner's end of a deque: pushes and pops the newest items, lock-free and wait-free except
/// for the CAS on the last item.
///
/// There is exactly one `Worker` per deque and it is `Send` but not `Sync` (the `Cell` makes it
/// so): it can be handed to the core that owns the deque, and only that core can then call
/// [`push`](Worker::push) and [`pop`](Worker::pop) (the algorithm assumes a single writer of
/// `bottom`, and the cached limit below is the owner's alone).
pub struct Worker<A: DequeAtomics = Portable> {
    shared: SharedView<A>,
    /// `top + capacity` for a value of `top` this owner obtained by an Acquire load of `top`
    /// (in `push`) or wrote by its own successful CAS (in `pop`); initially 0, so that the
    /// first push reads `top`. `top` only grows, so this is never above the true limit: a push
    /// below it cannot overwrite an item, and one at or above it re-reads `top` first.
    push_limit: Cell<u64>,
}

/// A thief's end of a deque: takes the oldest item. Clone one per thief; all clones and the
/// [`Worker`] share the deque.
pub struct Stealer<A: DequeAtomics = Portable> {
    shared: SharedView<A>,
}

impl<A: DequeAtomics> Worker<A> {
    /// A new empty deque holding at most `capacity` items; `capacity` must be a power of two.
    pub fn new(capacity: usize) -> Result<Self, CapacityError> {
        let shared = SharedView::with_capacity(capacity)?;
        Ok(Worker { push_limit: Cell::new(0), shared })
    }

    /// A thief's handle on this deque.
    pub fn stealer(&self) -> Stealer<A> {
        Stealer { shared: self.shared.clone() }
    }

    /// The most items the deque holds at once.
    pub fn capacity(&self) -> usize {
        self.shared.capacity() as usize
    }

    /// Items in the deque (exact when no thief is stealing at the same moment).
    #[inline]
    pub fn len(&self) -> usize {
        self.shared.approximate_len()
    }

    /// Whether the deque looked empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Pushes `item` as the newest item, or hands it back in [`Full`] when `capacity` items are
    /// already there. Never overwrites an item, never loses one.
    // Always inline: the scheduler's hand-off from one process to the next must call nothing
    // out of line on its fast path (see `WorkQueue::try_push`).
    #[inline(always)]
    pub fn push(&self, item: u64) -> Result<(), Full> {
        let shared = &self.shared;
        // Found once, before the fence below (which the compiler treats as clobbering memory,
        // so it would otherwise re-load the `Arc` to find `bottom` again after it).
        let bottom_index = shared.bottom();
        // Relaxed: only this owner writes `bottom`, so it reads its own latest value.
        let bottom = A::load_relaxed(bottom_index);
        // ORDERING: no load of `top` on this path: the cached `push_limit` (`top + capacity`)
        // stands in for the paper's Acquire load of `top`. What that load is for: the slot we
        // are about to write held item `bottom - capacity`, and a thief that took it read the
        // slot *before* its CAS; we must have synchronised with that CAS, so that the thief's
        // read happens-before our overwrite and it cannot return the new item in place of the
        // old one. The cached value gives exactly that. Its `top` was read by an Acquire load
        // (the branch below) or written by our own successful CAS in `pop` (an acquire
        // read-modify-write), and it is above `bottom - capacity` (else we would not be
        // writing), so the CAS that took item `bottom - capacity` is at or before it in
        // `top`'s modification order. Every write of `top` is a CAS, so that value lies in the
        // release sequence headed by that CAS (C++20 [intro.races] p5) and our acquire
        // synchronised with it. The acquire is sequenced before this push (or, if the `Worker`
        // has since been sent to another thread, happens-before it through the send), hence
        // before the slot store below; how long ago it happened does not matter. A stale value
        // is only ever smaller than the true `top` (which only grows), so it can make the deque
        // look fuller, never emptier: then we re-read `top` before refusing.
        if signed_distance(self.push_limit.get(), bottom) >= 0 {
            // Rare: only once `bottom` reaches the limit cached at the last re-read, that is
            // after `capacity - len` net pushes (`len` as it was then), or when really full.
            core::hint::cold_path();
            // Looks full: re-read `top`. ORDERING: Acquire, pairs with the release half of the
            // thief's successful CAS on `top` in `steal` (and of our own last-item CAS in
            // `pop`), directly or through the release sequence of later CASes, as argued above;
            // the value is cached for later pushes, which rely on this acquire. (Inline: as a
            // call it would make `push` save registers on its fast path too.)
            let top = A::load_acquire(shared.top());
            debug_assert!(signed_distance(top, bottom) >= 0, "top {top} passed bottom {bottom} outside pop");
            let limit = top.wrapping_add(shared.capacity());
            self.push_limit.set(limit);
            if signed_distance(limit, bottom) >= 0 {
                return Err(Full(item));
            }
        }
        // Relaxed: published by the fence below, not by the store itself.
        shared.slot(bottom).store(item, Ordering::Relaxed);
        // ORDERING: release fence, pairs with the Acquire load of `bottom` in `steal`. A thief
        // that reads the incremented `bottom` also sees this slot's item (and everything the
        // owner wrote before pushing it, e.g. the process the item points to). Without it the
        // thief could see the new `bottom` and read the slot's previous contents.
        A::fence_release();
        // Relaxed: ordered after the slot by the fence above.
        A::store_relaxed(bottom_index, bottom.wrapping_add(1));
        Ok(())
    }

    /// Pops the newest item. Thieves race the owner only for the last item; [`Pop::LostRace`]
    /// says a thief won it.
    #[inline]
    pub fn pop(&self) -> Pop {
        let shared = &self.shared;
        // Found once, before the fence (see `push`).
        let (bottom_index, top_index) = (shared.bottom(), shared.top());
        // Relaxed: only this owner writes `bottom`.
        let bottom = A::load_relaxed(bottom_index);
        // Relaxed, a fast path for the empty deque (crossbeam-deque has the same): `top` only
        // grows and this read is never older than our own last read of it, so if even this
        // value reaches `bottom` the deque is empty now and stays so until we push. Saves the
        // full fence on every idle poll. (Written as `top - bottom >= 0`, one compare.)
        if signed_distance(bottom, A::load_relaxed(top_index)) >= 0 {
            return Pop::Empty;
        }

        // Step 1: claim the newest item by lowering `bottom`. From here on a thief that reads the
        // lowered `bottom` will not take index `claimed`.
        let claimed = bottom.wrapping_sub(1);
        // Relaxed: ordered before the load of `top` by the full fence below. A thief that reads
        // this lowered value still sees every item pushed so far, with no release here: the
        // release fence of the last `push` covers *every* later store of this thread, not only
        // the next one (a thief's acquire load reading any of them synchronises with that
        // fence), which is why the paper publishes with a fence and Relaxed stores of `bottom`.
        A::store_relaxed(bottom_index, claimed);

        // Step 2: the barrier. ORDERING: full fence, pairs with the full fence in `steal`
        // (between its load of `top` and its load of `bottom`). Both fences are in one total
        // order, and the side whose fence comes second sees the other side's write: either this
        // owner's load of `top` below sees a `top` at least as new as the one that thief read,
        // or that thief's load of `bottom` sees our lowered `bottom`. This is a store followed
        // by a load of another location, the one reordering that even x86 (and QEMU TCG on it)
        // performs: without the fence the owner can read an old `top`, believe two items
        // remain and take index `claimed` without a CAS while a thief, reading the old
        // `bottom`, takes the same index by CAS.
        #[cfg(not(deque_omit_pop_barrier))]
        A::fence_full();

        // Step 3: see what is left.
        // Relaxed: ordered after our store of `bottom` by the fence above. (Not cached as the
        // push limit: only an acquire read of `top` may be, see `push`.)
        let top = A::load_relaxed(top_index);
        let others_left = signed_distance(top, claimed);
        if others_left < 0 {
            // Thieves emptied the deque between the fast path and the fence. Restore `bottom`
            // to `top` (equal to the old `bottom`): the deque is empty. Relaxed: no item is
            // published by this store.
            A::store_relaxed(bottom_index, bottom);
            return Pop::Empty;
        }
        // Relaxed: the owner wrote this slot itself; no other thread writes slots.
        let item = shared.slot(claimed).load(Ordering::Relaxed);
        if others_left > 0 {
            // Older items remain between `top` and `claimed`: a thief, having to see `top <
            // bottom` after its fence, can reach at most index `claimed - 1`. The item is ours.
            return Pop::Item(item);
        }

        // Step 4: `claimed == top`, the last item. Thieves may be taking it too; whoever moves
        // `top` from `top` to `top + 1` first owns it.
        // ORDERING: inside `compare_exchange_top` (SeqCst on success): its release half pairs
        // with the Acquire loads of `top` in `push` and `steal`; only its atomicity matters for
        // this race. Its acquire half is what lets `push` use the value it wrote, below.
        let outcome = A::compare_exchange_top(top_index, top, top.wrapping_add(1));
        // Whatever the outcome, put `bottom` back to the old value: after a win (or a thief's
        // win) `top == bottom` and the deque is empty; after a store-exclusive failure `top` is
        // unchanged and the item is still there. Relaxed, as the store in step 1: the last
        // push's release fence already publishes the item to a thief that reads this value.
        A::store_relaxed(bottom_index, bottom);
        match outcome {
            Ok(()) => {
                // Our CAS wrote `top = bottom`, read (as an acquire) from the CAS before it,
                // which is in the release sequence of every earlier one: every thief's read of
                // a slot is now ordered before our next writes, and the whole ring is free.
                self.push_limit.set(bottom.wrapping_add(shared.capacity()));
                Pop::Item(item)
            }
            Err(CasFailure::ValueChanged { .. }) => Pop::LostRace,
            Err(CasFailure::StoreExclusiveFailed) => Pop::Retry,
        }
    }
}

impl<A: DequeAtomics> Stealer<A> {
    /// Takes the oldest item, or says why not.
    #[inline]
    pub fn steal(&self) -> Steal {
        let shared = &self.shared;
        // ORDERING: Acquire, pairs with the release half of the successful CAS on `top` that
        // wrote the value we read (a previous thief's, or the owner's last-item pop). That CAS
        // then happens-before our fence below, so if the owner's `pop` read a `top` older than
        // it, the owner's fence precedes ours in the fence order and we must see its lowered
        // `bottom`. Without it, two thieves and the owner can take one item twice: thief A
        // steals index i-1, the owner pops index i reading an old `top` (no CAS, it believes
        // index i-1 is still there), thief B reads A's `top` = i but an old `bottom` and
        // takes index i by CAS.
        let top = A::load_acquire(shared.top());
        // ORDERING: full fence, pairs with the full fence in `pop` (after its store of `bottom`,
        // before its load of `top`): one of the two fences is first in the total order, so
        // either we see the owner's lowered `bottom`, or the owner's load of `top` sees every
        // CAS that happened before our fence. It also keeps our load of `top` before our load
        // of `bottom`.
        A::fence_full();
        // ORDERING: Acquire, pairs with the release fence in `push`: seeing `bottom > top`
        // from a push means seeing the item that push wrote into slot `top` (or a later one).
        let bottom = A::load_acquire(shared.bottom());
        // (Written as `top - bottom >= 0`, one compare.)
        if signed_distance(bottom, top) >= 0 {
            return Steal::Empty;
        }
        // A speculative read: until the CAS succeeds the item is not ours, and the owner may be
        // refilling this slot after a wraparound (then the CAS below fails, because the owner
        // only refills it after seeing `top` move past it). Relaxed: the Acquire load of
        // `bottom` above already made the pushed value visible.
        let item = shared.slot(top).load(Ordering::Relaxed);
        // ORDERING: inside `compare_exchange_top` (SeqCst on success): its release half pairs
        // with the Acquire load of `top` in `push`, so our read of the slot above happens-before
        // the owner's next write to it; and with the Acquire load of `top` in the next `steal`.
        match A::compare_exchange_top(shared.top(), top, top.wrapping_add(1)) {
            Ok(()) => Steal::Success(item),
            Err(CasFailure::ValueChanged { .. } | CasFailure::StoreExclusiveFailed) => Steal::Retry,
        }
    }

    /// The most items the deque holds at once.
    pub fn capacity(&self) -> usize {
        self.shared.capacity() as usize
    }

    /// Items in the deque, as a hint (it may change before the caller acts on it).
    pub fn len(&self) -> usize {
        self.shared.approximate_len()
    }

    /// Whether the deque looked empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<A: DequeAtomics> Clone for Stealer<A> {
    fn clone(&self) -> Self {
        Stealer { shared: self.shared.clone() }
    }
}

impl<A: DequeAtomics> fmt::Debug for Worker<A> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("Worker").field("capacity", &self.capacity()).field("len", &self.len()).finish()
    }
}

impl<A: DequeAtomics> fmt::Debug for Stealer<A> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("Stealer").field("capacity", &self.capacity()).field("len", &self.len()).finish()
    }
}
