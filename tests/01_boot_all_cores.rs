//! Every core the device tree lists comes online at EL1 with its MMU and caches on, and runs
//! work handed to it exactly once. (Also on QEMU raspi4b, through the spin table: see
//! RPI4_CASES in scripts/test-qemu.py; the tree then lies at 0x8000000.)
//! qemu-test: configs=all,gicv3-smp64
//! qemu-test: expect-count=smp ^core \d+ online el=1 mpidr=0x[0-9a-f]+$
//! qemu-test: expect=^config: slice_us=1000 maxcpus=64 ticks=10 reductions=4000 strategy=load
//! qemu-test: expect=^platform: device tree at 0x(40000000|8000000),
//! qemu-test: forbid=PANIC|did not come online

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use beamcore::arch::cpu;
use beamcore::mm::layout::MAX_CORES;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

static RUNS: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(0) }; MAX_CORES];
static SEEN_ID: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(u64::MAX) }; MAX_CORES];
static HEALTHY: [AtomicU32; MAX_CORES] = [const { AtomicU32::new(0) }; MAX_CORES];

fn on_each_core(core: usize) {
    RUNS[core].fetch_add(1, Ordering::Relaxed);
    SEEN_ID[core].store(cpu::core_id() as u64, Ordering::Relaxed);
    let healthy = cpu::current_el() == 1 && cpu::mmu_and_caches_on() && cpu::mpidr() == smp::core(core).mpidr();
    HEALTHY[core].store(healthy as u32, Ordering::Relaxed);
}

fn main() -> ExitCode {
    let listed = beamcore::platform().cpus.len();
    let online = smp::cores_online();
    ensure!(online == listed, "{online} cores online, device tree lists {listed}");
    ensure!(smp::run_on_all_and_wait(on_each_core).is_ok(), "run_on_all_and_wait failed");
    for core in 0..online {
        let runs = RUNS[core].load(Ordering::Relaxed);
        ensure!(runs == 1, "core {core} ran its job {runs} times");
        let seen = SEEN_ID[core].load(Ordering::Relaxed);
        ensure!(seen == core as u64, "job for core {core} ran on core {seen}");
        ensure!(
            HEALTHY[core].load(Ordering::Relaxed) == 1,
            "core {core}: not at EL1 with MMU+caches on and its own mpidr"
        );
    }
    let mpidrs_distinct = (0..online).all(|a| (0..a).all(|b| smp::core(a).mpidr() != smp::core(b).mpidr()));
    ensure!(mpidrs_distinct, "two cores report the same mpidr");
    ensure!(smp::run_on(online, alloc_job()).is_err(), "run_on accepted a core that is not online");
    println!("test: {online}/{listed} cores online at EL1, MMU and caches on, each ran its job exactly once");
    ExitCode::Success
}

extern crate alloc;
fn alloc_job() -> smp::Job {
    alloc::boxed::Box::new(|| {})
}

beamcore::entry!(main);
