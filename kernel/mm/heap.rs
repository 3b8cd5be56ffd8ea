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
//! the fallible calls ([`try_box`], [`try_allocate`], a message's node in `send`), and each
//! spawn, is refused while the heap could supply less than [`kernel_reserve`] afterwards:
//! 256 KiB plus 64 bytes per live process, room for every process to sit in a queue that has
//! to double.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::alloc::{GlobalAlloc, Layout};

use core::ptr::NonNull;
use core::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use linked_list_allocator::Heap;

use crate::frames;
use crate::layout::{MAX_CORES, PAGE_BYTES};
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

pub use crate::error::OutOfMemory;

/// Processes alive, for whom the kernel keeps its reserve ([`kernel_reserve`]). The process
/// table stores it at every spawn and end ([`set_live_processes`]); every fallible allocation
/// reads it. It is kept here, in the layer below the scheduler, so that the heap never calls up
/// for it. Relaxed: a count read for a bound, stored under the table's lock; an allocation that
/// races a spawn sees the count before or after it, either of which is a reserve that held a
/// moment ago.
static LIVE_PROCESSES: AtomicUsize = AtomicUsize::new(0);

/// Records that `live` processes are alive (the process table, under its lock).
#[inline]
pub fn set_live_processes(live: usize) {
    LIVE_PROCESSES.store(live, Ordering::Relaxed);
}

/// Processes alive, as the process table last recorded.
#[inline]
pub fn live_processes() -> usize {
    LIVE_PROCESSES.load(Ordering::Relaxed)
}

struct KernelHeap(IrqSpinLock<HeapState>);

/// Small blocks are recycled by size class: a freed block of up to [`SMALL_MAX_BYTES`] (aligned
/// to at most [`CLASS_GRANULE`]) waits on the free list of its class, threaded through the freed
/// blocks themselves, and is handed out again in constant time; the linked-list allocator sees a
/// class's block only when it is first made (at the class's size) or when the lists are flushed
/// back to it under pressure. Its own allocate and free walk a list of holes: with hundreds of
/// thousands of processes each freeing a 128-byte mailbox in no particular order, ending them
/// spent most of its time there, under this one lock.
struct HeapState {
    heap: Heap,
    /// Per class: the first free block (0: none); each free block's first word holds the next.
    free: [usize; CLASSES],
    /// Bytes in the class lists (free to reuse, counted in use by `heap`).
    cached: usize,
}

/// Class sizes are multiples of this (and blocks are aligned to it).
const CLASS_GRANULE: usize = 16;
/// The largest block kept by class.
const SMALL_MAX_BYTES: usize = 256;
const CLASSES: usize = SMALL_MAX_BYTES / CLASS_GRANULE;

/// The class of `layout`, if it is small.
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout.size();
    (size > 0 && size <= SMALL_MAX_BYTES && layout.align() <= CLASS_GRANULE).then(|| size.div_ceil(CLASS_GRANULE) - 1)
}

/// What a block of class `class` is allocated (and freed) as.
fn class_layout(class: usize) -> Layout {
    Layout::from_size_align((class + 1) * CLASS_GRANULE, CLASS_GRANULE).expect("class layouts are valid")
}

/// Per core: bytes allocated minus bytes freed on that core since the scheduler last started a
/// count there ([`TurnCount::start`]), at the start of each process's turn; at the turn's end it adds
/// [`TurnCount::counted`] to the process's own figure, so a process's net allocation is known (and
/// reported if it panics, since a panic does not unwind and cannot free what it held). A reset
/// rather than a mark to subtract: a store at the turn's start and no subtraction at its end.
static TURN_BYTES: [TurnCount; MAX_CORES] = [const { TurnCount(AtomicI64::new(0)) }; MAX_CORES];

/// One core's heap balance since its last [`start`](TurnCount::start).
pub struct TurnCount(AtomicI64);

impl TurnCount {
    /// Starts counting from zero. Only the owning core calls it, with IRQs masked.
    #[inline(always)]
    pub fn start(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// Bytes allocated minus bytes freed on the core since its last [`start`](Self::start).
    #[inline(always)]
    pub fn counted(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts `delta` bytes handed out (or taken back) without the heap: a block a cache in
    /// front of it reuses (`sched::node_cache`). Only the owning core, with IRQs masked.
    #[inline(always)]
    pub fn add(&self, delta: i64) {
        self.0.store(self.0.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    }
}

/// Core `core`'s count. The scheduler keeps the reference beside its per-core state, so a turn
/// reaches its count by one load, not the core's id and a bounds check each time.
pub const fn turn_count(core: usize) -> &'static TurnCount {
    &TURN_BYTES[core]
}

/// Counts `delta` bytes on this core. Only this core writes its counter (with the heap lock,
/// which masks IRQs, held, or as the scheduler with IRQs masked): a plain load and store
/// suffices.
#[inline]
fn count(delta: i64) {
    if let Some(TurnCount(counter)) = TURN_BYTES.get(crate::arch::cpu::core_id()) {
        counter.store(counter.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    }
}

#[global_allocator]
static HEAP: KernelHeap =
    KernelHeap(IrqSpinLock::new(HeapState { heap: Heap::empty(), free: [0; CLASSES], cached: 0 }));

impl HeapState {
    /// Allocates `layout`: a small one from its class's list if it has a block, else from the
    /// linked-list allocator, growing the heap into free RAM when no block fits, and as a last
    /// resort after giving the class lists back to it.
    fn allocate(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        let class = class_of(layout);
        let block = match class {
            Some(class) if self.free[class] != 0 => {
                let block = self.free[class];
                // SAFETY: a block on a class list is heap memory this allocator owns; its first
                // word was written by `free` (the link to the next).
                self.free[class] = unsafe { (block as *const usize).read() };
                self.cached -= class_layout(class).size();
                NonNull::new(block as *mut u8)?
            }
            _ => {
                let actual = class.map_or(layout, class_layout);
                match self.grow_and_allocate(actual) {
                    Some(block) => block,
                    None => {
                        self.flush_classes();
                        self.heap.allocate_first_fit(actual).ok()?
                    }
                }
            }
        };
        count(layout.size() as i64);
        self.publish_use();
        Some(block)
    }

    /// Frees `block`, allocated as `layout`: to its class's list when it is small.
    ///
    /// # Safety
    /// `block` came from [`allocate`](Self::allocate) with `layout` and is freed once.
    unsafe fn free(&mut self, block: NonNull<u8>, layout: Layout) {
        match class_of(layout) {
            Some(class) => {
                // SAFETY: the block is at least one class granule (16 bytes) long and 16-byte
                // aligned (it was allocated as its class's layout), and is no longer in use.
                unsafe { block.cast::<usize>().write(self.free[class]) };
                self.free[class] = block.as_ptr() as usize;
                self.cached += class_layout(class).size();
            }
            // SAFETY: forwarded contract: allocated as `layout` by the linked-list allocator.
            None => unsafe { self.heap.deallocate(block, layout) },
        }
        count(-(layout.size() as i64));
        self.publish_use();
    }

    /// Allocates from the linked-list allocator, growing the heap into free RAM once if no block
    /// fits.
    fn grow_and_allocate(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        if let Ok(block) = self.heap.allocate_first_fit(layout) {
            return Some(block);
        }
        let wanted = (layout.size() + layout.align() + 64).max(GROW_MIN_BYTES).next_multiple_of(PAGE_BYTES);
        // The frame pool's lock must not be taken on a process stack (a stack-growth fault
        // inside it would need that lock again): ask on the kernel stack.
        let start = crate::arch::context::on_kernel_stack(|| frames::grow_heap(wanted))?;
        debug_assert_eq!(start, self.heap.top() as usize, "the heap grows exactly at its top");
        // SAFETY: `grow_heap` gave `[start, start + wanted)`, RAM directly above the heap's top,
        // identity-mapped read-write, now the heap's alone.
        unsafe { self.heap.extend(wanted) };
        SIZE.store(self.heap.size(), Ordering::Relaxed);
        self.heap.allocate_first_fit(layout).ok()
    }

    /// Gives every block on the class lists back to the linked-list allocator (under
    /// pressure: a request no class block can serve may fit once they are merged back).
    fn flush_classes(&mut self) {
        for class in 0..CLASSES {
            while self.free[class] != 0 {
                let block = self.free[class];
                // SAFETY: as in `allocate`: a listed block holds the link to the next.
                self.free[class] = unsafe { (block as *const usize).read() };
                // SAFETY: the block was allocated from `heap` as its class's layout and is free.
                unsafe { self.heap.deallocate(NonNull::new_unchecked(block as *mut u8), class_layout(class)) };
            }
        }
        self.cached = 0;
        self.publish_use();
    }

    fn publish_use(&self) {
        USED.store(self.heap.used() - self.cached, Ordering::Relaxed);
    }
}

// SAFETY: linked_list_allocator's `Heap` returns blocks that fit the layout and do not
// overlap, and a class list only holds blocks it returned for that class's layout, which fits
// every layout of the class; the lock serialises every use across cores and interrupt handlers.
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0.lock().allocate(layout).map_or(core::ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this `layout` (GlobalAlloc contract).
        unsafe { self.0.lock().free(NonNull::new_unchecked(ptr), layout) };
    }
}

/// Hands `[start, start + bytes)` to the heap: the bottom of the RAM `frames::init` was given,
/// the heap's first stretch. Boot core, once, after `frames::init`.
///
/// # Safety
/// The range is RAM, mapped read-write, used by nothing else, now or later.
pub unsafe fn init(start: usize, bytes: usize) {
    let mut state = HEAP.0.lock();
    // SAFETY: forwarded contract.
    unsafe { state.heap.init(start as *mut u8, bytes) };
    SIZE.store(state.heap.size(), Ordering::Relaxed);
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
#[inline]
pub fn try_allocate(layout: Layout) -> Result<NonNull<u8>, OutOfMemory> {
    let refused = OutOfMemory { requested_bytes: layout.size() };
    if !within_reserve(layout.size(), live_processes()) {
        return Err(refused);
    }
    HEAP.0.lock().allocate(layout).ok_or(refused)
}

/// Moves `value` to the heap, or gives an error instead of the allocation-failure panic.
#[inline]
pub fn try_box<T>(value: T) -> Result<Box<T>, OutOfMemory> {
    try_box_with(|| value)
}

/// [`try_box`] of what `make` returns, made after the allocation: a value built in place
/// rather than on the stack and copied (104 bytes of a spawn's `Relations`, say).
#[inline]
pub fn try_box_with<T>(make: impl FnOnce() -> T) -> Result<Box<T>, OutOfMemory> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::new(make()));
    }
    let memory = try_allocate(layout)?.cast::<T>();
    // SAFETY: `memory` is a fresh allocation of `T`'s layout from the global allocator's heap,
    // so writing a `T` there and handing it to `Box` (which frees it with the same layout
    // through the same allocator) is sound.
    unsafe {
        memory.as_ptr().write(make());
        Ok(Box::from_raw(memory.as_ptr()))
    }
}

/// An empty `Vec` with room for `capacity` elements, or an error instead of the
/// allocation-failure panic. For a list's first room: `try_reserve` on an empty `Vec` goes
/// through the standard library's general growth path (about 35 instructions more per spawn
/// with a link, where every new process's list starts empty).
pub fn try_vec_with_capacity<T>(capacity: usize) -> Result<Vec<T>, OutOfMemory> {
    let layout = Layout::array::<T>(capacity).map_err(|_| OutOfMemory { requested_bytes: usize::MAX })?;
    if layout.size() == 0 {
        return Ok(Vec::new());
    }
    let memory = try_allocate(layout)?.cast::<T>();
    // SAFETY: `memory` is a fresh allocation from the global allocator's heap with the layout
    // of `capacity` `T`s, which is what `Vec` frees it with; none of them is initialised yet
    // (length 0).
    Ok(unsafe { Vec::from_raw_parts(memory.as_ptr(), 0, capacity) })
}

/// [`try_box`] for the kernel's own needs (a signal it sends): it may use the reserve, and
/// fails only when the heap itself has no room.
pub fn try_box_from_reserve<T>(value: T) -> Result<Box<T>, OutOfMemory> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        return Ok(Box::new(value));
    }
    let memory = HEAP.0.lock().allocate(layout).ok_or(OutOfMemory { requested_bytes: layout.size() })?.cast::<T>();
    // SAFETY: `memory` is a fresh allocation of `T`'s layout from the global allocator's heap,
    // so writing `value` there and handing it to `Box` (which frees it with the same layout
    // through the same allocator) is sound.
    unsafe {
        memory.as_ptr().write(value);
        Ok(Box::from_raw(memory.as_ptr()))
    }
}
