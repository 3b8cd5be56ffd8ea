//! A machine with more cores than the kernel brings up: QEMU virt with 128 (GICv3), MAX_CORES 64.
//! One `smp:` line says so, exactly MAX_CORES cores come online (the rest stay off, untouched),
//! and they work: every core runs a job and can interrupt core 0.
//! qemu-test: configs=gicv3-smp64
//! qemu-test: qemu-args=-smp 128 -icount shift=0,sleep=off
//! qemu-test: expect=^platform: device tree at 0x40000000, .*, 64 cores \(64 more ignored\),
//! qemu-test: expect=^smp: 128 cores in the device tree; beamcore brings up 64 \(MAX_CORES\)$
//! qemu-test: expect=^smp: 64 cores online$
//! qemu-test: expect-count=64 ^core \d+ online el=1 mpidr=0x[0-9a-f]+$
//! qemu-test: forbid=PANIC|did not come online|not started
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use beamcore::mm::layout::MAX_CORES;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

static RUNS: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(0) }; MAX_CORES];

fn on_each_core(core: usize) {
    RUNS[core].fetch_add(1, Ordering::Relaxed);
    if core != 0 {
        smp::ping(0).expect("core 0 is online");
    }
}

fn main() -> ExitCode {
    let platform = beamcore::platform();
    let cores = smp::cores_online();
    ensure!(cores == MAX_CORES, "{cores} cores online, expected MAX_CORES = {MAX_CORES}");
    ensure!(
        platform.cpus.len() == MAX_CORES && platform.cpus_ignored == 128 - MAX_CORES,
        "platform kept {} cores and ignored {}",
        platform.cpus.len(),
        platform.cpus_ignored
    );
    ensure!(smp::run_on_all_and_wait(on_each_core).is_ok(), "could not run on every core");
    for (core, runs) in RUNS.iter().enumerate() {
        let runs = runs.load(Ordering::Relaxed);
        ensure!(runs == 1, "core {core} ran its job {runs} times");
    }
    smp::wait_until(|| (1..cores).all(|from| smp::core(0).pings_from(from) == 1));
    ensure!(smp::ping(MAX_CORES).is_err(), "core {MAX_CORES} (beyond MAX_CORES) must not be reachable");
    println!(
        "test: 128 cores listed, {cores} online, each ran its job once and pinged core 0; the other {} stay off",
        128 - MAX_CORES
    );
    ExitCode::Success
}

beamcore::entry!(main);
