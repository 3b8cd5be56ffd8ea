//! `Portable`: the deque's atomic primitive on `core::sync::atomic` (loom's model under loom).
//!
//! This is the C11 version of Lê et al. transcribed: each trait method is the one Rust atomic
//! operation with the ordering the trait contract names. The compiler picks the instructions
//! (on AArch64 with LSE it may use CASAL for the compare-and-swap; without LSE, LDAXR/STLXR).
//! Under `cfg(loom)` the same code runs on loom's atomics so every interleaving and every
//! permitted stale read of the model can be explored.

#![forbid(unsafe_code)]

use super::primitives::{CasFailure, DequeAtomics};
use super::shim::{AtomicU64, Ordering, fence};

/// The deque's atomics as plain Rust atomics: runs anywhere, and is what loom checks.
#[derive(Debug)]
pub enum Portable {}

impl DequeAtomics for Portable {
    type Index = AtomicU64;

    #[inline]
    fn new_index(initial: u64) -> AtomicU64 {
        AtomicU64::new(initial)
    }

    #[inline]
    fn load_relaxed(index: &AtomicU64) -> u64 {
        index.load(Ordering::Relaxed)
    }

    #[inline]
    fn load_acquire(index: &AtomicU64) -> u64 {
        // ORDERING: Acquire as the trait promises; each call site in chase_lev.rs names the
        // release it pairs with (the CAS on `top`, or the release fence before `bottom`'s store).
        index.load(Ordering::Acquire)
    }

    #[inline]
    fn store_relaxed(index: &AtomicU64, value: u64) {
        index.store(value, Ordering::Relaxed);
    }

    #[inline]
    fn fence_release() {
        // ORDERING: release fence; its one caller, `push`, pairs it with the Acquire load of
        // `bottom` in `steal` (publishes the slot before the index that makes it visible).
        fence(Ordering::Release);
    }

    #[inline]
    fn fence_full() {
        // ORDERING: SeqCst fence; `pop` (after storing `bottom`) and `steal` (between loading
        // `top` and `bottom`) pair with each other through the single total order of SeqCst
        // fences, which closes the race for the last item.
        fence(Ordering::SeqCst);
    }

    #[inline]
    fn compare_exchange_top(top: &AtomicU64, expected: u64, new: u64) -> Result<(), CasFailure> {
        // ORDERING: SeqCst on success (its release half pairs with the Acquire loads of `top`
        // in `push` and `steal`); Relaxed on failure, where nothing was written or taken.
        // `compare_exchange` is the strong form: it never fails while the value is `expected`.
        top.compare_exchange(expected, new, Ordering::SeqCst, Ordering::Relaxed)
            .map(|_| ())
            .map_err(|observed| CasFailure::ValueChanged { observed })
    }
}
