//! Every core takes its own periodic timer interrupt: each counts at least 20 ticks, spaced by
//! at least one tick period of the system counter (no bursts).
//! qemu-test: configs=a72-smp1,a72-smp4,gicv3-smp16,el2-smp4,max-smp4,gicv3-smp64
//! qemu-test: append=slice_us=500
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::mm::layout::MAX_CORES;
use beamcore::{ExitCode, println, smp, time};
use beamcore_apps::ensure;

const TICKS: u64 = 20;
static COUNTED: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static ELAPSED: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

fn count_ticks(core: usize) {
    let me = smp::core(core);
    // Start on a tick boundary so the elapsed time covers TICKS whole periods.
    let first = me.ticks();
    smp::wait_until(|| me.ticks() > first);
    // The tick count and the time read as a pair: a tick between the two reads (the vCPU
    // paused by the host, say) would date the start after a tick that is not counted, and
    // make 20 honest ticks look early.
    let (start, started_at) = loop {
        let start = me.ticks();
        let at = time::now_count();
        if me.ticks() == start {
            break (start, at);
        }
    };
    smp::wait_until(|| me.ticks() >= start + TICKS);
    COUNTED[core].store(me.ticks() - start, Ordering::Relaxed);
    ELAPSED[core].store(time::now_count() - started_at, Ordering::Relaxed);
}

fn main() -> ExitCode {
    let cores = smp::cores_online();
    ensure!(smp::run_on_all_and_wait(count_ticks).is_ok(), "could not run on every core");
    let period = time::us_to_counts(u64::from(beamcore::boot_config().slice_us));
    for core in 0..cores {
        let counted = COUNTED[core].load(Ordering::Relaxed);
        let elapsed = ELAPSED[core].load(Ordering::Relaxed);
        ensure!(counted >= TICKS, "core {core} counted {counted} ticks");
        ensure!(elapsed >= (counted - 1) * period, "core {core}: {counted} ticks in {elapsed} counts, period {period}");
    }
    println!("test: each of {cores} cores counted >= {TICKS} of its own ticks, none early (period {period} counts)");
    ExitCode::Success
}

beamcore::entry!(main);
