//! The scheduler's state on the console, for diagnosing a run that stopped making progress
//! (the watchdogs call it before they panic).

use core::sync::atomic::Ordering;

use crate::proc::process::{self, State};
use crate::record::stats;
use crate::record::trace;
use crate::run::idle::searching;
use crate::run::percore::scheduler;
use beamcore_hal::ids::CoreId;
use beamcore_sched_policy::priority::Priority;
use beamcore_smp as smp;

/// Prints what every core's scheduler holds and the state of live processes.
pub fn debug_dump() {
    let cores = smp::cores_online();
    for core in 0..cores {
        let scheduler = scheduler(CoreId::new(core));
        let runnable: [usize; 4] = Priority::ALL.map(|p| scheduler.runnable(p));
        let stealable = scheduler.queues.stealable();
        let stats = stats::of(CoreId::new(core));
        // ORDERING: Relaxed throughout: a diagnostic snapshot.
        beamcore_smp::println!(
            "watchdog: core {core}: runnable {runnable:?} stealable {stealable:?} inbox {} sleeping {} executed {} \\
             local_pops {} take_oldest retries {} gave up {} steals {} attempts {}",
            scheduler.inbox_len.load(Ordering::Relaxed),
            scheduler.sleeping.load(Ordering::Relaxed),
            stats.executed.load(Ordering::Relaxed),
            stats::Figure(stats.local_pops()),
            stats.take_oldest_retries.load(Ordering::Relaxed),
            stats.take_oldest_gave_up.load(Ordering::Relaxed),
            stats.steals.load(Ordering::Relaxed),
            stats.steal_attempts.load(Ordering::Relaxed),
        );
    }
    let mut shown = 0;
    for index in process::slots_made() {
        let process = process::slot(index);
        let Some(shared) = process.shared.try_lock_for(1000) else {
            beamcore_smp::println!("watchdog: process slot {index}: lock held");
            continue;
        };
        if shared.state == State::Free {
            continue;
        }
        if shown < 24 {
            beamcore_smp::println!(
                "watchdog: process <{index}.{}> {} on core {} signals {}",
                shared.generation,
                if process.signals.is_waiting() { "Waiting" } else { "Runnable" },
                // ORDERING: Relaxed: a diagnostic.
                process.core.load(Ordering::Relaxed),
                process.queue_len(&shared)
            );
        }
        shown += 1;
    }
    beamcore_smp::println!("watchdog: {shown} live processes, {} cores searching", searching());
    trace::dump();
}
