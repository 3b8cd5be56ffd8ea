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
    // Start on a tick, and date the start by a counter reading taken before that tick: the
    // reading precedes, in program order, a look at the tick count that still saw `first`,
    // and the tick is taken after that look. A reading after the tick would not do: the host
    // may stop the vCPU between the tick and the reading (CI saw 1.1 periods), and a late
    // start makes honest ticks look early. Reading the count again after the counter does
    // not catch that either, as TCG takes an interrupt only between translated blocks.
    let mut before = time::now_count();
    let first = me.ticks();
    let (start, started_before) = loop {
        let at = time::now_count();
        let ticks = me.ticks();
        if ticks > first {
            break (ticks, before);
        }
        before = at;
    };
    smp::wait_until(|| me.ticks() >= start + TICKS);
    // The count first, then the counter: the reading comes after the last counted tick.
    COUNTED[core].store(me.ticks() - start, Ordering::Relaxed);
    ELAPSED[core].store(time::now_count() - started_before, Ordering::Relaxed);
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
