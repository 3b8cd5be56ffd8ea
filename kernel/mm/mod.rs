//! Memory management: the image layout, translation tables and the kernel heap.

pub mod layout;
pub mod paging;

#[cfg(target_os = "none")]
pub mod heap;
#[cfg(target_os = "none")]
pub mod stack_pool;
