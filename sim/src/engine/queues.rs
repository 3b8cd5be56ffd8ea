//! The run queues' mechanics, as `kernel/sched/scheduler.rs` has them: creating a process,
//! queueing it on its own core or through another core's inbox with a wake-up, the idle
//! thief woken for stealable work, taking the next process by priority (the low-priority rule
//! asked of the kernel's code) and moving a stolen process to its thief.

use std::collections::VecDeque;

use beamcore_deque::Steal;
use beamcore_sched_policy::Priority;
use beamcore_sched_policy::balance::{may_migrate, should_wake_a_thief, worth_a_thief};
use beamcore_sched_policy::priority::{LEVELS, LowPriorityDecision, low_priority_rule};

use super::state::{Core, Phase, Proc, State};
use super::{NOT_HINTED, Sim};
use crate::workload::Program;

impl Sim<'_> {
    /// A new process on `core` (`spawn_with`); the caller makes it runnable.
    pub(super) fn create(&mut self, program: Program, priority: Priority, core: usize, bound: bool, span: u64) -> u32 {
        let pid = self.procs.len() as u32;
        self.procs.push(Proc {
            program,
            priority,
            bound,
            core,
            migrations: 0,
            state: State::Runnable,
            mailbox: VecDeque::new(),
            low_passes: 0,
            reductions: 0,
            message: None,
            left: None,
            span,
            exits: 0,
            retry_receive: false,
            ran: false,
        });
        self.bound_home.push(bound.then_some(core));
        self.cores[core].stats.spawned += 1;
        self.most_alive = self.most_alive.max(self.alive());
        pid
    }

    /// Processes spawned and not yet ended.
    pub(super) fn alive(&self) -> usize {
        self.procs.len() - self.done
    }

    pub(super) fn may_move(&self, pid: u32) -> bool {
        let p = &self.procs[pid as usize];
        may_migrate(&self.policy.config, p.bound, p.migrations, p.priority == Priority::Max)
    }

    /// `enqueue_local`: on `core`'s own queues (its owner acting, at `now`).
    pub(super) fn enqueue_local(&mut self, core: usize, pid: u32, now: u64) {
        let priority = self.procs[pid as usize].priority;
        self.cores[core].runnable[priority as usize] += 1;
        self.push_counted(core, pid, now);
    }

    /// `push_counted`: into `core`'s queues, a process it already counts as runnable.
    fn push_counted(&mut self, core: usize, pid: u32, now: u64) {
        let level = self.procs[pid as usize].priority.level() as usize;
        let movable = self.may_move(pid);
        let c = &mut self.cores[core];
        if movable {
            // Never refused: a full deque spills to the overflow queue.
            let _placement = c.queues[level].push(u64::from(pid));
            self.refresh_hint(core);
            if !self.sleepers.is_empty() {
                let stealable = self.cores[core].queues[level].len();
                self.wake_a_thief(core, stealable, now);
            }
        } else {
            c.private[level].push_back(pid);
        }
    }

    /// Keeps `core`'s place in the overload hint (`Sim::hinted`) true to its stealable count:
    /// called after every change of its stealable queues, as the kernel's owner would set or
    /// clear its bit.
    pub(super) fn refresh_hint(&mut self, core: usize) {
        let worth = worth_a_thief(&self.policy.config, self.cores[core].stealable());
        let at = self.hint_at[core];
        if worth && at == NOT_HINTED {
            self.hint_at[core] = self.hinted.len();
            self.hinted.push(core);
        } else if !worth && at != NOT_HINTED {
            self.hinted.swap_remove(at);
            if let Some(&moved) = self.hinted.get(at) {
                self.hint_at[moved] = at;
            }
            self.hint_at[core] = NOT_HINTED;
        }
    }

    /// `wake_a_thief`: with enough stealable work here and no core searching, wake the
    /// lowest-numbered sleeper.
    pub(super) fn wake_a_thief(&mut self, me: usize, stealable_here: usize, now: u64) {
        if !self.sleepers.is_empty() && worth_a_thief(&self.policy.config, stealable_here) {
            for core in std::mem::take(&mut self.unoffered) {
                self.cores[core].work_offered_at = Some(now);
            }
        }
        if !should_wake_a_thief(&self.policy.config, stealable_here, !self.sleepers.is_empty(), self.searching) {
            return;
        }
        if let Some(&other) = self.sleepers.iter().find(|&&c| c != me) {
            self.send_wake(other, now);
        }
    }

    /// A wake-up SGI to `core`: it leaves WFI `wake_latency` later, and never before it went
    /// into WFI. A core that ends a steal round goes to sleep at its own clock, which may be
    /// ahead of the sender's (its round's cost is charged at once): woken at the sender's time it
    /// would run before its round had ended, and its asleep time would come out negative.
    /// Under QEMU's turns the latency is the wait for the woken vCPU's turn, which the turns
    /// make themselves: TCG ends a WFI as soon as an interrupt is pending, so nothing is added.
    pub(super) fn send_wake(&mut self, core: usize, now: u64) {
        if let Phase::Asleep { since } = self.cores[core].phase {
            self.cores[core].wake_sent_at.get_or_insert(now);
            let latency = if self.turns.is_some() { 0 } else { self.costs.wake_latency };
            let at = (now + latency).max(since);
            if at < self.cores[core].at {
                self.schedule(core, at);
            }
        }
    }

    /// `make_runnable`: queued directly on its own core when `actor` is that core, else through
    /// that core's inbox and a wake-up.
    pub(super) fn make_runnable(&mut self, actor: usize, pid: u32, now: u64) {
        self.wake(actor, pid, now, false);
    }

    /// `wake_by_message`: as `make_runnable`, but into the "run next" slot when `actor` is the
    /// process's core (`push_woken`); a process the slot held goes to its level's queue.
    pub(super) fn wake_by_message(&mut self, actor: usize, pid: u32, now: u64) {
        self.wake(actor, pid, now, true);
    }

    fn wake(&mut self, actor: usize, pid: u32, now: u64, by_message: bool) {
        let target = self.procs[pid as usize].core;
        if target != actor {
            self.cores[target].inbox.push_back(pid);
            self.send_wake(target, now);
        } else if by_message {
            let priority = self.procs[pid as usize].priority;
            let c = &mut self.cores[target];
            c.runnable[priority as usize] += 1;
            if let Some(before) = c.run_next.replace(pid) {
                self.push_counted(target, before, now);
            }
        } else {
            self.enqueue_local(target, pid, now);
        }
    }

    /// `take_next`: highest level first, FIFO within a level, private and stealable queues in
    /// turn, the low-priority rule applied.
    pub(super) fn take_next(&mut self, core: usize, now: u64) -> Option<u32> {
        let c = &self.cores[core];
        let first_level = if c.runnable[Priority::Max as usize] != 0 {
            0
        } else if c.runnable[Priority::High as usize] != 0 {
            1
        } else {
            2
        };
        for level in first_level..LEVELS {
            loop {
                if let Some(pid) = self.take_run_next(core, level) {
                    match self.accept(core, pid, now) {
                        Some(pid) => return Some(pid),
                        None => continue,
                    }
                }
                let c = &mut self.cores[core];
                let prefer_private = c.private_turn[level];
                c.private_turn[level] = !prefer_private;
                let take_queue = |c: &mut Core| match c.queues[level].take_oldest() {
                    Steal::Success(item) => Some(item as u32),
                    Steal::Empty | Steal::Retry => None,
                };
                let taken = if prefer_private || c.queues[level].is_empty() {
                    c.private[level].pop_front().or_else(|| take_queue(c))
                } else {
                    take_queue(c).or_else(|| c.private[level].pop_front())
                };
                let Some(pid) = taken else { break };
                self.refresh_hint(core);
                if self.run_next_level(core) == Some(level) {
                    self.cores[core].run_next_streak.took_other();
                }
                if let Some(pid) = self.accept(core, pid, now) {
                    return Some(pid);
                }
            }
        }
        None
    }

    /// The level of the process in `core`'s "run next" slot, if any.
    fn run_next_level(&self, core: usize) -> Option<usize> {
        self.cores[core].run_next.map(|pid| self.procs[pid as usize].priority.level() as usize)
    }

    /// The "run next" process, if it is at `level` and goes first by the slot's rule (the
    /// kernel's inline take: at its cap with others waiting it stays in the slot, and the
    /// level's oldest runs).
    fn take_run_next(&mut self, core: usize, level: usize) -> Option<u32> {
        if self.run_next_level(core) != Some(level) {
            return None;
        }
        let c = &mut self.cores[core];
        let others_waiting = || !(c.queues[level].is_empty() && c.private[level].is_empty());
        if !c.run_next_streak.goes_first(others_waiting) {
            return None;
        }
        c.run_next_streak.took_run_next();
        c.run_next.take()
    }

    /// A process taken from `core`'s queues, counted as no longer queued: `None` when the
    /// low-priority rule passed it over (it went to the back of its level).
    fn accept(&mut self, core: usize, pid: u32, now: u64) -> Option<u32> {
        let priority = self.procs[pid as usize].priority;
        self.cores[core].runnable[priority as usize] -= 1;
        let passes = &mut self.procs[pid as usize].low_passes;
        if low_priority_rule(priority, passes) == LowPriorityDecision::PassOver {
            self.enqueue_local(core, pid, now);
            return None;
        }
        self.cores[core].stats.local_pops += 1;
        Some(pid)
    }

    /// Moves `pid`, just taken from `victim`'s stealable queue, to core `to` (`migrate`).
    pub(super) fn migrate(&mut self, pid: u32, victim: usize, to: usize) {
        let priority = self.procs[pid as usize].priority;
        self.cores[victim].runnable[priority as usize] -= 1;
        let p = &mut self.procs[pid as usize];
        p.core = to;
        p.migrations += 1;
        self.max_migrations_seen = self.max_migrations_seen.max(p.migrations);
        self.cores[victim].stats.migrated_out += 1;
        self.cores[to].stats.migrated_in += 1;
    }
}
