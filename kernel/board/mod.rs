//! What differs by board: load address (build.rs), where the device tree is, the defaults used
//! when there is none, extra MMIO windows and UART set-up. One board is compiled in.

use crate::platform::Platform;

#[cfg(not(feature = "board-rpi4"))]
mod virt;
#[cfg(not(feature = "board-rpi4"))]
pub use virt::*;

/// Reads the device tree at `address` if one is there (checks the magic and a sane size).
///
/// # Safety
/// `address` is readable RAM for the tree's size (the MMU may be off).
pub unsafe fn read_device_tree(address: u64) -> Option<Result<Platform, crate::platform::PlatformError>> {
    if address == 0 || !address.is_multiple_of(4) {
        return None;
    }
    let header = address as *const u32;
    // SAFETY: the caller promises the first bytes are readable; the header is two words.
    let (magic, total) = unsafe { (u32::from_be(header.read_volatile()), u32::from_be(header.add(1).read_volatile())) };
    if magic != crate::platform::FDT_MAGIC || !(40..=(4 << 20)).contains(&total) {
        return None;
    }
    // SAFETY: the header says the tree spans `total` bytes from `address` (bounded above).
    let blob = unsafe { core::slice::from_raw_parts(address as *const u8, total as usize) };
    Some(crate::platform::from_device_tree(blob, address))
}
