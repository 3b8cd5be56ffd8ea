//! The state the owner and the thieves of one deque share, and the handle each of them holds.
//!
//! [`SharedView`] is an `Arc` on the [`Shared`] state plus two copies taken at construction:
//! the address of the first slot and the index mask. With them a slot is one `AND` and one
//! indexed access away, with no bounds check and no load through the `Arc` to find the ring.
//! That needs one `unsafe` block ([`SharedView::slot`]), kept in this file so that the
//! algorithm in `chase_lev.rs` stays under `#![forbid(unsafe_code)]`.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ptr::NonNull;

use super::outcome::CapacityError;
use super::primitives::DequeAtomics;
use super::shim::{Arc, AtomicU64};

/// Keeps a value alone on its 64-byte cache line (Cortex-A72's line and exclusive reservation
/// granule), so the owner's stores to `bottom` neither bounce thieves' `top` line nor clear an
/// exclusive monitor armed on `top`.
#[repr(align(64))]
pub(super) struct CacheLine<T>(pub(super) T);

/// The state the owner and every thief share.
pub(super) struct Shared<A: DequeAtomics> {
    /// Index of the oldest item. Advanced only by a successful compare-and-swap (a thief's, or
    /// the owner's when it takes the last item); never decreases, and never written any other
    /// way, so every value it takes after 0 is written by a read-modify-write (which puts every
    /// later CAS in the release sequence of every earlier one).
    pub(super) top: CacheLine<A::Index>,
    /// Index one past the newest item. Written only by the owner; `top <= bottom` except during
    /// the owner's `pop`, which may leave it at `top - 1` until it restores it.
    pub(super) bottom: CacheLine<A::Index>,
    /// The ring: `capacity` slots, a power of two, never resized, moved or freed while a
    /// [`SharedView`] exists (each holds the `Arc`). Atomics accessed Relaxed: a thief reads a
    /// slot speculatively, before its CAS confirms the item is its own, while the owner may be
    /// refilling that very slot after a wraparound; such a read is a race the algorithm
    /// tolerates (the CAS then fails and the value is dropped), and as atomic accesses it is
    /// not undefined behaviour.
    slots: Box<[AtomicU64]>,
}

/// A handle on a deque's [`Shared`] state: what the `Worker` and every `Stealer` hold.
pub(super) struct SharedView<A: DequeAtomics> {
    /// Keeps the shared state, and so the ring `first_slot` points into, alive.
    shared: Arc<Shared<A>>,
    /// The address of slot 0, derived from the whole boxed slice (so it may reach every slot),
    /// taken once the state is in the `Arc`; the slice never moves after that.
    first_slot: NonNull<AtomicU64>,
    /// `capacity - 1` (capacity a power of two): `index & index_mask` is always a valid slot.
    index_mask: u64,
}

// SAFETY: a `SharedView` is an `Arc<Shared<A>>` plus a pointer into that same shared state and
// a plain number; it gives out only `&AtomicU64` and `&A::Index`, which are `Sync` (the trait
// requires `A::Index: Send + Sync`). Moving it to another thread is what moving the `Arc` is:
// sound because `Shared<A>` is `Send + Sync`.
unsafe impl<A: DequeAtomics> Send for SharedView<A> where Shared<A>: Send + Sync {}
// SAFETY: as above: `&SharedView` only reads the pointer and hands out shared references to
// atomics, which any number of threads may use at once.
unsafe impl<A: DequeAtomics> Sync for SharedView<A> where Shared<A>: Send + Sync {}

impl<A: DequeAtomics> SharedView<A> {
    /// New, empty shared state holding at most `capacity` items (a power of two), and the first
    /// handle on it. Out of line: construction is rare and allocates; inlined, it let the
    /// compiler keep the mask and a `Worker`'s limit as one constant pair in a NEON register
    /// in the benchmark's loops, an extra `FMOV` on every operation.
    #[inline(never)]
    pub(super) fn with_capacity(capacity: usize) -> Result<Self, CapacityError> {
        if !capacity.is_power_of_two() {
            return Err(CapacityError::NotPowerOfTwo { requested: capacity });
        }
        let slots: Vec<AtomicU64> = (0..capacity).map(|_| AtomicU64::new(0)).collect();
        let shared = Arc::new(Shared {
            top: CacheLine(A::new_index(0)),
            bottom: CacheLine(A::new_index(0)),
            slots: slots.into_boxed_slice(),
        });
        // Taken from the state already inside the `Arc`: the boxed ring is never moved again.
        // Made from the whole slice (not `&slots[0]`), so that its provenance covers every slot;
        // a power of two is at least 1, so there is a first slot.
        let first_slot = NonNull::from(&*shared.slots).cast::<AtomicU64>();
        Ok(SharedView { shared, first_slot, index_mask: capacity as u64 - 1 })
    }

    /// The index of the oldest item.
    #[inline(always)]
    pub(super) fn top(&self) -> &A::Index {
        &self.shared.top.0
    }

    /// One past the index of the newest item.
    #[inline(always)]
    pub(super) fn bottom(&self) -> &A::Index {
        &self.shared.bottom.0
    }

    /// The slot that holds item `index` (any `u64`: it is masked here).
    #[inline(always)]
    pub(super) fn slot(&self, index: u64) -> &AtomicU64 {
        let position = (index & self.index_mask) as usize;
        debug_assert!(position < self.shared.slots.len());
        // SAFETY: `first_slot` points to slot 0 of `self.shared.slots`, a boxed slice of
        // `index_mask + 1` atomics that `self.shared` keeps alive and never moves or resizes
        // (the field is private to this file and only read), and it was derived from the whole
        // slice, so it may reach every slot. `position <= index_mask`, so the offset stays
        // inside that slice, and the resulting reference is a shared one to an atomic, which may
        // alias any other; its lifetime is tied to `&self`, which keeps the `Arc` alive.
        unsafe { self.first_slot.add(position).as_ref() }
    }

    /// The most items the deque holds at once.
    #[inline(always)]
    pub(super) fn capacity(&self) -> u64 {
        self.index_mask + 1
    }

    /// Items between `top` and `bottom` by two Relaxed loads: exact for the owner between its
    /// own operations, a hint for anyone else (the two loads are not one snapshot).
    #[inline(always)]
    pub(super) fn approximate_len(&self) -> usize {
        let bottom = A::load_relaxed(self.bottom());
        let top = A::load_relaxed(self.top());
        let len = signed_distance(top, bottom).max(0).min(self.capacity() as i64);
        len as usize
    }
}

impl<A: DequeAtomics> Clone for SharedView<A> {
    fn clone(&self) -> Self {
        SharedView { shared: Arc::clone(&self.shared), first_slot: self.first_slot, index_mask: self.index_mask }
    }
}

/// `to - from` for indices that may transiently cross (`bottom` one below `top`), read as
/// signed.
#[inline(always)]
pub(super) fn signed_distance(from: u64, to: u64) -> i64 {
    to.wrapping_sub(from) as i64
}
