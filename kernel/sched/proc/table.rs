//! The process table's slots: making them (mapping a control block's pages the first time a
//! slot is needed), reusing them, the process limit and the count of processes alive.
//!
//! Free slots wait on one of two lists: those whose stack stretch still has its top page mapped
//! (a process just ended there), reused first, last in first out; and those whose page was
//! taken back for the frame pool when it ran dry (`reclaim_stack_page`). A slot never used is
//! made (its control block mapped and initialised) only when both lists are empty.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::process::{
    CONTROL_BLOCK_BYTES, LIMIT, MAX_PROCESSES, NO_SLOT, Process, SLOTS_MADE, SpawnError, limit, slot,
};
use beamcore_hal::ids::Slot;
use beamcore_hal::sync::IrqSpinLock;
use beamcore_mm::heap::{self, OutOfMemory};
use beamcore_mm::layout::{CONTROL_BLOCKS_VA, PAGE_BYTES};
use beamcore_mm::stacks;
use beamcore_mm::{frames, vmap};

/// Frames a spawn leaves for the stacks of processes already alive to grow into (and for the
/// kernel to save a preempted process's registers on its stack): 256 KiB, or 1/256 of RAM if
/// that is more, on top of the pool's emergency frames (`frames::EMERGENCY_FRAMES`).
pub const SPAWN_FRAME_RESERVE_BYTES: usize = 256 << 10;

fn spawn_frame_reserve() -> usize {
    SPAWN_FRAME_RESERVE_BYTES.max(frames::total_bytes() / 256) + frames::EMERGENCY_FRAMES * PAGE_BYTES
}

/// Serialises making slots (`SLOTS_MADE` only ever grows by one, in order).
static MAKING: IrqSpinLock<()> = IrqSpinLock::new(());

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
    make_slot().map(|index| (index, false)).inspect_err(|_| {
        let mut free = FREE.lock();
        free.live -= 1;
        heap::set_live_processes(free.live);
    })
}

/// Makes the next slot: maps its control block's pages and initialises it.
fn make_slot() -> Result<Slot, SpawnError> {
    let _making = MAKING.lock();
    let index = SLOTS_MADE.load(Ordering::Relaxed);
    if index as usize >= MAX_PROCESSES {
        return Err(SpawnError::TableFull);
    }
    let start = CONTROL_BLOCKS_VA + index as usize * CONTROL_BLOCK_BYTES;
    let end = start + CONTROL_BLOCK_BYTES;
    let first_page = start & !(PAGE_BYTES - 1);
    vmap::prepare(first_page, end).map_err(SpawnError::OutOfMemory)?;
    for page in (first_page..end).step_by(PAGE_BYTES) {
        if !vmap::is_mapped(page) {
            let frame = frames::allocate().map_err(SpawnError::OutOfMemory)?;
            vmap::map(page, frame);
        }
    }
    vmap::publish();
    // SAFETY: `[start, end)` is mapped read-write (above) and no one else can reach it: the
    // slot's index is not below `SLOTS_MADE` yet, and `MAKING` is held.
    unsafe { (start as *mut Process).write(Process::new()) };
    // ORDERING: Release: the initialised block is seen by whoever sees the new count (Acquire
    // in `slot_checked`).
    SLOTS_MADE.store(index + 1, Ordering::Release);
    Ok(Slot::new(index))
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
