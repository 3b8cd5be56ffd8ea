//! What differs by board: load address (build.rs), where the device tree is, the defaults used
//! when there is none, extra MMIO windows and UART set-up. One board is compiled in.

use crate::platform::Platform;

#[cfg(not(feature = "board-rpi4"))]
mod virt;
#[cfg(not(feature = "board-rpi4"))]
pub use virt::*;

#[cfg(feature = "board-rpi4")]
mod rpi4;
#[cfg(feature = "board-rpi4")]
pub use rpi4::*;

/// Baud rate programmed on boards whose UART needs initialising (the console's, and the one
/// line printed when the kernel is entered at EL3).
pub const CONSOLE_BAUD: u32 = 115_200;

/// The machine as discovered at boot (device tree or the board's defaults), set once by the
/// boot core before any other core starts.
static DISCOVERED: spin::Once<Platform> = spin::Once::new();

/// Records the machine discovered at boot and returns the kept copy (the boot core, once;
/// a later call keeps the first).
pub fn set_platform(platform: Platform) -> &'static Platform {
    DISCOVERED.call_once(|| platform)
}

/// The machine, as discovered at boot.
pub fn platform() -> &'static Platform {
    DISCOVERED.get().expect("platform discovered during boot")
}

/// Reads the device tree at `address` if one is there (checks the magic and a sane size).
/// Removes the tree's NOP tokens in place first (see [`crate::platform::remove_nops`]).
///
/// # Safety
/// `address` is readable and writable RAM for the tree's size (the MMU may be off), used by
/// nothing else during the call.
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
    // SAFETY: the header says the tree spans `total` bytes from `address` (bounded above),
    // which the caller lets us read and write exclusively.
    let blob = unsafe { core::slice::from_raw_parts_mut(address as *mut u8, total as usize) };
    if let Err(error) = crate::platform::remove_nops(blob) {
        return Some(Err(error));
    }
    Some(crate::platform::from_device_tree(blob, address))
}

/// Bytes read at a candidate ATAG address: room for the core, memory and a long command line.
const ATAGS_WINDOW_BYTES: usize = 8 * 1024;

/// Reads the ATAG list at `address` if one is there (it starts with `ATAG_CORE`).
///
/// # Safety
/// `address` is readable RAM for [`ATAGS_WINDOW_BYTES`] (the MMU may be off), not written
/// while the returned tags are in use.
pub unsafe fn read_atags(
    address: u64,
) -> Option<Result<crate::platform::atags::BootTags<'static>, crate::platform::atags::AtagsError>> {
    if address == 0 || !address.is_multiple_of(4) {
        return None;
    }
    // SAFETY: the caller promises the window is readable and stays unchanged.
    let window = unsafe { core::slice::from_raw_parts(address as *const u8, ATAGS_WINDOW_BYTES) };
    crate::platform::atags::looks_like_atags(window).then(|| crate::platform::atags::parse(window))
}
