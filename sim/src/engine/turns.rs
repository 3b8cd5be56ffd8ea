//! QEMU's round-robin under `-icount`, turn by turn (`SimConfig::turns`): one core runs at a
//! time and the others stand still, as QEMU runs every vCPU in turn on one host thread. The
//! fluid model (`SimConfig::shares`) instead runs every core at once, each slowed by the
//! others' shares, so a thief's view of a victim can go stale before its attempt, which under
//! QEMU it cannot: the victim is frozen for the whole of the thief's turn.
//!
//! The rules are QEMU 10's (accel/tcg/tcg-accel-ops-rr.c, icount-common.c), checked against
//! the turns of a whole run logged by `-d exec,nochain,in_asm` (docs/simulator.md, "QEMU's
//! turns"):
//! - A pass visits the vCPUs in index order. At its start the time to the next timer deadline
//!   (the earliest tick of any core: every core's generic timer stays armed, asleep or not) is
//!   divided by the number of vCPUs (`icount_percpu_budget`), and that budget holds for every
//!   turn of the pass; a turn also stops at the deadline itself. The division is whole
//!   nanoseconds: a pass of busy cores ends `(deadline - start) mod N` short of the deadline,
//!   and when fewer than N are left the budget is all of them (`timeslice == 0` gives
//!   `limit`), so the first vCPU of the next pass meets the deadline after a few instructions.
//! - A deadline met at the end of the list: the next pass has fresh budgets from core 0. A
//!   deadline met by vCPU k before the end: vCPU k + 1 runs nothing (its budget is the time to
//!   a deadline that has passed, before the timer is handled) and the fresh budgets start at
//!   k + 2. Either way each vCPU to the end of the list gets the time to the next deadline
//!   over N, counted at its own start (the timer's kick leaves `exit_request` set, which
//!   breaks the loop before each of them). So the first turns after a tick are the longest,
//!   and which vCPUs get them is what makes QEMU's shares unequal: which of the two cases the
//!   last tick of a millisecond meets follows from the remainder alone, one time in N the
//!   first (fresh from core 0), else the second (core 1 skipped, fresh from core 2). QEMU's
//!   execution log shows both, tick for tick (docs/simulator.md, "QEMU's turns, modelled").
//! - A turn ends when its budget is spent, at WFI, or at `yield` (the kernel's `relax`, in
//!   every spin on the counter). Raising an interrupt for another vCPU does not end it: every
//!   vCPU shares the one thread, so QEMU only flags the target, which takes the interrupt when
//!   its own turn comes.
//! - A vCPU in WFI with no interrupt pending is skipped at no cost; when every vCPU is in WFI
//!   the clock jumps to the next wake-up (`sleep=off`).
//! - Every instruction any vCPU executes moves the one virtual clock, so a turn starts where
//!   the last one ended, and a core frozen in the middle of an action finishes it in its next
//!   turn with what was left.
//!
//! The ticks' phases decide the turns, so the kernel reports them at the workload's start
//! (`next_tick_ns`) and the calibration hands them to the paired simulation (`--tick-ns`).

use super::Sim;
use super::state::Phase;

/// One look of a spin on the counter: read it, compare, `yield`.
const SPIN_LOOK_NS: u64 = 4;

/// Whose turn it is and what waits for the others.
pub(super) struct Turns {
    /// The core whose turn it is: the only one with an event in the engine's heap.
    pub(super) current: usize,
    /// When the current turn ends: its budget spent, or the deadline.
    pub(super) ends: u64,
    /// The pass's budget per turn.
    pub(super) budget: u64,
    /// The timer deadline the budgets are counted to.
    pub(super) deadline: u64,
    /// A tick has fired: every turn to the end of the list gets a fresh budget.
    pub(super) kicked: bool,
    /// Turns taken since the tick.
    pub(super) kicked_turns: u32,
    /// Each other core's next event, held back until its turn.
    pub(super) parked: Vec<Option<u64>>,
    /// When each core's last turn ended: an action cut short resumes with what was left.
    pub(super) frozen_at: Vec<u64>,
    /// A core spinning on the counter until then: each look at the counter ends its turn
    /// while another core can run.
    pub(super) spin_until: Vec<Option<u64>>,
}

impl Turns {
    /// A turn starting at `now` ends when the pass's budget is spent or at the deadline,
    /// whichever is first (`icount_prepare_for_run`); at least 1 ns on.
    fn turn_end(&self, now: u64) -> u64 {
        now + self.budget.min(self.deadline - now).max(1)
    }

    pub(super) fn new(cores: usize) -> Turns {
        Turns {
            current: 0,
            ends: 0,
            budget: 0,
            deadline: 0,
            kicked: false,
            kicked_turns: 0,
            parked: vec![None; cores],
            frozen_at: vec![0; cores],
            spin_until: vec![None; cores],
        }
    }
}

impl Sim<'_> {
    /// The first turn: core 0 (running the program's main) at time 0, just after its tick (the
    /// kernel's main starts a workload then), so the pass's budgets are fresh ones. Every other
    /// core is in WFI, as the kernel's are then, until its tick or a wake-up SGI.
    ///
    /// The kernel's main takes that fresh turn with `yield_now` just before `started`, and the
    /// yield queues main where a thief could take it: a policy for which one process is worth a
    /// thief (`min_steal=1`, as peers has it) then stamps every sleeper as offered work and
    /// wakes the first, which is searching when the workload begins, so no other sleeper is
    /// woken until it has stolen (QEMU's traces of imbalanced/peers/4 show core 1 waking 5.5 us
    /// before the first spawn and refusing three times; cores 2 and 3 wake only when the
    /// thieves before them have stolen). Here main sits in core 0's queue at time 0 as it does
    /// after the yield, so the same `wake_a_thief` the push makes is asked now.
    pub(super) fn start_turns(&mut self) {
        if self.turns.is_none() {
            return;
        }
        for core in 1..self.cores.len() {
            let tick = self.cores[core].next_tick(self.cfg.slice_ns.max(1), 0);
            self.cores[core].phase = Phase::Asleep { since: 0 };
            self.sleepers.insert(core);
            self.unoffered.insert(core);
            self.schedule(core, tick);
        }
        let queued = self.cores[0].stealable();
        self.wake_a_thief(0, queued, 0);
        let deadline = self.next_deadline(0);
        let (ends, budget, kicked) = self.first_turn(deadline);
        let turns = self.turns.as_mut().expect("turns");
        turns.deadline = deadline;
        turns.budget = budget;
        turns.kicked = kicked;
        turns.kicked_turns = u32::from(kicked);
        turns.ends = ends;
    }

    /// Core 0's turn under way at time 0 (its end, its pass's budget, and whether that pass is
    /// its tick's): the turns began at core 0's last tick, `slice - next_tick_ns[0]` before the
    /// workload (3.9 us on the calibration's images), and while every other core sleeps each pass
    /// is core 0's alone, its budget the time to `deadline` over N counted at the pass's start.
    /// (The turn that crosses time 0 ends 0.7 us in at 4 cores, where a fresh budget from time
    /// 0 would end 1.6 us in: the yield's wake-up SGI waits for that end.) When another core's
    /// tick came between core 0's and the start, its passes are not core 0's alone: a fresh
    /// pass from time 0 then.
    fn first_turn(&self, deadline: u64) -> (u64, u64, bool) {
        let slice = self.cfg.slice_ns.max(1);
        let fresh = self.round_budget(0);
        let next0 = self.cores[0].next_tick(slice, 0);
        let n = self.cores.len() as u64;
        let last0 = next0 as i64 - slice as i64;
        let tick_between = self.cores[1..].iter().any(|c| (c.next_tick(slice, 0) as i64 - slice as i64) > last0);
        if last0 >= 0 || tick_between {
            return (fresh.min(deadline).max(1), fresh, true);
        }
        let pass_budget = |start: i64| ((deadline as i64 - start) as u64 / n).max(1) as i64;
        let mut start = last0;
        let mut budget = pass_budget(start);
        while start + budget <= 0 {
            start += budget;
            budget = pass_budget(start);
        }
        ((start + budget) as u64, budget as u64, start == last0)
    }

    /// `core` spins on the counter from `from` until `until` (a backoff, a search pause, a
    /// relax): without turns it simply resumes then; with turns each look passes the turn on
    /// while another core can run.
    pub(super) fn spin(&mut self, core: usize, from: u64, until: u64) {
        match &mut self.turns {
            Some(turns) if until > from => {
                turns.spin_until[core] = Some(until);
                self.schedule(core, from);
            }
            _ => self.schedule(core, until),
        }
    }

    /// Called for the current core's event at `at`: true when it is a look of a spin that is
    /// not over, taken here (the turn passes on, or the spin runs on alone).
    pub(super) fn spinning(&mut self, core: usize, at: u64) -> bool {
        let Some(turns) = &mut self.turns else { return false };
        let Some(until) = turns.spin_until[core] else { return false };
        if at >= until {
            turns.spin_until[core] = None;
            return false;
        }
        let look = at + SPIN_LOOK_NS;
        let others = (0..self.cores.len()).filter(|&c| c != core).filter_map(|c| self.ready_at(c)).min();
        match others {
            // `yield`: the next core in the list takes over; or the budget runs out during
            // the look, as a turn never runs past its end: the look goes on in the core's next
            // turn, and which vCPU meets the deadline stays QEMU's.
            Some(other) if other <= look => {
                let ends = self.turns.as_ref().expect("turns").ends;
                self.pass_turn(core, look, look.min(ends.max(at)))
            }
            // Alone, the core spins on (each `yield` comes straight back to it) until the spin
            // ends or another core could run.
            other => self.schedule(core, other.map_or(until, |o| o.min(until)).max(look)),
        }
        true
    }

    /// Whether `core`'s event waits for its turn rather than going into the heap.
    pub(super) fn park(&mut self, core: usize, at: u64) -> bool {
        match &mut self.turns {
            Some(turns) if turns.current != core => {
                turns.parked[core] = Some(at);
                true
            }
            _ => false,
        }
    }

    /// Called before the current core's event at `at` runs: false when the turn is over first
    /// (the event is parked and the next core's turn begins).
    pub(super) fn in_turn(&mut self, core: usize, at: u64) -> bool {
        let Some(turns) = &mut self.turns else { return true };
        debug_assert_eq!(core, turns.current, "only the current core has events in the heap");
        if at <= turns.ends {
            return true;
        }
        let ends = turns.ends;
        self.pass_turn(core, at, ends);
        false
    }

    /// Called after the current core's step at `now`: its turn ends there if it went into WFI.
    pub(super) fn after_step(&mut self, core: usize, now: u64) {
        let asleep = matches!(self.cores[core].phase, Phase::Asleep { .. });
        if asleep && self.turns.as_ref().is_some_and(|turns| turns.current == core) {
            self.pass_turn(core, self.cores[core].at, now);
        }
    }

    /// The current core's turn ends at `now`: its next event, at `resume_at`, waits for its
    /// next turn (a core not in WFI resumes it with what was left after `now`), and the next
    /// core in the list takes over.
    fn pass_turn(&mut self, core: usize, resume_at: u64, now: u64) {
        self.cores[core].generation += 1;
        let turns = self.turns.as_mut().expect("turns");
        turns.parked[core] = Some(resume_at);
        turns.frozen_at[core] = now;
        self.next_turn(now);
    }

    /// When `core` could take a turn: at once (0) if it is not in WFI, at its wake-up (its
    /// tick, or a wake-up SGI's arrival) if it is; `None` if it has nothing to do at all.
    fn ready_at(&self, core: usize) -> Option<u64> {
        let turns = self.turns.as_ref().expect("turns");
        let asleep = matches!(self.cores[core].phase, Phase::Asleep { .. });
        turns.parked[core].map(|at| if asleep { at } else { 0 })
    }

    fn ready(&self, core: usize, now: u64) -> bool {
        self.ready_at(core).is_some_and(|at| at <= now)
    }

    /// The next core in the list that can run at `now` takes the turn; after the last core a
    /// new pass begins with core 0 (`rr_cpu_thread_fn`).
    pub(super) fn next_turn(&mut self, now: u64) {
        let n = self.cores.len();
        let mut now = now;
        let fired = self.fire_ticks(now);
        let mut next = self.turns.as_ref().expect("turns").current + 1;
        if fired && next < n {
            // The deadline met before the end of the list: the next vCPU's budget is zero,
            // and the fresh budgets start after it.
            next += 1;
        }
        let mut passes = 0;
        loop {
            if next == n {
                next = 0;
                passes += 1;
                assert!(passes <= 2, "no core could run at {now}");
                if !(0..n).any(|core| self.ready(core, now)) {
                    // Every core in WFI: the clock jumps to the first wake-up.
                    let Some(wake) = (0..n).filter_map(|c| self.ready_at(c)).min() else { return };
                    now = now.max(wake);
                    // A wake-up, not a budget met: no vCPU is skipped.
                    let _ = self.fire_ticks(now);
                }
                let budget = self.round_budget(now);
                let turns = self.turns.as_mut().expect("turns");
                // A tick's fresh budgets last to the end of the list; one that came just as a
                // pass ended gives the whole next pass fresh ones.
                if turns.kicked && turns.kicked_turns > 0 {
                    turns.kicked = false;
                }
                turns.budget = budget;
            }
            if self.ready(next, now) {
                break;
            }
            next += 1;
        }
        let asleep = matches!(self.cores[next].phase, Phase::Asleep { .. });
        let fresh = self.round_budget(now);
        let turns = self.turns.as_mut().expect("turns");
        if turns.kicked {
            turns.budget = fresh;
            turns.kicked_turns += 1;
        }
        let parked = turns.parked[next].take().expect("ready");
        let left = parked.saturating_sub(turns.frozen_at[next]);
        turns.current = next;
        turns.ends = turns.turn_end(now);
        let at = if asleep {
            parked.max(now)
        } else if self.tick_at_resume(next, now, left) {
            now
        } else {
            now + left
        };
        self.schedule(next, at);
    }

    /// A tick is due at `now`: the deadline moves on, and its kick starts fresh budgets.
    /// Returns whether one was.
    fn fire_ticks(&mut self, now: u64) -> bool {
        let deadline = self.next_deadline(now);
        let turns = self.turns.as_mut().expect("turns");
        let due = now >= turns.deadline;
        if due {
            turns.deadline = deadline;
            turns.kicked = true;
            turns.kicked_turns = 0;
        }
        due
    }

    /// `icount_percpu_budget`: the time to the next deadline over the number of vCPUs, or all
    /// of it when that share rounds to zero.
    fn round_budget(&self, now: u64) -> u64 {
        let limit = self.next_deadline(now) - now;
        match limit / self.cores.len() as u64 {
            0 => limit.max(1),
            share => share,
        }
    }

    /// The next timer deadline after `now`: the earliest next tick of any core.
    fn next_deadline(&self, now: u64) -> u64 {
        let slice = self.cfg.slice_ns.max(1);
        self.cores.iter().map(|c| c.next_tick(slice, now + 1)).min().unwrap_or(now + 1)
    }
}
