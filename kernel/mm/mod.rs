//! Memory management: the image layout, translation tables, the frame pool, the kernel heap,
//! the process region's mappings and the process stacks (docs/memory.md).

pub mod layout;
/// Translation tables: built and walked in safe code (crates/page-tables); the kernel's tables
/// and the registers that use them are `arch::mmu`'s.
pub use beamcore_page_tables as paging;

pub mod frames;
pub mod heap;
pub mod stacks;
pub mod vmap;
