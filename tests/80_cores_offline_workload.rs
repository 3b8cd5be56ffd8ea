//! Cores go offline and come back during a workload: `workload=offline` runs fib and uts over
//! and over while a controller takes cores 1..N-1 offline and brings them back (`rounds=`
//! times), with three processes bound to each of those cores. The workload checks that every
//! fib and uts answer is exact (a lost process leaves its parent waiting; one run twice counts
//! twice), that each bound worker reports exactly once and never ran off the core it was bound
//! to at the time (rebound when its core left), and that while a core is offline its interrupt
//! and turn counters, read from another core, do not move. Here, besides: the scheduler's
//! counters balance (spawned = completed + main), processes were moved and bound ones rebound,
//! and each core 1..N-1 went offline exactly `rounds` times.
//!
//! Under `-icount` (the same course every run) at 4 and 8 cores, GICv2 and GICv3; also on
//! raspi4b, where a core parks in the kernel instead of PSCI `CPU_OFF` (`RPI4_CASES`).
//! tests/82 runs the races without `-icount`. A second variant runs it all with `queues=shared`
//! (the shared queue stays where it is; the leaving core hands on its private queue).
//! qemu-test: configs=a72-smp4,a72-smp8,gicv3-smp4,gicv3-smp8
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: variants=workload=offline rounds=3;workload=offline rounds=3 queues=shared
//! qemu-test: expect=^test: offline: \d+ rounds, \d+ processes moved, \d+ rebound, every core 1\.\.=\d+ offline \d+ times$
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=240

#![no_std]
#![no_main]

use beamcore::sched::{self, telemetry::total};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::config::{Workload, args};
use beamcore_apps::{ensure, workloads};

fn main() -> ExitCode {
    sched::arm_progress_watchdog(20);
    let rounds = args().rounds;
    ensure!(args().workload == Workload::Offline, "needs workload=offline");
    let cores = smp::cores_online();
    ensure!(cores >= 2, "needs at least 2 cores");
    let outcome = workloads::run(Workload::Offline);
    ensure!(outcome.ok, "workload offline failed: {}", outcome.detail);
    println!("workload: {}", outcome.detail);
    let (spawned, completed) = (total(|s| &s.spawned), total(|s| &s.completed));
    ensure!(
        spawned == completed + 1,
        "spawned {spawned}, completed {completed} (+1 for main): a process lost or run twice"
    );
    let (moved, rebound) = sched::offline_moves();
    ensure!(moved > 0, "no process was moved off a leaving core");
    ensure!(rebound > 0, "no bound process was rebound");
    for core in 1..cores {
        let count = smp::core(core).offline_count();
        ensure!(count == u64::from(rounds), "core {core} went offline {count} times, expected {rounds}");
        ensure!(smp::core(core).is_online() && sched::core_is_active(core), "core {core} is not back online");
    }
    ensure!(smp::core(0).offline_count() == 0, "core 0 went offline");
    println!(
        "test: offline: {rounds} rounds, {moved} processes moved, {rebound} rebound, every core 1..={} offline {rounds} times",
        cores - 1
    );
    ExitCode::Success
}

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
