//! Where the kernel image, the boot stacks, the heap and the process region live: the address
//! layout's constants, the arithmetic on them, and the compile-time checks that the pieces fit.
//!
//! The constants must agree with `linker.ld` (`__max_cores`, `__boot_stack_bytes`,
//! `__guard_bytes`); a test here reads the script and compares. The kernel reads the section
//! boundaries the script defines into an [`ImageLayout`] (`beamcore::mm::layout::image`, the
//! one part that needs the linker's symbols and so stays in the kernel).

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

/// Most cores the kernel brings up (defined with the other limits the pure crates share).
pub use beamcore_limits::MAX_CORES;
/// Bytes of each core's boot (kernel) stack.
pub const BOOT_STACK_BYTES: usize = 64 * 1024;
/// The unmapped page below each stack, so an overflow faults instead of corrupting a neighbour.
pub const GUARD_BYTES: usize = 4096;
/// Distance between the tops of two neighbouring boot stacks.
pub const BOOT_STACK_STRIDE_BYTES: usize = BOOT_STACK_BYTES + GUARD_BYTES;
/// The translation granule.
pub const PAGE_BYTES: usize = 4096;

// The process region: virtual addresses above every byte of RAM and every device, where the
// control blocks and the process stacks live, mapped page by page at run time from free RAM
// (docs/memory.md). RAM and MMIO must lie below `PROCESS_REGION_START`: the boot code checks.
//
//   256 GiB  control blocks: slot i at CONTROL_BLOCKS_VA + i * size of a control block
//   320 GiB  big stacks: reservations of 128 KiB to 16 MiB for stacks of more than
//            MAX_SLOT_STACK_BYTES, carved on demand and reused
//   384 GiB  slot stacks: slot i owns SLOT_STACK_STRIDE bytes ending at slot_stack_top(i)
//   512 GiB  end of the 39-bit address space

/// Where the process region begins (level-1 entry 256 of the 39-bit, 3-level tables).
pub const PROCESS_REGION_START: usize = 256 << 30;
/// Most processes alive at once that the region has room for: each slot owns a stretch of
/// `SLOT_STACK_STRIDE` for its stack and room for its control block (the asserts below check it).
pub use beamcore_limits::MAX_PROCESSES;
/// The table of control blocks (room for `MAX_PROCESSES` of up to `CONTROL_BLOCKS_BYTES /
/// MAX_PROCESSES` = 512 bytes each).
pub const CONTROL_BLOCKS_VA: usize = PROCESS_REGION_START;
pub const CONTROL_BLOCKS_BYTES: usize = 1 << 30;
/// Reservations for stacks bigger than a slot's stretch holds.
pub const BIG_STACKS_VA: usize = 320 << 30;
pub const BIG_STACKS_BYTES: usize = 64 << 30;
/// Each slot's stack stretch: the stack grows down from its top; below the most it may grow
/// to, the rest of the stretch is its guard (never mapped, at least one page).
pub const SLOT_STACKS_VA: usize = 384 << 30;
pub const SLOT_STACK_STRIDE: usize = 64 << 10;
/// The largest stack a slot's stretch holds (the lowest page stays a guard); bigger stacks get
/// a big-stack reservation.
pub const MAX_SLOT_STACK_BYTES: usize = SLOT_STACK_STRIDE - PAGE_BYTES;
/// The smallest and largest stack a process may ask for.
pub const MIN_STACK_BYTES: usize = PAGE_BYTES;
pub const MAX_STACK_BYTES: usize = 8 << 20;
/// Big-stack reservations are powers of two from 2^`BIG_STACK_MIN_SHIFT` (128 KiB) to
/// 2^`BIG_STACK_MAX_SHIFT` (16 MiB: 8 MiB of stack and more than 8 MiB of guard).
pub const BIG_STACK_MIN_SHIFT: u32 = 17;
pub const BIG_STACK_MAX_SHIFT: u32 = 24;
/// Number of big-stack size classes.
pub const BIG_STACK_CLASSES: usize = (BIG_STACK_MAX_SHIFT - BIG_STACK_MIN_SHIFT + 1) as usize;

const _: () = assert!(SLOT_STACKS_VA + MAX_PROCESSES * SLOT_STACK_STRIDE == 1 << 39, "slot stacks fill the top");
const _: () = assert!(BIG_STACKS_VA + BIG_STACKS_BYTES <= SLOT_STACKS_VA);
const _: () = assert!(CONTROL_BLOCKS_VA + CONTROL_BLOCKS_BYTES <= BIG_STACKS_VA);
const _: () = assert!(MAX_STACK_BYTES + PAGE_BYTES <= 1 << BIG_STACK_MAX_SHIFT);

/// One past the highest byte of slot `slot`'s stack stretch: its initial stack pointer.
pub const fn slot_stack_top(slot: u32) -> usize {
    SLOT_STACKS_VA + (slot as usize + 1) * SLOT_STACK_STRIDE
}

/// Usable bytes for a stack that asked for `bytes`: whole pages, within the limits.
pub const fn stack_bytes_for(bytes: usize) -> usize {
    let clamped = if bytes < MIN_STACK_BYTES {
        MIN_STACK_BYTES
    } else if bytes > MAX_STACK_BYTES {
        MAX_STACK_BYTES
    } else {
        bytes
    };
    clamped.next_multiple_of(PAGE_BYTES)
}

/// The big-stack class (index) of a stack of `usable` bytes (from [`stack_bytes_for`]) that
/// does not fit a slot's stretch: the smallest power-of-two reservation holding it and a page
/// of guard. `None` when it fits the slot's stretch.
pub const fn big_stack_class(usable: usize) -> Option<usize> {
    if usable <= MAX_SLOT_STACK_BYTES {
        return None;
    }
    let reservation = (usable + PAGE_BYTES).next_power_of_two();
    let shift = reservation.trailing_zeros();
    let shift = if shift < BIG_STACK_MIN_SHIFT { BIG_STACK_MIN_SHIFT } else { shift };
    Some((shift - BIG_STACK_MIN_SHIFT) as usize)
}

/// Bytes of the reservation of big-stack class `class`.
pub const fn big_stack_reservation(class: usize) -> usize {
    1 << (BIG_STACK_MIN_SHIFT as usize + class)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// `linker.ld` sizes the boot stack area with its own copy of the constants; they must agree
    /// with this module's, or a core's stack would lie beyond the area (or guard pages be
    /// unmapped in the middle of something else).
    #[test]
    fn linker_script_agrees_with_the_layout_constants() {
        let script = include_str!("../../../linker.ld");
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

    #[test]
    fn slot_stacks_tile_their_region_without_overlap() {
        assert_eq!(slot_stack_top(0), SLOT_STACKS_VA + SLOT_STACK_STRIDE);
        assert_eq!(slot_stack_top(MAX_PROCESSES as u32 - 1), 1 << 39);
        // A slot's stretch never straddles a 2 MiB level-3 table: one table serves 32 slots.
        assert_eq!((2 << 20) % SLOT_STACK_STRIDE, 0);
        assert_eq!(SLOT_STACKS_VA % (2 << 20), 0);
    }

    #[test]
    fn stack_sizes_round_to_pages_within_limits() {
        assert_eq!(stack_bytes_for(0), PAGE_BYTES);
        assert_eq!(stack_bytes_for(1), PAGE_BYTES);
        assert_eq!(stack_bytes_for(4097), 2 * PAGE_BYTES);
        assert_eq!(stack_bytes_for(usize::MAX), MAX_STACK_BYTES);
    }

    #[test]
    fn big_stacks_get_the_smallest_class_with_a_guard_page() {
        assert_eq!(big_stack_class(MAX_SLOT_STACK_BYTES), None);
        assert_eq!(big_stack_class(MAX_SLOT_STACK_BYTES + PAGE_BYTES), Some(0));
        assert_eq!(big_stack_reservation(0), 128 << 10);
        // 256 KiB of stack needs 256 KiB + a page: the 512 KiB class.
        assert_eq!(big_stack_class(256 << 10).map(big_stack_reservation), Some(512 << 10));
        assert_eq!(big_stack_class(124 << 10).map(big_stack_reservation), Some(128 << 10));
        assert_eq!(big_stack_class(MAX_STACK_BYTES), Some(BIG_STACK_CLASSES - 1));
        for usable in (MAX_SLOT_STACK_BYTES + PAGE_BYTES..=MAX_STACK_BYTES).step_by(PAGE_BYTES * 61) {
            let class = big_stack_class(usable).unwrap();
            assert!(big_stack_reservation(class) >= usable + PAGE_BYTES);
            assert!(class == 0 || big_stack_reservation(class - 1) < usable + PAGE_BYTES);
        }
    }
}
