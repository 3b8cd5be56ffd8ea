//! A Rust panic on a secondary core prints `PANIC core <id>: <message>` and exits non-zero.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: expect=^PANIC core 2: deliberate panic on core 2 at tests/08_panic_on_secondary.rs:\d+$

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::{ExitCode, println, smp};

fn main() -> ExitCode {
    let queued = smp::run_on(
        2,
        alloc::boxed::Box::new(|| panic!("deliberate panic on core {}", beamcore::arch::cpu::core_id())),
    );
    if queued.is_err() {
        println!("test failed: could not queue work on core 2");
        return ExitCode::Failure(1);
    }
    // The panic ends the run; waiting here must never return.
    smp::wait_until(|| false);
    ExitCode::Failure(1)
}

beamcore::entry!(main);
