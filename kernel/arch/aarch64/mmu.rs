//! Turns the MMU and caches on: one identity map shared by every core.
//!
//! The boot core builds the tables with the MMU still off (so they land in RAM, not in a
//! cache), then every core loads the same TTBR0. RAM is Normal write-back inner-shareable
//! (exclusives between cores are only architecturally reliable there), MMIO is Device-nGnRE,
//! only `.text` is executable, and each boot stack has an unmapped guard page below it.

use core::cell::UnsafeCell;

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{
    ID_AA64MMFR0_EL1, MAIR_EL1, ReadWriteable, Readable, SCTLR_EL1, TCR_EL1, TTBR0_EL1, Writeable,
};

use crate::mm::layout::{GUARD_BYTES, ImageLayout, MAX_CORES, PAGE_BYTES};
use crate::mm::paging::{MAIR_VALUE, MapError, MemoryKind, PageTables, VA_BITS};
use crate::platform::{GicDescription, Platform, Region};

/// Translation tables beyond the root: enough for a few GiB of RAM split around the kernel
/// image and the device windows of both boards.
/// (The stack pool, mapped with 4 KiB pages, takes one table per 2 MiB of it.)
const POOL_TABLES: usize = 80;

struct KernelTables(UnsafeCell<PageTables<POOL_TABLES>>);

// SAFETY: the tables are written by the boot core in `build_identity_map`, before any other
// core runs; afterwards only single level-3 entries change, under `PAGE_LOCK`
// (`set_page_mapped`), which never allocates or splits tables.
unsafe impl Sync for KernelTables {}

static TABLES: KernelTables = KernelTables(UnsafeCell::new(PageTables::new()));
/// Serialises run-time changes of single page entries (guard pages of process stacks).
static PAGE_LOCK: crate::sync::IrqSpinLock<()> = crate::sync::IrqSpinLock::new(());

fn page_round(region: Region) -> (u64, u64) {
    let page = PAGE_BYTES as u64;
    let start = region.base & !(page - 1);
    let end = (region.end() + page - 1) & !(page - 1);
    (start, end - start)
}

/// Builds the kernel's identity map for this platform and image.
///
/// # Safety
/// Boot core only, once, before any core has turned its MMU on. `page_granular` is mapped
/// read-write with 4 KiB pages (the process stack pool, whose guard pages change at run time).
pub unsafe fn build_identity_map(
    platform: &Platform,
    image: &ImageLayout,
    extra_devices: &[Region],
    page_granular: Region,
) -> Result<(), MapError> {
    // SAFETY: exclusive access per the contract: no other core runs, the MMU is off.
    let tables = unsafe { &mut *TABLES.0.get() };
    for &ram in &platform.memory {
        let (start, bytes) = page_round(ram);
        tables.map(start, start, bytes, MemoryKind::ReadWrite)?;
    }
    tables.map_pages(page_granular.base, page_granular.base, page_granular.bytes, MemoryKind::ReadWrite)?;
    let text = image.kernel_start as u64;
    tables.map(text, text, (image.text_end - image.kernel_start) as u64, MemoryKind::Code)?;
    let rodata = image.rodata_start as u64;
    tables.map(rodata, rodata, (image.rodata_end - image.rodata_start) as u64, MemoryKind::ReadOnly)?;
    for core in 0..MAX_CORES {
        let (guard, _, _) = image.boot_stack(core);
        tables.unmap(guard as u64, GUARD_BYTES as u64)?;
    }
    let gic_regions: [Region; 2] = match platform.gic {
        GicDescription::V2 { distributor, cpu_interface } => [distributor, cpu_interface],
        GicDescription::V3 { distributor, redistributors, .. } => [distributor, redistributors],
    };
    let devices = [platform.uart.region].into_iter().chain(gic_regions).chain(extra_devices.iter().copied());
    for device in devices {
        let (start, bytes) = page_round(device);
        tables.map(start, start, bytes, MemoryKind::Device)?;
    }
    // The tables were written with the data cache off, straight to RAM. Invalidate any stale
    // lines a loader may have left for this memory, so the first cacheable walk reads RAM.
    let (start, bytes) = tables.memory();
    let line = 64;
    barrier::dsb(barrier::SY);
    for address in (start..start + bytes as u64).step_by(line) {
        // SAFETY: invalidating by VA memory that only this core has written, with caches off;
        // nothing newer than RAM can be lost.
        unsafe { core::arch::asm!("dc ivac, {}", in(reg) address, options(nostack, preserves_flags)) };
    }
    barrier::dsb(barrier::SY);
    Ok(())
}

/// Maps (`true`) or unmaps (`false`) the single page at `address`, which must lie in the
/// page-granular region given to `build_identity_map`; returns false if it does not. Every core
/// sees the change when this returns (the stale translation is invalidated inner-shareable).
pub fn set_page_mapped(address: usize, mapped: bool) -> bool {
    let _guard = PAGE_LOCK.lock();
    let kind = mapped.then_some(MemoryKind::ReadWrite);
    // SAFETY: single level-3 entries change only under PAGE_LOCK (see `KernelTables`); the MMU
    // reads entries atomically (64-bit aligned stores).
    let changed = unsafe { (*TABLES.0.get()).set_page(address as u64, kind) };
    if changed {
        // ORDERING: the entry store must be visible to every core's table walker before the TLB
        // invalidation (DSB ISHST), and the invalidation complete on every core (DSB ISH)
        // before anyone relies on the new mapping (ISB for this core's own fetches).
        // SAFETY: TLB maintenance by VA for the page just changed; affects no memory.
        unsafe {
            core::arch::asm!(
                "dsb ishst",
                "tlbi vae1is, {page}",
                "dsb ish",
                "isb",
                page = in(reg) (address as u64) >> 12,
                options(nostack, preserves_flags)
            )
        };
    }
    changed
}

/// What the tables say about `address`, for tests and fault reports.
pub fn translate(address: u64) -> Option<crate::mm::paging::Translation> {
    // SAFETY: after boot the tables are only read (see `KernelTables`).
    unsafe { (*TABLES.0.get()).translate(address) }
}

/// Turns on the MMU and caches of the calling core with the kernel's tables.
///
/// Reads no memory that another core may have written since boot (only constants, ID
/// registers and the tables' link-time address), so it is safe to run with caches still off.
///
/// # Safety
/// `build_identity_map` has completed (on the boot core, with its effects visible: secondaries
/// are started after it), and the code and stack in use are identity-mapped by it.
pub unsafe fn enable_this_core() {
    // SAFETY: the tables are no longer written (contract); `root_address` only computes the
    // root table's address, it loads nothing from table memory.
    let root_address = unsafe { (*TABLES.0.get()).root_address() };
    let pa_range = ID_AA64MMFR0_EL1.read(ID_AA64MMFR0_EL1::PARange).min(5);

    MAIR_EL1.set(MAIR_VALUE);
    TCR_EL1.write(
        TCR_EL1::T0SZ.val(u64::from(64 - VA_BITS))
            + TCR_EL1::IRGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable
            + TCR_EL1::ORGN0::WriteBack_ReadAlloc_WriteAlloc_Cacheable
            + TCR_EL1::SH0::Inner
            + TCR_EL1::TG0::KiB_4
            + TCR_EL1::EPD1::DisableTTBR1Walks
            + TCR_EL1::IPS.val(pa_range),
    );
    TTBR0_EL1.set_baddr(root_address);
    barrier::isb(barrier::SY);
    // SAFETY: discarding this core's stale TLB entries and instruction cache before the first
    // translated access; no memory is affected.
    unsafe {
        core::arch::asm!("tlbi vmalle1", "dsb nsh", "ic iallu", "dsb nsh", "isb", options(nostack, preserves_flags))
    };
    SCTLR_EL1.modify(SCTLR_EL1::M::Enable + SCTLR_EL1::C::Cacheable + SCTLR_EL1::I::Cacheable + SCTLR_EL1::A::Disable);
    barrier::isb(barrier::SY);
}
