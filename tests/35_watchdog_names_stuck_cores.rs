//! The progress watchdog ends a run that has stopped, naming where it stopped. Two ways to stop:
//! `stall`: every process waits for a message that never comes (main on core 0, one process on
//! core 2): no process runs anywhere, and both cores are named.
//! `frozen`: core 3 spins with IRQs masked (a kernel job) while a process bound to it is queued:
//! core 3 is named, by another core's tick, since its own is never served.
//! Each ends with a `PANIC` and a failure status within the deadline instead of hanging.
//! qemu-test: configs=a72-smp4
//! qemu-test: exit=1
//! qemu-test: variants=workload=ring;workload=fib
//! qemu-test: expect=^PANIC core \d+: watchdog:
//! qemu-test: timeout=60

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::sched::{self, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::config::Workload;

/// The bootarg `workload=` picks the case (ring: stall, fib: frozen); nothing runs a workload.
fn main() -> ExitCode {
    sched::arm_progress_watchdog(1);
    if beamcore_apps::config::args().workload == Workload::Ring {
        println!("test: stall: every process waits; expecting the watchdog to name cores 0 and 2");
        let _ = sched::spawn_with(SpawnOptions::default().bound_to(2), || {
            let _ = sched::receive();
        });
        let _ = sched::receive();
    } else {
        println!("test: frozen: core 3 spins with IRQs masked; expecting the watchdog to name core 3");
        let frozen = smp::run_on(
            3,
            alloc::boxed::Box::new(|| {
                let _ = beamcore::arch::cpu::irq_save();
                loop {
                    core::hint::spin_loop();
                }
            }),
        );
        if frozen.is_err() {
            println!("test failed: could not queue the job");
            return ExitCode::Failure(1);
        }
        let _ = sched::spawn_with(SpawnOptions::default().bound_to(3), || {});
        let _ = sched::receive();
    }
    println!("test failed: the watchdog did not end the run");
    ExitCode::Failure(1)
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
