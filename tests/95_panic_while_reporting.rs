//! A panic while the machine's own `PANIC` report is being written ends the run with one more
//! line that formats nothing, never a hang. Kernel code (a kernel job on core 1, outside any
//! process) panics with a message whose `Display` panics too: the report's formatting panics on
//! the core that is going down (before, that second panic found the machine going down, parked
//! its core, and the run hung until killed). A program's main process doing the same ends the
//! run with the inner panic's `PANIC` line, since its message is formatted before the report.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: expect=^PANIC core 1: panicked again while reporting a panic$
//! qemu-test: timeout=60

#![no_std]
#![no_main]

use beamcore::ExitCode;
use beamcore_apps::testing::{PanickingDisplay, run_as_kernel_job};

fn main() -> ExitCode {
    run_as_kernel_job(1, || panic!("the kernel gives up: {}", PanickingDisplay))
}

beamcore::entry!(main);
