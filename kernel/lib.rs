//! beamcore: a bare-metal AArch64 kernel whose heart is a BEAM-style process scheduler.
//!
//! The crate builds two ways. For `aarch64-unknown-none` it is the kernel: boot code, drivers,
//! memory management and the SMP bring-up. For the host, only the pure modules compile
//! (configuration parsing, platform discovery, translation tables, and later the scheduling
//! policy and the deque algorithm), so they can be unit-tested, property-tested and
//! model-checked there while the very same code runs in the kernel.
//!
//! A program on beamcore is a binary that names its entry with [`entry!`]; the kernel calls it
//! on the boot core once every core is online and exits QEMU with the status it returns.

#![cfg_attr(target_os = "none", no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

extern crate alloc;

pub mod config;
pub use beamcore_core_set as core_set;
pub mod debug;
pub mod mm;
pub use beamcore_platform as platform;
pub mod report;
pub mod sched;

#[cfg(target_os = "none")]
pub mod arch;
#[cfg(target_os = "none")]
pub mod board;
#[cfg(target_os = "none")]
#[path = "../boot/mod.rs"]
mod boot;
#[cfg(target_os = "none")]
pub mod console;
#[cfg(target_os = "none")]
pub mod core_power;
#[cfg(target_os = "none")]
pub mod drivers;
#[cfg(target_os = "none")]
pub mod exit;
#[cfg(target_os = "none")]
mod kernel_init;
#[cfg(target_os = "none")]
mod panic;
#[cfg(target_os = "none")]
pub mod smp;
#[cfg(target_os = "none")]
pub mod sync;
#[cfg(target_os = "none")]
pub mod time;

#[cfg(target_os = "none")]
pub use exit::ExitCode;
#[cfg(target_os = "none")]
pub use kernel_init::{boot_config, platform};

#[cfg(all(test, not(loom)))]
mod ordering_notes;

/// README.md must show the API example exactly as `tests/26_readme_example.rs` runs it.
#[cfg(test)]
mod readme_example {
    #[test]
    fn readme_shows_the_tested_example() {
        let test = include_str!("../tests/26_readme_example.rs");
        let begin = test.find("// README-EXAMPLE-BEGIN\n").expect("begin marker") + "// README-EXAMPLE-BEGIN\n".len();
        let end = test.find("// README-EXAMPLE-END").expect("end marker");
        let example = &test[begin..end];
        let readme = include_str!("../README.md");
        assert!(readme.contains(example), "README.md's example differs from tests/26_readme_example.rs:\n{example}");
    }
}
