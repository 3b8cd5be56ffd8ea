//! Memory management: the image layout, translation tables, the frame pool, the kernel heap,
//! the process region's mappings and the process stacks (docs/memory.md).

pub mod layout;
pub mod paging;

#[cfg(target_os = "none")]
pub mod frames;
#[cfg(target_os = "none")]
pub mod heap;
#[cfg(target_os = "none")]
pub mod stacks;
#[cfg(target_os = "none")]
pub mod vmap;
