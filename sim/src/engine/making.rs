//! The locks a spawn that makes a process slot shares with every other core: while one core
//! holds one, every other core that needs it spins.
//!
//! Until 2026-12-07 the kernel made every slot under one lock (`proc::table`'s `MAKING`), 160
//! instructions a slot (QEMU's execution log of fib/default/8, seed 1: marks on the lock's
//! taking and release, 5,233 slots made, a median of 154, a mean of 160, up to 4,026 when a
//! control block's page was mapped). Under QEMU's turns that spin decided the shares while a
//! tree grew: a spinning vCPU looks once per turn (the spin's `yield` ends it; the same log
//! shows turns of 4 instructions ending in `table::allocate` on up to five vCPUs at once in the
//! first milliseconds), so the lock's holder, whichever core it was, took most of the machine
//! until it let go. Modelled, it moved the turn model's pooled count means within 25% from 48
//! to 54 of 60 and read fib's efficiency on equal cores as 0.75 at 64 cores and 0.51 at 1024
//! (docs/simulator.md, "The slot-making lock"). The kernel now makes slots per core, a page of
//! 16 control blocks at a time, and finds a stack's page tables without a lock when they
//! exist, and a core reserves never-used frames 64 at a time under the frame pool's lock: what
//! is left under a shared lock is about 1 instruction a fresh spawn (`CostModel::making`).
//! The machinery stays: it is how any such lock behaves under QEMU's turns and on real cores.

use super::Sim;
use super::state::{Effect, Phase};
use crate::workload::Spawn;

impl Sim<'_> {
    /// The running process on `core` spawns into a slot it must make, `growth` more than a
    /// spawn into a reused slot, having asked since `since`: with the lock free (or its own)
    /// the slot is made `CostModel::making` later (at most `growth`), the lock held until
    /// then, and the rest of the spawn follows outside it (`Effect::SpawnMade`); held by
    /// another core, this one spins until it is let go and then asks again.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn make_slot(
        &mut self,
        core: usize,
        now: u64,
        pid: u32,
        slice_started: u64,
        spawn: Box<Spawn>,
        growth: u64,
        since: u64,
    ) {
        if self.making.is_some_and(|holder| holder != core) {
            self.making_waiters.push(core);
            // On QEMU's shares a spinning vCPU gives its turns away, as one in WFI does: each
            // look ends its turn.
            self.set_awake(core, false);
            self.cores[core].phase =
                Phase::Run { pid, slice_started, effect: Effect::AwaitMaking { spawn, growth, since }, preempt: false };
            // Until `release_making` says when: a look per turn under turns, else no event.
            self.spin(core, now, u64::MAX);
            return;
        }
        self.making = Some(core);
        let at = now + self.cores[core].scale(growth.min(self.costs.making));
        // The spin on the lock was this core's time too (IRQs masked, inside the spawn).
        self.cores[core].stats.busy_ns += at - since;
        let rest = self.costs.spawn + growth.saturating_sub(self.costs.making);
        self.cores[core].phase =
            Phase::Run { pid, slice_started, effect: Effect::SpawnMade { spawn, rest }, preempt: false };
        self.schedule(core, at);
    }

    /// The holder's spawn has made its slot at `now`: the lock is free, and each core spinning
    /// on it sees so at its next look (without turns: now), where the first to look takes it.
    pub(super) fn release_making(&mut self, now: u64) {
        self.making = None;
        for waiter in std::mem::take(&mut self.making_waiters) {
            self.set_awake(waiter, true);
            match &mut self.turns {
                Some(turns) => turns.spin_until[waiter] = Some(now),
                None => self.schedule(waiter, now),
            }
        }
    }
}
