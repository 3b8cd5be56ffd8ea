//! Where the kernel image, the boot stacks and the heap live, as the linker script places them.
//!
//! The constants must agree with `linker.ld` (`__max_cores`, `__boot_stack_bytes`,
//! `__guard_bytes`); `image()` reads the section boundaries the script defines.

/// Most cores the kernel brings up; per-core arrays are sized by it (and `linker.ld`'s
/// `__max_cores`, which a host test keeps equal). Cores a machine has beyond it stay off (`smp:`
/// says so at boot). What each core costs in the image: a boot stack and its guard page (68 KiB,
/// `.boot_stacks`, not loaded) and about 2 KiB of scheduler and shared state in `.data`, 12 bytes
/// of it per other core (`last_steal`, `pings_from`). At 64: 4.25 MiB of boot stacks, 128 KiB of
/// per-core state (README.md, "Cores and memory").
pub const MAX_CORES: usize = 64;
/// Bytes of each core's boot (kernel) stack.
pub const BOOT_STACK_BYTES: usize = 64 * 1024;
/// The unmapped page below each stack, so an overflow faults instead of corrupting a neighbour.
pub const GUARD_BYTES: usize = 4096;
/// Distance between the tops of two neighbouring boot stacks.
pub const BOOT_STACK_STRIDE_BYTES: usize = BOOT_STACK_BYTES + GUARD_BYTES;
/// The translation granule.
pub const PAGE_BYTES: usize = 4096;

/// Address ranges of the loaded image, in bytes; `[start, end)`.
#[derive(Clone, Copy, Debug)]
pub struct ImageLayout {
    pub kernel_start: usize,
    pub text_end: usize,
    pub rodata_start: usize,
    pub rodata_end: usize,
    pub data_start: usize,
    pub data_end: usize,
    pub boot_stacks_start: usize,
    pub boot_stacks_end: usize,
    pub kernel_end: usize,
}

impl ImageLayout {
    /// The guard page and the stack of core `core`: `(guard_start, stack_start, stack_top)`.
    pub fn boot_stack(&self, core: usize) -> (usize, usize, usize) {
        let guard = self.boot_stacks_start + core * BOOT_STACK_STRIDE_BYTES;
        (guard, guard + GUARD_BYTES, guard + BOOT_STACK_STRIDE_BYTES)
    }
}

/// The image layout of the running kernel, from the linker script's symbols.
#[cfg(target_os = "none")]
pub fn image() -> ImageLayout {
    unsafe extern "C" {
        static __kernel_start: u8;
        static __text_end: u8;
        static __rodata_start: u8;
        static __rodata_end: u8;
        static __data_start: u8;
        static __data_end: u8;
        static __boot_stacks_start: u8;
        static __boot_stacks_end: u8;
        static __kernel_end: u8;
    }
    let addr = |symbol: *const u8| symbol as usize;
    ImageLayout {
        kernel_start: addr(&raw const __kernel_start),
        text_end: addr(&raw const __text_end),
        rodata_start: addr(&raw const __rodata_start),
        rodata_end: addr(&raw const __rodata_end),
        data_start: addr(&raw const __data_start),
        data_end: addr(&raw const __data_end),
        boot_stacks_start: addr(&raw const __boot_stacks_start),
        boot_stacks_end: addr(&raw const __boot_stacks_end),
        kernel_end: addr(&raw const __kernel_end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `linker.ld` sizes the boot stack area with its own copy of the constants; they must agree
    /// with this module's, or a core's stack would lie beyond the area (or guard pages be
    /// unmapped in the middle of something else).
    #[test]
    fn linker_script_agrees_with_the_layout_constants() {
        let script = include_str!("../../linker.ld");
        let value = |symbol: &str| -> usize {
            let line = script
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{symbol} =")))
                .unwrap_or_else(|| panic!("linker.ld defines {symbol}"));
            let text = line.split('=').nth(1).unwrap().trim().trim_end_matches(';').trim();
            match text.strip_suffix('K') {
                Some(kib) => kib.parse::<usize>().unwrap() * 1024,
                None => text.parse().unwrap(),
            }
        };
        assert_eq!(value("__max_cores"), MAX_CORES);
        assert_eq!(value("__boot_stack_bytes"), BOOT_STACK_BYTES);
        assert_eq!(value("__guard_bytes"), GUARD_BYTES);
    }
}
