//! Process stacks, each with an unmapped guard page below it, from a region of RAM mapped with
//! 4 KiB pages so a guard page can be unmapped (and remapped on free) without touching any
//! other mapping.
//!
//! ```text
//!   low addresses                                            high addresses
//!   | guard page (unmapped) | stack ........................ | <- top (initial sp)
//! ```
//! An overflow runs into the guard page and faults; the fault handler recognises the address
//! and ends the process with reason "stack overflow".

use core::alloc::Layout;
use core::ops::Range;
use core::ptr::NonNull;

use linked_list_allocator::Heap;

use super::heap::OutOfMemory;
use super::layout::PAGE_BYTES;
use crate::arch::mmu;
use crate::sync::IrqSpinLock;

/// The smallest stack a process may ask for (the guard page comes on top).
pub const MIN_STACK_BYTES: usize = PAGE_BYTES;
/// The largest stack a process may ask for.
pub const MAX_STACK_BYTES: usize = 8 << 20;

static POOL: IrqSpinLock<Heap> = IrqSpinLock::new(Heap::empty());

/// A process stack and its guard page. Freed with [`free`], never dropped silently.
#[derive(Debug)]
pub struct Stack {
    guard_start: usize,
    /// Usable bytes above the guard page.
    bytes: usize,
}

impl Stack {
    /// The initial stack pointer (16-byte aligned, one past the highest byte).
    pub fn top(&self) -> usize {
        self.guard_start + PAGE_BYTES + self.bytes
    }

    /// The lowest usable address.
    pub fn bottom(&self) -> usize {
        self.guard_start + PAGE_BYTES
    }

    /// The guard page's addresses.
    pub fn guard(&self) -> Range<usize> {
        self.guard_start..self.guard_start + PAGE_BYTES
    }
}

/// Hands the page-granular region `[start, start + bytes)` to the pool. Boot core, once.
///
/// # Safety
/// The region is RAM, mapped read-write with 4 KiB pages by the MMU set-up, used by nothing
/// else.
pub unsafe fn init(start: usize, bytes: usize) {
    // SAFETY: forwarded contract.
    unsafe { POOL.lock().init(start as *mut u8, bytes) };
}

fn layout(total_bytes: usize) -> Layout {
    Layout::from_size_align(total_bytes, PAGE_BYTES).expect("page-aligned stack layout")
}

/// A stack of at least `bytes` usable bytes (rounded up to whole pages) with its guard page
/// unmapped.
pub fn allocate(bytes: usize) -> Result<Stack, OutOfMemory> {
    let usable = bytes.clamp(MIN_STACK_BYTES, MAX_STACK_BYTES).next_multiple_of(PAGE_BYTES);
    let total = usable + PAGE_BYTES;
    let memory = POOL.lock().allocate_first_fit(layout(total)).map_err(|()| OutOfMemory { requested_bytes: total })?;
    let guard_start = memory.as_ptr() as usize;
    let unmapped = mmu::set_page_mapped(guard_start, false);
    assert!(unmapped, "stack pool memory at {guard_start:#x} is not page-granular");
    Ok(Stack { guard_start, bytes: usable })
}

/// Returns a stack to the pool, its guard page mapped again.
pub fn free(stack: Stack) {
    mmu::set_page_mapped(stack.guard_start, true);
    let memory = NonNull::new(stack.guard_start as *mut u8).expect("stacks are never at address 0");
    // SAFETY: `memory` came from `allocate_first_fit` with this layout and is freed once
    // (`Stack` is not `Clone` and `free` consumes it).
    unsafe { POOL.lock().deallocate(memory, layout(stack.bytes + PAGE_BYTES)) };
}

/// Bytes of the pool in use and free.
pub fn usage() -> (usize, usize) {
    let pool = POOL.lock();
    (pool.used(), pool.free())
}
