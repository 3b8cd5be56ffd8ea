//! What an idle core does between steal rounds, and what core 0 does about severe imbalance:
//! the idle search (how many cores search at once, for how long, how long each pause is) and
//! push rebalancing (when it is due, whether the imbalance is severe, how many to move). The
//! kernel's scheduler and the host simulator both ask these questions here, so the simulator
//! models the machine, never a copy of the policy.

use super::policy::{BalanceConfig, CoreView, ns_to_counts};

/// How long an idle core keeps searching (steal rounds with pauses) before it sleeps.
pub const SEARCH_BUDGET_NS: u64 = 50_000;
/// The pauses between an idle core's steal rounds grow exponentially from the first to the
/// last (each drawn with jitter in its upper half).
pub const SEARCH_PAUSE_MIN_NS: u64 = 500;
pub const SEARCH_PAUSE_MAX_NS: u64 = 8_000;
/// Push rebalancing looks for severe imbalance this often, counted in core 0's ticks
/// ([`rebalance_period_ticks`]).
pub const REBALANCE_PERIOD_NS: u64 = 2_000_000;
/// The most processes one push moves.
pub const REBALANCE_BATCH: usize = 16;

/// The idle search's durations in counts of a counter running at `counter_hz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchTiming {
    pub budget_counts: u64,
    pub pause_min_counts: u64,
    pub pause_max_counts: u64,
}

impl SearchTiming {
    pub fn at(counter_hz: u64) -> SearchTiming {
        SearchTiming {
            budget_counts: ns_to_counts(SEARCH_BUDGET_NS, counter_hz),
            pause_min_counts: ns_to_counts(SEARCH_PAUSE_MIN_NS, counter_hz).max(1),
            pause_max_counts: ns_to_counts(SEARCH_PAUSE_MAX_NS, counter_hz).max(1),
        }
    }
}

/// At most this many of `cores` search at once (Tokio's rule: half of them, at least one); the
/// others sleep until woken.
pub fn max_searchers(cores: usize) -> usize {
    (cores / 2).max(1)
}

/// A search that began at `started` has spent its budget by `now`.
pub fn search_spent(timing: &SearchTiming, started: u64, now: u64) -> bool {
    now.wrapping_sub(started) >= timing.budget_counts
}

/// The pause after a search's `rounds`-th round: the minimum doubled per round up to the
/// maximum, then drawn from its upper half with `jitter` (so searchers do not move in step).
pub fn search_pause_counts(timing: &SearchTiming, rounds: u32, jitter: u64) -> u64 {
    let pause = timing.pause_min_counts.saturating_mul(1 << rounds.min(16)).min(timing.pause_max_counts);
    pause / 2 + jitter % (pause / 2 + 1)
}

/// Is `stealable` on a core enough for a thief to take one (the rule `check_victim` applies
/// first)? Whether work is waiting elsewhere (an idle core then counts as idle with work) and
/// whether a core with work should wake a thief are both this question.
pub fn worth_a_thief(config: &BalanceConfig, stealable: usize) -> bool {
    stealable >= config.min_steal
}

/// Should a core that just queued work, with `stealable_here` stealable, wake a sleeping core?
/// Only when there is a sleeper, the work is [`worth_a_thief`], and no core is searching
/// already (a searcher will find it; Go's rule: wake one only when none spins).
pub fn should_wake_a_thief(config: &BalanceConfig, stealable_here: usize, sleepers: bool, searching: usize) -> bool {
    sleepers && worth_a_thief(config, stealable_here) && searching == 0
}

/// Of a sleep from `fell_asleep` to `woke` that ended with work worth a thief elsewhere, the
/// time that work waited: from the first offer of work to the sleepers during the sleep
/// (`offered`), or the whole sleep when none was recorded or the one recorded came after the
/// wake (a later offer's: none came during the sleep). An offer before the sleep began counts
/// from its start. Times in any one unit of one clock.
pub fn idle_with_work(fell_asleep: u64, woke: u64, offered: Option<u64>) -> u64 {
    match offered {
        Some(at) if at <= woke => woke - at.max(fell_asleep),
        _ => woke - fell_asleep,
    }
}

/// A push decided by [`plan_rebalance`]: move up to `batch` stealable processes from `from`
/// to `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RebalancePlan {
    pub from: usize,
    pub to: usize,
    pub batch: usize,
}

/// The rebalancing period in ticks of `tick_ns` (the nearest whole number, at least one).
///
/// Counted in ticks, not in counter time, because core 0 looks when its loop runs, and a
/// preemption at a tick is when it mostly does: two looks a tick-multiple apart in time then
/// differ by a few nanoseconds of path either way, and a comparison with the period in time
/// came out one count short now and then (QEMU, nqueens/default/4, seed 1: the third look of
/// the run skipped, because the look before it had come 85 ns later after its tick), so the
/// cadence was two or three ticks on no rule a reader could see.
pub fn rebalance_period_ticks(tick_ns: u64) -> u64 {
    ((REBALANCE_PERIOD_NS + tick_ns / 2) / tick_ns.max(1)).max(1)
}

/// Is a look for severe imbalance due, core 0 having taken `ticks` ticks in all and `last`
/// when it last looked?
pub fn rebalance_due(config: &BalanceConfig, ticks: u64, last: u64, period_ticks: u64) -> bool {
    config.rebalance && ticks.wrapping_sub(last) >= period_ticks
}

/// ERTS's check_balance, simplified: among the cores `active` says schedule, the busiest and the
/// idlest by load; a push is worth it when the busiest carries more than `rebalance_ratio`
/// times the idlest's load (and more than `imbalance` above it) and has at least `min_steal`
/// stealable processes. The batch brings the two halfway together (a normal process weighs
/// 2), at most [`REBALANCE_BATCH`] and half of what is stealable, at least one.
pub fn plan_rebalance(
    config: &BalanceConfig,
    views: &[CoreView],
    active: impl Fn(usize) -> bool,
) -> Option<RebalancePlan> {
    let candidates = || (0..views.len()).filter(|&c| active(c));
    let from = candidates().max_by_key(|&c| views[c].load)?;
    let to = candidates().min_by_key(|&c| views[c].load)?;
    let (high, low) = (views[from].load, views[to].load);
    if from == to || high <= config.rebalance_ratio * low.max(1) || high <= low + config.imbalance {
        return None;
    }
    if views[from].stealable < config.min_steal {
        return None;
    }
    let batch = REBALANCE_BATCH.min(views[from].stealable / 2).min(((high - low) / 4) as usize).max(1);
    Some(RebalancePlan { from, to, batch })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(load: u64, stealable: usize) -> CoreView {
        CoreView { load, stealable, ..CoreView::default() }
    }

    #[test]
    fn a_push_needs_severe_imbalance_and_stealable_work() {
        let config = BalanceConfig::default();
        let views = [view(40, 20), view(2, 1), view(8, 4)];
        assert_eq!(plan_rebalance(&config, &views, |_| true), Some(RebalancePlan { from: 0, to: 1, batch: 9 }));
        // 4 x the idlest's load is not more than 4 x.
        assert_eq!(plan_rebalance(&config, &[view(8, 4), view(2, 1)], |_| true), None);
        // Too few stealable on the busiest.
        assert_eq!(plan_rebalance(&config, &[view(40, 1), view(2, 1)], |_| true), None);
        // An inactive core is neither robbed nor given work.
        assert_eq!(plan_rebalance(&config, &views, |c| c != 1), Some(RebalancePlan { from: 0, to: 2, batch: 8 }));
        assert_eq!(plan_rebalance(&config, &views, |c| c == 0), None);
        // Exactly min_steal stealable on the busiest is enough.
        assert_eq!(
            plan_rebalance(&config, &[view(40, 2), view(2, 1)], |_| true),
            Some(RebalancePlan { from: 0, to: 1, batch: 1 })
        );
        // The imbalance is a difference, not a ratio: 3 is not more than 1 + 2.
        let close = BalanceConfig { rebalance_ratio: 1, imbalance: 2, ..config };
        assert_eq!(plan_rebalance(&close, &[view(3, 4), view(1, 0)], |_| true), None);
        assert!(plan_rebalance(&close, &[view(4, 4), view(1, 0)], |_| true).is_some());
        // Half the stealable at most: 3 of 6, though the loads are far apart.
        assert_eq!(plan_rebalance(&config, &[view(400, 6), view(0, 0)], |_| true).map(|p| p.batch), Some(3));
        // The batch is capped.
        let plan = plan_rebalance(&config, &[view(400, 300), view(0, 0)], |_| true).unwrap();
        assert_eq!(plan.batch, REBALANCE_BATCH);
        let off = BalanceConfig { rebalance: false, ..config };
        assert!(!rebalance_due(&off, 10_000_000, 0, 1));
        assert!(rebalance_due(&config, 10, 5, 5) && !rebalance_due(&config, 9, 5, 5));
    }

    #[test]
    fn the_rebalancing_period_is_the_nearest_whole_number_of_ticks() {
        assert_eq!(rebalance_period_ticks(1_000_000), 2);
        assert_eq!(rebalance_period_ticks(500_000), 4);
        assert_eq!(rebalance_period_ticks(10_000_000), 1, "a tick longer than the period: every tick");
        assert_eq!(rebalance_period_ticks(1_500_000), 1);
        assert_eq!(rebalance_period_ticks(1_200_000), 2);
        assert_eq!(rebalance_period_ticks(0), REBALANCE_PERIOD_NS);
    }

    #[test]
    fn search_pauses_grow_to_their_maximum_and_stay_in_its_upper_half() {
        let timing = SearchTiming::at(1_000_000_000);
        assert_eq!(timing, SearchTiming { budget_counts: 50_000, pause_min_counts: 500, pause_max_counts: 8_000 });
        for jitter in [0, 1, 7, u64::MAX] {
            let first = search_pause_counts(&timing, 0, jitter);
            assert!((250..=500).contains(&first), "{first}");
            let late = search_pause_counts(&timing, 40, jitter);
            assert!((4_000..=8_000).contains(&late), "{late}");
        }
        // The upper half exactly: 250 + jitter mod 251 at the first pause.
        assert_eq!(search_pause_counts(&timing, 0, 0), 250);
        assert_eq!(search_pause_counts(&timing, 0, 250), 500, "the maximum itself is drawn");
        assert_eq!(search_pause_counts(&timing, 0, 251), 250, "and wraps to the half");
        assert_eq!(search_pause_counts(&timing, 1, 0), 500, "doubled per round");
        assert_eq!(max_searchers(1), 1);
        assert_eq!(max_searchers(8), 4);
        assert!(search_spent(&timing, 100, 50_100) && !search_spent(&timing, 100, 50_099));
        // 62.5 MHz: 500 ns is 31.25 counts, rounded up like every duration.
        assert_eq!(SearchTiming::at(62_500_000).pause_min_counts, 32);
    }

    #[test]
    fn idle_with_work_counts_from_the_offer_made_during_the_sleep() {
        assert_eq!(idle_with_work(100, 500, Some(300)), 200, "from the offer");
        assert_eq!(idle_with_work(100, 500, Some(40)), 400, "an offer before the sleep: all of it");
        assert_eq!(idle_with_work(100, 500, None), 400, "no offer recorded: all of it");
        assert_eq!(idle_with_work(100, 500, Some(900)), 400, "a later offer's stamp: all of it");
        assert_eq!(idle_with_work(100, 500, Some(500)), 0, "offered as it woke");
    }

    #[test]
    fn a_thief_is_woken_only_for_stealable_work_when_none_searches() {
        let config = BalanceConfig::default();
        assert!(!worth_a_thief(&config, 1) && worth_a_thief(&config, 2));
        assert!(should_wake_a_thief(&config, 2, true, 0));
        assert!(!should_wake_a_thief(&config, 2, false, 0), "nobody sleeps");
        assert!(!should_wake_a_thief(&config, 2, true, 1), "a core searches already");
        assert!(!should_wake_a_thief(&config, 1, true, 0), "too little to steal");
    }
}
