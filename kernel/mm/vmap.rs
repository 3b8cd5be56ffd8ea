//! Mapping pages of the process region (above `layout::PROCESS_REGION_START`) at run time: its
//! level-2 and level-3 tables are made on demand from frames, and single pages are mapped and
//! unmapped while other cores run.
//!
//! **TLB maintenance.** Mapping a page whose entry was invalid needs no TLB invalidation: a TLB
//! never holds a translation that faults (the architecture does not cache translation faults),
//! so there is nothing stale anywhere; the new entry only has to reach the table walkers (DSB
//! ISHST) before this core relies on it (ISB). Unmapping does: any core may hold the old
//! translation, so the entry is cleared, then invalidated on every core (TLBI VALE1IS), and the
//! invalidation completes (DSB ISH) before the frame is handed out again.
//!
//! **Concurrency.** Tables are only ever added (under `TABLES`), never changed or freed, so a
//! walk to a page whose tables exist needs no lock. A page's own entry belongs to whoever owns
//! the page's stack or slot (one core at a time, handed over by the scheduler's release and
//! acquire), so it changes without a lock too.

use super::frames;
use super::layout::{PAGE_BYTES, PROCESS_REGION_START};
use super::paging::{MemoryKind, page_address, page_descriptor, table_address, table_descriptor, table_index};
use crate::arch::mmu;
use crate::error::OutOfMemory;
use crate::sync::IrqSpinLock;

/// Serialises the creation of tables (several cores may need one in the same level-2 table).
static TABLES: IrqSpinLock<()> = IrqSpinLock::new(());

/// Bytes one level-3 table maps.
const LEVEL3_SPAN: usize = 2 << 20;
/// Pages unmapped per TLB-invalidation round (their frames are held on the stack meanwhile).
const UNMAP_BATCH: usize = 16;

/// The level-3 table that covers `va`, made (from zeroed frames, with its level-2 table if
/// need be) when `create` is set; `None` when it does not exist and `create` is not set.
///
/// # Safety
/// `va` lies in the process region; with `create`, the caller holds `TABLES`.
unsafe fn level3_table(va: usize, create: bool) -> Result<Option<*mut u64>, OutOfMemory> {
    debug_assert!(va >= PROCESS_REGION_START);
    let mut table = mmu::root_table();
    for level in 1..=2 {
        // SAFETY: `table` is the root or a table this module made (a frame, identity-mapped);
        // an index is below 512.
        let entry = unsafe { table.add(table_index(va as u64, level)) };
        // SAFETY: `entry` points into a live table (above); a concurrent writer only ever
        // turns an invalid entry of another VA into a table descriptor.
        let descriptor = unsafe { entry.read_volatile() };
        table = match table_address(descriptor) {
            Some(next) => next as *mut u64,
            None if create => {
                let frame = frames::allocate_zeroed()?;
                // ORDERING: DMB ISHST: the new table's zeros are ordered before the descriptor
                // that makes it reachable. `prepare`'s look without `TABLES` may see the
                // descriptor and go on to write an entry of this table (its address depends on
                // the descriptor it read, which orders that write after the read); without the
                // barrier a zero still in flight could land on that entry after it. The table
                // walkers see both with the DSB ISHST that publishes the first page mapped
                // through the table (`publish`): nothing walks this part of the region before.
                // SAFETY: a barrier only; it changes no memory.
                unsafe { core::arch::asm!("dmb ishst", options(nostack, preserves_flags)) };
                // SAFETY: as above; under `TABLES` (contract), so no one else writes it.
                unsafe { entry.write_volatile(table_descriptor(frame as u64)) };
                frame as *mut u64
            }
            None => return Ok(None),
        };
    }
    Ok(Some(table))
}

/// Makes sure the tables exist for every page of `[start, end)` (page-aligned, in the process
/// region), taking frames for new ones. IRQs masked, kernel stack.
///
/// Tables are only ever added, so when every one the range needs exists already (as for all
/// but one stack in 512) the walk alone says so and `TABLES` is not taken: cores making stacks
/// at once spun on it (QEMU's execution log of fib/default/8: 180 one-look turns ending here in
/// the first 20 ms once slots were made per core).
pub fn prepare(start: usize, end: usize) -> Result<(), OutOfMemory> {
    if tables_exist(start, end) {
        return Ok(());
    }
    let _guard = TABLES.lock();
    let mut va = start & !(LEVEL3_SPAN - 1);
    while va < end {
        // SAFETY: `va` is in the process region (contract) and we hold `TABLES`.
        unsafe { level3_table(va, true)? };
        va += LEVEL3_SPAN;
    }
    Ok(())
}

/// Whether the level-3 tables of every page of `[start, end)` exist.
fn tables_exist(start: usize, end: usize) -> bool {
    let mut va = start & !(LEVEL3_SPAN - 1);
    while va < end {
        // SAFETY: `va` is in the process region (`prepare`'s contract); without `create`
        // nothing is written, and a descriptor read is either invalid or a table made for good.
        if !matches!(unsafe { level3_table(va, false) }, Ok(Some(_))) {
            return false;
        }
        va += LEVEL3_SPAN;
    }
    true
}

/// The level-3 entry of `va`, whose tables exist (`prepare` covered it).
fn entry(va: usize) -> *mut u64 {
    // SAFETY: without `create` nothing is written; the walk reads descriptors that never change
    // once valid.
    let table = unsafe { level3_table(va, false) };
    let table = table.ok().flatten().expect("the process region's tables exist for a page that is used");
    // SAFETY: an index below 512 of a live level-3 table.
    unsafe { table.add(table_index(va as u64, 3)) }
}

/// Whether the page at `va` (tables prepared) is mapped.
pub fn is_mapped(va: usize) -> bool {
    // SAFETY: `entry` points into a live table; the read is of one aligned word.
    page_address(unsafe { entry(va).read_volatile() }).is_some()
}

/// Maps the page at `va` (unmapped, tables prepared) to `frame`. The caller owns the page (its
/// stack or slot) and calls [`publish`] before anything uses it.
pub fn map(va: usize, frame: usize) {
    debug_assert!(!is_mapped(va), "{va:#x} is mapped already");
    // SAFETY: a live level-3 entry of a page the caller owns (contract): no one else writes it.
    unsafe { entry(va).write_volatile(page_descriptor(frame as u64, MemoryKind::ReadWrite)) };
}

/// Makes the pages [`map`] just mapped usable, on this core at once and on any other core from
/// its next access.
pub fn publish() {
    // ORDERING: DSB ISHST: the new entries (and any table made for them) reach the table walkers
    // of every core in the inner-shareable domain before what follows: this core's use, and the
    // release that hands the stack or slot to another core. No TLBI: the entries were invalid,
    // so no TLB holds them. ISB: this core's later instructions are translated after the change
    // (a walk begun speculatively before it might otherwise still fault).
    // SAFETY: barriers only; they change no memory.
    unsafe { core::arch::asm!("dsb ishst", "isb", options(nostack, preserves_flags)) };
}

/// Unmaps every mapped page of `[start, end)` (tables prepared; the caller owns the pages and no
/// core uses them any more) and gives each frame to `release` once no TLB holds it.
pub fn unmap(start: usize, end: usize, mut release: impl FnMut(usize)) {
    let mut va = start;
    while va < end {
        let mut batch = [(0usize, 0usize); UNMAP_BATCH];
        let mut taken = 0;
        while va < end && taken < UNMAP_BATCH {
            let entry = entry(va);
            // SAFETY: a live level-3 entry of a page the caller owns (contract).
            if let Some(frame) = page_address(unsafe { entry.read_volatile() }) {
                // SAFETY: as above.
                unsafe { entry.write_volatile(0) };
                batch[taken] = (va, frame as usize);
                taken += 1;
            }
            va += PAGE_BYTES;
        }
        if taken == 0 {
            continue;
        }
        // ORDERING: DSB ISHST: the cleared entries are visible to every core's table walker
        // before the invalidations, so no core can walk the old entry back into its TLB after
        // its invalidation.
        // SAFETY: a barrier; changes no memory.
        unsafe { core::arch::asm!("dsb ishst", options(nostack, preserves_flags)) };
        for &(page, _) in &batch[..taken] {
            // SAFETY: invalidates the translation of one page on every core (inner shareable,
            // last level, any ASID: the kernel's entries are global); changes no memory.
            unsafe {
                core::arch::asm!("tlbi vale1is, {}", in(reg) (page as u64) >> 12, options(nostack, preserves_flags))
            };
        }
        // ORDERING: DSB ISH: every core has completed the invalidations before the frames are
        // handed out again (a stale translation would let the old owner's last access land in
        // the new owner's page). ISB: this core's own later instructions see the change.
        // SAFETY: barriers only.
        unsafe { core::arch::asm!("dsb ish", "isb", options(nostack, preserves_flags)) };
        for &(_, frame) in &batch[..taken] {
            release(frame);
        }
    }
}
