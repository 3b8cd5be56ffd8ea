//! The kernel's locks on making process slots: a spawn past the most processes alive so far
//! makes a slot (`proc::table::make_slot`, which holds `MAKING` while it maps a new control
//! block and initialises it) and maps its stack's pages (under `vmap`'s lock), and while one
//! core does, every other core that must make one spins. The model holds one lock for the
//! part of such a spawn QEMU's execution log shows under `MAKING` (`CostModel::making`, some
//! 160 instructions of the 390 a fresh spawn costs beyond a reused slot's); the rest of the
//! spawn, the stack's pages among it, runs outside it (`TABLES` and the frame pool's lock are
//! held for a few instructions each there).
//!
//! Under QEMU's turns that spin decides the shares while a tree grows. A spinning vCPU looks
//! once per turn (the spin's `yield` ends it: QEMU's execution log of fib/default/8, seed 1,
//! shows turns of 4 instructions ending in `table::allocate` on up to five vCPUs at once in its
//! first milliseconds), so the lock's holder, whichever core it is, takes most of the machine
//! until it lets go, and the fast vCPUs lose what their long turns would have given them.
//! Without the lock the model had every core grow its subtree at its own share from the start.

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

    /// The holder's spawn has made its slot at `now`: `MAKING` is free, and each core spinning
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
