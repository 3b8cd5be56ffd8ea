//! beamcore's memory layer: the frame pool, the kernel heap, the process region's mappings and
//! the process stacks (docs/memory.md). It sits on the hardware layer (the image layout, the
//! MMU, the locks) and names nothing above it: the heap's reserve grows with the processes
//! alive, which the scheduler's process table records here (`heap::set_live_processes`) rather
//! than the heap asking the scheduler.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

extern crate alloc;

use beamcore_hal::{arch, platform, sync};

/// The image layout and the process region's place (the hardware layer's, where the image's
/// own symbols are read); re-exported so memory callers find it here.
pub use beamcore_hal::layout;
/// Translation tables: built and walked in safe code (crates/page-tables); the kernel's tables
/// and the registers that use them are `arch::mmu`'s.
pub use beamcore_page_tables as paging;

mod error;
pub mod frames;
pub mod heap;
pub mod stacks;
pub mod vmap;

pub use error::OutOfMemory;
