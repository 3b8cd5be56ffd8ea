//! Which process slots are made: the table makes them a chunk at a time (the control blocks of
//! one page, `table::make_chunk`), on whichever core needs one, so chunks finish in any order
//! and a bit per chunk, not a count of slots, says which are.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use beamcore_hal::ids::Slot;
use beamcore_mm::layout::MAX_PROCESSES;

/// Slots a chunk holds: the control blocks of one page (4 KiB of 256-byte blocks, which
/// `process` asserts), which one core makes together (`table::make_chunk`).
pub(crate) const CHUNK_SLOTS: u32 = 16;
const CHUNKS: usize = MAX_PROCESSES / CHUNK_SLOTS as usize;
/// Slots reserved for making so far, a whole number of chunks: the next chunk begins here.
pub(crate) static SLOTS_RESERVED: AtomicU32 = AtomicU32::new(0);
/// A bit per chunk: its page is mapped and its control blocks initialised.
static CHUNKS_MADE: [AtomicU64; CHUNKS.div_ceil(64)] = [const { AtomicU64::new(0) }; CHUNKS.div_ceil(64)];

/// The bit of the chunk that holds slot `index`.
pub(crate) struct ChunkBit {
    word: usize,
    bit: u64,
}

/// The bit of the chunk that holds slot `index` (below `MAX_PROCESSES`).
pub(crate) fn chunk_made(index: u32) -> ChunkBit {
    let chunk = (index / CHUNK_SLOTS) as usize;
    ChunkBit { word: chunk / 64, bit: 1 << (chunk % 64) }
}

impl ChunkBit {
    /// The chunk's blocks are initialised and its page mapped: set once, by the core that made
    /// it, after both.
    pub(crate) fn publish(&self) {
        // ORDERING: Release pairs with the Acquire in `is_made`: whoever sees the bit sees the
        // blocks' initialisation (and the mapping, which `vmap::publish` made visible first).
        CHUNKS_MADE[self.word].fetch_or(self.bit, Ordering::Release);
    }

    fn is_made(&self, ordering: Ordering) -> bool {
        CHUNKS_MADE[self.word].load(ordering) & self.bit != 0
    }
}

/// Whether slot `index` has a mapped, initialised control block.
pub(crate) fn made(index: Slot, ordering: Ordering) -> bool {
    index.index() < MAX_PROCESSES && chunk_made(index.get()).is_made(ordering)
}
