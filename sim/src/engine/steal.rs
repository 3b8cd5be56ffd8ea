//! Stealing: the thief's window of views ([`VIEW_WINDOW`] beyond 64 cores), a steal round (the
//! victims the kernel's `VictimPicker` picks, each attempt judged by `check_victim` and sized by
//! `steal_count`, the backoff between attempts) and core 0's push rebalancing (`plan_rebalance`).
//! Every decision is the kernel's code; this module charges the costs and moves the processes.

use beamcore_deque::Steal;
use beamcore_sched_policy::balance::{
    CoreView, NEVER, RebalancePlan, Refusal, Strategy, VictimPicker, backoff_counts, check_victim, cooldown_ends_at,
    plan_rebalance, rebalance_due, steal_count, worth_a_thief,
};
use beamcore_sched_policy::priority::LEVELS;

use super::deliberate_bug;
use super::state::{Phase, Round};
use super::{CLUSTER, HINT_WORD_NS, NOT_HINTED, Sim, VIEW_WINDOW};

fn latency_bucket(ns: u64) -> usize {
    let log = 64 - ns.leading_zeros() as usize;
    log.saturating_sub(7).min(9)
}

impl Sim<'_> {
    /// The cores a thief's views cover: all of them, or beyond [`VIEW_WINDOW`] the thief, its
    /// cluster under `locality`, the cores the overload hint names (drawn at random when more
    /// than fit), and random others up to 64 (docs/simulator.md, "Beyond 64 cores").
    pub(super) fn window(&mut self, thief: usize) -> Vec<usize> {
        let n = self.cfg.cores;
        if n <= VIEW_WINDOW {
            return (0..n).collect();
        }
        let mut window = vec![thief];
        if self.policy.strategy == Strategy::Locality {
            let base = thief / CLUSTER * CLUSTER;
            window.extend((base..(base + CLUSTER).min(n)).filter(|&c| c != thief));
        }
        // Which cores are in already: marked with this call's stamp (the host's time only; the
        // same draws as a search of the window would make).
        self.window_stamp += 1;
        let stamp = self.window_stamp;
        self.window_marks.resize(n, 0);
        for &c in &window {
            self.window_marks[c] = stamp;
        }
        // The hint: the cores holding work worth a thief, as a bitmap each core keeps current
        // (its bit set when its stealable count reaches `min_steal`, cleared when it falls
        // below), which the thief reads whole. Exact here (`refresh_hint` after every change;
        // the engine runs one action at a time).
        debug_assert!(
            (0..n)
                .all(|c| (self.hint_at[c] != NOT_HINTED)
                    == worth_a_thief(&self.policy.config, self.cores[c].stealable())),
            "the overload hint is out of date"
        );
        let mut hinted: Vec<usize> = self.hinted.iter().copied().filter(|&c| self.window_marks[c] != stamp).collect();
        let rng = &mut self.cores[thief].window_rng;
        while window.len() < VIEW_WINDOW && !hinted.is_empty() {
            let c = hinted.swap_remove(rng.below(hinted.len() as u64) as usize);
            self.window_marks[c] = stamp;
            window.push(c);
        }
        while window.len() < VIEW_WINDOW {
            let c = rng.below(n as u64) as usize;
            if self.window_marks[c] != stamp {
                self.window_marks[c] = stamp;
                window.push(c);
            }
        }
        window
    }

    /// What reading the overload hint costs a thief: one word of the bitmap per 64 cores (none
    /// at 64 cores or fewer, where a thief reads every core's view).
    pub(super) fn hint_cost(&self) -> u64 {
        let n = self.cfg.cores;
        if n <= VIEW_WINDOW { 0 } else { n.div_ceil(64) as u64 * HINT_WORD_NS }
    }

    pub(super) fn views(&self, window: &[usize]) -> Vec<CoreView> {
        window.iter().map(|&c| self.cores[c].view(c)).collect()
    }

    /// `steal_from`: up to `count` processes from `victim`, highest level first.
    pub(super) fn steal_from(&mut self, thief: usize, victim: usize, count: usize, now: u64) -> usize {
        let mut taken = 0;
        let mut lost_race = false;
        for level in 0..LEVELS {
            while taken < count {
                match self.cores[victim].stealers[level].steal() {
                    Steal::Success(item) => {
                        self.refresh_hint(victim);
                        let pid = item as u32;
                        if !self.procs[pid as usize].ran {
                            self.cores[thief].stats.stolen_fresh += 1;
                        }
                        self.migrate(pid, victim, thief);
                        self.enqueue_local(thief, pid, now);
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
            let stats = &mut self.cores[thief].stats;
            if lost_race {
                stats.fail_lost_race += 1;
            } else {
                stats.fail_empty += 1;
            }
        }
        taken
    }

    /// Core 0's push rebalancing (`rebalance`).
    pub(super) fn rebalance(&mut self, now: u64) -> u64 {
        let n = self.cfg.cores;
        let config = self.policy.config;
        let ticks = self.cfg.rebalance_ticks_ago + self.cores[0].ticks_by(self.cfg.slice_ns.max(1), now);
        if n < 2 || !rebalance_due(&config, ticks, self.last_rebalance, self.rebalance_period) {
            return 0;
        }
        self.last_rebalance = ticks;
        let views: Vec<CoreView> = (0..n).map(|c| self.cores[c].view(c)).collect();
        let cost = n as u64 * self.costs.view;
        let Some(RebalancePlan { from: busiest, to: idlest, batch }) = plan_rebalance(&config, &views, |_| true) else {
            return cost;
        };
        let mut moved = 0;
        'levels: for level in 0..LEVELS {
            while moved < batch {
                match self.cores[busiest].stealers[level].steal() {
                    Steal::Success(item) => {
                        self.refresh_hint(busiest);
                        let pid = item as u32;
                        self.migrate(pid, busiest, idlest);
                        self.note(idlest, now, "migrate", busiest as u64);
                        self.make_runnable(0, pid, now);
                        moved += 1;
                    }
                    Steal::Empty => continue 'levels,
                    Steal::Retry => break 'levels,
                }
            }
        }
        self.cores[0].stats.rebalanced += moved as u64;
        cost + moved as u64 * (self.costs.steal + self.costs.migrate)
    }

    pub(super) fn start_round(&mut self, core: usize, now: u64, cost: u64) {
        if self.cfg.cores < 2 {
            // One core never steals; nothing runnable: sleep until work comes.
            let at = now + self.cores[core].scale(cost);
            self.sleep(core, at);
            return;
        }
        let window = self.window(core);
        let views = self.views(&window);
        let me = window.iter().position(|&c| c == core).expect("the thief is in its window");
        let strategy = self.policy.strategy;
        let hint_cost = self.hint_cost();
        let c = &mut self.cores[core];
        let picked = VictimPicker::pick(
            deliberate_bug::strategy(strategy.effective(&c.adaptive)),
            me,
            &views,
            &mut c.rng,
            self.policy.config.retries as usize,
        );
        let picked = deliberate_bug::victims(picked.to_vec(), me, views.len());
        let victims = picked.iter().map(|&i| window[i]).collect();
        let thief_load = views[me].load;
        // The first attempt's backoff is zero, but `try_steal` draws its jitter all the same.
        let _ = c.rng.next_u64();
        let cost = cost + window.len() as u64 * self.costs.view + hint_cost;
        let at = now + c.scale(cost);
        c.phase = Phase::Steal(Round { victims, next: 0, cooled_at: None, thief_load, window });
        self.schedule(core, at);
    }

    /// One attempt of a round (`try_steal`'s loop body), then the next attempt, or the round's
    /// end.
    pub(super) fn steal_attempt(&mut self, core: usize, now: u64, mut round: Round) {
        let config = self.policy.config;
        let Some(&victim) = round.victims.get(round.next) else {
            return self.end_round(core, now, round, 0);
        };
        round.next += 1;
        self.cores[core].stats.steal_attempts += 1;
        let view = self.cores[victim].view(victim);
        let mut cost = round.window.len() as u64 * self.costs.view + self.costs.attempt;
        let last = self.cores[core].last_steal[victim];
        let taken = match check_victim(&config, round.thief_load, &view, now, last) {
            Err(refusal) => {
                self.note_refused(core, now, victim, refusal);
                let stats = &mut self.cores[core].stats;
                match refusal {
                    Refusal::Empty => stats.fail_empty += 1,
                    Refusal::BelowThreshold => stats.fail_below_threshold += 1,
                    Refusal::Cooldown => {
                        round.cooled_at = cooldown_ends_at(&config, last, round.cooled_at);
                        stats.fail_cooldown += 1;
                    }
                    Refusal::MigrationLimit => stats.fail_migration_limit += 1,
                    // The simulator's processes have no allowed-core sets, and `check_victim`
                    // judges loads, never a process's set.
                    Refusal::NotAllowed => unreachable!("check_victim never refuses for a core set"),
                }
                0
            }
            Ok(()) => self.steal_from(
                core,
                victim,
                deliberate_bug::count(steal_count(config.amount, view.stealable), view.stealable),
                now,
            ),
        };
        let c = &mut self.cores[core];
        c.adaptive.record(taken > 0);
        if taken > 0 {
            cost += taken as u64 * (self.costs.steal + self.costs.migrate);
            let done_at = now + c.scale(cost);
            c.stats.steals += 1;
            c.stats.stolen += taken as u64;
            c.stats.stealable_seen += view.stealable as u64;
            c.stats.steal_latency[latency_bucket(done_at - now)] += 1;
            if last != NEVER {
                let gap = done_at.wrapping_sub(last);
                c.stats.min_steal_gap = c.stats.min_steal_gap.min(gap);
                // policy-check: a statistic (the kernel's rule, checked: it must count none)
                if gap < config.cooldown_counts {
                    self.cooldown_violations += 1;
                }
            }
            self.cores[core].last_steal[victim] = done_at;
            for _ in 0..taken {
                self.note(core, done_at, "steal", victim as u64);
            }
            self.end_search(core);
            // If the victim still has work to spare and no core searches, wake another thief.
            let left = self.cores[victim].stealable();
            self.wake_a_thief(core, left, now);
            self.schedule(core, done_at);
            return;
        }
        if round.next < round.victims.len() {
            let pause = backoff_counts(&config, round.next as u32, c.rng.next_u64());
            let (from, at) = (now + c.scale(cost), now + c.scale(cost + pause));
            c.phase = Phase::Steal(round);
            self.spin(core, from, at);
            return;
        }
        self.end_round(core, now, round, cost);
    }
}
