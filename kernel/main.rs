//! The `make run` kernel: boots every core and runs the boot workload.
//!
//! Until the scheduler arrives this is the placeholder the foundation issue allows: every core
//! waits for `ticks=` timer ticks of its own, pings every other core with an SGI, and the boot
//! core prints what each core did (a table and one `report:` JSON line) and exits cleanly.

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::mm::layout::MAX_CORES;
use beamcore::{ExitCode, println, smp};

static TICKS_WAITED: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

fn boot_workload(core: usize) {
    let me = smp::core(core);
    let start = me.ticks();
    let wanted = u64::from(beamcore::boot_config().ticks);
    smp::wait_until(|| me.ticks() >= start + wanted);
    TICKS_WAITED[core].store(me.ticks() - start, Ordering::Relaxed);
    for other in (0..smp::cores_online()).filter(|&c| c != core) {
        smp::ping(other).expect("every online core can be pinged");
    }
}

fn main() -> ExitCode {
    let cores = smp::cores_online();
    if let Err(error) = smp::run_on_all_and_wait(boot_workload) {
        println!("run: {error}");
        return ExitCode::Failure(1);
    }
    // Every ping must have arrived before the report: each core expects one from each other.
    let received = |c: usize| (0..cores).map(|from| smp::core(c).pings_from(from)).sum::<u32>();
    smp::wait_until(|| (0..cores).all(|c| received(c) as usize == cores - 1));

    println!("core  mpidr        ticks  pings_in");
    for (c, ticks) in TICKS_WAITED.iter().enumerate().take(cores) {
        println!("{c:>4}  {:#010x}  {:>6}  {:>8}", smp::core(c).mpidr(), ticks.load(Ordering::Relaxed), received(c));
    }
    let mut line = heapless::String::<4096>::new();
    let _ = write_report(&mut line, cores, &received);
    println!("report: {line}");
    ExitCode::Success
}

fn write_report(out: &mut impl core::fmt::Write, cores: usize, received: &dyn Fn(usize) -> u32) -> core::fmt::Result {
    let mut json = beamcore::report::JsonObject::begin(out)?;
    json.string("workload", "boot")?.uint("cores", cores as u64)?;
    json.array("per_core", cores, |c, e| {
        e.uint("core", c as u64)?
            .uint("mpidr", smp::core(c).mpidr())?
            .uint("ticks", TICKS_WAITED[c].load(Ordering::Relaxed))?
            .uint("pings_in", u64::from(received(c)))?;
        Ok(())
    })?;
    json.end()
}

beamcore::entry!(main);
