//! One scheduler per core: its run queues, its loop, and the transitions of the processes it
//! runs (run, yield, block, wake, preempt, fault, exit).
//!
//! ```text
//!            spawn / wake (same core) ──push──▶ queues[level] (WorkQueue: Chase-Lev + overflow)
//!   wake from another core ─▶ inbox ─SGI─▶ drained by the owner ─┘        │ owner takes FIFO
//!                                                                         ▼
//!   loop: jobs, inbox, timeouts, pick (max > high > normal/low) ─▶ run until it yields,
//!         blocks, exits, faults or its slice ends (timer tick) ─▶ act on what it asked for
//! ```
//!
//! The scheduler runs on the core's boot stack (SP_EL1) with IRQs masked except while it
//! sleeps and while a process runs. A process asks for something (requeue, block, exit) by
//! setting `pending` and switching back; the scheduler acts only after the switch, once the
//! process's stack is no longer in use, so no other core can see a process that is still
//! running (no process runs twice).

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::balance::{
    AdaptiveState, BalanceConfig, CoreView, NEVER, Refusal, Rng, Strategy, VictimPicker, backoff_ticks, check_victim,
    may_migrate, steal_count,
};
use super::deque::{NativeAtomics, Steal, WorkQueue, WorkQueueStealer};
use super::priority::{LEVELS, LowPriorityDecision, Priority, low_priority_rule};
use super::process::{self, Affinity, ExitReason, Message, State};
use super::trace::{self, Event};
use crate::arch::context::{self, Context};
use crate::arch::cpu;
use crate::arch::exception::TrapFrame;
use crate::core_set::CoreSet;
use crate::debug::backtrace::Backtrace;
use crate::mm::heap;
use crate::mm::layout::MAX_CORES;
use crate::mm::stacks::{self, GrowError};
use crate::smp::{self, Sgi};
use crate::sync::IrqSpinLock;

/// Capacity of each lock-free run queue; more runnable processes spill to the overflow.
const DEQUE_CAPACITY: usize = 256;

/// What the running process asked its scheduler to do once it has switched away.
///
/// `repr(u64)` for the same reason as `Message`: aligned word moves instead of a `memcpy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Pending {
    Nothing,
    /// Back into the run queue (yield, or the reductions budget is spent).
    Requeue,
    /// Back into the run queue: the timer ended its slice.
    Preempted,
    /// Nothing: it is waiting; whoever wakes it queues it.
    Block,
    /// End it.
    Exit(ExitReason),
}

struct Timeout {
    deadline: u64,
    slot: u32,
    wait_sequence: u64,
}

/// What only the owning core touches (with IRQs masked, or from its running process).
struct Local {
    context: Context,
    current: Option<u32>,
    pending: Pending,
    /// Stealable runnable processes, one queue per level.
    queues: Option<[WorkQueue<NativeAtomics>; LEVELS]>,
    /// Runnable processes that may not move (bound, at the migration limit, protected max):
    /// kept out of the stealable queues so they never stand in a thief's way.
    private: [VecDeque<u32>; LEVELS],
    /// Per level: serve the private queue next (alternates with the stealable one).
    private_turn: [bool; LEVELS],
    slice_started: u64,
    timeouts: Vec<Timeout>,
    rng: Rng,
    adaptive: AdaptiveState,
    /// Counter reading of the last successful steal from each victim.
    last_steal: [u64; MAX_CORES],
    /// When core 0 last looked for severe imbalance.
    last_rebalance: u64,
    /// This core's heap balance (`heap::net_bytes_on`) when the current turn began.
    turn_heap_mark: i64,
    /// This core counts in `SEARCHING`.
    searching: bool,
    /// When this core's current search began, and how many rounds it has made.
    search_started: u64,
    search_rounds: u32,
}

/// Adds one to a counter that only its own core writes: a plain load and store, no
/// read-modify-write, since there is no other writer to race with.
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Per-core counters, readable by any core; each is written only by its own core.
pub struct CoreStats {
    /// Turns given to processes (each run until yield, block, exit or preemption).
    pub executed: AtomicU64,
    /// Processes that ended here.
    pub completed: AtomicU64,
    /// Slices ended by the timer.
    pub preemptions: AtomicU64,
    /// Processes taken from this core's own queues.
    pub local_pops: AtomicU64,
    /// Processes spawned on this core.
    pub spawned: AtomicU64,
    /// Processes ended by a fault or a stack overflow.
    pub faults: AtomicU64,
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
    /// Processes that moved here, and away from here (written by other cores too).
    pub migrated_in: AtomicU64,
    pub migrated_out: AtomicU64,
    /// Steal latency in counter cycles: bucket i counts steals below 2^(i+7) cycles (i < 9),
    /// the last bucket everything longer.
    pub steal_latency: [AtomicU64; LATENCY_BUCKETS],
    /// Counter cycles spent asleep in WFI.
    pub asleep_cycles: AtomicU64,
    /// Counter ticks this core spent asleep or searching while another core held at least
    /// `min_steal` stealable processes: parallelism lost. An upper bound: a sleep is counted
    /// whole when there was such work at its end, though the work may have appeared late.
    pub idle_with_work_ticks: AtomicU64,
    /// Smallest gap, in counter cycles, between two successful steals from the same victim
    /// (u64::MAX if there were none): never below the cooldown.
    pub min_steal_gap: AtomicU64,
    /// Processes moved by push rebalancing (counted on the core that did it).
    pub rebalanced: AtomicU64,
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
}

/// Buckets of the steal latency histogram.
pub const LATENCY_BUCKETS: usize = 10;

fn latency_bucket(cycles: u64) -> usize {
    let log = 64 - cycles.leading_zeros() as usize; // bits needed
    log.saturating_sub(7).min(LATENCY_BUCKETS - 1)
}

#[repr(C, align(64))]
pub(crate) struct CoreScheduler {
    local: UnsafeCell<Local>,
    inbox: IrqSpinLock<VecDeque<u32>>,
    inbox_len: AtomicUsize,
    sleeping: AtomicBool,
    stealers: spin::Once<[WorkQueueStealer<NativeAtomics>; LEVELS]>,
    /// Runnable processes by priority (max, high, normal, low), for load.
    runnable: [AtomicUsize; 4],
    pub stats: CoreStats,
}

// SAFETY: `local` is only touched by the owning core (see `Local`); everything else is atomic
// or locked.
unsafe impl Sync for CoreScheduler {}

impl CoreScheduler {
    const fn new() -> Self {
        CoreScheduler {
            local: UnsafeCell::new(Local {
                context: Context::ZERO,
                current: None,
                pending: Pending::Nothing,
                queues: None,
                private: [const { VecDeque::new() }; LEVELS],
                private_turn: [false; LEVELS],
                slice_started: 0,
                timeouts: Vec::new(),
                rng: Rng::new(1),
                adaptive: AdaptiveState::new(),
                last_steal: [NEVER; MAX_CORES],
                last_rebalance: 0,
                turn_heap_mark: 0,
                searching: false,
                search_started: 0,
                search_rounds: 0,
            }),
            inbox: IrqSpinLock::new(VecDeque::new()),
            inbox_len: AtomicUsize::new(0),
            sleeping: AtomicBool::new(false),
            stealers: spin::Once::new(),
            runnable: [const { AtomicUsize::new(0) }; 4],
            stats: CoreStats {
                executed: AtomicU64::new(0),
                completed: AtomicU64::new(0),
                preemptions: AtomicU64::new(0),
                local_pops: AtomicU64::new(0),
                spawned: AtomicU64::new(0),
                faults: AtomicU64::new(0),
                steal_attempts: AtomicU64::new(0),
                steals: AtomicU64::new(0),
                fail_empty: AtomicU64::new(0),
                fail_below_threshold: AtomicU64::new(0),
                fail_cooldown: AtomicU64::new(0),
                fail_migration_limit: AtomicU64::new(0),
                fail_lost_race: AtomicU64::new(0),
                migrated_in: AtomicU64::new(0),
                migrated_out: AtomicU64::new(0),
                steal_latency: [const { AtomicU64::new(0) }; LATENCY_BUCKETS],
                asleep_cycles: AtomicU64::new(0),
                idle_with_work_ticks: AtomicU64::new(0),
                min_steal_gap: AtomicU64::new(u64::MAX),
                rebalanced: AtomicU64::new(0),
                take_oldest_retries: AtomicU64::new(0),
                stolen: AtomicU64::new(0),
                stealable_seen: AtomicU64::new(0),
                take_oldest_gave_up: AtomicU64::new(0),
            },
        }
    }

    /// # Safety
    /// On the owning core, with IRQs masked or from the process it runs; no other reference
    /// to `Local` is live.
    #[allow(clippy::mut_from_ref)]
    unsafe fn local(&self) -> &mut Local {
        // SAFETY: forwarded contract.
        unsafe { &mut *self.local.get() }
    }

    /// Runnable processes of `priority` queued on this core.
    pub fn runnable(&self, priority: Priority) -> usize {
        self.runnable[priority as usize].load(Ordering::Relaxed)
    }
}

static SCHEDULERS: [CoreScheduler; MAX_CORES] = [const { CoreScheduler::new() }; MAX_CORES];
/// Counter ticks per slice.
static SLICE_TICKS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Reductions per slice.
static REDUCTIONS_PER_SLICE: AtomicU64 = AtomicU64::new(4000);
/// Whether `trace=on` asked for scheduling traces.
static TRACE: AtomicBool = AtomicBool::new(false);
/// The balancer's settings and strategy, fixed at boot.
static BALANCE: spin::Once<(BalanceConfig, Strategy)> = spin::Once::new();
/// The most migrations any process has made.
static MAX_MIGRATIONS_SEEN: AtomicU32 = AtomicU32::new(0);
/// Cores asleep in WFI, so a core that queues stealable work can wake one to
/// take it (as Go's runtime wakes an idle P) instead of leaving it asleep until its tick.
static SLEEPERS: CoreSet = CoreSet::new();
/// Cores searching for work right now (idle, spinning through steal rounds before they sleep):
/// Go's spinning Ms. While one searches, new stealable work needs no wake-up SGI: the searcher
/// finds it within microseconds. At most half the cores search at once (Tokio's rule), so idle
/// cores do not all hammer the same victims.
static SEARCHING: AtomicUsize = AtomicUsize::new(0);
/// How long an idle core keeps searching before it sleeps, and the longest pause between two of
/// its steal rounds (the pauses grow exponentially from `SEARCH_PAUSE_MIN_NS`, with jitter).
const SEARCH_BUDGET_NS: u64 = 50_000;
const SEARCH_PAUSE_MIN_NS: u64 = 500;
const SEARCH_PAUSE_MAX_NS: u64 = 8_000;
/// The three above in counter ticks, computed once at boot.
static SEARCH_BUDGET_TICKS: AtomicU64 = AtomicU64::new(0);
static SEARCH_PAUSE_MIN_TICKS: AtomicU64 = AtomicU64::new(1);
static SEARCH_PAUSE_MAX_TICKS: AtomicU64 = AtomicU64::new(1);
/// Push rebalancing looks for severe imbalance this often (counter cycles are derived from it).
const REBALANCE_PERIOD_US: u64 = 2_000;
/// `REBALANCE_PERIOD_US` in counter ticks, computed once at boot.
static REBALANCE_PERIOD_TICKS: AtomicU64 = AtomicU64::new(u64::MAX);
/// Most processes one push-rebalancing round moves.
const REBALANCE_BATCH: usize = 16;

pub(crate) fn scheduler(core: usize) -> &'static CoreScheduler {
    &SCHEDULERS[core]
}

fn this_scheduler() -> &'static CoreScheduler {
    &SCHEDULERS[cpu::core_id()]
}

/// Boot core, before any core schedules.
pub(crate) fn init_global(
    slice_ticks: u64,
    reductions: u64,
    balance: BalanceConfig,
    strategy: Strategy,
    trace_on: bool,
) -> Result<(), crate::mm::heap::OutOfMemory> {
    TRACE.store(trace_on, Ordering::Relaxed);
    BALANCE.call_once(|| (balance, strategy));
    REBALANCE_PERIOD_TICKS.store(crate::time::us_to_ticks(REBALANCE_PERIOD_US), Ordering::Relaxed);
    let ns_to_ticks = |ns: u64| (ns.saturating_mul(cpu::counter_frequency()) / 1_000_000_000).max(1);
    SEARCH_BUDGET_TICKS.store(ns_to_ticks(SEARCH_BUDGET_NS), Ordering::Relaxed);
    SEARCH_PAUSE_MIN_TICKS.store(ns_to_ticks(SEARCH_PAUSE_MIN_NS), Ordering::Relaxed);
    SEARCH_PAUSE_MAX_TICKS.store(ns_to_ticks(SEARCH_PAUSE_MAX_NS), Ordering::Relaxed);
    SLICE_TICKS.store(slice_ticks.max(1), Ordering::Relaxed);
    REDUCTIONS_PER_SLICE.store(reductions.max(1), Ordering::Relaxed);
    process::init_table()
}

/// Each core, before its loop: its run queues.
pub(crate) fn init_this_core() {
    let me = this_scheduler();
    let queues = [(); LEVELS].map(|()| WorkQueue::new(DEQUE_CAPACITY).expect("power-of-two run-queue capacity"));
    me.stealers.call_once(|| [0, 1, 2].map(|level| queues[level].stealer()));
    me.inbox.lock().reserve(64);
    // SAFETY: this core, before it schedules anything.
    let local = unsafe { me.local() };
    local.queues = Some(queues);
    for private in &mut local.private {
        private.reserve(64);
    }
    local.rng = Rng::new(cpu::counter() ^ ((cpu::core_id() as u64 + 1) << 32));
    if trace::init_this_core(TRACE.load(Ordering::Relaxed)).is_err() {
        crate::println!("trace: core {}: no memory for the trace buffer; not tracing here", cpu::core_id());
    }
}

/// Reductions a slice starts with.
pub(crate) fn reductions_per_slice() -> i64 {
    REDUCTIONS_PER_SLICE.load(Ordering::Relaxed) as i64
}

/// With enough stealable work queued here and no core searching, wakes one sleeping core to
/// come and take some (a searching core would find it by itself within microseconds).
///
/// The loads are Relaxed, and nothing orders them after the push that made the work: a core
/// that announces its sleep just then may be missed here while its own last look (in `sleep`)
/// misses the new item. That costs promptness, never a process: the owner runs the item itself,
/// and the sleeper's tick wakes it within one slice. A full barrier on every push (the yield
/// path) to close that window would cost more than it saves.
fn wake_a_thief(stealable_here: usize) {
    let sleepers = SLEEPERS.load();
    if sleepers.is_empty() || stealable_here < balance().0.min_steal || SEARCHING.load(Ordering::Relaxed) != 0 {
        return;
    }
    let me = cpu::core_id();
    if let Some(other) = sleepers.first_other_than(me) {
        let _ = smp::send_sgi(other, Sgi::Wake);
    }
}

/// May the balancer move this process?
fn may_move(process: &super::process::Process, priority: Priority) -> bool {
    let (config, _) = balance();
    may_migrate(
        config,
        process.affinity() != Affinity::Free,
        process.migrations.load(Ordering::Relaxed),
        priority == Priority::Max,
    )
}

fn balance() -> &'static (BalanceConfig, Strategy) {
    BALANCE.get().expect("balancer configured at boot")
}

/// The victim strategy in force: the boot choice unless a program changed it since.
static STRATEGY: AtomicU8 = AtomicU8::new(u8::MAX);

fn strategy() -> Strategy {
    Strategy::ALL.get(STRATEGY.load(Ordering::Relaxed) as usize).copied().unwrap_or(balance().1)
}

/// Switches every core's victim strategy from its next steal round on (the soak runs every
/// strategy in one boot). Thieves pick it up at their next round; no round mixes two.
pub fn set_strategy(strategy: Strategy) {
    let index = Strategy::ALL.iter().position(|&s| s == strategy).unwrap_or(0);
    STRATEGY.store(index as u8, Ordering::Relaxed);
}

/// Queues a runnable process on the calling core. Caller: the owning core (scheduler, or the
/// process running on it) with IRQs masked.
fn enqueue_local(me: &CoreScheduler, slot: u32) {
    let process = process::slot(slot);
    let priority = process.priority();
    me.runnable[priority as usize].fetch_add(1, Ordering::Relaxed);
    // SAFETY: owning core with IRQs masked (caller contract).
    let local = unsafe { me.local() };
    let level = priority.level() as usize;
    if may_move(process, priority) {
        let queues = local.queues.as_ref().expect("run queues exist once the core schedules");
        // Never refused: a full deque spills to the overflow queue (Placement says which).
        let _placement = queues[level].push(u64::from(slot));
        if !SLEEPERS.is_empty() {
            wake_a_thief(queues[level].len());
        }
    } else {
        // Grows if needed; an allocation failure here is a kernel panic, never a lost process.
        local.private[level].push_back(slot);
    }
}

/// Makes a process that was just marked `Runnable` reachable by its core's scheduler: directly
/// into the run queue on its own core, else through that core's inbox and an SGI.
pub(crate) fn make_runnable(slot: u32) {
    let target = process::slot(slot).core.load(Ordering::Relaxed);
    let irq = cpu::irq_save();
    if target == cpu::core_id() {
        enqueue_local(&SCHEDULERS[target], slot);
    } else {
        let scheduler = &SCHEDULERS[target];
        {
            let mut inbox = scheduler.inbox.lock();
            // The inbox's reserve covers the common case; growing it may allocate, and a
            // failure here would lose a process, so it is a kernel panic, not an error.
            inbox.push_back(slot);
            // ORDERING: SeqCst pairs with the sleeper's SeqCst store of `sleeping` and load of
            // `inbox_len` (a Dekker pair): either it sees this item or we see it asleep.
            scheduler.inbox_len.fetch_add(1, Ordering::SeqCst);
        }
        if scheduler.sleeping.load(Ordering::SeqCst) {
            let _ = smp::send_sgi(target, Sgi::Wake);
        }
    }
    cpu::irq_restore(irq);
}

fn drain_inbox(me: &CoreScheduler) {
    // ORDERING: a hint only: the inbox itself is published by its lock (acquired below). A
    // stale zero delays an item to the next pass, never loses it: the pusher's SeqCst
    // `fetch_add` and our SeqCst check in `sleep` (a Dekker pair) keep us from sleeping on it.
    if me.inbox_len.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut inbox = me.inbox.lock();
    while let Some(slot) = inbox.pop_front() {
        me.inbox_len.fetch_sub(1, Ordering::Relaxed);
        enqueue_local(me, slot);
    }
}

/// Takes the next process to run: highest level first, FIFO within a level (the owner takes
/// from the top, like a thief, so every process of a level gets its turn).
fn take_next(me: &CoreScheduler) -> Option<u32> {
    // SAFETY: owning core, IRQs masked (caller contract of the scheduler loop).
    let local = unsafe { me.local() };
    let queues = local.queues.as_ref()?;
    // Levels above normal/low are usually empty: the runnable counts (one load each) skip
    // them without touching their queues.
    let first_level = if me.runnable[Priority::Max as usize].load(Ordering::Relaxed) != 0 {
        0
    } else if me.runnable[Priority::High as usize].load(Ordering::Relaxed) != 0 {
        1
    } else {
        2
    };
    for (level, queue) in queues.iter().enumerate().skip(first_level) {
        loop {
            // Alternate between the private and the stealable queue of the level, so neither
            // kind of process can starve the other.
            let prefer_private = local.private_turn[level];
            local.private_turn[level] = !prefer_private;
            let slot = if prefer_private || queue.is_empty() {
                match local.private[level].pop_front() {
                    Some(slot) => slot,
                    None => match take_oldest(queue) {
                        Some(slot) => slot,
                        None => break,
                    },
                }
            } else {
                match take_oldest(queue) {
                    Some(slot) => slot,
                    None => match local.private[level].pop_front() {
                        Some(slot) => slot,
                        None => break,
                    },
                }
            };
            let process = process::slot(slot);
            let priority = process.priority();
            me.runnable[priority as usize].fetch_sub(1, Ordering::Relaxed);
            // SAFETY: the process is in none of the queues now; this core owns it.
            let passes = unsafe { &mut process.local().low_passes };
            if low_priority_rule(priority, passes) == LowPriorityDecision::PassOver {
                enqueue_local(me, slot);
                continue;
            }
            bump(&me.stats.local_pops);
            return Some(slot);
        }
    }
    None
}

/// Retries of `take_oldest` before it gives up for this pass. Each `Steal::Retry` is either
/// progress elsewhere (a thief took the top item) or `STORE_EXCLUSIVE_ATTEMPTS` failed
/// store-exclusives in a row; more than a few in a row means something keeps clearing this
/// core's reservation, and spinning on it with IRQs masked would hide that and hold up timeouts,
/// the inbox and jobs.
const TAKE_OLDEST_ATTEMPTS: u32 = 4;

/// The owner's FIFO take from its own stealable queue: the oldest item, from the top like a
/// thief (spilled items are moved back into the deque first). After `TAKE_OLDEST_ATTEMPTS`
/// retries in a row it returns `None` for this pass: the item is still in the queue (a failed
/// CAS writes nothing; a lost race means a thief has it) and the scheduler loop comes back to it,
/// at worst after stealing or sleeping until the next tick.
fn take_oldest(queue: &WorkQueue<NativeAtomics>) -> Option<u32> {
    if queue.is_empty() {
        return None;
    }
    for _ in 0..TAKE_OLDEST_ATTEMPTS {
        match queue.take_oldest() {
            Steal::Success(item) => return Some(item as u32),
            Steal::Empty => return None,
            // A thief took the top item first, or the store-exclusive kept failing: look again.
            Steal::Retry => bump(&this_scheduler().stats.take_oldest_retries),
        }
    }
    bump(&this_scheduler().stats.take_oldest_gave_up);
    None
}

/// Records a trace event about the process in `slot` (IRQs masked; nothing when tracing is off).
#[inline]
pub(crate) fn trace_process(event: Event, core: usize, slot: u32, arg: u32) {
    if trace::enabled() {
        let generation = process::slot(slot).generation_hint.load(Ordering::Relaxed);
        trace::record(event, core, slot, generation, arg);
    }
}

/// What a thief sees of every online core.
fn core_views(cores: usize) -> heapless::Vec<CoreView, MAX_CORES> {
    (0..cores)
        .map(|core| {
            let scheduler = &SCHEDULERS[core];
            let by_priority = [0, 1, 2, 3].map(|p| scheduler.runnable[p].load(Ordering::Relaxed));
            let stealable = scheduler.stealers.get().map_or(0, |s| s.iter().map(|q| q.len()).sum());
            CoreView {
                load: CoreView::load_of(by_priority),
                stealable,
                runnable: by_priority.iter().sum(),
                cluster: (smp::core(core).mpidr() >> 8) & 0xff,
            }
        })
        .collect()
}

/// Moves a process just taken from `victim`'s stealable queue to core `to`.
fn migrate(slot: u32, victim: usize, to: usize) {
    let process = process::slot(slot);
    SCHEDULERS[victim].runnable[process.priority() as usize].fetch_sub(1, Ordering::Relaxed);
    process.core.store(to, Ordering::Relaxed);
    let migrations = process.migrations.fetch_add(1, Ordering::Relaxed) + 1;
    MAX_MIGRATIONS_SEEN.fetch_max(migrations, Ordering::Relaxed);
    SCHEDULERS[victim].stats.migrated_out.fetch_add(1, Ordering::Relaxed);
    SCHEDULERS[to].stats.migrated_in.fetch_add(1, Ordering::Relaxed);
}

/// An idle core's round of stealing: up to `retries` victims chosen by the strategy, with
/// backoff between attempts (short and bounded by `backoff_max_ticks`).
fn try_steal(me: &CoreScheduler, thief: usize) -> StealRound {
    let cores = smp::cores_online();
    if cores < 2 {
        return StealRound::Nothing;
    }
    let (config, _) = *balance();
    let strategy = strategy();
    // SAFETY: owning core, IRQs masked.
    let local = unsafe { me.local() };
    let views = core_views(cores);
    let effective = if strategy == Strategy::Adaptive { local.adaptive.current() } else { strategy };
    let victims = VictimPicker::pick(effective, thief, &views, &mut local.rng, config.retries as usize);
    // The earliest moment a victim that refused only for its cooldown becomes available.
    let mut cooled_at: Option<u64> = None;
    for (attempt, &victim) in victims.iter().enumerate() {
        let pause = backoff_ticks(&config, attempt as u32, local.rng.next_u64());
        let resume_at = cpu::counter() + pause;
        while cpu::counter() < resume_at {
            cpu::relax();
        }
        let started = cpu::counter();
        me.stats.steal_attempts.fetch_add(1, Ordering::Relaxed);
        // Fresh numbers for the chosen victim: the snapshot may be a backoff old.
        let view = core_views(cores)[victim];
        let thief_load = views[thief].load;
        let outcome = check_victim(&config, thief_load, &view, started, local.last_steal[victim]);
        let taken = match outcome {
            Err(refusal) => {
                let counter = match refusal {
                    Refusal::Empty => &me.stats.fail_empty,
                    Refusal::BelowThreshold => &me.stats.fail_below_threshold,
                    Refusal::Cooldown => {
                        let at = local.last_steal[victim].wrapping_add(config.cooldown_ticks);
                        cooled_at = Some(cooled_at.map_or(at, |t: u64| t.min(at)));
                        &me.stats.fail_cooldown
                    }
                    Refusal::Unmovable => &me.stats.fail_migration_limit,
                };
                bump(counter);
                0
            }
            Ok(()) => steal_from(me, thief, victim, steal_count(config.amount, view.stealable)),
        };
        local.adaptive.record(taken > 0);
        if taken > 0 {
            let now = cpu::counter();
            bump(&me.stats.steals);
            me.stats.stolen.store(me.stats.stolen.load(Ordering::Relaxed) + taken as u64, Ordering::Relaxed);
            let seen = &me.stats.stealable_seen;
            seen.store(seen.load(Ordering::Relaxed) + view.stealable as u64, Ordering::Relaxed);
            bump(&me.stats.steal_latency[latency_bucket(now - started)]);
            let last = local.last_steal[victim];
            if last != NEVER {
                let gap = now.wrapping_sub(last);
                if gap < me.stats.min_steal_gap.load(Ordering::Relaxed) {
                    me.stats.min_steal_gap.store(gap, Ordering::Relaxed);
                }
            }
            local.last_steal[victim] = now;
            return StealRound::Took(victim);
        }
    }
    match cooled_at {
        Some(at) => StealRound::CoolingUntil(at),
        None => StealRound::Nothing,
    }
}

/// Takes up to `count` processes from `victim`, highest priority level first.
fn steal_from(me: &CoreScheduler, thief: usize, victim: usize, count: usize) -> usize {
    let Some(stealers) = SCHEDULERS[victim].stealers.get() else { return 0 };
    let mut taken = 0;
    let mut lost_race = false;
    for stealer in stealers {
        while taken < count {
            match stealer.steal() {
                Steal::Success(item) => {
                    let slot = item as u32;
                    migrate(slot, victim, thief);
                    trace_process(Event::Steal, thief, slot, victim as u32);
                    enqueue_local(me, slot);
                    taken += 1;
                }
                Steal::Empty => break,
                Steal::Retry => {
                    lost_race = true;
                    break;
                }
            }
        }
    }
    if taken == 0 {
        bump(if lost_race { &me.stats.fail_lost_race } else { &me.stats.fail_empty });
    }
    taken
}

/// Push rebalancing (core 0, as ERTS's check_balance): on severe imbalance, moves a few
/// stealable processes from the busiest core straight to the idlest, under the same rules.
fn rebalance(local: &mut Local) {
    let cores = smp::cores_online();
    if cores < 2 {
        return;
    }
    let now = cpu::counter();
    if now.wrapping_sub(local.last_rebalance) < REBALANCE_PERIOD_TICKS.load(Ordering::Relaxed) {
        return;
    }
    let (config, _) = *balance();
    if !config.rebalance {
        return;
    }
    local.last_rebalance = now;
    let views = core_views(cores);
    let busiest = (0..cores).max_by_key(|&c| views[c].load).unwrap_or(0);
    let idlest = (0..cores).min_by_key(|&c| views[c].load).unwrap_or(0);
    let (high, low) = (views[busiest].load, views[idlest].load);
    if busiest == idlest || high <= config.rebalance_ratio * low.max(1) || high <= low + config.imbalance {
        return;
    }
    if views[busiest].stealable < config.min_steal {
        return;
    }
    let Some(stealers) = SCHEDULERS[busiest].stealers.get() else { return };
    // Enough to bring the two halfway together (a normal process weighs 2), a few at a time.
    let batch = REBALANCE_BATCH.min(views[busiest].stealable / 2).min(((high - low) / 4) as usize).max(1);
    let mut moved = 0;
    'levels: for stealer in stealers {
        while moved < batch {
            match stealer.steal() {
                Steal::Success(item) => {
                    let slot = item as u32;
                    migrate(slot, busiest, idlest);
                    trace_process(Event::Migrate, idlest, slot, busiest as u32);
                    make_runnable(slot);
                    moved += 1;
                }
                Steal::Empty => continue 'levels,
                Steal::Retry => break 'levels,
            }
        }
    }
    if moved > 0 {
        let me = this_scheduler();
        me.stats.rebalanced.fetch_add(moved as u64, Ordering::Relaxed);
    }
}

/// The most migrations any process has made so far.
pub fn max_migrations_seen() -> u32 {
    MAX_MIGRATIONS_SEEN.load(Ordering::Relaxed)
}

/// The balancer's configuration in force.
pub fn balance_config() -> (BalanceConfig, Strategy) {
    (balance().0, strategy())
}

fn expire_timeouts(me: &CoreScheduler, local: &mut Local) {
    if local.timeouts.is_empty() {
        return;
    }
    let now = cpu::counter();
    let mut i = 0;
    while i < local.timeouts.len() {
        if local.timeouts[i].deadline > now {
            i += 1;
            continue;
        }
        let timeout = local.timeouts.swap_remove(i);
        let process = process::slot(timeout.slot);
        let mut shared = process.shared.lock();
        if shared.state == State::Waiting && shared.wait_sequence == timeout.wait_sequence {
            shared.state = State::Runnable;
            shared.timed_out = true;
            drop(shared);
            trace_process(Event::Wake, cpu::core_id(), timeout.slot, cpu::core_id() as u32);
            enqueue_local(me, timeout.slot);
        }
    }
}

/// Registers a timeout for the current process's wait. Process context, IRQs masked.
pub(crate) fn add_timeout(slot: u32, deadline: u64, wait_sequence: u64) {
    // SAFETY: called by the running process on its own core with IRQs masked.
    let local = unsafe { this_scheduler().local() };
    // A failed reservation would mean the wait could never time out: treat as fatal.
    local.timeouts.push(Timeout { deadline, slot, wait_sequence });
}

/// The core's life once online: run processes and queued jobs, else sleep until woken.
pub(crate) fn run_loop() -> ! {
    let core = cpu::core_id();
    let me = this_scheduler();
    loop {
        // The scheduler runs with IRQs masked; they are unmasked while a job or a process runs
        // and to take the interrupt that ends a sleep.
        let _ = cpu::irq_save();
        if let Some(job) = smp::take_job() {
            end_search(me);
            cpu::irq_enable();
            job();
            continue;
        }
        drain_inbox(me);
        // SAFETY: owning core, IRQs masked.
        let local = unsafe { me.local() };
        expire_timeouts(me, local);
        if core == 0 {
            rebalance(local);
        }
        if let Some(slot) = take_next(me) {
            end_search(me);
            run(me, slot);
            continue;
        }
        let round = try_steal(me, core);
        // SAFETY: owning core, IRQs masked; `try_steal`'s borrow has ended.
        let local = unsafe { me.local() };
        match round {
            StealRound::Took(victim) => {
                if local.searching {
                    stop_searching(local);
                }
                // If the victim still has work to spare and no core searches, wake another
                // thief for it (Go wakes a spinning M when the last one finds work): without
                // this, cores that slept through a burst of spawns would wait for their tick.
                if let Some(stealers) = SCHEDULERS[victim].stealers.get() {
                    wake_a_thief(stealers.iter().map(|q| q.len()).sum());
                }
            }
            // A victim with work is cooling down. Soon: come round the loop again (serving
            // jobs, the inbox and timeouts) with an interrupt window each time, so ticks and
            // SGIs are taken; later than a slice: sleep, and the tick or a wake-up brings the
            // core back. Never a wait with IRQs masked, however long the cooldown.
            StealRound::CoolingUntil(at)
                if at.wrapping_sub(cpu::counter()) as i64 <= SLICE_TICKS.load(Ordering::Relaxed) as i64 =>
            {
                cpu::irq_enable();
                cpu::relax();
            }
            StealRound::CoolingUntil(_) | StealRound::Nothing => {
                if !search_a_little_longer(local, smp::cores_online()) {
                    sleep(me);
                }
            }
        }
    }
}

/// The core found work of its own (a job, a process): it stops counting as a searcher.
fn end_search(me: &CoreScheduler) {
    // SAFETY: owning core, IRQs masked (the loop's contract); no other borrow is live.
    let local = unsafe { me.local() };
    if local.searching {
        stop_searching(local);
    }
}

/// Would a steal round succeed now? Fresh views of every other core, judged by the same rules
/// (`check_victim`, cooldowns included) the round would apply. A core about to sleep asks this
/// after announcing itself as a sleeper, so that work pushed just before is not slept through.
fn steal_would_succeed(me: &CoreScheduler, thief: usize) -> bool {
    let cores = smp::cores_online();
    if cores < 2 {
        return false;
    }
    let (config, _) = *balance();
    // SAFETY: owning core, IRQs masked; only `last_steal` is read.
    let local = unsafe { me.local() };
    let views = core_views(cores);
    let now = cpu::counter();
    (0..cores)
        .filter(|&victim| victim != thief)
        .any(|victim| check_victim(&config, views[thief].load, &views[victim], now, local.last_steal[victim]).is_ok())
}

/// An idle core that found nothing: keep searching (a short pause, growing exponentially with
/// jitter, IRQs open so ticks and SGIs are served, then the loop's next round of jobs, inbox,
/// timeouts and stealing) until the search budget is spent, if no more than half the cores
/// search already. False when it should sleep now.
fn search_a_little_longer(local: &mut Local, cores: usize) -> bool {
    if cores < 2 {
        return false;
    }
    let now = cpu::counter();
    if !local.searching {
        let limit = (cores / 2).max(1);
        // ORDERING: Relaxed: the count only limits how many search; an overshoot by a racing
        // core costs a little spinning, never correctness.
        if SEARCHING.fetch_add(1, Ordering::Relaxed) >= limit {
            SEARCHING.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        local.searching = true;
        local.search_started = now;
        local.search_rounds = 0;
    } else if now.wrapping_sub(local.search_started) >= SEARCH_BUDGET_TICKS.load(Ordering::Relaxed) {
        stop_searching(local);
        return false;
    }
    let min = SEARCH_PAUSE_MIN_TICKS.load(Ordering::Relaxed);
    let max = SEARCH_PAUSE_MAX_TICKS.load(Ordering::Relaxed);
    let pause = min.saturating_mul(1 << local.search_rounds.min(16)).min(max);
    local.search_rounds += 1;
    let pause = pause / 2 + local.rng.next_u64() % (pause / 2 + 1);
    let until = now + pause;
    cpu::irq_enable();
    while cpu::counter() < until {
        cpu::relax();
    }
    let me = this_scheduler();
    if work_elsewhere(cpu::core_id()) {
        add(&me.stats.idle_with_work_ticks, cpu::counter().wrapping_sub(now));
    }
    true
}

/// Does another core hold at least `min_steal` stealable processes?
fn work_elsewhere(thief: usize) -> bool {
    let min_steal = balance().0.min_steal;
    (0..smp::cores_online()).filter(|&core| core != thief).any(|core| {
        SCHEDULERS[core].stealers.get().is_some_and(|s| s.iter().map(|q| q.len()).sum::<usize>() >= min_steal)
    })
}

/// Adds to a counter only its own core writes.
fn add(counter: &AtomicU64, amount: u64) {
    counter.store(counter.load(Ordering::Relaxed) + amount, Ordering::Relaxed);
}

fn stop_searching(local: &mut Local) {
    local.searching = false;
    SEARCHING.fetch_sub(1, Ordering::Relaxed);
}

/// What an idle core's round of stealing came to.
enum StealRound {
    /// It took at least one process, from this victim.
    Took(usize),
    /// Nothing taken; a victim with work refused only for its cooldown, which ends at this
    /// counter reading.
    CoolingUntil(u64),
    /// Nothing to take anywhere.
    Nothing,
}

fn sleep(me: &CoreScheduler) {
    // ORDERING: SeqCst store then SeqCst load, pairing with `make_runnable` (see there).
    me.sleeping.store(true, Ordering::SeqCst);
    if me.inbox_len.load(Ordering::SeqCst) == 0 && !smp::has_jobs() {
        // WFI wakes on a pending interrupt even with IRQs masked: a wake-up SGI that arrived
        // after the checks is not lost. The tick bounds the sleep (timeouts are checked, and
        // stealing tried again, then).
        // ORDERING: SeqCst read-modify-write, then the fresh look at the other cores' queues
        // below: work pushed before this point is seen there, or the pusher (which reads
        // `SLEEPERS` after pushing) sees this core asleep and may wake it.
        SLEEPERS.insert(cpu::core_id(), Ordering::SeqCst);
        if steal_would_succeed(me, cpu::core_id()) {
            SLEEPERS.remove(cpu::core_id(), Ordering::Relaxed);
            me.sleeping.store(false, Ordering::Relaxed);
            cpu::irq_enable();
            return;
        }
        let fell_asleep = cpu::counter();
        trace::record(Event::Sleep, cpu::core_id(), 0, 0, 0);
        cpu::wait_for_interrupt();
        trace::record(Event::IdleEnd, cpu::core_id(), 0, 0, 0);
        let slept = cpu::counter() - fell_asleep;
        SLEEPERS.remove(cpu::core_id(), Ordering::Relaxed);
        me.stats.asleep_cycles.store(me.stats.asleep_cycles.load(Ordering::Relaxed) + slept, Ordering::Relaxed);
        if work_elsewhere(cpu::core_id()) {
            add(&me.stats.idle_with_work_ticks, slept);
        }
    }
    me.sleeping.store(false, Ordering::Relaxed);
    // Take the interrupt that woke us before looking again (the loop masks IRQs at its top).
    cpu::irq_enable();
}

fn run(me: &CoreScheduler, slot: u32) {
    let core = cpu::core_id();
    let process = process::slot(slot);
    // ORDERING: Relaxed: the flag carries no data; `kill` writes it under the slot lock (see there).
    if process.kill_requested.load(Ordering::Relaxed) {
        finish(me, slot, ExitReason::Killed);
        return;
    }
    // SAFETY: owning core with IRQs masked; the process is out of every queue.
    let local = unsafe { me.local() };
    // SAFETY: as above.
    let process_local = unsafe { process.local() };
    local.current = Some(slot);
    local.pending = Pending::Nothing;
    local.slice_started = cpu::counter();
    process_local.reductions = reductions_per_slice();
    bump(&me.stats.executed);
    trace_process(Event::Run, core, slot, 0);
    local.turn_heap_mark = heap::net_bytes_on(core);
    let scheduler_context: *mut Context = &mut local.context;
    match process_local.preempted_frame.take() {
        // SAFETY: scheduler side, IRQs masked, the frame lies on the process's live stack.
        Some(frame) => unsafe { context::resume_preempted(&mut *scheduler_context, frame) },
        // SAFETY: scheduler side, IRQs masked, the context was saved by the process's last
        // switch (or made at spawn) and its stack is allocated.
        None => unsafe { context::switch_to_process(&mut *scheduler_context, &process_local.context) },
    }
    // Back on the scheduler's stack: the process is not running anywhere now.
    // SAFETY: owning core, IRQs masked (every way back masks them).
    let local = unsafe { me.local() };
    local.current = None;
    // SAFETY: as above; the process is in no queue until the match below puts it in one.
    unsafe { process.local().heap_net_bytes += heap::net_bytes_on(core) - local.turn_heap_mark };
    match core::mem::replace(&mut local.pending, Pending::Nothing) {
        Pending::Requeue => {
            trace_process(Event::Yield, core, slot, 0);
            enqueue_local(me, slot);
        }
        Pending::Preempted => {
            trace_process(Event::Preempt, core, slot, 0);
            enqueue_local(me, slot);
        }
        Pending::Block => trace_process(Event::Block, core, slot, 0),
        Pending::Nothing => {}
        Pending::Exit(reason) => {
            trace_process(Event::Exit, core, slot, 0);
            finish(me, slot, reason);
        }
    }
}

/// Ends a process: wakes nobody twice, tells its monitors, frees its stack and slot.
fn finish(me: &CoreScheduler, slot: u32, reason: ExitReason) {
    let process = process::slot(slot);
    let (pid, monitors, mailbox) = {
        let mut shared = process.shared.lock();
        let pid = process::Pid { index: slot, generation: shared.generation };
        shared.state = State::Free;
        shared.generation = shared.generation.wrapping_add(1);
        shared.timed_out = false;
        // Cleared under the lock that ends this generation: a `kill` of the old pid either
        // came before (and is cleared here) or sees the new generation and refuses.
        process.kill_requested.store(false, Ordering::Relaxed);
        (pid, core::mem::take(&mut shared.monitors), core::mem::take(&mut shared.mailbox))
    };
    drop(mailbox);
    // SAFETY: the process has ended and is in no queue; this core owns what is left of it.
    let local = unsafe { process.local() };
    local.entry.clear();
    local.preempted_frame = None;
    if reason == ExitReason::Panic {
        HEAP_NOT_RECLAIMED.fetch_add(local.heap_net_bytes.max(0) as u64, Ordering::Relaxed);
    }
    local.heap_net_bytes = 0;
    if let Some(stack) = local.stack.take() {
        stacks::free(stack);
    }
    process.migrations.store(0, Ordering::Relaxed);
    // Counted before the slot is released: whoever sees the slot free (through the free list's
    // lock) also sees this count, so spawned = completed + alive holds whenever nothing is
    // ending (the soak's exactly-once check relies on it).
    bump(&me.stats.completed);
    process::release_slot(slot);
    if is_program_main(pid) {
        panic!("the program's main process {pid} ended: {reason}");
    }
    for watcher in monitors {
        let _ = super::api::send(watcher, Message::Down { pid, reason });
    }
}

/// Called by a running process: records what it asks for and gives the core back. Returns
/// when the process runs again (possibly on another core later, when balancing exists).
pub(crate) fn switch_out(pending: Pending) {
    let irq = cpu::irq_save();
    let me = this_scheduler();
    // SAFETY: the running process on its own core, IRQs masked.
    let local = unsafe { me.local() };
    let slot = local.current.expect("switch_out from a process");
    local.pending = pending;
    let scheduler_context: *const Context = &local.context;
    // SAFETY: as above; the process's own `Local` is not otherwise borrowed here.
    let process_context: *mut Context = unsafe { &mut process::slot(slot).local().context };
    // SAFETY: process side (SPSel 0), IRQs masked, `scheduler_context` is this core's.
    unsafe { context::switch_to_scheduler(&mut *process_context, &*scheduler_context) };
    cpu::irq_restore(irq);
}

/// The slot of the process running on this core, if any.
pub(crate) fn current_slot() -> Option<u32> {
    let irq = cpu::irq_save();
    // SAFETY: own core, IRQs masked.
    let current = unsafe { this_scheduler().local().current };
    cpu::irq_restore(irq);
    current
}

/// The mapped part of the stack of the process running on this core, if any: where a
/// backtrace taken on this core may read besides the core's boot stack (the rest of the stack's
/// reservation would fault).
pub(crate) fn current_stack() -> Option<core::ops::Range<usize>> {
    // Also called on the way down, possibly before this core has recorded its id: an id out of
    // range must give no stack rather than a panic inside the panic path.
    let me = SCHEDULERS.get(cpu::core_id())?;
    let irq = cpu::irq_save();
    // SAFETY: own core, IRQs masked; copies are read, no reference kept.
    let stack = unsafe { me.local().current }.and_then(|slot| {
        // SAFETY: as above: the process runs (or ran last) on this core, which owns its `Local`.
        unsafe { process::slot(slot).local().stack.as_ref() }.map(|s| s.mapped())
    });
    cpu::irq_restore(irq);
    stack
}

/// Timer tick (IRQ context): ends the running process's slice when it has had its time.
pub(crate) fn on_tick(frame: &mut TrapFrame) {
    super::watchdog::on_tick();
    if !context::interrupted_process(frame) {
        return;
    }
    let me = this_scheduler();
    // SAFETY: own core, IRQ context (IRQs masked); the interrupted process is not running.
    let local = unsafe { me.local() };
    let Some(slot) = local.current else { return };
    if cpu::counter().wrapping_sub(local.slice_started) < SLICE_TICKS.load(Ordering::Relaxed) {
        return;
    }
    let process = process::slot(slot);
    // SAFETY: as above.
    let process_local = unsafe { process.local() };
    let stack = process_local.stack.as_mut().expect("a running process has a stack");
    let frame_bytes = core::mem::size_of::<TrapFrame>();
    let save_at = (frame.sp_el0 as usize).saturating_sub(frame_bytes) & !15;
    // The frame goes below the stack pointer, maybe below the stack's mapped part: map it first
    // (a fault here, on the kernel stack, would be the kernel's own).
    // The process was running its own code (IRQs unmasked): it may not take the last pages.
    if let Err(error) = stack.grow_to(save_at, false) {
        // No room to save its registers: it has as good as overflowed, or no page was free.
        let reason = if error == GrowError::OutOfMemory { ExitReason::OutOfMemory } else { ExitReason::StackOverflow };
        if reason == ExitReason::OutOfMemory {
            let pid = process::Pid { index: slot, generation: process.generation_hint.load(Ordering::Relaxed) };
            crate::println!("process {pid} on core {} ended: {reason} (preempted)", cpu::core_id());
        }
        end_with(me, local, frame, reason);
        return;
    }
    // SAFETY: `save_at..save_at + frame_bytes` lies in the process's own stack below its stack
    // pointer (unused by it), and the process cannot run until this frame is consumed.
    unsafe { core::ptr::copy_nonoverlapping(frame as *const TrapFrame, save_at as *mut TrapFrame, 1) };
    process_local.preempted_frame = Some(save_at as *const TrapFrame);
    local.pending = Pending::Preempted;
    bump(&me.stats.preemptions);
    // SAFETY: `frame` is this exception's frame, taken while the process ran; the scheduler
    // context was saved when it started the process.
    unsafe { context::end_turn_from_exception(frame, &local.context) };
}

fn end_with(me: &CoreScheduler, local: &mut Local, frame: &mut TrapFrame, reason: ExitReason) {
    local.pending = Pending::Exit(reason);
    bump(&me.stats.faults);
    // SAFETY: as in `on_tick`: this exception interrupted the running process.
    unsafe { context::end_turn_from_exception(frame, &local.context) };
}

/// A synchronous exception in a process (exception context). A translation fault just below
/// the mapped part of its stack grows the stack, and the process goes on; any other ends it
/// with the reason the fault implies. Returns true either way; false if no process was running
/// (a kernel fault, which the caller reports as fatal).
pub(crate) fn on_process_fault(frame: &mut TrapFrame, esr: u64, far: u64) -> bool {
    if !context::interrupted_process(frame) {
        return false;
    }
    let me = this_scheduler();
    // SAFETY: own core, exception context with IRQs masked.
    let local = unsafe { me.local() };
    let Some(slot) = local.current else { return false };
    let process = process::slot(slot);
    // SAFETY: as above.
    let stack = unsafe { process.local().stack.as_mut() };
    let class = ((esr >> 26) & 0x3f) as u8;
    let is_data_abort = class == 0x25;
    // ISS.DFSC 0b0001xx: a translation fault (the page is not mapped), at any level.
    let translation_fault = esr & 0x3c == 0x04;
    let mut out_of_memory = false;
    if let Some(stack) = stack.filter(|s| is_data_abort && translation_fault && s.can_grow_to(far as usize)) {
        // Just below the mapped part of its stack: map it, and the access is retried on return.
        // With IRQs masked it was in kernel code, perhaps holding a lock: it may take the last
        // pages rather than be ended there (SPSR.I, bit 7: IRQs masked where it faulted).
        let kernel_code = frame.spsr & (1 << 7) != 0;
        match stack.grow_to(far as usize, kernel_code) {
            Ok(()) => return true,
            Err(_) => out_of_memory = true,
        }
    }
    // SAFETY: as above; the borrow above has ended.
    let stack = unsafe { process.local().stack.as_ref() };
    let in_guard = stack.is_some_and(|s| s.guard().contains(&(far as usize)));
    let reason = if out_of_memory {
        ExitReason::OutOfMemory
    } else if is_data_abort && in_guard {
        ExitReason::StackOverflow
    } else {
        let address = if matches!(class, 0x20 | 0x21 | 0x24 | 0x25) { far } else { frame.elr };
        ExitReason::Fault { class, address }
    };
    let pid = process::Pid { index: slot, generation: process.shared.lock().generation };
    let backtrace = Backtrace::of_exception(frame);
    crate::println!("process {pid} on core {} ended: {reason} (ELR={:#x})\n{backtrace}", cpu::core_id(), frame.elr);
    end_with(me, local, frame, reason);
    true
}

/// The program's main process (slot in the high half, generation in the low; `u64::MAX` for
/// none): its end is the end of the run, so if it ends other than by returning (a panic, a
/// fault, a kill) the kernel stops with a `PANIC` rather than wait forever for its verdict.
static PROGRAM_MAIN: AtomicU64 = AtomicU64::new(u64::MAX);

fn pid_word(pid: process::Pid) -> u64 {
    u64::from(pid.index) << 32 | u64::from(pid.generation)
}

/// Names the program's main process (the boot code, once).
pub(crate) fn set_program_main(pid: process::Pid) {
    PROGRAM_MAIN.store(pid_word(pid), Ordering::Relaxed);
}

fn is_program_main(pid: process::Pid) -> bool {
    PROGRAM_MAIN.load(Ordering::Relaxed) == pid_word(pid)
}

/// Heap bytes left allocated by processes that panicked (a panic does not unwind, so what they
/// held is not freed): counted here and in the report instead of being lost without a trace.
static HEAP_NOT_RECLAIMED: AtomicU64 = AtomicU64::new(0);

/// Heap bytes processes that panicked left allocated, in total.
pub fn heap_not_reclaimed_bytes() -> u64 {
    HEAP_NOT_RECLAIMED.load(Ordering::Relaxed)
}

/// A Rust panic (panic handler context). If it happened in a process's own code (on its stack,
/// IRQs unmasked, so no kernel lock or per-core state is held), ends that process with
/// `ExitReason::Panic` and never returns. Returns only when the panic is the kernel's own,
/// which the caller treats as fatal.
pub(crate) fn on_panic(message: core::fmt::Arguments<'_>, backtrace: &Backtrace) {
    if cpu::irqs_masked() || !context::running_on_process_stack() {
        return;
    }
    let irq = cpu::irq_save();
    let core = cpu::core_id();
    let me = this_scheduler();
    // SAFETY: the running process on its own core, IRQs masked.
    let Some(slot) = (unsafe { me.local().current }) else {
        cpu::irq_restore(irq);
        return;
    };
    let process = process::slot(slot);
    // SAFETY: as above: this process runs here and nothing else holds its `Local`.
    let earlier_turns = unsafe { process.local().heap_net_bytes };
    // SAFETY: own core, IRQs masked; a copy is read, no reference kept.
    let turn_began_at = unsafe { me.local().turn_heap_mark };
    let held = earlier_turns + heap::net_bytes_on(core) - turn_began_at;
    let pid = process::Pid { index: slot, generation: process.generation_hint.load(Ordering::Relaxed) };
    if is_program_main(pid) {
        // The program itself failed: that ends the run, as a kernel panic does.
        cpu::irq_restore(irq);
        return;
    }
    crate::println!(
        "process {pid} on core {core} ended: panic: {message} ({} heap bytes it allocated are not reclaimed)\n\
         {backtrace}",
        held.max(0)
    );
    bump(&me.stats.faults);
    cpu::irq_restore(irq);
    switch_out(Pending::Exit(ExitReason::Panic));
    unreachable!("a process that panicked is never scheduled again");
}

/// Queues a newly spawned process (already `Runnable`) on `core`.
pub(crate) fn admit(core: usize, slot: u32) {
    SCHEDULERS[core].stats.spawned.fetch_add(1, Ordering::Relaxed);
    let irq = cpu::irq_save();
    trace_process(Event::Spawn, core, slot, cpu::core_id() as u32);
    cpu::irq_restore(irq);
    make_runnable(slot);
}

/// Prints what every core's scheduler holds and the state of live processes: for diagnosing a
/// run that stopped making progress (called by the watchdog before it panics).
pub fn debug_dump() {
    let cores = smp::cores_online();
    for (core, scheduler) in SCHEDULERS.iter().enumerate().take(cores) {
        let runnable: [usize; 4] = core::array::from_fn(|p| scheduler.runnable[p].load(Ordering::Relaxed));
        let stealable: [usize; LEVELS] =
            scheduler.stealers.get().map_or([0; LEVELS], |s| s.each_ref().map(|q| q.len()));
        let stats = &scheduler.stats;
        crate::println!(
            "watchdog: core {core}: runnable {runnable:?} stealable {stealable:?} inbox {} sleeping {} executed {} \
             local_pops {} take_oldest retries {} gave up {} steals {} attempts {}",
            scheduler.inbox_len.load(Ordering::Relaxed),
            scheduler.sleeping.load(Ordering::Relaxed),
            stats.executed.load(Ordering::Relaxed),
            stats.local_pops.load(Ordering::Relaxed),
            stats.take_oldest_retries.load(Ordering::Relaxed),
            stats.take_oldest_gave_up.load(Ordering::Relaxed),
            stats.steals.load(Ordering::Relaxed),
            stats.steal_attempts.load(Ordering::Relaxed),
        );
    }
    let mut shown = 0;
    for index in 0..process::slots_made() {
        let process = process::slot(index);
        let Some(shared) = process.shared.try_lock_for(1000) else {
            crate::println!("watchdog: process slot {index}: lock held");
            continue;
        };
        if shared.state == State::Free {
            continue;
        }
        if shown < 24 {
            crate::println!(
                "watchdog: process <{index}.{}> {:?} on core {} mailbox {}",
                shared.generation,
                shared.state,
                process.core.load(Ordering::Relaxed),
                shared.mailbox.len()
            );
        }
        shown += 1;
    }
    crate::println!("watchdog: {shown} live processes, {} cores searching", SEARCHING.load(Ordering::Relaxed));
    trace::dump();
}
