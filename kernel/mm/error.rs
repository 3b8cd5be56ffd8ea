//! Running out of memory, the one error every allocator of this layer gives: the frame pool,
//! the heap, the stacks and the process region's mappings. A file of its own so that the pool
//! and the heap, which grow into each other's RAM, do not import each other for it.

use core::fmt;

/// No free block (or frame) large enough for the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory {
    pub requested_bytes: usize,
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "out of memory: no free block of {} bytes", self.requested_bytes)
    }
}
