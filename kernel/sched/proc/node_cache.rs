//! Each core's cache of free signal nodes: a send takes its node from the sending core's cache
//! and a receive gives the node it emptied to the receiving core's, so a message hop between
//! processes on one core reuses one block without the heap's lock (two lock round trips, about
//! 150 instructions, per message). At most [`CAPACITY`] nodes a core; past that, and when its
//! cache is empty, a core uses the heap as before.
//!
//! The blocks are ordinary heap blocks of a node's layout (made by the heap, given back to it
//! when the cache is full), so a node from the cache is a `Box` like any other and may be freed
//! by the heap wherever it ends (a closed queue drops its nodes that way).
//!
//! Nodes are left out of a process's net heap balance (`heap::TurnCount`, which a panic's
//! report gives as what the process held): a node belongs to the message in flight, allocated
//! by the sender and freed by the receiver, and counting it would charge every sender and
//! credit every receiver 48 bytes a message. So the cache counts nothing, and a node the heap
//! makes or takes back in a process's turn is counted back out ([`uncount_allocated`],
//! [`NodeCache::give`]).

use alloc::boxed::Box;
use core::ptr;

use super::process::{Message, Signal};
use beamcore_mm::heap::TurnCount;

/// Free nodes a core keeps at most (a few KiB of heap per core at most).
const CAPACITY: u32 = 32;
/// What the heap counts for a node.
const NODE_BYTES: i64 = size_of::<Signal>() as i64;

/// One core's free nodes, linked through their first word. Owner only (in `CoreLocal`).
pub(crate) struct NodeCache {
    /// The first free block's address (0: none); each block's first word holds the next one's.
    first: usize,
    len: u32,
}

impl NodeCache {
    pub(crate) const fn new() -> Self {
        NodeCache { first: 0, len: 0 }
    }

    /// A node holding `message`, from the cache; the message back if the cache is empty.
    #[inline(always)]
    pub(crate) fn take(&mut self, message: Message) -> Result<Box<Signal>, Message> {
        if self.first == 0 {
            return Err(message);
        }
        let node: *mut Signal = ptr::with_exposed_provenance_mut(self.first);
        // SAFETY: a cached block is a free heap block of a node's layout that only this cache
        // holds (`give`), and its first word holds the next block's address.
        self.first = unsafe { node.cast::<usize>().read() };
        self.len -= 1;
        // SAFETY: the block was allocated by the global allocator with `Signal`'s layout and is
        // free: writing a node there and owning it as a `Box` is what `Box::new` would do.
        unsafe {
            node.write(Signal::new(message));
            Ok(Box::from_raw(node))
        }
    }

    /// The message out of `node`; the node's block is kept for a later `take`, or freed when the
    /// cache is full.
    #[inline(always)]
    pub(crate) fn give(&mut self, heap_turn: &TurnCount, node: Box<Signal>) -> Message {
        if self.len >= CAPACITY {
            // The heap counts the free; a node is not counted (see the module's text).
            heap_turn.add(NODE_BYTES);
            return node.into_value();
        }
        let node = Box::into_raw(node);
        // SAFETY: `node` is a live node we own (from the box): its message is moved out once,
        // and the block is from now on raw memory of the cache, never dropped as a node.
        let message = unsafe { ptr::addr_of!((*node).value).read() };
        // SAFETY: the block is at least a word long and aligned for one (a node starts with
        // its link).
        unsafe { node.cast::<usize>().write(self.first) };
        self.first = node.expose_provenance();
        self.len += 1;
        message
    }
}

/// A node just made by the heap is not counted in the running process's heap balance (see the
/// module's text): the heap counted it.
#[inline(always)]
pub(crate) fn uncount_allocated(heap_turn: &TurnCount) {
    heap_turn.add(-NODE_BYTES);
}
