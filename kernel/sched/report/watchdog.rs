//! The progress watchdog: ends a run that has stopped making progress, naming the cores that
//! stopped, instead of leaving it to an outside deadline that says nothing.
//!
//! Every core's tick calls [`on_tick`]; about ten times a second one of them samples each
//! core's count of process turns. Two things count as no progress for the armed period:
//! - a core with runnable processes queued that gave none of them a turn (it is frozen, e.g.
//!   spinning with IRQs masked: its own tick is then not served, so another core notices);
//! - live processes but no process turn on any core (every process waits for a message that
//!   never comes: a lost wake-up or a workload that left processes blocked).
//!
//! It then prints `watchdog:` lines naming those cores and what they hold, the scheduler dump,
//! and panics (a `PANIC` line and a failure exit). Off until a program arms it.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::dump::debug_dump;
use crate::proc::process::{self, State};
use crate::proc::table;
use crate::record::stats;
use crate::run::percore::scheduler;
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::CoreId;
use beamcore_mm::layout::MAX_CORES;
use beamcore_smp as smp;

/// Counts without progress that end the run (0: disarmed).
static PERIOD_COUNTS: AtomicU64 = AtomicU64::new(0);
/// Counter reading at which the next sample is due.
static NEXT_SAMPLE: AtomicU64 = AtomicU64::new(0);
/// Held by the core taking a sample, so cores do not sample at once.
static SAMPLING: AtomicBool = AtomicBool::new(false);
/// Per core: turns given to processes at the last sample, and when that count last changed.
static TURNS_SEEN: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];
static PROGRESS_AT: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

/// Arms the watchdog: a run that makes no progress for `seconds` of guest time is ended.
pub fn arm_progress_watchdog(seconds: u64) {
    let now = cpu::counter();
    for core in 0..MAX_CORES {
        PROGRESS_AT[core].store(now, Ordering::Relaxed);
        TURNS_SEEN[core].store(stats::of(CoreId::new(core)).executed.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    NEXT_SAMPLE.store(now, Ordering::Relaxed);
    PERIOD_COUNTS.store(beamcore_hal::time::seconds_to_counts(seconds).max(1), Ordering::Relaxed);
}

/// Turns the watchdog off (a program about to wait on purpose).
pub fn disarm_progress_watchdog() {
    PERIOD_COUNTS.store(0, Ordering::Relaxed);
}

/// Called from every core's timer tick (IRQ context).
pub(crate) fn on_tick() {
    let period = PERIOD_COUNTS.load(Ordering::Relaxed);
    if period == 0 {
        return;
    }
    if (cpu::counter().wrapping_sub(NEXT_SAMPLE.load(Ordering::Relaxed)) as i64) < 0 {
        return;
    }
    // ORDERING: Acquire pairs with the Release store that ends the previous sample, so this
    // sampler sees the snapshot that sampler left.
    if SAMPLING.swap(true, Ordering::Acquire) {
        return;
    }
    // Read only now, holding the flag: a reading taken before it may be older than the marks
    // the previous sampler left (this core may have been held up in between, as a vCPU often
    // is), and "now minus a later mark" would wrap to an enormous age: a false "stuck".
    let now = cpu::counter();
    NEXT_SAMPLE.store(now + beamcore_hal::time::us_to_counts(100_000), Ordering::Relaxed);
    let verdict = sample(now, period);
    // ORDERING: Release pairs with the Acquire swap above (the next sampler).
    SAMPLING.store(false, Ordering::Release);
    if let Some(why) = verdict {
        debug_dump();
        panic!("watchdog: {why}");
    }
}

/// Updates the per-core progress marks; says why the run is stuck, if it is.
fn sample(now: u64, period: u64) -> Option<&'static str> {
    let cores = smp::cores_online();
    let mut frozen = heapless::Vec::<usize, MAX_CORES>::new();
    let mut latest_progress = 0u64;
    for core in 0..cores {
        let turns = stats::of(CoreId::new(core)).executed.load(Ordering::Relaxed);
        if turns != TURNS_SEEN[core].load(Ordering::Relaxed) {
            TURNS_SEEN[core].store(turns, Ordering::Relaxed);
            PROGRESS_AT[core].store(now, Ordering::Relaxed);
        }
        let since = PROGRESS_AT[core].load(Ordering::Relaxed);
        latest_progress = latest_progress.max(since);
        // Saturating: a mark is never after `now` (see `on_tick`), and if it were, that is
        // progress, not age.
        if queued_on(CoreId::new(core)) > 0 && now.saturating_sub(since) > period {
            let _ = frozen.push(core);
        }
    }
    let seconds = beamcore_counter_time::counts_to_seconds(period, cpu::counter_frequency());
    if !frozen.is_empty() {
        for &core in &frozen {
            beamcore_smp::println!(
                "watchdog: core {core} is stuck: {} runnable processes queued, none given a turn for {seconds} s",
                queued_on(CoreId::new(core))
            );
        }
        return Some("a core with runnable processes made no progress");
    }
    if now.saturating_sub(latest_progress) > period && table::live_count() > 0 {
        let mut waiting = [0usize; MAX_CORES];
        for index in process::slots_made() {
            let process = process::slot(index);
            let Some(shared) = process.shared.try_lock_for(1000) else { continue };
            if shared.state != State::Free && process.signals.is_waiting() {
                let core = process.core.load(Ordering::Relaxed).index().min(MAX_CORES - 1);
                waiting[core] += 1;
            }
        }
        for (core, &count) in waiting.iter().enumerate().take(cores) {
            if count > 0 {
                beamcore_smp::println!(
                    "watchdog: core {core} is stuck: {count} processes wait for a message that does not come"
                );
            }
        }
        beamcore_smp::println!(
            "watchdog: no process ran on any of {cores} cores for {seconds} s while {} processes live",
            table::live_count()
        );
        return Some("no process made progress on any core");
    }
    None
}

/// Runnable processes queued on `core` (all priorities).
fn queued_on(core: CoreId) -> usize {
    let scheduler = scheduler(core);
    beamcore_sched_policy::priority::Priority::ALL.iter().map(|&p| scheduler.runnable(p)).sum()
}
