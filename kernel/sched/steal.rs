//! Work stealing and push rebalancing: an idle core's steal round (victims picked by the
//! strategy, each judged by the balancer's rules, with backoff between attempts), the fresh
//! look a core about to sleep takes, and core 0's periodic push from the busiest core to the
//! idlest on severe imbalance. The rules themselves are pure (`balance/`, host-tested).

use core::sync::atomic::{AtomicU32, Ordering};

use crate::arch::cpu;
use crate::mm::layout::MAX_CORES;
use crate::sched::proc::process;
use crate::sched::record::stats::{self, add, bump, latency_bucket};
use crate::sched::record::trace::{self, Event};
use crate::sched::run::active::{self, may_run_here};
use crate::sched::run::attention;
use crate::sched::run::percore::{OnCore, scheduler};
use crate::sched::run::runqueue::movable;
use crate::sched::run::wake::make_runnable;
use crate::sched::settings::{balance, rebalance_period_counts, strategy};
use crate::smp;
use beamcore_deque::Steal;
use beamcore_sched_policy::balance::CoreView;
use beamcore_sched_policy::balance::{
    NEVER, RebalancePlan, Refusal, VictimPicker, backoff_counts, check_victim, cooldown_ends_at, plan_rebalance,
    rebalance_due, steal_count, worth_a_thief,
};

/// The most migrations any process has made.
static MAX_MIGRATIONS_SEEN: AtomicU32 = AtomicU32::new(0);

/// The most migrations any process has made so far.
pub fn max_migrations_seen() -> u32 {
    // ORDERING: Relaxed: a figure for the report.
    MAX_MIGRATIONS_SEEN.load(Ordering::Relaxed)
}

/// What an idle core's round of stealing came to.
pub(super) enum StealRound {
    /// It took at least one process, from this victim.
    Took(usize),
    /// Nothing taken; a victim with work refused only for its cooldown, which ends at this
    /// counter reading.
    CoolingUntil(u64),
    /// Nothing to take anywhere.
    Nothing,
}

/// What a thief sees of one core.
fn core_view(core: usize) -> CoreView {
    let queues = &scheduler(core).queues;
    let by_priority = queues.runnable_by_priority();
    CoreView {
        load: CoreView::load_of(by_priority),
        stealable: queues.stealable_total(),
        runnable: by_priority.iter().sum(),
        cluster: (smp::core(core).mpidr() >> 8) & 0xff,
    }
}

/// What a thief sees of every online core, written into `views` (emptied first). Filled in
/// place rather than returned: the vector holds room for `MAX_CORES` views (2 KiB), and a
/// returned one was copied whole on every steal round, whatever the number of cores.
fn core_views(views: &mut heapless::Vec<CoreView, MAX_CORES>, cores: usize) {
    views.clear();
    for core in 0..cores {
        // `cores` is at most MAX_CORES (cores online), the vector's capacity.
        let _ = views.push(core_view(core));
    }
}

/// Moves a process just taken from `victim`'s stealable queue to core `to`.
fn migrate(slot: u32, victim: usize, to: usize) {
    let process = process::slot(slot);
    // ORDERING: Relaxed throughout: counts and the process's placement; the process itself
    // is handed over by the deque's steal (and the queue or inbox it goes into next).
    scheduler(victim).queues.count_taken_away(process.priority());
    process.core.store(to, Ordering::Relaxed);
    let migrations = process.migrations.fetch_add(1, Ordering::Relaxed) + 1;
    process.movable.store(movable(process), Ordering::Relaxed);
    MAX_MIGRATIONS_SEEN.fetch_max(migrations, Ordering::Relaxed);
    stats::of(victim).migrated_out.fetch_add(1, Ordering::Relaxed);
    stats::of(to).migrated_in.fetch_add(1, Ordering::Relaxed);
}

/// An idle core's round of stealing: up to `retries` victims chosen by the strategy, with
/// backoff between attempts (short and bounded by `backoff_max_counts`).
pub(super) fn try_steal(core: &mut OnCore) -> StealRound {
    let thief = core.id();
    let cores = smp::cores_online();
    if cores < 2 {
        return StealRound::Nothing;
    }
    let (config, _) = *balance();
    let strategy = strategy();
    let stats = core.scheduler().stats;
    let mut views = heapless::Vec::new();
    core_views(&mut views, cores);
    let mut victims = {
        let local = core.local();
        VictimPicker::pick(strategy.effective(&local.adaptive), thief, &views, &mut local.rng, config.retries as usize)
    };
    // A core that left (or is leaving) is no victim: its queues are empty or being emptied by
    // itself, and it may hold nothing anyone waits for.
    victims.retain(|victim| active::core_is_active(*victim));
    // The earliest moment a victim that refused only for its cooldown becomes available.
    let mut cooled_at: Option<u64> = None;
    for (attempt, &victim) in victims.iter().enumerate() {
        let pause = backoff_counts(&config, attempt as u32, core.local().rng.next_u64());
        let resume_at = cpu::counter() + pause;
        while cpu::counter() < resume_at {
            cpu::relax();
        }
        let started = cpu::counter();
        // ORDERING: Relaxed: a statistic.
        stats.steal_attempts.fetch_add(1, Ordering::Relaxed);
        // Fresh numbers for the chosen victim: the snapshot may be a backoff old.
        let view = core_view(victim);
        let thief_load = views[thief].load;
        let last_steal = core.local().last_steal[victim];
        let outcome = check_victim(&config, thief_load, &view, started, last_steal);
        let taken = match outcome {
            Err(refusal) => {
                let counter = match refusal {
                    Refusal::Empty => &stats.fail_empty,
                    Refusal::BelowThreshold => &stats.fail_below_threshold,
                    Refusal::Cooldown => {
                        cooled_at = cooldown_ends_at(&config, last_steal, cooled_at);
                        &stats.fail_cooldown
                    }
                    Refusal::MigrationLimit => &stats.fail_migration_limit,
                    Refusal::NotAllowed => &stats.fail_not_allowed,
                };
                bump(counter);
                0
            }
            Ok(()) => steal_from(core, victim, steal_count(config.amount, view.stealable)),
        };
        core.local().adaptive.record(taken > 0);
        if taken > 0 {
            let now = cpu::counter();
            bump(&stats.steals);
            add(&stats.stolen, taken as u64);
            add(&stats.stealable_seen, view.stealable as u64);
            bump(&stats.steal_latency[latency_bucket(now - started)]);
            if last_steal != NEVER {
                let gap = now.wrapping_sub(last_steal);
                // ORDERING: Relaxed: a statistic only this core writes.
                if gap < stats.min_steal_gap.load(Ordering::Relaxed) {
                    stats.min_steal_gap.store(gap, Ordering::Relaxed);
                }
            }
            core.local().last_steal[victim] = now;
            return StealRound::Took(victim);
        }
    }
    match cooled_at {
        Some(at) => StealRound::CoolingUntil(at),
        None => StealRound::Nothing,
    }
}

/// Takes up to `count` processes from `victim`, highest priority level first.
fn steal_from(core: &mut OnCore, victim: usize, count: usize) -> usize {
    let thief = core.id();
    let stats = core.scheduler().stats;
    let Some(stealers) = scheduler(victim).queues.stealers.get() else { return 0 };
    let mut taken = 0;
    let mut lost_race = false;
    let mut refused = false;
    for stealer in stealers {
        while taken < count {
            match stealer.steal() {
                Steal::Success(item) => {
                    let slot = item as u32;
                    if !may_run_here(process::slot(slot), thief) {
                        // Not ours to run: back to the victim, and on to the next level (the
                        // next item of this one may be refused too; the next round sees it).
                        hand_back(core, slot, victim);
                        refused = true;
                        break;
                    }
                    migrate(slot, victim, thief);
                    trace::process_event(Event::Steal, thief, slot, victim as u32);
                    core.enqueue(slot);
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
    if taken == 0 && !refused {
        bump(if lost_race { &stats.fail_lost_race } else { &stats.fail_empty });
    }
    taken
}

/// Returns a process taken from `from`'s stealable queue that may not run where it was to go:
/// it goes back to `from` (through its inbox, or straight into the run queue when `from` is
/// this core), at the back of its level, and the refusal is counted here as `not_allowed`.
/// Nothing is lost: the process was in no queue only between the take and this.
fn hand_back(core: &mut OnCore, slot: u32, from: usize) {
    let process = process::slot(slot);
    // The inbox's drain (or the enqueue) counts it as queued at `from` again.
    scheduler(from).queues.count_taken_away(process.priority());
    bump(&core.scheduler().stats.fail_not_allowed);
    make_runnable(core, slot);
}

/// Push rebalancing (core 0, as ERTS's check_balance): on severe imbalance, moves a few
/// stealable processes from the busiest core straight to the idlest, under the same rules.
pub(super) fn rebalance(core: &mut OnCore) {
    let cores = smp::cores_online();
    if cores < 2 || !balance().0.rebalance {
        // Never due (every core is online before the loop starts): the attention bit goes.
        attention::set_own(core, attention::REBALANCE, false);
        return;
    }
    let now = cpu::counter();
    let (config, _) = *balance();
    if !rebalance_due(&config, now, core.local().last_rebalance, rebalance_period_counts()) {
        return;
    }
    core.local().last_rebalance = now;
    let mut views = heapless::Vec::new();
    core_views(&mut views, cores);
    // Only cores that schedule: an offline core is neither robbed nor given work (a push that
    // races its leave is caught by its closed inbox and goes on, see `wake::deliver`).
    let Some(RebalancePlan { from: busiest, to: idlest, batch }) =
        plan_rebalance(&config, &views, active::core_is_active)
    else {
        return;
    };
    let Some(stealers) = scheduler(busiest).queues.stealers.get() else { return };
    let mut moved = 0;
    'levels: for stealer in stealers {
        while moved < batch {
            match stealer.steal() {
                Steal::Success(item) => {
                    let slot = item as u32;
                    if !may_run_here(process::slot(slot), idlest) {
                        hand_back(core, slot, busiest);
                        continue 'levels;
                    }
                    migrate(slot, busiest, idlest);
                    trace::process_event(Event::Migrate, idlest, slot, busiest as u32);
                    make_runnable(core, slot);
                    moved += 1;
                }
                Steal::Empty => continue 'levels,
                Steal::Retry => break 'levels,
            }
        }
    }
    if moved > 0 {
        // ORDERING: Relaxed: a statistic.
        core.scheduler().stats.rebalanced.fetch_add(moved as u64, Ordering::Relaxed);
    }
}

/// Would a steal round succeed now? Fresh views of every other core, judged by the same rules
/// (`check_victim`, cooldowns included) the round would apply. A core about to sleep asks this
/// after announcing itself as a sleeper, so that work pushed just before is not slept through.
pub(super) fn steal_would_succeed(core: &mut OnCore) -> bool {
    let thief = core.id();
    let cores = smp::cores_online();
    if cores < 2 {
        return false;
    }
    let (config, _) = *balance();
    let mut views = heapless::Vec::new();
    core_views(&mut views, cores);
    let now = cpu::counter();
    let last_steal = &core.local().last_steal;
    (0..cores)
        .filter(|&victim| victim != thief && active::core_is_active(victim))
        .any(|victim| check_victim(&config, views[thief].load, &views[victim], now, last_steal[victim]).is_ok())
}

/// Does another core hold at least `min_steal` stealable processes?
pub(super) fn work_elsewhere(thief: usize) -> bool {
    let config = balance().0;
    (0..smp::cores_online())
        .filter(|&core| core != thief && active::core_is_active(core))
        .any(|core| worth_a_thief(&config, scheduler(core).queues.stealable_total()))
}

/// Stealable processes `victim` still has (to decide whether another thief should come).
pub(super) fn stealable_on(victim: usize) -> usize {
    scheduler(victim).queues.stealable_total()
}
