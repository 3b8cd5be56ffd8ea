//! Without a usable device tree the kernel says so, boots on the board defaults, and finds
//! the other cores by asking PSCI to start them until it reports no more.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: qemu-args=-dtb tests/data/unusable.dtb
//! qemu-test: expect=^platform: device tree has no usable PL011 UART; using qemu-virt board defaults$
//! qemu-test: expect=^platform: board defaults, model "QEMU virt \(defaults\)"
//! qemu-test: expect-count=smp ^core \d+ online el=1
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::platform::Source;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

fn main() -> ExitCode {
    ensure!(beamcore::platform().source == Source::BoardDefaults, "expected board defaults");
    ensure!(smp::run_on_all_and_wait(|_| {}).is_ok(), "probed cores do not run work");
    println!("test: board defaults in use; {} cores found by PSCI probing and running", smp::cores_online());
    ExitCode::Success
}

beamcore::entry!(main);
