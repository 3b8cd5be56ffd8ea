//! The kernel heap: linked_list_allocator over the RAM after the image, as the global
//! allocator, plus fallible allocation for callers that can handle running out.
//!
//! The heap starts small and grows upward, a megabyte or more at a time, into RAM no frame has
//! been taken from (`frames::grow_heap`; docs/memory.md): heap and process memory share one
//! pool. The allocator lock masks IRQs (an interrupt handler may allocate). Allocation failure
//! in the global allocator reaches Rust's `alloc` error path (a panic with the size, never a
//! hang); code that must survive exhaustion uses [`try_box`] or `Vec::try_reserve`, which
//! return [`OutOfMemory`] instead.
//!
//! **The kernel's reserve.** The kernel's own structures (run queues, inboxes, timeouts) grow
//! with the number of processes and cannot fail gracefully. So what programs ask for through
//! the fallible calls ([`try_box`], [`try_allocate`], a mailbox growing in `send`), and each
//! spawn, is refused while the heap could supply less than [`kernel_reserve`] afterwards:
//! 256 KiB plus 64 bytes per live process, room for every process to sit in a queue that has
//! to double.

use alloc::boxed::Box;
use core::alloc::{GlobalAlloc, Layout};
use core::fmt;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use linked_list_allocator::Heap;

use crate::mm::frames;
use crate::mm::layout::{MAX_CORES, PAGE_BYTES};
use crate::sync::IrqSpinLock;

/// Heap bytes kept for the kernel whatever the load, and per live process (see the module
/// documentation).
const RESERVE_BASE_BYTES: usize = 256 << 10;
const RESERVE_PER_PROCESS_BYTES: usize = 64;
/// The heap grows by at least this much at a time.
const GROW_MIN_BYTES: usize = 1 << 20;

/// Bytes allocated, and the heap's size (mirrors of the allocator's figures, kept under its
/// lock, readable without it).
static USED: AtomicUsize = AtomicUsize::new(0);
static SIZE: AtomicUsize = AtomicUsize::new(0);

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

/// Allocates `layout` from `heap`, growing it into free RAM when no block fits.
fn allocate_growing(heap: &mut Heap, layout: Layout) -> Option<NonNull<u8>> {
    let block = match heap.allocate_first_fit(layout) {
        Ok(block) => block,
        Err(()) => {
            let wanted = (layout.size() + layout.align() + 64).max(GROW_MIN_BYTES).next_multiple_of(PAGE_BYTES);
            // The frame pool's lock must not be taken on a process stack (a stack-growth fault
            // inside it would need that lock again): ask on the kernel stack.
            let start = crate::arch::context::on_kernel_stack(|| frames::grow_heap(wanted))?;
            debug_assert_eq!(start, heap.top() as usize, "the heap grows exactly at its top");
            // SAFETY: `grow_heap` gave `[start, start + wanted)`, RAM directly above the heap's
            // top, identity-mapped read-write, now the heap's alone.
            unsafe { heap.extend(wanted) };
            SIZE.store(heap.size(), Ordering::Relaxed);
            heap.allocate_first_fit(layout).ok()?
        }
    };
    count(layout.size() as i64);
    USED.store(heap.used(), Ordering::Relaxed);
    Some(block)
}

// SAFETY: linked_list_allocator's `Heap` returns blocks that fit the layout and do not
// overlap; the lock serialises every use of it across cores and interrupt handlers.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut heap = self.0.lock();
        allocate_growing(&mut heap, layout).map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let mut heap = self.0.lock();
        // SAFETY: `ptr` came from `alloc` with this `layout` (GlobalAlloc contract).
        unsafe { heap.deallocate(NonNull::new_unchecked(ptr), layout) };
        count(-(layout.size() as i64));
        USED.store(heap.used(), Ordering::Relaxed);
    }
}

/// Hands `[start, start + bytes)` to the heap: the bottom of the RAM `frames::init` was given,
/// the heap's first stretch. Boot core, once, after `frames::init`.
///
/// # Safety
/// The range is RAM, mapped read-write, used by nothing else, now or later.
pub unsafe fn init(start: usize, bytes: usize) {
    let mut heap = HEAP.0.lock();
    // SAFETY: forwarded contract.
    unsafe { heap.init(start as *mut u8, bytes) };
    SIZE.store(heap.size(), Ordering::Relaxed);
}

/// Bytes in use, and bytes the heap can still supply (free in it, plus what it can grow by).
pub fn usage() -> (usize, usize) {
    (USED.load(Ordering::Relaxed), headroom())
}

/// Bytes the heap can still supply: free inside it and what it can grow by (fragmentation
/// aside: one block of that size need not be available).
pub fn headroom() -> usize {
    SIZE.load(Ordering::Relaxed).saturating_sub(USED.load(Ordering::Relaxed)) + frames::heap_room_bytes()
}

/// Heap bytes the kernel keeps for itself with `live_processes` processes alive.
pub fn kernel_reserve(live_processes: usize) -> usize {
    RESERVE_BASE_BYTES + RESERVE_PER_PROCESS_BYTES * live_processes
}

/// Whether `bytes` more can be handed to a program without cutting into the kernel's reserve
/// for `live_processes` processes (one more when a spawn asks).
pub fn within_reserve(bytes: usize, live_processes: usize) -> bool {
    headroom().saturating_sub(bytes) >= kernel_reserve(live_processes)
}

/// Allocates `layout`, or says it cannot (also when the allocation would cut into the
/// kernel's reserve).
pub fn try_allocate(layout: Layout) -> Result<NonNull<u8>, OutOfMemory> {
    let refused = OutOfMemory { requested_bytes: layout.size() };
    if !within_reserve(layout.size(), crate::sched::process_count()) {
        return Err(refused);
    }
    let mut heap = HEAP.0.lock();
    allocate_growing(&mut heap, layout).ok_or(refused)
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
