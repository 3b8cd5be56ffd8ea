//! The `make run` kernel: boots every core, checks that each takes its own timer ticks and
//! can interrupt every other, runs the configured workload (bootarg `workload=`, default
//! `imbalanced`: every process spawned on core 0, spread only by work stealing) and prints the
//! balancer's per-core table and `report:` line (with `probe_ms=N`, then a share probe and its
//! `probe:` line: apps/workloads/probe.rs).

#![no_std]
#![no_main]

use beamcore::report::JsonObject;
use beamcore::sched::telemetry;
use beamcore::{ExitCode, println, smp};
use beamcore_apps::workloads;

/// Seconds of guest time without progress after which the watchdog ends the run.
const PROGRESS_WATCHDOG_S: u64 = 10;

fn boot_check(core: usize) {
    let me = smp::core(core);
    let start = me.ticks();
    let wanted = u64::from(beamcore::boot_config().ticks);
    smp::wait_until(|| me.ticks() >= start + wanted);
    for other in (0..smp::cores_online()).filter(|&c| c != core) {
        smp::ping(other).expect("every online core can be pinged");
    }
}

fn main() -> ExitCode {
    let cores = smp::cores_online();
    if let Err(error) = smp::run_on_all_and_wait(boot_check) {
        println!("run: {error}");
        return ExitCode::Failure(1);
    }
    let received = |c: usize| (0..cores).map(|from| smp::core(c).pings_from(from)).sum::<u32>();
    smp::wait_until(|| (0..cores).all(|c| received(c) as usize == cores - 1));
    let ticks = beamcore::boot_config().ticks;
    println!("boot check: each of {cores} cores took {ticks} ticks of its own and an SGI from every other core");

    // From here on a run that stops making progress is ended with a report, not left to hang.
    beamcore::sched::arm_progress_watchdog(PROGRESS_WATCHDOG_S);
    let workload = beamcore_apps::config::args().workload;
    // Everything main does for the report happens before `started`, so the workload's first
    // action follows it at once: the simulator starts its main at the reported tick phases
    // (reading the counters and allocating the lists after `started` put the first spawn some
    // microseconds later than the phases said, and a thief's tick before it instead of after).
    // A fresh turn for main, so its slice begins with the workload (else the tick that ends
    // it, and gives core 0's queue to the processes main spawned, falls anywhere in the first
    // two slices, depending on how long main had run before): the simulator starts its main
    // the same way.
    beamcore::sched::yield_now();
    let before = Counts::now(cores);
    let ticks = Ticks::read(cores);
    let started = beamcore::time::now_count();
    let outcome = workloads::run(workload);
    let elapsed_us = beamcore::time::counts_to_us(beamcore::time::now_count() - started);
    let after = Counts::now(cores);
    let verdict = if outcome.ok { "ok" } else { "FAILED" };
    println!("workload {}: {verdict} ({}) in {} ms of guest time", workload.name(), outcome.detail, elapsed_us / 1000);
    let grain = workloads::last_grain();
    let hold = workloads::last_hold();
    let extra = |json: &mut JsonObject<'_, alloc::string::String>| {
        json.boolean("ok", outcome.ok)?
            .uint("workload_processes", outcome.processes)?
            .uint("elapsed_us", elapsed_us)?
            .uint_array("next_tick_ns", &ticks.after(started))?
            .uint_array("steal_attempts_before", &before.steal_attempts)?
            .uint_array("steals_before", &before.steals)?
            .uint_array("migrated_in_before", &before.migrated_in)?
            .uint_array("steal_attempts_after", &after.steal_attempts)?
            .uint_array("steals_after", &after.steals)?
            .uint_array("migrated_in_after", &after.migrated_in)?
            .uint_array("idle_with_work_us_before", &before.idle_with_work_us)?
            .uint_array("idle_with_work_us_after", &after.idle_with_work_us)?
            .uint("rebalance_ticks_ago", before.rebalance_ticks_ago())?;
        if let Some(grain) = &grain {
            json.uint("grain_tasks", grain.tasks)?
                .uint("grain_ns", grain.grain_ns)?
                .uint("grain_elapsed_ns", grain.elapsed_ns)?;
        }
        if let Some(hold) = &hold {
            json.uint("hold_peak", hold.peak)?
                .uint("hold_bytes_per_process", hold.bytes_per_process)?
                .uint("hold_spawn_us", hold.spawn_us)?
                .uint("hold_end_us", hold.end_us)?
                .uint("hold_answered", hold.answered)?;
        }
        Ok(())
    };
    telemetry::print_report(workload.name(), &workloads::work_on, &extra);
    beamcore::sched::trace::dump();
    // After the report, so that its counters are the workload's alone.
    let probe_ms = u64::from(beamcore_apps::config::args().probe_ms);
    if probe_ms > 0 {
        match workloads::share_probe(probe_ms) {
            Ok(units) => {
                let mut line = alloc::string::String::new();
                let written = JsonObject::begin(&mut line).and_then(|mut json| {
                    json.uint("probe_ms", probe_ms)?.uint_array("probe_units", &units)?;
                    json.end()
                });
                if written.is_ok() {
                    println!("probe: {line}");
                }
            }
            Err(why) => {
                println!("share probe: {why}");
                return ExitCode::Failure(1);
            }
        }
    }
    if outcome.ok { ExitCode::Success } else { ExitCode::Failure(1) }
}

/// The per-core counters the report's figures had reached when the workload began, and again
/// when it ended: the report's counts run from boot to the report, and before a workload the
/// idle cores have already made steal rounds at every tick of the boot check (some 30 refused
/// attempts each), and after it they go on searching while main prints the table (a fifth of
/// nqueens/peers/4's attempts, seed 4, came after its last exit), both of which a comparison of
/// the workload's own dynamics (the simulator's calibration) leaves out.
struct Counts {
    steal_attempts: alloc::vec::Vec<u64>,
    steals: alloc::vec::Vec<u64>,
    migrated_in: alloc::vec::Vec<u64>,
    /// Idle with work, in us: a sleep or a search pause is added when it ends, so a sleep that
    /// began in the boot check and ended in the workload counts in the workload's, and one that
    /// began at the workload's end and ended after it (at a tick, while main prints) does not.
    idle_with_work_us: alloc::vec::Vec<u64>,
    /// Core 0's tick count when it last looked for severe imbalance (its push rebalancing),
    /// and now.
    rebalance_looked_at_tick: u64,
    ticks_of_core_0: u64,
}

impl Counts {
    fn now(cores: usize) -> Counts {
        use core::sync::atomic::Ordering::Relaxed;
        let each = |field: fn(&beamcore::sched::CoreStats) -> &core::sync::atomic::AtomicU64| {
            (0..cores).map(|core| field(beamcore::sched::core_stats(core)).load(Relaxed)).collect()
        };
        Counts {
            steal_attempts: each(|s| &s.steal_attempts),
            steals: each(|s| &s.steals),
            migrated_in: each(|s| &s.migrated_in),
            idle_with_work_us: each(|s| &s.idle_with_work_counts)
                .into_iter()
                .map(beamcore::time::counts_to_us)
                .collect(),
            rebalance_looked_at_tick: beamcore::sched::core_stats(0).rebalance_looked_at_tick.load(Relaxed),
            ticks_of_core_0: smp::core(0).ticks(),
        }
    }

    /// How many ticks core 0 had taken since it last looked for severe imbalance: its next
    /// look is due when that reaches the period (`balance::rebalance_period_ticks`), at the
    /// first pass of its loop after that tick, which decides when the workload's first push
    /// comes. The boot check's waits put that look one tick before the start on the
    /// calibration's images, so a simulator starting its own count at the start pushed a
    /// millisecond late.
    fn rebalance_ticks_ago(&self) -> u64 {
        self.ticks_of_core_0.wrapping_sub(self.rebalance_looked_at_tick)
    }
}

/// Each core's next tick (counter values), read before the workload's start.
struct Ticks {
    next: alloc::vec::Vec<u64>,
}

impl Ticks {
    fn read(cores: usize) -> Ticks {
        Ticks { next: (0..cores).map(|core| smp::core(core).next_tick()).collect() }
    }

    /// How long after `started` each core's next tick came, in ns (instructions under
    /// `-icount shift=0`): the phases of the ticks, which decide QEMU's round-robin turns (each
    /// turn's budget is the time to the next timer deadline over the number of vCPUs), for the
    /// simulator's turn model (`sim --tick-ns`, docs/simulator.md).
    fn after(&self, started: u64) -> alloc::vec::Vec<u64> {
        let period = beamcore::time::us_to_counts(u64::from(beamcore::boot_config().slice_us)).max(1);
        self.next
            .iter()
            .map(|&next| {
                // A tick read before `started` (its owner may have taken it since, or be
                // about to): its phase is the same a whole number of periods on.
                let ahead = if next >= started { next - started } else { period - (started - next) % period };
                beamcore::time::counts_to_ns(ahead % period)
            })
            .collect()
    }
}

extern crate alloc;

beamcore::entry!(main, settings = beamcore_apps::config::ARGS);
