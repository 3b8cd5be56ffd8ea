//! beamcore: a bare-metal AArch64 kernel whose heart is a BEAM-style process scheduler.
//!
//! The crate builds for `aarch64-unknown-none` only: boot code, drivers, memory management,
//! the SMP bring-up and the scheduler. Everything pure it runs (the command-line parser, device
//! tree discovery, the address layout, the translation-table builder, the symbol table, the
//! frame walk, the JSON report, the scheduling policy and the deque) is a `no_std` crate of its
//! own under `crates/`, with `#![forbid(unsafe_code)]` where it can, tested on the host by a
//! plain `cargo test` there; this crate depends on them and re-exports what its API shows
//! (docs/layout.md).
//!
//! A program on beamcore is a binary that names its entry with [`entry!`]; the kernel calls it
//! on the boot core once every core is online and exits QEMU with the status it returns.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

extern crate alloc;
// The unwinder and the personality routine every landing pad names (`rust_eh_personality`):
// linked even where nothing calls the crate by name.
extern crate unwinding;

pub use beamcore_core_set as core_set;
/// The JSON writer of the `report: {json}` line (crates/json-report).
pub use beamcore_json_report as report;
/// The kernel's configuration and its hand-over to the program (crates/bootargs,
/// crates/program-args).
pub use beamcore_program_args as config;
/// The scheduler (kernel/sched/, its own crate: the layer under this one).
pub use beamcore_sched as sched;

// The layers below the scheduler, each a crate of its own that names nothing above it
// (docs/layout.md), re-exported under the paths programs have always used.
/// The hardware layer (kernel/hal): AArch64 support, locks, drivers, boards, time, backtraces;
/// `platform` is both the machine's description and `platform()`, the one discovered at boot.
pub use beamcore_hal::{arch, board, debug, drivers, platform, sync, time};
/// The memory layer (kernel/mm).
pub use beamcore_mm as mm;
/// The cores layer (kernel/smp), with the console and core power beside it.
pub use beamcore_smp as smp;
pub use beamcore_smp::{console, core_power, println};

use beamcore_boot as boot;
pub mod exit;
mod kernel_init;
mod panic;

pub use exit::ExitCode;
pub use kernel_init::boot_config;
