//! The kernel heap: linked_list_allocator over the RAM after the image, as the global
//! allocator, plus fallible allocation for callers that can handle running out.
//!
//! The allocator lock masks IRQs (an interrupt handler may allocate). Allocation failure in
//! the global allocator reaches Rust's `alloc` error path (a panic with the size, never a
//! hang); code that must survive exhaustion uses [`try_box`] or `Vec::try_reserve`, which
//! return [`OutOfMemory`] instead.

use alloc::boxed::Box;
use core::alloc::{GlobalAlloc, Layout};
use core::fmt;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicI64, Ordering};

use linked_list_allocator::Heap;

use crate::mm::layout::MAX_CORES;
use crate::sync::IrqSpinLock;

/// The heap has no free block large enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory {
    pub requested_bytes: usize,
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "out of memory: no free block of {} bytes", self.requested_bytes)
    }
}

struct KernelHeap(IrqSpinLock<Heap>);

/// Per core: bytes allocated minus bytes freed on that core. The scheduler reads it before and
/// after each turn of a process, so a process's own net allocation is known (and reported if
/// it panics, since a panic does not unwind and cannot free what it held).
static NET_BYTES: [AtomicI64; MAX_CORES] = [const { AtomicI64::new(0) }; MAX_CORES];

/// Bytes allocated minus bytes freed on `core` so far.
#[inline]
pub fn net_bytes_on(core: usize) -> i64 {
    NET_BYTES[core].load(Ordering::Relaxed)
}

/// Counts `delta` bytes on this core. Only this core writes its counter (with the heap lock,
/// which masks IRQs, held): a plain load and store suffices.
#[inline]
fn count(delta: i64) {
    if let Some(counter) = NET_BYTES.get(crate::arch::cpu::core_id()) {
        counter.store(counter.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    }
}

#[global_allocator]
static HEAP: KernelHeap = KernelHeap(IrqSpinLock::new(Heap::empty()));

// SAFETY: linked_list_allocator's `Heap` returns blocks that fit the layout and do not
// overlap; the lock serialises every use of it across cores and interrupt handlers.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut heap = self.0.lock();
        match heap.allocate_first_fit(layout) {
            Ok(block) => {
                count(layout.size() as i64);
                block.as_ptr()
            }
            Err(()) => core::ptr::null_mut(),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let mut heap = self.0.lock();
        // SAFETY: `ptr` came from `alloc` with this `layout` (GlobalAlloc contract).
        unsafe { heap.deallocate(NonNull::new_unchecked(ptr), layout) };
        count(-(layout.size() as i64));
    }
}

/// Hands `[start, start + bytes)` to the heap. Boot core, once.
///
/// # Safety
/// The range is RAM, mapped read-write, used by nothing else, now or later.
pub unsafe fn init(start: usize, bytes: usize) {
    // SAFETY: forwarded contract.
    unsafe { HEAP.0.lock().init(start as *mut u8, bytes) };
}

/// Bytes in use and bytes free.
pub fn usage() -> (usize, usize) {
    let heap = HEAP.0.lock();
    (heap.used(), heap.free())
}

/// Allocates `layout`, or says it cannot.
pub fn try_allocate(layout: Layout) -> Result<NonNull<u8>, OutOfMemory> {
    let mut heap = HEAP.0.lock();
    let block = heap.allocate_first_fit(layout).map_err(|()| OutOfMemory { requested_bytes: layout.size() })?;
    count(layout.size() as i64);
    Ok(block)
}

/// Moves `value` to the heap, or gives an error instead of the allocation-failure panic.
pub fn try_box<T>(value: T) -> Result<Box<T>, OutOfMemory> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::new(value));
    }
    let memory = try_allocate(layout)?.cast::<T>();
    // SAFETY: `memory` is a fresh allocation of `T`'s layout from the global allocator's heap,
    // so writing `value` there and handing it to `Box` (which frees it with the same layout
    // through the same allocator) is sound.
    unsafe {
        memory.as_ptr().write(value);
        Ok(Box::from_raw(memory.as_ptr()))
    }
}
