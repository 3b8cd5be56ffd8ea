//! The process table's slots: making them (mapping a control block's pages the first time a
//! slot is needed), reusing them, the process limit and the count of processes alive.
//!
//! Free slots wait on one of two lists: those whose stack stretch still has its top page mapped
//! (a process just ended there), reused first, last in first out; and those whose page was
//! taken back for the frame pool when it ran dry (`reclaim_stack_page`). A slot never used is
//! taken only when both lists are empty: the next of the chunk its core made last, or the first
//! of a chunk it makes now.
//!
//! A chunk is the 16 control blocks of one page. A core reserves one with an atomic add, maps
//! its page and initialises its blocks on its own, and keeps the ones it has not used for its
//! next spawns, so cores growing their process trees at once make slots in parallel. Until
//! 2026-12-07 every slot was made under one lock (`MAKING`), 160 instructions each: QEMU's
//! execution log of fib/default/8 showed up to five vCPUs spinning on it at once while the tree
//! grew, and the simulator, given that lock, read fib's efficiency at 64 cores as 0.75
//! (docs/simulator.md, "The slot-making lock").

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use super::process::{
    CHUNK_SLOTS, CONTROL_BLOCK_BYTES, LIMIT, MAX_PROCESSES, NO_SLOT, Process, SLOTS_RESERVED, SpawnError, chunk_made,
    limit, slot,
};
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::Slot;
use beamcore_hal::sync::IrqSpinLock;
use beamcore_mm::heap::{self, OutOfMemory};
use beamcore_mm::layout::{CONTROL_BLOCKS_VA, MAX_CORES, PAGE_BYTES};
use beamcore_mm::stacks;
use beamcore_mm::{frames, vmap};

/// Frames a spawn leaves for the stacks of processes already alive to grow into (and for the
/// kernel to save a preempted process's registers on its stack): 256 KiB, or 1/256 of RAM if
/// that is more, on top of the pool's emergency frames (`frames::EMERGENCY_FRAMES`).
pub const SPAWN_FRAME_RESERVE_BYTES: usize = 256 << 10;

fn spawn_frame_reserve() -> usize {
    SPAWN_FRAME_RESERVE_BYTES.max(frames::total_bytes() / 256) + frames::EMERGENCY_FRAMES * PAGE_BYTES
}

/// Each core's slots made and never used, `[FRESH_NEXT, FRESH_END)` of the chunk it made last:
/// read and written by that core alone, with IRQs masked (`allocate`'s contract), so Relaxed.
static FRESH_NEXT: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(0) }; MAX_CORES];
static FRESH_END: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(0) }; MAX_CORES];
/// A chunk a core reserved and could not make (no frame for its page): it tries that one again
/// before reserving another, so running out of memory does not use up the table.
static PENDING_CHUNK: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(NO_CHUNK) }; MAX_CORES];
const NO_CHUNK: u32 = u32::MAX;

/// Free slots whose stack page is still mapped (a mirror of `FreeSlots::mapped_len`).
static CACHED_STACK_PAGES: AtomicUsize = AtomicUsize::new(0);

struct FreeSlots {
    /// Free slots whose stack stretch has its top page mapped (LIFO), and those without.
    mapped: Slot,
    unmapped: Slot,
    mapped_len: usize,
    live: usize,
}

static FREE: IrqSpinLock<FreeSlots> =
    IrqSpinLock::new(FreeSlots { mapped: NO_SLOT, unmapped: NO_SLOT, mapped_len: 0, live: 0 });

impl FreeSlots {
    fn pop(&mut self, mapped: bool) -> Option<Slot> {
        let list = if mapped { &mut self.mapped } else { &mut self.unmapped };
        let index = *list;
        if index == NO_SLOT {
            return None;
        }
        *list = Slot::new(slot(index).free_next.load(Ordering::Relaxed));
        if mapped {
            self.mapped_len -= 1;
            CACHED_STACK_PAGES.store(self.mapped_len, Ordering::Relaxed);
        }
        Some(index)
    }

    fn push(&mut self, mapped: bool, index: Slot) {
        let list = if mapped { &mut self.mapped } else { &mut self.unmapped };
        slot(index).free_next.store(list.get(), Ordering::Relaxed);
        *list = index;
        if mapped {
            self.mapped_len += 1;
            CACHED_STACK_PAGES.store(self.mapped_len, Ordering::Relaxed);
        }
    }
}

/// Bytes of stack pages free slots keep mapped for their next process (taken back when the
/// frame pool runs dry).
pub(crate) fn cached_stack_bytes() -> usize {
    CACHED_STACK_PAGES.load(Ordering::Relaxed) * PAGE_BYTES
}

/// Applies the bootarg `max_processes` and lets the frame pool take back free slots' stack
/// pages when it runs dry. Boot core, before any spawn.
pub(crate) fn init_table(max_processes: usize) -> Result<(), OutOfMemory> {
    LIMIT.store(max_processes.min(MAX_PROCESSES), Ordering::Relaxed);
    frames::set_reclaimer(reclaim_stack_page);
    Ok(())
}

/// A slot for a new process, with a stack of `stack_bytes` in its control block (`stack`,
/// `slot_stack_mapped`). The slot is the caller's; nothing else can reach it until its state
/// says it is alive. IRQs masked, kernel stack (`context::on_kernel_stack`).
pub(crate) fn allocate(stack_bytes: usize) -> Result<Slot, SpawnError> {
    let live = heap::live_processes();
    if !heap::within_reserve(0, live + 1) {
        return Err(SpawnError::OutOfMemory(OutOfMemory { requested_bytes: heap::kernel_reserve(live + 1) }));
    }
    // Free slots' stack pages count: a spawn takes such a slot first, and the pool takes them
    // back when it runs dry.
    if frames::available_bytes() + cached_stack_bytes() < spawn_frame_reserve() + PAGE_BYTES {
        return Err(SpawnError::OutOfMemory(OutOfMemory { requested_bytes: PAGE_BYTES }));
    }
    let (index, top_mapped) = take_slot()?;
    match stacks::allocate(index, stack_bytes, top_mapped) {
        Ok(stack) => {
            // SAFETY: the slot is ours alone (taken from the free lists or just made).
            let local = unsafe { slot(index).local() };
            local.slot_stack_mapped = top_mapped || stack.in_slot();
            slot(index).note_stack_mapped(stack.mapped_bytes());
            local.stack = Some(stack);
            Ok(index)
        }
        Err(error) => {
            put_slot(index, top_mapped);
            Err(SpawnError::OutOfMemory(error))
        }
    }
}

/// A free slot (reused first, its stack page still mapped; else one whose page was taken back;
/// else a new one) and whether its stack stretch has its top page mapped.
fn take_slot() -> Result<(Slot, bool), SpawnError> {
    {
        // On the kernel stack, IRQs masked (see `allocate`).
        let mut free = FREE.lock_irqs_masked();
        if free.live >= limit() {
            return Err(SpawnError::TableFull);
        }
        let taken = match free.pop(true) {
            Some(index) => Some((index, true)),
            None => free.pop(false).map(|index| (index, false)),
        };
        free.live += 1;
        heap::set_live_processes(free.live);
        if let Some(taken) = taken {
            return Ok(taken);
        }
    }
    fresh_slot().map(|index| (index, false)).inspect_err(|_| {
        let mut free = FREE.lock();
        free.live -= 1;
        heap::set_live_processes(free.live);
    })
}

/// A slot no process has used: the next of this core's chunk, or the first of one it makes.
fn fresh_slot() -> Result<Slot, SpawnError> {
    let me = cpu::core_id();
    // ORDERING: Relaxed: this core's own values (see `FRESH_NEXT`).
    let next = FRESH_NEXT[me].load(Ordering::Relaxed);
    if next < FRESH_END[me].load(Ordering::Relaxed) {
        FRESH_NEXT[me].store(next + 1, Ordering::Relaxed);
        return Ok(Slot::new(next));
    }
    let first = make_chunk(me)?;
    FRESH_NEXT[me].store(first + 1, Ordering::Relaxed);
    FRESH_END[me].store(first + CHUNK_SLOTS, Ordering::Relaxed);
    Ok(Slot::new(first))
}

/// Makes a chunk for core `me`: reserves the next 16 slots (or takes the one it could not make
/// before), maps their page and initialises their control blocks, and says so (`chunk_made`).
/// Returns its first slot. No lock of the table's: the page is this core's alone, and
/// `vmap::prepare` and the frame pool take their own for a few instructions.
fn make_chunk(me: usize) -> Result<u32, SpawnError> {
    // ORDERING: Relaxed: this core's own value.
    let first = match PENDING_CHUNK[me].swap(NO_CHUNK, Ordering::Relaxed) {
        NO_CHUNK => reserve_chunk()?,
        pending => pending,
    };
    let page = CONTROL_BLOCKS_VA + first as usize * CONTROL_BLOCK_BYTES;
    let made = vmap::prepare(page, page + PAGE_BYTES).and_then(|()| frames::allocate());
    let frame = match made {
        Ok(frame) => frame,
        Err(error) => {
            PENDING_CHUNK[me].store(first, Ordering::Relaxed);
            return Err(SpawnError::OutOfMemory(error));
        }
    };
    vmap::map(page, frame);
    vmap::publish();
    for index in first..first + CHUNK_SLOTS {
        // SAFETY: the chunk's page is mapped read-write (above) and no one else can reach its
        // blocks: its slots were reserved for this core alone and are not yet made.
        unsafe { (CONTROL_BLOCKS_VA as *mut Process).add(index as usize).write(Process::new()) };
    }
    chunk_made(first).publish();
    Ok(first)
}

/// The first slot of a chunk nobody has reserved, if the table has room for it.
fn reserve_chunk() -> Result<u32, SpawnError> {
    // ORDERING: Relaxed: only the count is shared; what a chunk holds is published on its own
    // (`chunk_made`).
    SLOTS_RESERVED
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |reserved| {
            (reserved as usize + CHUNK_SLOTS as usize <= MAX_PROCESSES).then_some(reserved + CHUNK_SLOTS)
        })
        .map_err(|_| SpawnError::TableFull)
}

/// Puts a slot that was taken but not used back on its list. With IRQs masked: from a failed
/// `allocate` (kernel stack) or from the scheduler that ends a process.
fn put_slot(index: Slot, top_mapped: bool) {
    let mut free = FREE.lock_irqs_masked();
    free.push(top_mapped, index);
    free.live -= 1;
    heap::set_live_processes(free.live);
}

/// Returns a slot whose process has ended (its stack freed with `stacks::free`).
pub(crate) fn release_slot(index: Slot) {
    // SAFETY: the scheduler that ends the process owns its control block (see `finish`).
    let mapped = unsafe { slot(index).local().slot_stack_mapped };
    put_slot(index, mapped);
}

/// For the frame pool when no frame is free: unmaps the stack page of the free slot released
/// most recently and returns its frame; the slot moves to the other list.
fn reclaim_stack_page() -> Option<usize> {
    let index = FREE.lock().pop(true)?;
    let frame = stacks::unmap_slot_top(index);
    FREE.lock().push(false, index);
    frame
}

/// Processes alive now.
pub(crate) fn live_count() -> usize {
    heap::live_processes()
}
