//! The seam between the deque's algorithm and the hardware: the few atomic operations it needs.
//!
//! The algorithm in [`super::chase_lev`] decides *which* ordering each access needs and says why
//! at the call site; an implementation of [`DequeAtomics`] decides *how* the machine provides
//! it. Two exist: [`super::Portable`] over `core::sync::atomic` (or loom's model of it under
//! `cfg(loom)`), and `Aarch64Asm`, written by hand in LDXR/STXR and DMB.

#![forbid(unsafe_code)]

use core::fmt;

/// Why the compare-and-swap on `top` did not install the new value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CasFailure {
    /// `top` no longer held the expected value: another thread advanced it first.
    ValueChanged {
        /// The value `top` held when the comparison failed.
        observed: u64,
    },
    /// `top` still held the expected value, but the store-exclusive failed on every one of a
    /// bounded number of attempts (the exclusive monitor was cleared each time: an interrupt, an
    /// eviction of the line, a store by another core to the same reservation granule). Nothing
    /// was written. Only a load-linked/store-conditional implementation reports this.
    StoreExclusiveFailed,
}

impl fmt::Display for CasFailure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CasFailure::ValueChanged { observed } => {
                write!(formatter, "top changed under the CAS (now {observed})")
            }
            CasFailure::StoreExclusiveFailed => {
                formatter.write_str("store-exclusive on top kept failing with the value unchanged")
            }
        }
    }
}

/// The atomic operations of the Chase-Lev deque on its two 64-bit indices, `top` and `bottom`.
///
/// Implemented by an uninhabited marker type and selected by type parameter, so the choice
/// costs nothing at run time. Contract, for every implementation:
///
/// - Every load, store and the compare-and-swap is single-copy atomic on the whole 64-bit
///   index, and all of them on one index are coherent (one modification order per index).
/// - `load_relaxed`/`store_relaxed` give no ordering with other locations.
/// - `load_acquire`: no later load or store of this thread is performed before it.
/// - `fence_release`: every earlier load and store of this thread is ordered before every later
///   store (C11 `atomic_thread_fence(memory_order_release)` or stronger).
/// - `fence_full`: a sequentially consistent fence (C11 `memory_order_seq_cst`): earlier loads
///   and stores are ordered before later loads and stores, *including* an earlier store before
///   a later load, and all such fences are totally ordered.
/// - `compare_exchange_top`: a sequentially consistent read-modify-write when it succeeds
///   (acquire and release, as C11 `compare_exchange_strong(seq_cst, relaxed)`); a failure writes
///   nothing and needs no ordering. It may fail with [`CasFailure::StoreExclusiveFailed`] only
///   when the value was still `expected`; it must never fail spuriously without saying so.
pub trait DequeAtomics: 'static {
    /// The 64-bit cell that holds `top` or `bottom`.
    type Index: Send + Sync;

    /// A new index cell holding `initial`.
    fn new_index(initial: u64) -> Self::Index;

    /// Loads the index with no ordering.
    fn load_relaxed(index: &Self::Index) -> u64;

    /// Loads the index with acquire ordering.
    fn load_acquire(index: &Self::Index) -> u64;

    /// Stores the index with no ordering.
    fn store_relaxed(index: &Self::Index, value: u64);

    /// A release fence: earlier loads and stores before later stores.
    fn fence_release();

    /// A full (sequentially consistent) fence: earlier loads and stores before later ones,
    /// store-to-load included.
    fn fence_full();

    /// Replaces `top` with `new` if it holds `expected`, as one sequentially consistent
    /// read-modify-write.
    fn compare_exchange_top(top: &Self::Index, expected: u64, new: u64) -> Result<(), CasFailure>;
}
