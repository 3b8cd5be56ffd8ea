//! Work stealing: an idle core's steal round (victims picked by the strategy, each judged by the
//! balancer's rules, with backoff between attempts), and the fresh look a core about to sleep
//! takes. The rules themselves are pure (`balance/`, host-tested).

use core::sync::atomic::Ordering;

use super::migrate::{core_view, core_views, hand_back, migrate};
use crate::proc::process;
use crate::record::stats::{add, bump, latency_bucket};
use crate::record::trace::{self, Event};
use crate::run::active::{self, may_run_here};
use crate::run::percore::{OnCore, scheduler};
use crate::run::runqueue::slot_of;
use crate::settings::{config, strategy};
use beamcore_deque::Steal;
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::CoreId;
use beamcore_sched_policy::balance::{
    NEVER, Refusal, VictimPicker, backoff_counts, check_victim, cooldown_ends_at, steal_count, worth_a_thief,
};
use beamcore_smp as smp;

/// What an idle core's round of stealing came to.
pub(crate) enum StealRound {
    /// It took at least one process, from this victim.
    Took(CoreId),
    /// Nothing taken; a victim with work refused only for its cooldown, which ends at this
    /// counter reading.
    CoolingUntil(u64),
    /// Nothing to take anywhere.
    Nothing,
}

/// An idle core's round of stealing: up to `retries` victims chosen by the strategy, with
/// backoff between attempts (short and bounded by `backoff_max_counts`).
pub(crate) fn try_steal(core: &mut OnCore) -> StealRound {
    let thief = core.id();
    let cores = smp::cores_online();
    if cores < 2 {
        return StealRound::Nothing;
    }
    let config = &config().balance;
    let strategy = strategy();
    let stats = core.scheduler().stats;
    let mut views = heapless::Vec::new();
    core_views(&mut views, cores);
    let mut victims = {
        let local = core.local();
        VictimPicker::pick(
            strategy.effective(&local.adaptive),
            thief.index(),
            &views,
            &mut local.rng,
            config.retries as usize,
        )
    };
    // A core that left (or is leaving) is no victim: its queues are empty or being emptied by
    // itself, and it may hold nothing anyone waits for.
    victims.retain(|victim| active::core_is_active(*victim));
    // The earliest moment a victim that refused only for its cooldown becomes available.
    let mut cooled_at: Option<u64> = None;
    for (attempt, victim) in victims.iter().map(|&victim| CoreId::new(victim)).enumerate() {
        let pause = backoff_counts(config, attempt as u32, core.local().rng.next_u64());
        let resume_at = cpu::counter() + pause;
        while cpu::counter() < resume_at {
            cpu::relax();
        }
        let started = cpu::counter();
        // ORDERING: Relaxed: a statistic.
        stats.steal_attempts.fetch_add(1, Ordering::Relaxed);
        // Fresh numbers for the chosen victim: the snapshot may be a backoff old.
        let view = core_view(victim);
        let thief_load = views[thief.index()].load;
        let last_steal = core.local().last_steal[victim.index()];
        let outcome = check_victim(config, thief_load, &view, started, last_steal);
        let taken = match outcome {
            Err(refusal) => {
                let counter = match refusal {
                    Refusal::Empty => &stats.fail_empty,
                    Refusal::BelowThreshold => &stats.fail_below_threshold,
                    Refusal::Cooldown => {
                        cooled_at = cooldown_ends_at(config, last_steal, cooled_at);
                        &stats.fail_cooldown
                    }
                    Refusal::MigrationLimit => &stats.fail_migration_limit,
                    Refusal::NotAllowed => &stats.fail_not_allowed,
                };
                bump(counter);
                trace::refused(thief, victim, refusal);
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
            core.local().last_steal[victim.index()] = now;
            return StealRound::Took(victim);
        }
    }
    match cooled_at {
        Some(at) => StealRound::CoolingUntil(at),
        None => StealRound::Nothing,
    }
}

/// Takes up to `count` processes from `victim`, highest priority level first.
fn steal_from(core: &mut OnCore, victim: CoreId, count: usize) -> usize {
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
                    let slot = slot_of(item);
                    if !may_run_here(process::slot(slot), thief) {
                        // Not ours to run: back to the victim, and on to the next level (the
                        // next item of this one may be refused too; the next round sees it).
                        hand_back(core, slot, victim);
                        refused = true;
                        break;
                    }
                    migrate(slot, victim, thief);
                    trace::process_event(Event::Steal, thief, slot, victim.index() as u32);
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
    if taken == 0 && refused {
        trace::refused(thief, victim, Refusal::NotAllowed);
    } else if taken == 0 {
        bump(if lost_race { &stats.fail_lost_race } else { &stats.fail_empty });
    }
    taken
}

/// Would a steal round succeed now? Fresh views of every other core, judged by the same rules
/// (`check_victim`, cooldowns included) the round would apply. A core about to sleep asks this
/// after announcing itself as a sleeper, so that work pushed just before is not slept through.
pub(crate) fn steal_would_succeed(core: &mut OnCore) -> bool {
    let thief = core.id();
    let cores = smp::cores_online();
    if cores < 2 {
        return false;
    }
    let config = &config().balance;
    let mut views = heapless::Vec::new();
    core_views(&mut views, cores);
    let now = cpu::counter();
    let last_steal = &core.local().last_steal;
    (0..cores)
        .filter(|&victim| victim != thief.index() && active::core_is_active(victim))
        .any(|victim| check_victim(config, views[thief.index()].load, &views[victim], now, last_steal[victim]).is_ok())
}

/// Does another core hold at least `min_steal` stealable processes?
pub(crate) fn work_elsewhere(thief: CoreId) -> bool {
    let config = &config().balance;
    (0..smp::cores_online())
        .map(CoreId::new)
        .filter(|&core| core != thief && active::core_is_active(core.index()))
        .any(|core| worth_a_thief(config, scheduler(core).queues.stealable_total()))
}

/// Stealable processes `victim` still has (to decide whether another thief should come).
pub(crate) fn stealable_on(victim: CoreId) -> usize {
    scheduler(victim).queues.stealable_total()
}
