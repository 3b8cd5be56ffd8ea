//! Per-core scheduler counters: what `core_stats`, the telemetry table, the report line, the
//! watchdog and the tests read. Each counter is written by its own core only (a plain load and
//! store, no read-modify-write), except the migration counts, which thieves write too.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::settings::{NotCollected, telemetry};
use beamcore_hal::ids::CoreId;
use beamcore_mm::layout::MAX_CORES;
use beamcore_sched_policy::queue_wait::{
    CountsToUs, LEADING_ZEROS_COUNTS, WAIT_BUCKETS, fold_leading_zeros, leading_zeros_index,
};

/// Buckets of the steal latency histogram.
pub const LATENCY_BUCKETS: usize = 10;

/// Every core's counters, apart from its scheduler so that any module may count (a thief into
/// its victim's, a waker into its target's) without reaching the scheduler state.
static CORE_STATS: [CoreStats; MAX_CORES] = [const { CoreStats::new() }; MAX_CORES];

/// The counters of core `core`.
#[inline(always)]
pub(crate) const fn of(core: CoreId) -> &'static CoreStats {
    &CORE_STATS[core.index()]
}

/// Per-core counters, readable by any core; each is written only by its own core. A cache line
/// of its own at least, so one core's counting does not slow another's.
#[repr(align(64))]
pub struct CoreStats {
    /// Turns given to processes (each run until yield, block, exit or preemption).
    pub executed: AtomicU64,
    /// Processes that ended here.
    pub completed: AtomicU64,
    /// Slices ended by the timer.
    pub preemptions: AtomicU64,
    /// Processes taken from this core's own queues; not counted with `telemetry=off`
    /// ([`CoreStats::local_pops`] says so).
    pub(crate) local_pops: AtomicU64,
    /// Processes spawned on this core.
    pub spawned: AtomicU64,
    /// Processes ended by a fault or a stack overflow.
    pub faults: AtomicU64,
    /// Processes whose end (an exit, a panic, a kill or exit signal at a safe point) found
    /// nothing to drop on their stack and ended at once (`sched/turn/cleanup_walk.rs`), and those
    /// whose stack the unwinder unwound, running their destructors (`sched/turn/unwind.rs`).
    pub ends_at_once: AtomicU64,
    pub ends_unwound: AtomicU64,
    /// Steal attempts (one per victim tried) and successful steals.
    pub steal_attempts: AtomicU64,
    pub steals: AtomicU64,
    /// Failed attempts, by cause.
    pub fail_empty: AtomicU64,
    pub fail_below_threshold: AtomicU64,
    pub fail_cooldown: AtomicU64,
    /// The victim had runnable processes, but none that may move (bound, migration limit,
    /// protected max priority).
    pub fail_migration_limit: AtomicU64,
    pub fail_lost_race: AtomicU64,
    /// Processes this core took (stealing, or moving them in push rebalancing) that may not
    /// run where they were to go (their allowed cores leave it out), handed back to the core
    /// they came from (`Refusal::NotAllowed`, "not_allowed").
    pub fail_not_allowed: AtomicU64,
    /// Processes that moved here, and away from here (written by other cores too).
    pub migrated_in: AtomicU64,
    pub migrated_out: AtomicU64,
    /// Steal latency in counts: bucket i counts steals below 2^(i+7) counts (i < 9),
    /// the last bucket everything longer.
    pub steal_latency: [AtomicU64; LATENCY_BUCKETS],
    /// Counts spent asleep in WFI.
    pub asleep_counts: AtomicU64,
    /// Sleeps a wake-up SGI ended (for work, a woken process, the shared queue), and the counts
    /// from each one's first SGI to the core running again: what a wake-up costs in time
    /// (`idle::wake_latency`). Sleeps the tick ended are not among them.
    pub wakes: AtomicU64,
    pub wake_latency_counts: AtomicU64,
    /// Counts this core spent asleep or searching while another core held at least
    /// `min_steal` stealable processes: parallelism lost. A sleep with such work at its end
    /// counts from when the work was first offered to the sleepers (`idle::idle_with_work`),
    /// or whole when no offer was recorded (an upper bound).
    pub idle_with_work_counts: AtomicU64,
    /// Smallest gap, in counts, between two successful steals from the same victim
    /// (u64::MAX if there were none): never below the cooldown.
    pub min_steal_gap: AtomicU64,
    /// Processes moved by push rebalancing (counted on the core that did it).
    pub rebalanced: AtomicU64,
    /// This core's tick count when it last looked for severe imbalance (push rebalancing: core
    /// 0), 0 before its first look: the next look is due a period of ticks later, so a run
    /// that starts a workload reports how many ticks before its start that was (the simulator
    /// starts its own rebalancing count there, `sim --rebalance-ticks-ago`).
    pub rebalance_looked_at_tick: AtomicU64,
    /// `Steal::Retry` results of the owner's FIFO take from its own deque (`take_oldest`): a
    /// thief won the top item, or the store-exclusive of the CAS on `top` failed on every
    /// attempt (a lost reservation; frequent only in a `deque_inject_stxr_failure` build).
    pub take_oldest_retries: AtomicU64,
    /// Processes taken by this core's successful steals (with `steal=one`, exactly `steals`).
    pub stolen: AtomicU64,
    /// The victims' stealable counts this core decided on, summed over its successful steals:
    /// with `steal=half` each steal must take at least half of what it saw.
    pub stealable_seen: AtomicU64,
    /// Times `take_oldest` gave up after `TAKE_OLDEST_ATTEMPTS` retries in a row, leaving the
    /// item in the deque for the next pass of the scheduler loop.
    pub take_oldest_gave_up: AtomicU64,
    /// Queue waits of the processes that ran here, counted by the leading zeros of the wait in
    /// microseconds (see `queue_wait`; [`CoreStats::wait_histogram`] gives the buckets): the
    /// time from entering this core's run queue (spawned, woken, preempted or yielded back,
    /// stolen or moved here) to the start of the turn. Kept only with `telemetry=full`.
    wait_by_leading_zeros: [AtomicU64; LEADING_ZEROS_COUNTS],
    /// Those waits summed, in counts (the mean is this over the buckets' total).
    wait_counts: AtomicU64,
    /// The counts-to-microseconds factor of `queue_wait::CountsToUs` for this core's counter.
    wait_clock: AtomicU64,
    /// `queues=shared`: times this core took the shared run queue's lock (a push or a take),
    /// and how many of those found it held by another core first (this core then spun).
    pub queue_lock_acquisitions: AtomicU64,
    pub queue_lock_contended: AtomicU64,
    /// Messages a selective receive looked at here (each match test): what shows that a reply
    /// reference's receive skips the older messages instead of scanning them.
    pub receive_scanned: AtomicU64,
}

impl CoreStats {
    const fn new() -> CoreStats {
        CoreStats {
            executed: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            preemptions: AtomicU64::new(0),
            local_pops: AtomicU64::new(0),
            spawned: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            ends_at_once: AtomicU64::new(0),
            ends_unwound: AtomicU64::new(0),
            steal_attempts: AtomicU64::new(0),
            steals: AtomicU64::new(0),
            fail_empty: AtomicU64::new(0),
            fail_below_threshold: AtomicU64::new(0),
            fail_cooldown: AtomicU64::new(0),
            fail_migration_limit: AtomicU64::new(0),
            fail_lost_race: AtomicU64::new(0),
            fail_not_allowed: AtomicU64::new(0),
            migrated_in: AtomicU64::new(0),
            migrated_out: AtomicU64::new(0),
            steal_latency: [const { AtomicU64::new(0) }; LATENCY_BUCKETS],
            asleep_counts: AtomicU64::new(0),
            wakes: AtomicU64::new(0),
            wake_latency_counts: AtomicU64::new(0),
            idle_with_work_counts: AtomicU64::new(0),
            min_steal_gap: AtomicU64::new(u64::MAX),
            rebalanced: AtomicU64::new(0),
            rebalance_looked_at_tick: AtomicU64::new(0),
            take_oldest_retries: AtomicU64::new(0),
            stolen: AtomicU64::new(0),
            stealable_seen: AtomicU64::new(0),
            take_oldest_gave_up: AtomicU64::new(0),
            wait_by_leading_zeros: [const { AtomicU64::new(0) }; LEADING_ZEROS_COUNTS],
            wait_counts: AtomicU64::new(0),
            wait_clock: AtomicU64::new(CountsToUs::new(62_500_000).factor()),
            queue_lock_acquisitions: AtomicU64::new(0),
            queue_lock_contended: AtomicU64::new(0),
            receive_scanned: AtomicU64::new(0),
        }
    }
}

/// The histogram bucket of a steal that took `counts` counts of the counter.
pub(crate) fn latency_bucket(counts: u64) -> usize {
    let log = 64 - counts.leading_zeros() as usize; // bits needed
    log.saturating_sub(7).min(LATENCY_BUCKETS - 1)
}

impl CoreStats {
    /// The queue-wait histogram: bucket i counts turns that began
    /// `queue_wait::bucket_range_us(i)` microseconds after the process was queued here. An
    /// error, not zeros, when `telemetry=` does not collect it.
    pub fn wait_histogram(&self) -> Result<[u64; WAIT_BUCKETS], NotCollected> {
        telemetry().queue_wait()?;
        // ORDERING: Relaxed: statistics.
        Ok(fold_leading_zeros(&core::array::from_fn(|i| self.wait_by_leading_zeros[i].load(Ordering::Relaxed))))
    }

    /// The queue waits of [`wait_histogram`](Self::wait_histogram) summed, in counts.
    pub fn wait_counts(&self) -> Result<u64, NotCollected> {
        telemetry().queue_wait()?;
        // ORDERING: Relaxed: statistics.
        Ok(self.wait_counts.load(Ordering::Relaxed))
    }

    /// Processes taken from this core's own queues (an error with `telemetry=off`).
    pub fn local_pops(&self) -> Result<u64, NotCollected> {
        telemetry().take_counts()?;
        // ORDERING: Relaxed: statistics.
        Ok(self.local_pops.load(Ordering::Relaxed))
    }

    /// Sets the queue-wait histogram's clock from the counter's frequency: each core, for its
    /// own counters, before it schedules (a copy per core keeps the dispatch path's read next
    /// to the counters it updates).
    pub(crate) fn init_wait_clock(&self, counter_hz: u64) {
        // ORDERING: Relaxed: set by the core itself before it runs any process.
        self.wait_clock.store(CountsToUs::new(counter_hz).factor(), Ordering::Relaxed);
    }
}

/// Counts a queue wait of `counts` in this core's histogram: a multiply-high, a leading-zero
/// count and two owner-only counters (see `queue_wait`).
#[inline(always)]
pub(crate) fn record_wait(stats: &CoreStats, counts: u64) {
    // ORDERING: Relaxed: a constant once the core schedules.
    let clock = CountsToUs::from_factor(stats.wait_clock.load(Ordering::Relaxed));
    bump(&stats.wait_by_leading_zeros[leading_zeros_index(clock.us(counts))]);
    add(&stats.wait_counts, counts);
}

/// Adds one to a counter that only its own core writes: a plain load and store, no
/// read-modify-write, since there is no other writer to race with.
#[inline(always)]
pub(crate) fn bump(counter: &AtomicU64) {
    add(counter, 1);
}

/// Adds to a counter only its own core writes (see [`bump`]).
#[inline(always)]
pub(crate) fn add(counter: &AtomicU64, amount: u64) {
    // ORDERING: Relaxed: a statistic with one writer; readers want a recent value, not an
    // ordering with anything else.
    counter.store(counter.load(Ordering::Relaxed) + amount, Ordering::Relaxed);
}

/// A figure, or what `telemetry=` left out in its place: never a zero that was not measured.
pub(crate) struct Figure(pub(crate) Result<u64, NotCollected>);

impl core::fmt::Display for Figure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.0 {
            // `pad`, so a table's width and alignment apply to either.
            Ok(value) => f.pad(&alloc::format!("{value}")),
            Err(_) => f.pad("-"),
        }
    }
}
