//! Process stacks that grow on demand, in the process region (docs/memory.md).
//!
//! Each stack is a reservation of address space: the most it may grow to (`limit` to `top`)
//! and below that a guard that is never mapped. It starts with one page mapped, its top page;
//! a fault just below the mapped part maps more (`Stack::grow_to`, from the exception
//! handler), down to the limit; a fault in the guard is a stack overflow.
//!
//! ```text
//!   reservation                 limit              mapped_bottom            top
//!   | guard (never mapped) ...  | grows on demand ... | mapped ............... |
//! ```
//!
//! Two kinds of reservation. Every process slot owns a 64 KiB stretch at a fixed address
//! (`layout::slot_stack_top`): a stack of up to 60 KiB lives there, and when the slot's
//! process ends its top page stays mapped for the slot's next process, so spawn and exit
//! change no mapping at all (pages it grew are unmapped and go back to the frame pool). A bigger
//! stack gets a reservation of its own, a power of two from 128 KiB to 16 MiB, reused by later
//! stacks of its size.

use alloc::vec::Vec;
use core::ops::Range;

use super::layout::{
    BIG_STACK_CLASSES, BIG_STACKS_BYTES, BIG_STACKS_VA, PAGE_BYTES, SLOT_STACK_STRIDE, big_stack_class,
    big_stack_reservation, slot_stack_top, stack_bytes_for,
};
use super::{frames, vmap};
use crate::error::OutOfMemory;
use crate::sync::IrqSpinLock;
use beamcore_hal::ids::Slot;

pub use super::layout::{MAX_STACK_BYTES, MIN_STACK_BYTES};

/// A process's stack. Freed with [`free`], never dropped silently. (Whole words only: it is
/// moved as a few aligned loads and stores, not a byte-wise `memcpy`, on the spawn path.)
#[derive(Debug)]
#[repr(C)]
pub struct Stack {
    /// One past the highest byte: the initial stack pointer.
    top: usize,
    /// The lowest address the stack may grow to.
    limit: usize,
    /// `[mapped_bottom, top)` is mapped.
    mapped_bottom: usize,
    /// Where the reservation begins: `[reservation, limit)` is the guard.
    reservation: usize,
    /// The big-stack class, or [`IN_SLOT`] for a slot's own stretch.
    class: usize,
}

/// `Stack::class` of a stack in its slot's own stretch.
const IN_SLOT: usize = usize::MAX;

/// Why a stack could not grow to an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrowError {
    /// The address is in the guard: the stack would pass its maximum.
    Overflow,
    /// The address is not in this stack's reservation at all.
    Outside,
    /// No free page to map.
    OutOfMemory,
}

impl Stack {
    /// The initial stack pointer (16-byte aligned, one past the highest byte).
    pub fn top(&self) -> usize {
        self.top
    }

    /// The lowest address the stack may grow to.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The guard: the reservation below the limit, never mapped.
    pub fn guard(&self) -> Range<usize> {
        self.reservation..self.limit
    }

    /// What is mapped now: reading there cannot fault (for backtraces).
    pub fn mapped(&self) -> Range<usize> {
        self.mapped_bottom..self.top
    }

    /// Bytes mapped now.
    pub fn mapped_bytes(&self) -> usize {
        self.top - self.mapped_bottom
    }

    /// The most bytes it may grow to.
    pub fn max_bytes(&self) -> usize {
        self.top - self.limit
    }

    /// Whether this is a slot's own stretch (else a reservation of its own).
    pub fn in_slot(&self) -> bool {
        self.class == IN_SLOT
    }

    /// Whether `address` lies in the part the stack may still grow into (below what is mapped,
    /// at or above its limit).
    pub fn can_grow_to(&self, address: usize) -> bool {
        (self.limit..self.mapped_bottom).contains(&address)
    }

    /// Lets the stack grow to the bottom of its reservation, less one guard page: a process
    /// unwinding its stack runs the unwinder on it, which needs more room than most processes
    /// ever use (`sched/unwind.rs`). Only pages actually touched get mapped, and [`free`]
    /// unmaps them with the rest.
    pub fn extend_for_unwinding(&mut self) {
        self.limit = self.limit.min(self.reservation + PAGE_BYTES);
    }

    /// Makes `address` usable: maps every page from the one holding it up to the mapped part.
    /// `kernel_code`: the process was running kernel code with IRQs masked, which may take the
    /// frame pool's last pages (`frames::allocate_for_stack`). IRQs masked, kernel stack (the
    /// scheduler, or an exception taken from the process).
    pub fn grow_to(&mut self, address: usize, kernel_code: bool) -> Result<(), GrowError> {
        if address >= self.mapped_bottom && address < self.top {
            return Ok(());
        }
        if !(self.reservation..self.top).contains(&address) {
            return Err(GrowError::Outside);
        }
        if address < self.limit {
            return Err(GrowError::Overflow);
        }
        let target = address & !(PAGE_BYTES - 1);
        while self.mapped_bottom > target {
            let frame = frames::allocate_for_stack(kernel_code).map_err(|_| GrowError::OutOfMemory)?;
            let page = self.mapped_bottom - PAGE_BYTES;
            vmap::map(page, frame);
            self.mapped_bottom = page;
        }
        vmap::publish();
        Ok(())
    }
}

/// A stack of at least `bytes` usable bytes for slot `slot`: in the slot's stretch when it fits
/// (`top_mapped`: the stretch's top page is mapped already, as a free slot leaves it), else in a
/// reservation of its own. IRQs masked, kernel stack.
pub fn allocate(slot: Slot, bytes: usize, top_mapped: bool) -> Result<Stack, OutOfMemory> {
    let usable = stack_bytes_for(bytes);
    match big_stack_class(usable) {
        None => {
            let top = slot_stack_top(slot.get());
            if !top_mapped {
                map_slot_top(slot)?;
            }
            let reservation = top - SLOT_STACK_STRIDE;
            Ok(Stack { top, limit: top - usable, mapped_bottom: top - PAGE_BYTES, reservation, class: IN_SLOT })
        }
        Some(class) => allocate_big(class, usable),
    }
}

/// Maps the top page of slot `slot`'s stretch (unmapped), making its tables first if need be.
/// IRQs masked, kernel stack.
pub fn map_slot_top(slot: Slot) -> Result<(), OutOfMemory> {
    let top = slot_stack_top(slot.get());
    vmap::prepare(top - SLOT_STACK_STRIDE, top)?;
    let frame = frames::allocate()?;
    vmap::map(top - PAGE_BYTES, frame);
    vmap::publish();
    Ok(())
}

/// Unmaps the top page of the free slot `slot`'s stretch and returns its frame (for the frame
/// pool when it has run dry). IRQs masked, kernel stack.
pub fn unmap_slot_top(slot: Slot) -> Option<usize> {
    let top = slot_stack_top(slot.get());
    let mut taken = None;
    vmap::unmap(top - PAGE_BYTES, top, |frame| taken = Some(frame));
    taken
}

/// Ends a stack: the pages it grew go back to the frame pool; a slot's stretch keeps its top
/// page mapped for the slot's next process, a big reservation is unmapped whole and kept for
/// the next stack of its size. IRQs masked, kernel stack; no core runs on the stack any more.
pub fn free(stack: Stack) {
    match stack.class {
        // Most stacks never grew: nothing to unmap, no TLB maintenance.
        IN_SLOT if stack.mapped_bottom == stack.top - PAGE_BYTES => {}
        IN_SLOT => vmap::unmap(stack.mapped_bottom, stack.top - PAGE_BYTES, frames::free),
        class => {
            vmap::unmap(stack.mapped_bottom, stack.top, frames::free);
            let mut big = BIG.lock();
            let list = &mut big.free[class];
            // Without room to remember it the reservation's addresses are lost, not its memory
            // (it holds none now): the region has room for millions of them.
            if list.try_reserve(1).is_ok() {
                list.push(stack.reservation);
            }
        }
    }
}

/// Big-stack reservations: the next never used, and those free by class.
struct BigStacks {
    next: usize,
    free: [Vec<usize>; BIG_STACK_CLASSES],
}

static BIG: IrqSpinLock<BigStacks> =
    IrqSpinLock::new(BigStacks { next: BIG_STACKS_VA, free: [const { Vec::new() }; BIG_STACK_CLASSES] });

fn allocate_big(class: usize, usable: usize) -> Result<Stack, OutOfMemory> {
    let bytes = big_stack_reservation(class);
    let reservation = {
        let mut big = BIG.lock();
        match big.free[class].pop() {
            Some(reservation) => reservation,
            None => {
                // Aligned to its size, so its level-3 tables are its own or shared with its
                // neighbours of the same class only.
                let reservation = big.next.next_multiple_of(bytes);
                if reservation + bytes > BIG_STACKS_VA + BIG_STACKS_BYTES {
                    return Err(OutOfMemory { requested_bytes: bytes });
                }
                big.next = reservation + bytes;
                reservation
            }
        }
    };
    let top = reservation + bytes;
    let limit = top - usable;
    // A reused reservation has its tables already (`prepare` then only walks them); one whose
    // tables could not all be made goes back to the list and gets the rest next time.
    let mapped = vmap::prepare(reservation, top).and_then(|()| frames::allocate());
    let frame = match mapped {
        Ok(frame) => frame,
        Err(error) => {
            let mut big = BIG.lock();
            if big.free[class].try_reserve(1).is_ok() {
                big.free[class].push(reservation);
            }
            return Err(error);
        }
    };
    vmap::map(top - PAGE_BYTES, frame);
    vmap::publish();
    Ok(Stack { top, limit, mapped_bottom: top - PAGE_BYTES, reservation, class })
}
