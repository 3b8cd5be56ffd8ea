//! One core's step: the scheduler loop's pass (inbox, rebalancing, dispatch or a steal round),
//! the running process's operations (compute with preemption at the tick, spawn, send,
//! receive, yield, exit) and the switch out, with the work and critical path they add.

use beamcore_sched_policy::balance::idle_with_work;

use super::state::{Effect, Pending, Phase, State};
use super::{LOOP_NS, Sim};
use crate::workload::{Ctx, Op, Placement};

impl Sim<'_> {
    /// One action of `core` at `now`.
    pub(super) fn step(&mut self, core: usize, now: u64) {
        match std::mem::replace(&mut self.cores[core].phase, Phase::Loop) {
            Phase::Loop => self.loop_pass(core, now),
            Phase::Switch { pid, pending } => {
                self.after_switch(core, pid, pending, now);
                self.loop_pass(core, now);
            }
            Phase::Run { pid, slice_started, effect, preempt } => {
                self.run_step(core, now, pid, slice_started, effect, preempt)
            }
            Phase::Steal(round) => self.steal_attempt(core, now, round),
            Phase::Asleep { since } => {
                self.note(core, now, "idle_end", 0);
                self.sleepers.remove(&core);
                self.set_awake(core, true);
                let slept = now - since;
                self.cores[core].stats.asleep_ns += slept;
                // `idle::wake_latency`: a sleep a wake-up SGI ended, timed from the first one.
                if let Some(sent) = self.cores[core].wake_sent_at.take() {
                    let stats = &mut self.cores[core].stats;
                    stats.wakes += 1;
                    stats.wake_latency_ns += now - sent;
                }
                let window = self.window(core);
                if self.work_elsewhere(core, &window) {
                    let offered = self.cores[core].work_offered_at;
                    self.cores[core].stats.idle_with_work_ns += idle_with_work(since, now, offered);
                }
                self.loop_pass(core, now);
            }
        }
    }

    /// What `run` does once a process has switched out.
    pub(super) fn after_switch(&mut self, core: usize, pid: u32, pending: Pending, now: u64) {
        match pending {
            Pending::Requeue | Pending::Preempted => {
                self.procs[pid as usize].state = State::Runnable;
                self.enqueue_local(core, pid, now);
            }
            // A message may have come while it switched out: the sender saw it waiting and
            // queued it already (through the inbox), as in the kernel.
            Pending::Block => {}
            Pending::Exit => {
                self.note(core, now, "exit", u64::from(pid));
                let p = &mut self.procs[pid as usize];
                p.state = State::Done;
                p.exits += 1;
                self.cores[core].stats.completed += 1;
                self.done += 1;
                self.makespan = self.makespan.max(now);
            }
        }
    }

    /// One pass of `run_loop` that found no job: inbox, rebalancing, the next process, or a
    /// steal round, search and sleep.
    pub(super) fn loop_pass(&mut self, core: usize, now: u64) {
        self.pause_ended(core, now);
        let mut cost = LOOP_NS;
        while let Some(pid) = self.cores[core].inbox.pop_front() {
            self.enqueue_local(core, pid, now);
            cost += self.costs.push;
        }
        if core == 0 {
            cost += self.rebalance(now);
        }
        if let Some(pid) = self.take_next(core, now) {
            self.end_search(core);
            let c = &mut self.cores[core];
            c.stats.executed += 1;
            let start = now + c.scale(cost + self.costs.dispatch);
            // The loop ran with interrupts open: any tick before the slice is taken.
            c.ticks_taken_until = start;
            self.note(core, start, "run", u64::from(pid));
            let p = &mut self.procs[pid as usize];
            debug_assert_eq!(p.state, State::Runnable, "process {pid} dispatched twice");
            p.state = State::Running;
            p.ran = true;
            p.reductions = i64::from(self.cfg.reductions);
            if let Some(home) = self.bound_home[pid as usize]
                && home != core
            {
                self.bound_violations += 1;
            }
            self.cores[core].phase = Phase::Run { pid, slice_started: start, effect: Effect::None, preempt: false };
            self.schedule(core, start);
            return;
        }
        self.start_round(core, now, cost);
    }

    /// The running process: its last operation completes now (its effect takes place), then it
    /// asks for the next.
    pub(super) fn run_step(
        &mut self,
        core: usize,
        now: u64,
        pid: u32,
        slice_started: u64,
        effect: Effect,
        preempt: bool,
    ) {
        if preempt {
            // The tick ended its slice in the middle of a computation (kept in `left`).
            self.cores[core].stats.preemptions += 1;
            return self.switch_out(core, now, pid, slice_started, Pending::Preempted);
        }
        match effect {
            Effect::None => {}
            Effect::Compute { units, reductions } => {
                self.cores[core].stats.work += units;
                let p = &mut self.procs[pid as usize];
                p.reductions -= i64::from(reductions);
                if p.reductions <= 0 {
                    return self.switch_out(core, now, pid, slice_started, Pending::Requeue);
                }
            }
            Effect::Credit(units) => self.cores[core].stats.work += units,
            Effect::Spawn(spawn) => self.spawn_child(core, now, pid, *spawn),
            Effect::SpawnMade { spawn, rest } => {
                // The slot is made: the lock is let go, and the spawn goes on outside it.
                self.release_making(now);
                let at = now + self.cores[core].scale(rest);
                self.cores[core].stats.busy_ns += at - now;
                self.cores[core].phase =
                    Phase::Run { pid, slice_started, effect: Effect::Spawn(spawn), preempt: false };
                return self.schedule(core, at);
            }
            Effect::AwaitMaking { spawn, growth, since } => {
                return self.make_slot(core, now, pid, slice_started, spawn, growth, since);
            }
            Effect::Send { to, word } => {
                let span = self.procs[pid as usize].span;
                let target = &mut self.procs[to as usize];
                if target.state != State::Done {
                    target.mailbox.push_back((word, span));
                    if target.state == State::Waiting {
                        target.state = State::Runnable;
                        self.wake_by_message(core, to, now);
                    }
                }
            }
        }
        // Compute left over from a preemption comes first.
        if let Some((ns, units, reductions)) = self.procs[pid as usize].left.take() {
            return self.compute(core, now, pid, slice_started, ns, units, reductions);
        }
        // A tick that ended the slice while the process spawned, sent or received preempts it
        // before its next operation, as the kernel's tick preempts a process in its own code
        // (or, inside a kernel call, as soon as the call unmasks IRQs): a main spawning its
        // workers in a loop gives its core to them at its first tick, and a higher priority
        // among them runs first. (`compute` checks the same for a computation.)
        if self.slice_over(core, now, slice_started) {
            self.cores[core].stats.preemptions += 1;
            return self.switch_out(core, now, pid, slice_started, Pending::Preempted);
        }
        let op = if std::mem::take(&mut self.procs[pid as usize].retry_receive) {
            Op::Receive
        } else {
            let p = &mut self.procs[pid as usize];
            let mut ctx = Ctx {
                me: pid,
                message: p.message.take(),
                cores: self.cfg.cores,
                costs: self.costs,
                main_checks: self.cfg.main_checks,
                shared: &mut self.shared,
            };
            p.program.next(&mut ctx)
        };
        let costs = self.costs;
        let (cost, effect) = match op {
            Op::Compute { ns, units, reductions } => {
                self.procs[pid as usize].span += ns;
                self.work += ns;
                return self.compute(core, now, pid, slice_started, ns, units, reductions);
            }
            Op::Credit(units) => (0, Effect::Credit(units)),
            Op::Spawn(spawn) => {
                // The kernel's table and heap grow for a process past the most alive so far; the
                // first slot after main's needs its page tables made. What that adds is the
                // kernel's time, not the workload's work (W and the span count every spawn at
                // its reused cost, so they do not depend on the schedule, which decides how many
                // processes are alive at once).
                let growth = if self.procs.len() == 1 {
                    costs.first_spawn.saturating_sub(costs.spawn)
                } else if self.alive() >= self.most_alive {
                    costs.spawn_fresh.saturating_sub(costs.spawn)
                } else {
                    0
                };
                if growth > 0 {
                    // A slot to make: partly under a lock every core shares (`making`).
                    self.procs[pid as usize].span += costs.spawn;
                    self.work += costs.spawn;
                    return self.make_slot(core, now, pid, slice_started, spawn, growth, now);
                }
                (costs.spawn, Effect::Spawn(spawn))
            }
            Op::Send { to, word } => (costs.send, Effect::Send { to, word }),
            Op::Receive => {
                let p = &mut self.procs[pid as usize];
                match p.mailbox.pop_front() {
                    Some((word, sent_span)) => {
                        p.span = p.span.max(sent_span);
                        p.message = Some(word);
                        (costs.receive, Effect::None)
                    }
                    None => {
                        // Block: the receive is tried again (and takes the message) once woken.
                        p.state = State::Waiting;
                        p.retry_receive = true;
                        return self.switch_out(core, now, pid, slice_started, Pending::Block);
                    }
                }
            }
            Op::Yield => return self.switch_out(core, now, pid, slice_started, Pending::Requeue),
            Op::Exit => {
                self.procs[pid as usize].span += costs.exit;
                self.work += costs.exit;
                let at = now + self.cores[core].scale(costs.exit);
                self.cores[core].stats.busy_ns += at - now;
                return self.switch_out(core, at, pid, slice_started, Pending::Exit);
            }
        };
        self.procs[pid as usize].span += cost;
        self.work += cost;
        let at = now + self.cores[core].scale(cost);
        self.cores[core].stats.busy_ns += at - now;
        self.cores[core].phase = Phase::Run { pid, slice_started, effect, preempt: false };
        self.schedule(core, at);
    }

    /// `pid` on `core` has spawned: the child is made and runnable.
    fn spawn_child(&mut self, core: usize, now: u64, pid: u32, spawn: crate::workload::Spawn) {
        let target = match spawn.placement {
            Placement::Here => core,
            Placement::OnCore(c) | Placement::Bound(c) => c.min(self.cfg.cores - 1),
        };
        let bound = matches!(spawn.placement, Placement::Bound(_));
        let span = self.procs[pid as usize].span;
        let child = self.create(spawn.program, spawn.priority, target, bound, span);
        self.note(core, now, "spawn", u64::from(child));
        self.make_runnable(core, child, now);
    }

    /// Computes `ns` (this core's factor applied), unless the tick ends the slice first.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn compute(
        &mut self,
        core: usize,
        now: u64,
        pid: u32,
        slice_started: u64,
        ns: u64,
        units: u64,
        reductions: u32,
    ) {
        let end = now + self.cores[core].scale(ns);
        // The first tick at which the slice is over: ticks come every slice at this core's phase.
        // A tick that came while the process did something else (a send, a spawn) or while
        // the core stood still (QEMU's turns) is pending: the slice ends now, before any of
        // the computation. Under QEMU's turns a tick is a moment of the one clock, and a turn
        // never runs past one (each ends at the next deadline): a tick to come is taken when
        // the core's turn comes back after it (`tick_at_resume`), however little of its own
        // time has passed.
        let tick = if self.turns.is_none() {
            self.cores[core].slice_ends_at(self.cfg.slice_ns.max(1), slice_started).max(now)
        } else if self.slice_over(core, now, slice_started) {
            now
        } else {
            u64::MAX
        };
        let c = &self.cores[core];
        if tick < end {
            let done_ns = ((tick - now) as f64 / c.factor).floor() as u64;
            self.procs[pid as usize].left = Some((ns - done_ns.min(ns), units, reductions));
            self.cores[core].stats.busy_ns += tick - now;
            self.cores[core].phase = Phase::Run { pid, slice_started, effect: Effect::None, preempt: true };
            self.schedule(core, tick);
            return;
        }
        self.cores[core].stats.busy_ns += end - now;
        self.cores[core].phase =
            Phase::Run { pid, slice_started, effect: Effect::Compute { units, reductions }, preempt: false };
        self.schedule(core, end);
    }

    /// Under turns, `core` resumes at `now` in the middle of a computation of which `left_ns`
    /// are left: if its slice's tick came while it stood still, the interrupt is taken first,
    /// as a vCPU takes a pending IRQ at the first instruction of its turn. Returns whether it
    /// was (the preemption then happens at `now`, and the rest of the computation waits).
    pub(super) fn tick_at_resume(&mut self, core: usize, now: u64, left_ns: u64) -> bool {
        let Phase::Run { pid, slice_started, effect: Effect::Compute { units, reductions }, preempt: false } =
            self.cores[core].phase
        else {
            return false;
        };
        if !self.slice_over(core, now, slice_started) {
            return false;
        }
        debug_assert!(self.procs[pid as usize].left.is_none(), "one computation at a time");
        self.procs[pid as usize].left = Some((left_ns, units, reductions));
        // The computation was counted busy to its end when it began.
        let stats = &mut self.cores[core].stats;
        stats.busy_ns = stats.busy_ns.saturating_sub(left_ns);
        self.cores[core].phase = Phase::Run { pid, slice_started, effect: Effect::None, preempt: true };
        true
    }

    /// Whether the slice begun at `slice_started` is over at `now` for a process that runs
    /// on: without turns, once the first tick at or after a whole slice has come; under
    /// turns, when a tick taken now finds the whole slice spent (`take_pending_tick`).
    fn slice_over(&mut self, core: usize, now: u64, slice_started: u64) -> bool {
        let slice = self.cfg.slice_ns.max(1);
        match self.turns {
            None => self.cores[core].slice_ends_at(slice, slice_started) <= now,
            Some(_) => self.cores[core].take_pending_tick(slice, now, slice_started),
        }
    }

    /// The process gives the core back; the scheduler acts on `pending` once the switch is done.
    pub(super) fn switch_out(&mut self, core: usize, now: u64, pid: u32, _slice_started: u64, pending: Pending) {
        let at = now + self.cores[core].scale(self.costs.switch_out);
        self.cores[core].stats.busy_ns += at - now;
        self.cores[core].phase = Phase::Switch { pid, pending };
        self.schedule(core, at);
    }
}
