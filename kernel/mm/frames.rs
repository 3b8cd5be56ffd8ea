//! Physical pages of RAM ("frames") for what the kernel maps at run time: process stacks,
//! control blocks and the translation tables of the process region (docs/memory.md).
//!
//! All RAM after the kernel image is one pool shared with the heap. The heap starts at the
//! bottom of the kernel's RAM bank and grows upward on demand ([`grow_heap`]); frames are
//! handed out from the top of every bank downward. The two meet wherever demand puts them, so a
//! run with many processes gets most of RAM as frames and one with big messages most of it as
//! heap. Frames never come closer to the heap's top than [`heap_gap`]: the heap can always grow
//! that much, which is what keeps the kernel's own allocations alive when processes have used
//! up every frame.
//!
//! ```text
//!   kernel bank:  | image | heap -> heap_top | gap | unused <- next | frames handed out |
//!   other banks:  | unused <- next | frames handed out |
//! ```
//!
//! A freed frame goes to its core's cache (a small stack of frames, no lock: only its own core
//! touches it, with IRQs masked and never from a process stack), and from there in batches to
//! a global free list threaded through the free frames themselves.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::layout::{MAX_CORES, PAGE_BYTES};
use crate::arch::{context, cpu};
use crate::error::OutOfMemory;
use crate::platform::Region;
use crate::sync::IrqSpinLock;

/// Most RAM banks the pool takes (the platform keeps at most this many too).
const MAX_BANKS: usize = 8;
/// Frames each core keeps at hand.
const CACHE_FRAMES: usize = 32;
/// Frames moved between a core's cache and the global pool at a time.
const BATCH: usize = CACHE_FRAMES / 2;
/// Most never-used frames a core reserves at a time ([`Run`]).
const RUN_FRAMES: usize = 64;

struct Bank {
    /// Lowest address of the bank that frames may come from (for the heap's bank, where the
    /// heap's reach ends; see `Pool::floor`).
    start: usize,
    /// Frames at `[next, end)` have been handed out; below `next` none has been yet.
    next: usize,
}

struct Pool {
    /// First frame of the free list (0: empty); each free frame's first word holds the next.
    free_list: usize,
    banks: heapless::Vec<Bank, MAX_BANKS>,
    /// The bank the heap lives in, and the heap's top (it grows up from the bank's start).
    heap_bank: usize,
    heap_top: usize,
    /// Bytes above the heap's top that frames may not take.
    heap_gap: usize,
}

impl Pool {
    /// Lowest address frames may come from in bank `index`.
    fn floor(&self, index: usize) -> usize {
        let bank = &self.banks[index];
        if index == self.heap_bank { bank.start.max(self.heap_top + self.heap_gap) } else { bank.start }
    }

    fn take(&mut self) -> Option<usize> {
        if self.free_list != 0 {
            let frame = self.free_list;
            // SAFETY: a frame on the free list is RAM the pool owns, identity-mapped read-write;
            // its first word was written by `put` (the link to the next free frame).
            self.free_list = unsafe { (frame as *const usize).read() };
            return Some(frame);
        }
        self.take_never_used(1).map(|(frame, _)| frame)
    }

    /// A run of up to `most` never-used frames, contiguous, in one step: `[start, start + n
    /// pages)`. Fewer when little is left, so that what cores keep reserved stays a small part
    /// of it: at most a quarter of what is left, spread over every core that may ask.
    fn take_run(&mut self, most: usize) -> Option<(usize, usize)> {
        let left = self.unused_frames();
        self.take_never_used(most.min(left / (4 * MAX_CORES)).max(1))
    }

    /// Up to `frames` (at least 1) never-used frames from the highest bank that has any, in one
    /// step: `(start, n)` for `[start, start + n pages)`.
    fn take_never_used(&mut self, frames: usize) -> Option<(usize, usize)> {
        for index in (0..self.banks.len()).rev() {
            let floor = self.floor(index);
            let bank = &mut self.banks[index];
            let room = bank.next.saturating_sub(floor) / PAGE_BYTES;
            if room > 0 {
                let n = frames.min(room);
                bank.next -= n * PAGE_BYTES;
                let start = bank.next;
                if index == self.heap_bank {
                    HEAP_ROOM.store(start - self.heap_top, Ordering::Relaxed);
                }
                return Some((start, n));
            }
        }
        None
    }

    fn put(&mut self, frame: usize) {
        // SAFETY: the frame is RAM given back to the pool (no mapping but the identity map
        // reaches it any more, see `free`), identity-mapped read-write.
        unsafe { (frame as *mut usize).write(self.free_list) };
        self.free_list = frame;
    }

    /// Frames the banks can still hand out (the free list not counted).
    fn unused_frames(&self) -> usize {
        (0..self.banks.len()).map(|i| self.banks[i].next.saturating_sub(self.floor(i)) / PAGE_BYTES).sum()
    }
}

static POOL: IrqSpinLock<Pool> =
    IrqSpinLock::new(Pool { free_list: 0, banks: heapless::Vec::new(), heap_bank: 0, heap_top: 0, heap_gap: 0 });

/// Frames that can be handed out now: cached, on the free list or never used.
static AVAILABLE: AtomicUsize = AtomicUsize::new(0);
/// Frames handed out (stacks, control blocks, tables), for the memory report.
static IN_USE: AtomicUsize = AtomicUsize::new(0);
/// Bytes the heap could still grow by (up to the lowest frame handed out in its bank).
static HEAP_ROOM: AtomicUsize = AtomicUsize::new(0);
/// Frames of RAM the pool started with, and the heap's gap.
static TOTAL: AtomicUsize = AtomicUsize::new(0);
static HEAP_GAP: AtomicUsize = AtomicUsize::new(0);

/// Called when no frame is free: gives back a frame something keeps only as a cache (a free
/// process slot's stack page), or `None`. Set once at boot by the scheduler.
static RECLAIMER: spin::Once<fn() -> Option<usize>> = spin::Once::new();

/// A core's frames at hand: `frames[..len]` (freed ones, and ones from the free list), and a
/// run of never-used ones.
struct Frames {
    frames: [usize; CACHE_FRAMES],
    len: usize,
    run: Run,
}

/// Never-used frames `[start, end)` that one core reserved from a bank in one step (the pool's
/// lock held for a subtraction, not a frame at a time): a growing tree of processes takes a
/// frame per spawn, and at many cores the pool's lock, taken a frame at a time, was the one
/// section every core's fresh spawn shared (docs/memory.md).
struct Run {
    start: usize,
    end: usize,
}

impl Frames {
    fn pop(&mut self) -> Option<usize> {
        if self.len > 0 {
            self.len -= 1;
            return Some(self.frames[self.len]);
        }
        (self.run.end > self.run.start).then(|| {
            self.run.end -= PAGE_BYTES;
            self.run.end
        })
    }
}

/// One [`Frames`] per core.
struct Cache(UnsafeCell<Frames>);

// SAFETY: each `Cache` is used only by its own core, with IRQs masked and on the kernel stack
// (`with_this_cache` checks both in debug builds), and only inside `with_this_cache`, whose
// closures do not call it again: never by two contexts at once.
unsafe impl Sync for Cache {}

static CACHES: [Cache; MAX_CORES] =
    [const { Cache(UnsafeCell::new(Frames { frames: [0; CACHE_FRAMES], len: 0, run: Run { start: 0, end: 0 } })) };
        MAX_CORES];

/// Runs `f` on the calling core's cache. The borrow lasts for the call only, so no second
/// `&mut` to the same cache can exist: `f` is one of this file's closures, which touch the cache
/// and the pool's lock and call nothing that could come back here (the reclaimer, which may,
/// runs after the borrow ends).
///
/// Callers run with IRQs masked and on the kernel stack (SP_EL1): the scheduler, an exception
/// handler, or a process inside `context::on_kernel_stack`. Nothing else on this core can then
/// use the cache until they are done: an interrupt is masked, and a stack-growth fault (whose
/// handler takes frames) can only come from code on a process stack.
fn with_this_cache<R>(f: impl FnOnce(&mut Frames) -> R) -> R {
    debug_assert!(cpu::irqs_masked(), "frames are taken with IRQs masked");
    debug_assert!(!context::running_on_process_stack(), "frames are taken on the kernel stack");
    let cache = &CACHES[cpu::core_id()];
    // SAFETY: only this core uses its cache, never from two contexts at once (see above), and
    // the reference does not outlive `f`, which does not re-enter.
    f(unsafe { &mut *cache.0.get() })
}

/// Hands free RAM to the pool: `heap_bank` is the RAM after the kernel image (the heap takes
/// its first `heap_bytes`), `others` the other banks. Boot core, once, before the heap is used.
///
/// # Safety
/// The regions are RAM, identity-mapped read-write, page-aligned, used by nothing else.
pub unsafe fn init(heap_bank: Region, heap_bytes: usize, others: &[Region]) {
    let mut pool = POOL.lock();
    let start = heap_bank.base as usize;
    let _ = pool.banks.push(Bank { start, next: start + heap_bank.bytes as usize });
    for bank in others.iter().take(MAX_BANKS - 1) {
        let start = bank.base as usize;
        let _ = pool.banks.push(Bank { start, next: start + bank.bytes as usize });
    }
    let total: usize = pool.banks.iter().map(|b| b.next - b.start).sum::<usize>() / PAGE_BYTES;
    pool.heap_bank = 0;
    pool.heap_top = start + heap_bytes;
    pool.heap_gap = heap_gap_for(total * PAGE_BYTES);
    HEAP_GAP.store(pool.heap_gap, Ordering::Relaxed);
    TOTAL.store(total, Ordering::Relaxed);
    AVAILABLE.store(pool.unused_frames(), Ordering::Relaxed);
    HEAP_ROOM.store(pool.banks[0].next - pool.heap_top, Ordering::Relaxed);
}

/// The heap's gap for a pool of `bytes`: 1/64 of it, at least 1 MiB.
pub const fn heap_gap_for(bytes: usize) -> usize {
    let gap = (bytes / 64).next_multiple_of(PAGE_BYTES);
    if gap < 1 << 20 { 1 << 20 } else { gap }
}

/// Sets the function that gives back cached frames when none is free (boot, once).
pub fn set_reclaimer(reclaim: fn() -> Option<usize>) {
    RECLAIMER.call_once(|| reclaim);
}

/// A frame (4 KiB of RAM, identity-mapped, contents undefined). IRQs masked, kernel stack.
pub fn allocate() -> Result<usize, OutOfMemory> {
    let cached = with_this_cache(|cache| {
        if let Some(frame) = cache.pop() {
            return Some(frame);
        }
        let mut pool = POOL.lock();
        if pool.free_list == 0 {
            let (start, frames) = pool.take_run(RUN_FRAMES)?;
            drop(pool);
            cache.run = Run { start, end: start + frames * PAGE_BYTES };
        } else {
            while cache.len < BATCH {
                let Some(frame) = pool.take() else { break };
                cache.frames[cache.len] = frame;
                cache.len += 1;
            }
            drop(pool);
        }
        cache.pop()
    });
    if let Some(frame) = cached {
        AVAILABLE.fetch_sub(1, Ordering::Relaxed);
        IN_USE.fetch_add(1, Ordering::Relaxed);
        return Ok(frame);
    }
    // A frame taken back from a cache of stacks changes hands without ever being free: the
    // counts stay as they are.
    if let Some(frame) = RECLAIMER.get().and_then(|reclaim| reclaim()) {
        return Ok(frame);
    }
    Err(OutOfMemory { requested_bytes: PAGE_BYTES })
}

/// Frames a process's own stack growth leaves for kernel code a process runs (see
/// [`allocate_for_stack`]).
pub const EMERGENCY_FRAMES: usize = 64;

/// A frame for a process's stack to grow into. Growth while the process runs its own code
/// (IRQs unmasked when it faulted, or preempted) leaves the last [`EMERGENCY_FRAMES`]: that
/// process can be ended if none is left. Growth in kernel code it called with IRQs masked
/// (`kernel_code`) may take them: that code may hold a kernel lock, and ending the process
/// there would leave the lock held for good; its depth is bounded, so a few pages see it
/// through, and the process is ended at its next fault in its own code instead.
pub fn allocate_for_stack(kernel_code: bool) -> Result<usize, OutOfMemory> {
    if !kernel_code && AVAILABLE.load(Ordering::Relaxed) <= EMERGENCY_FRAMES {
        return RECLAIMER.get().and_then(|reclaim| reclaim()).ok_or(OutOfMemory { requested_bytes: PAGE_BYTES });
    }
    allocate()
}

/// A frame filled with zeros (for translation tables).
pub fn allocate_zeroed() -> Result<usize, OutOfMemory> {
    let frame = allocate()?;
    // SAFETY: a frame just handed out: RAM, identity-mapped read-write, ours alone.
    unsafe { core::ptr::write_bytes(frame as *mut u8, 0, PAGE_BYTES) };
    Ok(frame)
}

/// Gives the calling core's frames at hand (its cache and its run) to the pool's free list, and
/// returns how many: for a core that goes offline, so that no frame waits for it while it is
/// off (the online cores take them from the list). IRQs masked, kernel stack.
pub fn release_this_core() -> usize {
    with_this_cache(|cache| {
        if cache.len == 0 && cache.run.start == cache.run.end {
            return 0;
        }
        let mut pool = POOL.lock();
        let mut released = 0;
        while let Some(frame) = cache.pop() {
            pool.put(frame);
            released += 1;
        }
        released
    })
}

/// Gives a frame back. It must no longer be mapped anywhere but the identity map, with the
/// TLB invalidations of its last unmapping complete. IRQs masked, kernel stack.
pub fn free(frame: usize) {
    debug_assert!(frame.is_multiple_of(PAGE_BYTES) && frame != 0);
    with_this_cache(|cache| {
        if cache.len == CACHE_FRAMES {
            let mut pool = POOL.lock();
            for _ in 0..BATCH {
                cache.len -= 1;
                pool.put(cache.frames[cache.len]);
            }
        }
        cache.frames[cache.len] = frame;
        cache.len += 1;
    });
    AVAILABLE.fetch_add(1, Ordering::Relaxed);
    IN_USE.fetch_sub(1, Ordering::Relaxed);
}

/// Gives the heap `bytes` (a page multiple) more directly above its top, if no frame has been
/// handed out there; returns where they start. IRQs masked, kernel stack (the pool's lock must
/// not be held by code a stack-growth fault can interrupt).
pub fn grow_heap(bytes: usize) -> Option<usize> {
    debug_assert!(!context::running_on_process_stack());
    let mut pool = POOL.lock();
    let heap_bank = pool.heap_bank;
    let start = pool.heap_top;
    if start + bytes > pool.banks[heap_bank].next {
        return None;
    }
    // Frames the bank can no longer hand out now that the heap and its gap reach higher.
    let unused = |pool: &Pool| pool.banks[heap_bank].next.saturating_sub(pool.floor(heap_bank)) / PAGE_BYTES;
    let before = unused(&pool);
    pool.heap_top = start + bytes;
    AVAILABLE.fetch_sub(before - unused(&pool), Ordering::Relaxed);
    HEAP_ROOM.store(pool.banks[heap_bank].next - pool.heap_top, Ordering::Relaxed);
    Some(start)
}

/// Frames that can be handed out now (cached, free or never used), in bytes.
pub fn available_bytes() -> usize {
    AVAILABLE.load(Ordering::Relaxed) * PAGE_BYTES
}

/// Bytes the heap could still grow by.
pub fn heap_room_bytes() -> usize {
    HEAP_ROOM.load(Ordering::Relaxed)
}

/// Bytes above the heap's top that frames may not take.
pub fn heap_gap() -> usize {
    HEAP_GAP.load(Ordering::Relaxed)
}

/// Bytes of frames handed out (stacks, control blocks, translation tables).
pub fn in_use_bytes() -> usize {
    IN_USE.load(Ordering::Relaxed) * PAGE_BYTES
}

/// Bytes of RAM the pool started with (heap included).
pub fn total_bytes() -> usize {
    TOTAL.load(Ordering::Relaxed) * PAGE_BYTES
}
