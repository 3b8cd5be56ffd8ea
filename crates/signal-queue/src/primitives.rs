//! The seam between the queue's algorithm and the hardware: the four operations on the head
//! word.
//!
//! [`super::queue`] decides what each operation must guarantee; an implementation of
//! [`HeadAtomics`] decides how the machine provides it. Two exist: [`super::Portable`] over
//! `core::sync::atomic` (loom's model of it under `cfg(loom)`), and `Aarch64Asm`, written by
//! hand in LDXR/STXR. The loom tests add deliberately weakened ones to show the models catch
//! a missing release or a non-atomic wait.

#![forbid(unsafe_code)]

use super::shim::AtomicUsize;

/// The head word holds no node and the consumer is not blocked.
pub const EMPTY: usize = 0;
/// The consumer is blocked on an empty queue and no producer has claimed its wake-up yet.
pub const WAITING: usize = 1;
/// The queue is closed (its process ended): pushes are refused.
pub const CLOSED: usize = 2;

/// Whether a head word is the address of a node rather than one of the three tags. Nodes are
/// at least 4-aligned (they start with a `usize`; checked at compile time in `queue`), so no
/// node has an address of 0, 1 or 2.
#[inline]
pub const fn is_node(word: usize) -> bool {
    word > CLOSED
}

/// The atomic operations on the head word. Implemented by an uninhabited marker type chosen by
/// type parameter, so the choice costs nothing at run time. Contract, for every
/// implementation (all operations act on the one word, so they share its modification order,
/// and every read-modify-write is atomic in it: no store to the word comes between its read
/// and its write):
///
/// - `push`: called with the link `next` holding [`EMPTY`]. One read-modify-write that reads
///   the word `old`; if `old` is [`CLOSED`] it writes nothing to the word (the link may have
///   been written); otherwise the link holds `(old == WAITING ? EMPTY : old)` and the word is
///   replaced with `node`, with *release* ordering (the link and every earlier access of the
///   thread happen before any acquire read of `node` from the word, or of a later value
///   written by read-modify-writes). Returns `old`.
/// - `take`: if the word holds a node, replaces it with [`EMPTY`] with *acquire* ordering and
///   returns the node; otherwise returns the tag and writes nothing.
/// - `compare_exchange`: replaces `expected` with `new` (strong: never fails while the value is
///   `expected`); no ordering. `Err` carries the value found.
/// - `close`: replaces the word with [`CLOSED`] whatever it holds, with *acquire* ordering;
///   returns the old value.
pub trait HeadAtomics: 'static {
    /// Pushes `node` (an address, [`is_node`]) whose link is `next`; see the trait contract.
    fn push(head: &AtomicUsize, node: usize, next: &AtomicUsize) -> usize;

    /// Takes the whole list of nodes, leaving [`EMPTY`]; a tag is returned untouched.
    fn take(head: &AtomicUsize) -> usize;

    /// Replaces `expected` by `new`; `Err(found)` when the word held something else.
    fn compare_exchange(head: &AtomicUsize, expected: usize, new: usize) -> Result<(), usize>;

    /// Replaces the word by [`CLOSED`], returning what it held.
    fn close(head: &AtomicUsize) -> usize;
}
