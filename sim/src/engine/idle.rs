//! A core with nothing to run: the idle search (`max_searchers`, `search_spent`,
//! `search_pause_counts`), the end of a steal round that took nothing, and sleep (announce, look
//! once more, WFI until a wake-up or the next tick), with the idle-while-work-waits statistic.

use beamcore_sched_policy::balance::{check_victim, max_searchers, search_pause_counts, search_spent, worth_a_thief};

use super::state::{Phase, Round};
use super::{LOOP_NS, RELAX_NS, Sim};

impl Sim<'_> {
    /// Does another core (of the window) hold `min_steal` stealable processes?
    pub(super) fn work_elsewhere(&self, thief: usize, window: &[usize]) -> bool {
        let config = &self.policy.config;
        window.iter().filter(|&&c| c != thief).any(|&c| worth_a_thief(config, self.cores[c].stealable()))
    }

    /// Does any other core hold work worth a thief? The kernel's `work_elsewhere`, which reads
    /// every core: the overload hint is exact, and reading it draws nothing from a window.
    fn hinted_elsewhere(&self, core: usize) -> bool {
        self.hinted.iter().any(|&c| c != core)
    }

    pub(super) fn stop_searching(&mut self, core: usize) {
        self.cores[core].searching = false;
        self.searching -= 1;
    }

    pub(super) fn end_search(&mut self, core: usize) {
        if self.cores[core].searching {
            self.stop_searching(core);
        }
    }

    /// `search_a_little_longer`: the pause before the next loop pass, or `None` to sleep.
    pub(super) fn search_pause(&mut self, core: usize, now: u64) -> Option<u64> {
        let n = self.cfg.cores;
        if n < 2 {
            return None;
        }
        if !self.cores[core].searching {
            if self.searching >= max_searchers(n) {
                return None;
            }
            self.searching += 1;
            let c = &mut self.cores[core];
            c.searching = true;
            c.search_started = now;
            c.search_rounds = 0;
        } else if search_spent(&self.search, self.cores[core].search_started, now) {
            self.stop_searching(core);
            return None;
        }
        let c = &mut self.cores[core];
        let pause = search_pause_counts(&self.search, c.search_rounds, c.rng.next_u64());
        c.search_rounds += 1;
        c.pause_since = Some(now);
        Some(c.scale(pause))
    }

    /// The end of a search pause, when the core runs its loop again at `now`: if work waited
    /// elsewhere then, the whole pause was idle with work, as long as it really lasted (the
    /// kernel's `run_loop` reads the counter after its spin).
    pub(super) fn pause_ended(&mut self, core: usize, now: u64) {
        let Some(since) = self.cores[core].pause_since.take() else { return };
        if self.hinted_elsewhere(core) {
            self.cores[core].stats.idle_with_work_ns += now - since;
        }
    }

    /// A round that took nothing: come round again soon if a cooldown ends within a slice,
    /// else search a little longer, else sleep.
    pub(super) fn end_round(&mut self, core: usize, now: u64, round: Round, cost: u64) {
        let now = now + self.cores[core].scale(cost);
        if let Some(at) = round.cooled_at
            && at.wrapping_sub(now) as i64 <= self.cfg.slice_ns as i64
        {
            let at = now + self.cores[core].scale(RELAX_NS);
            self.spin(core, now, at);
            return;
        }
        match self.search_pause(core, now) {
            Some(pause) => self.spin(core, now, now + pause),
            None => self.sleep(core, now),
        }
    }

    /// `sleep`: announce, look once more, then WFI until a wake-up or the next tick.
    pub(super) fn sleep(&mut self, core: usize, now: u64) {
        if !self.cores[core].inbox.is_empty() {
            self.schedule(core, now);
            return;
        }
        // Work worth a thief elsewhere already.
        if self.hinted_elsewhere(core) {
            self.cores[core].work_offered_at = Some(now);
        } else {
            self.cores[core].work_offered_at = None;
            self.unoffered.insert(core);
        }
        self.sleepers.insert(core);
        if self.steal_would_succeed(core, now) {
            self.sleepers.remove(&core);
            self.schedule(core, now + self.cores[core].scale(LOOP_NS));
            return;
        }
        let next_tick = self.cores[core].next_tick(self.cfg.slice_ns.max(1), now + 1);
        self.note(core, now, "sleep", 0);
        self.cores[core].phase = Phase::Asleep { since: now };
        self.cores[core].wake_sent_at = None;
        self.set_awake(core, false);
        self.schedule(core, next_tick);
    }

    pub(super) fn steal_would_succeed(&mut self, thief: usize, now: u64) -> bool {
        if self.cfg.cores < 2 {
            return false;
        }
        let window = self.window(thief);
        let thief_load = self.cores[thief].view(thief).load;
        let config = self.policy.config;
        window.iter().filter(|&&v| v != thief).any(|&v| {
            check_victim(&config, thief_load, &self.cores[v].view(v), now, self.cores[thief].last_steal[v]).is_ok()
        })
    }
}
