//! Turns the MMU and caches on: one identity map shared by every core.
//!
//! The boot core builds the tables with the MMU still off (so they land in RAM, not in a
//! cache), then every core loads the same TTBR0. Before a core turns its data cache on, it
//! invalidates the memory it wrote with the cache off (see `enable_this_core` and the "Caches"
//! note in boot.S). RAM is Normal write-back inner-shareable
//! (exclusives between cores are only architecturally reliable there), MMIO is Device-nGnRE,
//! only `.text` is executable, and each boot stack has an unmapped guard page below it.

use core::cell::UnsafeCell;

use aarch64_cpu::asm::barrier;
use aarch64_cpu::registers::{ID_AA64MMFR0_EL1, MAIR_EL1, Readable, SCTLR_EL1, TCR_EL1, TTBR0_EL1, Writeable};

use crate::layout::{GUARD_BYTES, ImageLayout, MAX_CORES, PAGE_BYTES, PROCESS_REGION_START};
use crate::platform::{GicDescription, Platform, Region};
use beamcore_page_tables::{
    self as paging, MAIR_VALUE, MapError, MemoryKind, PageTables, ReadTables, Translation, VA_BITS,
};

/// Translation tables beyond the root: enough for a few GiB of RAM split around the kernel
/// image and the device windows of both boards. (The process region's tables are frames.)
const POOL_TABLES: usize = 24;

struct KernelTables(UnsafeCell<PageTables<POOL_TABLES>>);

// SAFETY: the tables are written by the boot core in `build_identity_map`, before any other
// core runs; afterwards only the process region's level-1 entries change (invalid to table
// descriptor, under `mm::vmap`'s lock), never an entry another core may be using.
unsafe impl Sync for KernelTables {}

static TABLES: KernelTables = KernelTables(UnsafeCell::new(PageTables::new()));

fn page_round(region: Region) -> (u64, u64) {
    let page = PAGE_BYTES as u64;
    let start = region.base & !(page - 1);
    let end = (region.end() + page - 1) & !(page - 1);
    (start, end - start)
}

/// Builds the kernel's identity map for this platform and image. The process region (from
/// `layout::PROCESS_REGION_START`) is left empty: `mm::vmap` maps it at run time.
///
/// # Safety
/// Boot core only, once, before any core has turned its MMU on.
pub unsafe fn build_identity_map(
    platform: &Platform,
    image: &ImageLayout,
    extra_devices: &[Region],
) -> Result<(), MapError> {
    // SAFETY: exclusive access per the contract: no other core runs, the MMU is off.
    let tables = unsafe { &mut *TABLES.0.get() };
    let region = PROCESS_REGION_START as u64;
    for &ram in &platform.memory {
        let (start, bytes) = page_round(ram);
        // RAM from the process region up is left out: those addresses are the region's
        // (`kernel_init` gives the frame pool only what lies below, too).
        let bytes = bytes.min(region.saturating_sub(start));
        if bytes > 0 {
            tables.map(start, start, bytes, MemoryKind::ReadWrite)?;
        }
    }
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
        if start + bytes > region {
            return Err(MapError::InProcessRegion { address: start });
        }
        tables.map(start, start, bytes, MemoryKind::Device)?;
    }
    // The tables were written with the data cache off, straight to RAM. They live in .bss,
    // which `enable_this_core` invalidates on the boot core just before its caches go on, so
    // the first cacheable walk reads RAM.
    let (start, bytes) = tables.memory();
    debug_assert!(
        image.data_start as u64 <= start && start + bytes as u64 <= image.boot_stacks_start as u64,
        "the page tables lie in .data/.bss, which enable_this_core invalidates"
    );
    Ok(())
}

/// The root (level-1) table every core uses, for `mm::vmap` to add the process region's
/// level-2 tables to.
pub fn root_table() -> *mut u64 {
    // SAFETY: only the address is taken; the tables are written as `KernelTables` allows.
    unsafe { (*TABLES.0.get()).root_address() as *mut u64 }
}

/// The kernel's tables as the MMU sees them: wherever a descriptor points, in RAM, read through
/// the identity map. Unlike [`PageTables`]' own walk, this one follows the tables `mm::vmap`
/// makes from frames for the process region. Only [`translate`] makes one, and only walks from
/// the kernel's root with it.
struct IdentityMappedTables;

impl ReadTables for IdentityMappedTables {
    fn descriptor(&self, table: u64, index: usize) -> Option<u64> {
        let entry = (table as *const u64).wrapping_add(index.min(511));
        // SAFETY: `translate` walks from the root of `TABLES`, so `table` is that root or an
        // address read from a table descriptor of the kernel's tables, which only ever hold the
        // addresses of `TABLES`' own tables or of frames `mm::vmap` made tables of: RAM,
        // identity-mapped and never freed. The index is below 512, inside the table. Volatile,
        // one aligned word: another core may turn an invalid entry of the process region into a
        // table descriptor meanwhile (see `KernelTables`), never change a valid one.
        Some(unsafe { entry.read_volatile() })
    }
}

/// What the tables say about `address`, for tests and fault reports.
pub fn translate(address: u64) -> Option<Translation> {
    paging::translate(&IdentityMappedTables, root_table() as u64, address)
}

/// Turns on the MMU and caches of the calling core (logical id `core`) with the kernel's tables.
///
/// Reads no memory that another core may have written since boot (only constants, ID
/// registers and link-time addresses), so it is safe to run with caches still off.
///
/// Before setting SCTLR_EL1.C it invalidates, to the point of coherency, what this core wrote
/// with its data cache off: on the boot core (core 0) [.data start, top of its boot stack),
/// which holds .data, .bss (the page tables among it) and its stack; on a secondary its own
/// boot stack. Once another core runs with caches on, it may have fetched clean copies of
/// these lines speculatively (all RAM is mapped cacheable); with our cache on they would hide
/// what we wrote to RAM. The invalidation, the SCTLR write and the ISB are one asm block, so
/// no store (to the stack) comes between the last invalidation and the cache going on; a line
/// fetched after the invalidation is fetched from RAM, which already holds our writes.
/// Invalidating .data loses nothing: the loader must leave the image clean to the point of
/// coherency (as Linux's boot protocol requires), and nothing writes it with caches on yet.
///
/// # Safety
/// `build_identity_map` has completed (on the boot core, with its effects visible: secondaries
/// are started after it), the code and stack in use are identity-mapped by it, the caller runs
/// on the boot stack of `core`, and no other core writes that stack or (for core 0) .data/.bss.
pub unsafe fn enable_this_core(core: usize) {
    let image = crate::layout::image();
    let (_, stack_start, stack_top) = image.boot_stack(core);
    let written_start = if core == 0 { image.data_start } else { stack_start };
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
    // ORDERING: ISB: the MAIR, TCR and TTBR0 writes must take effect before the TLB
    // invalidation below and the MMU enable (system-register writes need a context
    // synchronisation event before later instructions are guaranteed to use them).
    barrier::isb(barrier::SY);
    // ORDERING: DSB NSH after TLBI and after IC IALLU: each maintenance operation completes
    // (for this core: local, non-shareable) before what follows; the final ISB discards
    // instructions fetched before it.
    // SAFETY: discarding this core's stale TLB entries and instruction cache before the first
    // translated access; no memory is affected.
    unsafe {
        core::arch::asm!("tlbi vmalle1", "dsb nsh", "ic iallu", "dsb nsh", "isb", options(nostack, preserves_flags))
    };
    let sctlr = SCTLR_EL1.get() | SCTLR_M | SCTLR_C | SCTLR_I;
    let sctlr = sctlr & !SCTLR_A;
    // SAFETY: invalidates lines of memory this core wrote with its cache off, which are in RAM
    // (nothing newer exists in any cache: no other core writes it, contract), then enables
    // translation with the tables built above; code and stack are identity-mapped.
    unsafe {
        core::arch::asm!(
            "mrs {line}, ctr_el0",
            "ubfx {line}, {line}, #16, #4",
            "mov {tmp}, #4",
            "lsl {line}, {tmp}, {line}",
            "sub {tmp}, {line}, #1",
            "bic {address}, {address}, {tmp}",
            // ORDERING: DSB SY: this core's caches-off stores (the stack's included) complete
            // to RAM before the invalidations (DC IVAC is ordered after earlier stores to the
            // same line only for cacheable memory), so a line another core fetches after its
            // invalidation holds them.
            "dsb sy",
            "2:",
            "dc ivac, {address}",
            "add {address}, {address}, {line}",
            "cmp {address}, {end}",
            "b.lo 2b",
            // ORDERING: DSB SY: the invalidations complete before the SCTLR_EL1 write turns
            // the cache on, or a stale line could still be hit.
            "dsb sy",
            "msr sctlr_el1, {sctlr}",
            // ORDERING: ISB: the new SCTLR_EL1 takes effect for every instruction after it
            // (a system-register write needs a context synchronisation event).
            "isb",
            address = inout(reg) written_start as u64 => _,
            end = in(reg) stack_top as u64,
            sctlr = in(reg) sctlr,
            line = out(reg) _,
            tmp = out(reg) _,
            options(nostack)
        )
    };
}

/// SCTLR_EL1 bits: MMU, alignment check, data cache, instruction cache.
const SCTLR_M: u64 = 1 << 0;
const SCTLR_A: u64 = 1 << 1;
const SCTLR_C: u64 = 1 << 2;
const SCTLR_I: u64 = 1 << 12;
