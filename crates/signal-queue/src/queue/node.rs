//! The node a signal travels in: allocated by the caller so that a push never allocates. Its
//! own file because the layout (`next` first) is a contract with the hand-written push.

use alloc::boxed::Box;
use core::fmt;

use crate::primitives::EMPTY;
use crate::shim::AtomicUsize;

/// One queued signal. The caller allocates it (the kernel from its constant-time size-class
/// heap) so that a push never allocates and cannot fail for want of memory; the queue links
/// nodes through `next` and hands back the same box.
///
/// `repr(C)` with `next` first: the hand-written push stores the link at the node's own
/// address, with no offset to compute.
#[repr(C)]
pub struct Node<T> {
    /// The link: the node pushed before this one while on the producers' list, the next older
    /// one on the consumer's list, EMPTY outside any queue (so a push onto an empty queue need
    /// not write it). Atomic (Relaxed accesses only, plain LDR/STR) so that loom sees every
    /// read and write of it; what orders them is the head word.
    pub(super) next: AtomicUsize,
    /// The signal itself.
    pub value: T,
}

// The tags 1 and 2 in the head word must never be node addresses.
const _: () = assert!(align_of::<AtomicUsize>() >= 4);

impl<T> Node<T> {
    /// A node not yet in any queue.
    #[inline]
    pub fn new(value: T) -> Self {
        Node { next: AtomicUsize::new(EMPTY), value }
    }

    /// A boxed node, ready to push.
    #[inline]
    pub fn boxed(value: T) -> Box<Self> {
        Box::new(Node::new(value))
    }

    /// The signal, out of its node (freeing the node).
    #[inline]
    #[allow(clippy::boxed_local, reason = "takes the box the queue hands back, and frees it")]
    pub fn into_value(self: Box<Self>) -> T {
        self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for Node<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("Node").field("value", &self.value).finish_non_exhaustive()
    }
}
