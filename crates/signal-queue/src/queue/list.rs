//! The consumer's side of the nodes: a FIFO of owned nodes behind raw pointers (reversing a
//! taken producers' list onto it, unlinking, scanning), and [`NodeList`], what a close hands
//! back. Apart from the queue because every pointer-chasing `unsafe` block of the crate is
//! here, each with the one ownership argument it rests on.

use alloc::boxed::Box;
use core::fmt;
use core::ptr;

use super::Node;
use crate::primitives::EMPTY;
use crate::shim::Ordering;

/// A FIFO of owned nodes linked through `next`. Holds raw pointers, so every method is
/// `unsafe`: the caller must own every node in it exclusively.
pub(super) struct List<T> {
    pub(super) first: *mut Node<T>,
    pub(super) last: *mut Node<T>,
    /// 32 bits, as `removals`, so that the queue fits a process control block's budget: a list
    /// of 2^32 nodes of at least 16 bytes would not fit in a 64 GiB address space anyway.
    pub(super) len: u32,
    /// Nodes unlinked so far, wrapping (the consumer's: a mark taken at another count may
    /// name a freed node). Here rather than beside the list, where it would cost 8 bytes.
    pub(super) removals: u32,
}

pub(super) fn node_at<T>(word: usize) -> *mut Node<T> {
    ptr::with_exposed_provenance_mut(word)
}

impl<T> List<T> {
    pub(super) const fn new() -> Self {
        List { first: ptr::null_mut(), last: ptr::null_mut(), len: 0, removals: 0 }
    }

    /// Appends a producers' list (newest first, ending in a 0 link), oldest first.
    ///
    /// # Safety
    ///
    /// `newest` must be the head of a list of nodes pushed by `SignalQueue::push` and now owned
    /// by the caller alone (taken from the word by an acquire `take` or `close`).
    pub(super) unsafe fn append_reversed(&mut self, newest: usize) {
        let batch_last = node_at::<T>(newest);
        let mut reversed: *mut Node<T> = ptr::null_mut();
        let mut node = batch_last;
        let mut count: u32 = 0;
        while !node.is_null() {
            // SAFETY: `node` is in the caller's list (the first from `newest`, then each link),
            // a live node the caller owns; the acquire that handed it over ordered its push's
            // stores before this read.
            let node_ref = unsafe { &*node };
            let older = node_ref.next.load(Ordering::Relaxed);
            node_ref.next.store(reversed.expose_provenance(), Ordering::Relaxed);
            reversed = node;
            node = node_at(older);
            count += 1;
        }
        if reversed.is_null() {
            return;
        }
        if self.last.is_null() {
            self.first = reversed;
        } else {
            // SAFETY: `last` is a node of this list, owned by the caller.
            unsafe { &*self.last }.next.store(reversed.expose_provenance(), Ordering::Relaxed);
        }
        self.last = batch_last;
        self.len += count;
    }

    /// Unlinks the node after `previous` (the first node when `previous` is null).
    ///
    /// # Safety
    ///
    /// The caller owns the list's nodes; `previous` is null or a node of this list that has a
    /// successor.
    pub(super) unsafe fn unlink_after(&mut self, previous: *mut Node<T>) -> Box<Node<T>> {
        let node = if previous.is_null() {
            self.first
        } else {
            // SAFETY: `previous` is a live node of this list (the caller's contract).
            node_at(unsafe { &*previous }.next.load(Ordering::Relaxed))
        };
        // SAFETY: `node` is the first node or `previous`'s successor, so a live node of this
        // list; unlinked below, it is owned by nothing else, and it came from `Box::into_raw`
        // in `push`, so it is rebuilt into that box once.
        let node = unsafe { Box::from_raw(node) };
        let following = node.next.load(Ordering::Relaxed);
        if previous.is_null() {
            self.first = node_at(following);
        } else {
            // SAFETY: as above.
            unsafe { &*previous }.next.store(following, Ordering::Relaxed);
        }
        if following == EMPTY {
            self.last = previous;
        }
        self.len -= 1;
        self.removals = self.removals.wrapping_add(1);
        node.next.store(EMPTY, Ordering::Relaxed);
        node
    }

    /// Finds the first node after `start` (from the first when null) whose value matches;
    /// returns its predecessor (null: the first node), or `Err(last node scanned)`.
    ///
    /// # Safety
    ///
    /// The caller owns the list's nodes; `start` is null or a node of this list.
    pub(super) unsafe fn find_after(
        &self,
        start: *mut Node<T>,
        matches: &mut impl FnMut(&T) -> bool,
    ) -> Result<*mut Node<T>, *mut Node<T>> {
        let mut previous = start;
        let mut node =
            // SAFETY: `start` is a live node of this list when not null.
            if start.is_null() { self.first } else { node_at(unsafe { &*start }.next.load(Ordering::Relaxed)) };
        while !node.is_null() {
            // SAFETY: `node` is reached from the list's first node or a member's link: a live
            // node of this list.
            let node_ref = unsafe { &*node };
            if matches(&node_ref.value) {
                return Ok(previous);
            }
            previous = node;
            node = node_at(node_ref.next.load(Ordering::Relaxed));
        }
        Err(previous)
    }
}

/// Nodes handed back by [`SignalQueue::close`], oldest first. Dropping it drops the rest.
///
/// [`SignalQueue::close`]: super::SignalQueue::close
pub struct NodeList<T> {
    pub(super) list: List<T>,
}

impl<T> NodeList<T> {
    /// How many nodes are left.
    pub fn len(&self) -> usize {
        self.list.len as usize
    }

    /// Whether none are left.
    pub fn is_empty(&self) -> bool {
        self.list.len == 0
    }
}

impl<T> Iterator for NodeList<T> {
    type Item = Box<Node<T>>;

    fn next(&mut self) -> Option<Box<Node<T>>> {
        if self.list.first.is_null() {
            return None;
        }
        // SAFETY: a `NodeList` owns its nodes (moved out of a closed queue), and it is not
        // empty.
        Some(unsafe { self.list.unlink_after(ptr::null_mut()) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.list.len as usize, Some(self.list.len as usize))
    }
}

impl<T> ExactSizeIterator for NodeList<T> {}

impl<T> Drop for NodeList<T> {
    fn drop(&mut self) {
        self.for_each(drop);
    }
}

// SAFETY: a `NodeList` owns its nodes as `Box`es would; sending it sends the `T`s.
unsafe impl<T: Send> Send for NodeList<T> {}
// SAFETY: `&NodeList` gives access to nothing but its length.
unsafe impl<T: Sync> Sync for NodeList<T> {}

impl<T> fmt::Debug for NodeList<T> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("NodeList").field("len", &self.list.len).finish()
    }
}
