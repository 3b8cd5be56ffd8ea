//! `Portable`: the head word's operations on `core::sync::atomic` (loom's model under loom).
//!
//! Each is the one Rust atomic operation (or loop of them) with the ordering the trait contract
//! names. The compiler picks the instructions: on AArch64 without LSE, LDXR/STXR loops (the
//! compare-and-swap inside a compare-and-swap loop for `push`), with LSE, CAS/SWP.

#![forbid(unsafe_code)]

use super::primitives::{CLOSED, EMPTY, HeadAtomics, WAITING, is_node};
use super::shim::{AtomicUsize, Ordering};

/// The head word's operations as plain Rust atomics: runs anywhere, and is what loom checks.
#[derive(Debug)]
pub enum Portable {}

impl HeadAtomics for Portable {
    #[inline]
    fn push(head: &AtomicUsize, node: usize, next: &AtomicUsize) -> usize {
        // The first attempt guesses EMPTY, for which the link already holds the right value
        // (EMPTY: the trait's precondition), so an idle queue costs one compare-and-swap and no
        // load: the load would bring the word's line in shared only for the compare-and-swap
        // to upgrade it. (It also keeps every producer access to the word a read-modify-write,
        // which loom's partial-order reduction explores fully: it misses races of a plain load
        // followed by a read-modify-write on the same thread, tokio-rs/loom#166.)
        let mut old = EMPTY;
        loop {
            // ORDERING: Release on success publishes the node: its value (written before the
            // call) and its link happen before the consumer's Acquire in `take` or `close`,
            // which reads this node or a later push's (the later push's read-modify-write
            // continues this release sequence). Relaxed on failure: nothing was written, the
            // loop retries with the value found. Weak: a spurious failure only retries.
            match head.compare_exchange_weak(old, node, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return old,
                Err(CLOSED) => return CLOSED,
                Err(found) => {
                    old = found;
                    next.store(if found == WAITING { EMPTY } else { found }, Ordering::Relaxed);
                }
            }
        }
    }

    #[inline]
    fn take(head: &AtomicUsize) -> usize {
        // A Relaxed look first: an empty queue costs no write. Once the word holds a node only
        // the consumer (this thread) can make it hold anything but a node, so the swap below
        // still finds a node, the same list or a longer one.
        let seen = head.load(Ordering::Relaxed);
        if !is_node(seen) {
            return seen;
        }
        // ORDERING: Acquire pairs with the Release of every push in the list taken (see
        // `push`): the consumer reads their values and links next.
        head.swap(EMPTY, Ordering::Acquire)
    }

    #[inline]
    fn compare_exchange(head: &AtomicUsize, expected: usize, new: usize) -> Result<(), usize> {
        // ORDERING: Relaxed: the wait hand-shake is decided by the word's modification order
        // alone (atomicity of this and of the producers' read-modify-writes), and no data
        // travels with WAITING or EMPTY. A node found on failure is read only after a `take`,
        // whose Acquire orders that.
        head.compare_exchange(expected, new, Ordering::Relaxed, Ordering::Relaxed).map(|_| ())
    }

    #[inline]
    fn close(head: &AtomicUsize) -> usize {
        // ORDERING: Acquire as in `take`: the closer reads (and drops) the nodes it gets back.
        head.swap(CLOSED, Ordering::Acquire)
    }
}
