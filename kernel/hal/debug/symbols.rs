//! The kernel's table of its own functions (like Linux's kallsyms): the table format and its
//! lookups are pure (crates/kallsyms, host-tested); finding the table in the running image is
//! this module's part.

pub use beamcore_kallsyms::*;

/// The running kernel's table, from the `.kallsyms` section `linker.ld` places between
/// `__kallsyms_start` and `__kallsyms_end` ([`SymbolTable::EMPTY`] in an image linked without
/// it).
pub fn kernel_symbols() -> SymbolTable<'static> {
    unsafe extern "C" {
        static __kallsyms_start: u8;
        static __kallsyms_end: u8;
    }
    let start = &raw const __kallsyms_start;
    let bytes = (&raw const __kallsyms_end as usize).saturating_sub(start as usize);
    // SAFETY: the linker script puts the `.kallsyms` bytes between the two symbols, in the
    // read-only part of the image (mapped from boot on, identity before the MMU is on) that
    // nothing writes; `bytes` is their distance (0 when the section is empty).
    let table = unsafe { core::slice::from_raw_parts(start, bytes) };
    SymbolTable::parse(table).unwrap_or(SymbolTable::EMPTY)
}
