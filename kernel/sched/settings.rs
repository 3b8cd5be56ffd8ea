//! The scheduler's settings, fixed at boot (`init_global`) from its [`SchedConfig`]: the
//! configuration itself, read by reference ([`config`]), the copies of it the fast paths read
//! from atomics (slice length, reductions per slice, tracing, queue mode, placement,
//! telemetry), the victim strategy a program may switch, and the idle search's and push
//! rebalancing's periods converted to counts.

use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};

use crate::config::SchedConfig;
use crate::proc::table;
pub use beamcore_bootargs::{NotCollected, Telemetry};
use beamcore_hal::arch::cpu;
use beamcore_sched_policy::balance::{self, BalanceConfig, SearchTiming, Strategy};
use beamcore_sched_policy::placement::{QueueMode, SpawnPlacement};

/// Counts per slice.
static SLICE_COUNTS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Reductions per slice.
static REDUCTIONS_PER_SLICE: AtomicU64 = AtomicU64::new(4000);
/// Whether `trace=on` asked for scheduling traces.
static TRACE: AtomicBool = AtomicBool::new(false);
/// The configuration, fixed at boot.
static CONFIG: spin::Once<SchedConfig> = spin::Once::new();
/// The victim strategy in force: the boot choice unless a program changed it since.
static STRATEGY: AtomicU8 = AtomicU8::new(u8::MAX);
/// `queues=shared`: one run queue for the machine (read where the modes part, never on the
/// per-core mode's hot path: see `runqueue/`).
static SHARED_QUEUES: AtomicBool = AtomicBool::new(false);
/// `placement=` (an index into `SpawnPlacement::ALL`).
static PLACEMENT: AtomicU8 = AtomicU8::new(0);
/// `telemetry=` (an index into `Telemetry::ALL`). What reports read; the turn's fast path reads
/// each core's attention word instead (`attention::telemetry_bits`).
static TELEMETRY: AtomicU8 = AtomicU8::new(0);

/// The idle search's durations (`balance::SearchTiming`) in counts, computed once at boot.
static SEARCH_BUDGET_COUNTS: AtomicU64 = AtomicU64::new(0);
static SEARCH_PAUSE_MIN_COUNTS: AtomicU64 = AtomicU64::new(1);
static SEARCH_PAUSE_MAX_COUNTS: AtomicU64 = AtomicU64::new(1);
/// `balance::REBALANCE_PERIOD_NS` in ticks (`balance::rebalance_period_ticks`), computed once
/// at boot.
static REBALANCE_PERIOD_TICKS: AtomicU64 = AtomicU64::new(u64::MAX);

// ORDERING (whole file): every setting is written once on the boot core before the other cores
// are started (their start publishes it), or is a switch whose exact moment does not matter
// (`set_strategy`); Relaxed throughout.

/// Takes the scheduler's configuration: the boot core, once, before any core schedules.
pub fn init_global(config: SchedConfig) -> Result<(), beamcore_mm::heap::OutOfMemory> {
    let config = CONFIG.call_once(|| config);
    TRACE.store(config.trace, Ordering::Relaxed);
    SHARED_QUEUES.store(config.queues == QueueMode::Shared, Ordering::Relaxed);
    PLACEMENT.store(config.placement as u8, Ordering::Relaxed);
    TELEMETRY.store(config.telemetry as u8, Ordering::Relaxed);
    let counter_hz = cpu::counter_frequency();
    // The tick's period is the slice (`smp::init_boot`).
    let tick_ns = beamcore_counter_time::counts_to_ns(config.slice_counts.max(1), counter_hz);
    REBALANCE_PERIOD_TICKS.store(balance::rebalance_period_ticks(tick_ns), Ordering::Relaxed);
    let search = SearchTiming::at(counter_hz);
    SEARCH_BUDGET_COUNTS.store(search.budget_counts, Ordering::Relaxed);
    SEARCH_PAUSE_MIN_COUNTS.store(search.pause_min_counts, Ordering::Relaxed);
    SEARCH_PAUSE_MAX_COUNTS.store(search.pause_max_counts, Ordering::Relaxed);
    SLICE_COUNTS.store(config.slice_counts.max(1), Ordering::Relaxed);
    REDUCTIONS_PER_SLICE.store(config.reductions.max(1), Ordering::Relaxed);
    table::init_table(config.max_processes)
}

/// The scheduler's configuration, as fixed at boot.
pub fn config() -> &'static SchedConfig {
    CONFIG.get().expect("scheduler configured at boot")
}

/// Whether `queues=shared` is in force.
pub(super) fn shared_queues() -> bool {
    SHARED_QUEUES.load(Ordering::Relaxed)
}

/// The queue mode in force.
pub fn queue_mode() -> QueueMode {
    if shared_queues() { QueueMode::Shared } else { QueueMode::PerCore }
}

/// Where new free processes start.
pub fn spawn_placement() -> SpawnPlacement {
    SpawnPlacement::ALL[usize::from(PLACEMENT.load(Ordering::Relaxed))]
}

/// What each turn records (bootarg `telemetry=`): every report of a figure it leaves out says
/// so (`Telemetry::queue_wait` and the like give the message).
pub fn telemetry() -> Telemetry {
    Telemetry::ALL[usize::from(TELEMETRY.load(Ordering::Relaxed))]
}

/// Whether `trace=on` asked for traces (each core then makes its buffer).
pub(super) fn trace_requested() -> bool {
    TRACE.load(Ordering::Relaxed)
}

/// Events each core's trace buffer keeps (`trace_events=`).
pub(super) fn trace_events() -> usize {
    config().trace_events
}

/// Counts per slice.
#[inline(always)]
pub(super) fn slice_counts() -> u64 {
    SLICE_COUNTS.load(Ordering::Relaxed)
}

/// Reductions a slice starts with.
#[inline(always)]
pub(crate) fn reductions_per_slice() -> i64 {
    REDUCTIONS_PER_SLICE.load(Ordering::Relaxed) as i64
}

/// The victim strategy in force.
pub(super) fn strategy() -> Strategy {
    Strategy::ALL.get(STRATEGY.load(Ordering::Relaxed) as usize).copied().unwrap_or(config().strategy)
}

/// Switches every core's victim strategy from its next steal round on (the soak runs every
/// strategy in one boot). Thieves pick it up at their next round; no round mixes two.
pub fn set_strategy(strategy: Strategy) {
    let index = Strategy::ALL.iter().position(|&s| s == strategy).unwrap_or(0);
    STRATEGY.store(index as u8, Ordering::Relaxed);
}

/// The balancer's configuration in force.
pub fn balance_config() -> (BalanceConfig, Strategy) {
    (config().balance, strategy())
}

/// The idle search's budget, shortest and longest pause, in counts.
pub(super) fn search_timing() -> SearchTiming {
    SearchTiming {
        budget_counts: SEARCH_BUDGET_COUNTS.load(Ordering::Relaxed),
        pause_min_counts: SEARCH_PAUSE_MIN_COUNTS.load(Ordering::Relaxed),
        pause_max_counts: SEARCH_PAUSE_MAX_COUNTS.load(Ordering::Relaxed),
    }
}

/// How often push rebalancing looks, in core 0's ticks.
pub(super) fn rebalance_period_ticks() -> u64 {
    REBALANCE_PERIOD_TICKS.load(Ordering::Relaxed)
}
