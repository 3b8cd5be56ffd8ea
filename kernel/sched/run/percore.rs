//! Each core's scheduler state, and the one way to reach the owner-only part of it: [`OnCore`],
//! a guard that masks IRQs while it lives and hands out the calling core's [`CoreLocal`].
//!
//! `CoreLocal` is touched only by its own core, with IRQs masked: by the scheduler loop, by the
//! process it runs (inside the kernel's API, which takes an `OnCore`), and by the timer and
//! fault handlers that interrupt that process. Everything other cores read or write (the
//! inbox, the runnable counts, the thieves' ends of the queues, the statistics) lives beside
//! it in [`CoreScheduler`], atomic or locked.
//!
//! Functions below an entry point (an API call, the loop, a handler) take `&mut OnCore` and
//! borrow `CoreLocal` from it for as long as they need it; a call that needs the core again (to
//! queue a process, say) borrows the same guard again, so the borrow checker sees to it that
//! no two `&mut CoreLocal` are ever alive at once. Only entry points make an `OnCore`; debug builds
//! check that no other is alive on the core then.

use alloc::collections::VecDeque;
use core::cell::UnsafeCell;
use core::marker::PhantomData;
#[cfg(debug_assertions)]
use core::sync::atomic::AtomicBool as DebugFlag;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use super::idle::SEARCHING;
use super::runqueue::{RunQueues, SharedQueues};
use crate::proc::node_cache::NodeCache;
use crate::proc::process::ExitReason;
use crate::record::stats::{self, CoreStats};
use beamcore_hal::arch::context::Context;
use beamcore_hal::arch::cpu::{self, IrqState};
use beamcore_hal::ids::{CoreId, Slot};
use beamcore_hal::sync::IrqSpinLock;
use beamcore_mm::heap::{self, TurnCount};
use beamcore_mm::layout::MAX_CORES;
use beamcore_sched_policy::balance::{AdaptiveState, NEVER, Rng};

/// What the running process asked its scheduler to do once it has switched away.
///
/// `repr(u64)` for the same reason as `Message`: aligned word moves instead of a `memcpy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub(crate) enum Pending {
    Nothing,
    /// Back into the run queue (yield, or the reductions budget is spent).
    Requeue,
    /// Back into the run queue: the timer ended its slice.
    Preempted,
    /// Nothing: it is waiting; whoever wakes it queues it.
    Block,
    /// End it.
    Exit(ExitReason),
}

/// What only the owning core touches (with IRQs masked, or from its running process).
pub(crate) struct CoreLocal {
    /// The scheduler loop's own context while a process runs.
    pub context: Context,
    pub current: Option<Slot>,
    pub pending: Pending,
    pub queues: RunQueues,
    pub slice_started: u64,
    /// Free signal nodes for this core's sends (`node_cache`).
    pub node_cache: NodeCache,
    pub rng: Rng,
    pub adaptive: AdaptiveState,
    /// Counter reading of the last successful steal from each victim.
    pub last_steal: [u64; MAX_CORES],
    /// Core 0's tick count when it last looked for severe imbalance.
    pub last_rebalance: u64,
    /// The earliest timer deadline this core knows of in the tables it serves (`timers`; 0:
    /// look every round, it serves an offline core's table too). Kept by the owner when it
    /// sets or fires timers; a cancel elsewhere leaves it early, which costs one look.
    pub timers_due: u64,
    /// This core counts in `SEARCHING`.
    pub searching: bool,
    /// When this core's current search began, and how many rounds it has made.
    pub search_started: u64,
    pub search_rounds: u32,
}

impl CoreLocal {
    /// The core found work of its own (a job, a process), or leaves: it stops counting as a
    /// searcher.
    pub(crate) fn end_search(&mut self) {
        if self.searching {
            self.stop_searching();
        }
    }

    pub(crate) fn stop_searching(&mut self) {
        self.searching = false;
        // ORDERING: Relaxed: see `scheduler::search_a_little_longer`.
        SEARCHING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One core's scheduler: its owner-only state and what other cores may touch.
#[repr(C, align(64))]
pub(crate) struct CoreScheduler {
    local: UnsafeCell<CoreLocal>,
    /// Processes other cores made runnable here, for the owner to queue.
    pub(crate) inbox: IrqSpinLock<VecDeque<Slot>>,
    /// Read and written under the inbox's lock: the core has left (or is leaving) and takes
    /// nothing more in its inbox; a waker goes to another core (`wake::deliver`).
    pub(crate) inbox_closed: AtomicBool,
    pub(crate) inbox_len: AtomicUsize,
    pub(crate) sleeping: AtomicBool,
    pub(crate) queues: SharedQueues,
    /// What the loop must do before it picks the next process (`attention`).
    pub(crate) attention: AtomicU32,
    /// This core's counters (`stats::of`), kept here so that the owner reaches them from the
    /// scheduler it already holds: one load, not the core id and an index each time.
    pub(crate) stats: &'static CoreStats,
    /// This core's heap balance of the running turn (`heap::turn_count`), kept here for the
    /// same reason as `stats`.
    pub(crate) heap_turn: &'static TurnCount,
    /// An `OnCore` is alive on this core (debug builds check there is never a second).
    #[cfg(debug_assertions)]
    entered: DebugFlag,
}

// SAFETY: `local` is only touched by the owning core through `OnCore` (see there); everything
// else is atomic or locked.
unsafe impl Sync for CoreScheduler {}

impl CoreScheduler {
    const fn new() -> Self {
        CoreScheduler {
            local: UnsafeCell::new(CoreLocal {
                context: Context::ZERO,
                current: None,
                pending: Pending::Nothing,
                queues: RunQueues::new(),
                slice_started: 0,
                node_cache: NodeCache::new(),
                rng: Rng::new(1),
                adaptive: AdaptiveState::new(),
                last_steal: [NEVER; MAX_CORES],
                last_rebalance: 0,
                timers_due: u64::MAX,
                searching: false,
                search_started: 0,
                search_rounds: 0,
            }),
            inbox: IrqSpinLock::new(VecDeque::new()),
            inbox_len: AtomicUsize::new(0),
            inbox_closed: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            queues: SharedQueues::new(),
            attention: AtomicU32::new(0),
            stats: stats::of(CoreId::BOOT),
            heap_turn: heap::turn_count(0),
            #[cfg(debug_assertions)]
            entered: DebugFlag::new(false),
        }
    }

    /// The process running on this core, read without borrowing `CoreLocal`: for backtraces, which
    /// may be taken on the way down in the middle of scheduler code that holds it, and for a
    /// fault that interrupted such code. Call on the owning core with IRQs masked.
    pub(crate) fn current_unborrowed(&self) -> Option<Slot> {
        // SAFETY: a copy of one field read through the raw pointer, no reference made: on the
        // owning core with IRQs masked (caller) nothing else runs on the core meanwhile, and a
        // `&mut CoreLocal` further up this core's stack is not in use during the read.
        unsafe { core::ptr::addr_of!((*self.local.get()).current).read() }
    }

    /// Runnable processes of `priority` queued on this core.
    pub fn runnable(&self, priority: beamcore_sched_policy::priority::Priority) -> usize {
        self.queues.runnable(priority)
    }
}

static SCHEDULERS: [CoreScheduler; MAX_CORES] = {
    let mut all = [const { CoreScheduler::new() }; MAX_CORES];
    let mut core = 0;
    while core < MAX_CORES {
        all[core].stats = stats::of(CoreId::new(core));
        all[core].heap_turn = heap::turn_count(core);
        core += 1;
    }
    all
};

/// Core `core`'s scheduler (its shared parts; `CoreLocal` only through `OnCore`).
pub(crate) fn scheduler(core: CoreId) -> &'static CoreScheduler {
    &SCHEDULERS[core.index()]
}

/// The calling core's scheduler, through TPIDR_EL1 (set by `bind_this_core`, before this core
/// schedules or takes interrupts).
#[inline(always)]
fn this_scheduler() -> &'static CoreScheduler {
    let address = cpu::per_core();
    debug_assert!(address == &SCHEDULERS[cpu::core_id()] as *const CoreScheduler as usize, "TPIDR_EL1 not set");
    // SAFETY: `bind_this_core` stored the address of this core's entry of `SCHEDULERS` (a
    // static) in TPIDR_EL1, and nothing else writes the register.
    unsafe { &*(address as *const CoreScheduler) }
}

/// The calling core's scheduler, if the core has its id yet (on the way down it may not).
pub(crate) fn this_scheduler_checked() -> Option<&'static CoreScheduler> {
    SCHEDULERS.get(cpu::core_id())
}

/// The calling core's scheduler, IRQs masked while it lives: the owner's access to `CoreLocal`.
pub(crate) struct OnCore {
    scheduler: &'static CoreScheduler,
    irq: IrqState,
    /// Neither `Send` nor `Sync`: the guard stands for "this core, IRQs masked".
    _this_core_only: PhantomData<*mut ()>,
    #[cfg(debug_assertions)]
    entered_before: bool,
}

impl OnCore {
    /// Whether IRQs were unmasked when this guard was entered (and will be once it is dropped):
    /// the caller was a process's own code, not kernel work.
    pub fn entered_unmasked(&self) -> bool {
        self.irq.was_unmasked()
    }

    /// Masks IRQs and takes the calling core's scheduler. For entry points only: an API call,
    /// the scheduler loop, an exception handler. Code they call takes `&mut OnCore`.
    #[inline(always)]
    pub fn enter() -> OnCore {
        let irq = cpu::irq_save();
        let scheduler = this_scheduler();
        #[cfg(debug_assertions)]
        {
            // ORDERING: Relaxed: only this core reads or writes its flag.
            let entered_before = scheduler.entered.swap(true, Ordering::Relaxed);
            assert!(!entered_before, "a second OnCore on core {}", cpu::core_id());
            OnCore { scheduler, irq, _this_core_only: PhantomData, entered_before }
        }
        #[cfg(not(debug_assertions))]
        OnCore { scheduler, irq, _this_core_only: PhantomData }
    }

    /// Like [`enter`](Self::enter), for a synchronous exception taken from a process, which may
    /// have been in the kernel holding an `OnCore` of its own (a fault in kernel code it called
    /// with IRQs masked: its stack growing, say). The handler must then not touch what that code
    /// was using: it reads which process runs without borrowing `CoreLocal`
    /// ([`CoreScheduler::current_unborrowed`]), and borrows `CoreLocal` only to end the process (its
    /// code, and so its guard, never runs again).
    #[inline(always)]
    pub fn enter_from_fault() -> OnCore {
        let irq = cpu::irq_save();
        let scheduler = this_scheduler();
        #[cfg(debug_assertions)]
        {
            // ORDERING: Relaxed, as in `enter`.
            let entered_before = scheduler.entered.swap(true, Ordering::Relaxed);
            OnCore { scheduler, irq, _this_core_only: PhantomData, entered_before }
        }
        #[cfg(not(debug_assertions))]
        OnCore { scheduler, irq, _this_core_only: PhantomData }
    }

    /// The shared parts of this core's scheduler.
    #[inline(always)]
    pub fn scheduler(&self) -> &'static CoreScheduler {
        self.scheduler
    }

    /// This core's id.
    #[inline(always)]
    pub fn id(&self) -> CoreId {
        CoreId::this()
    }

    /// The owner-only state, for as long as this guard is borrowed.
    #[inline(always)]
    pub fn local(&mut self) -> &mut CoreLocal {
        // SAFETY: the one place `CoreLocal` is reached. An `OnCore` exists only on the core it was
        // made on (it is neither `Send` nor `Sync`, and a process's switch consumes its guard),
        // with IRQs masked for its whole life, so no interrupt handler on this core runs in the
        // middle; only entry points make one and the code below them borrows it mutably, so
        // this `&mut` is the only one alive. Across the loop's switch to a process the process's
        // side makes its own (`lend`), and this one is not used until the switch returns; a
        // fault taken in kernel code that holds one reads which process runs without borrowing
        // `CoreLocal` (`enter_from_fault`).
        unsafe { &mut *self.scheduler.local.get() }
    }

    /// Queues a runnable process of this core.
    #[inline]
    pub fn enqueue(&mut self, slot: Slot) {
        let shared = &self.scheduler.queues;
        self.local().queues.push(shared, slot);
    }

    /// Gives the core up from the running process: runs `switch` (the process's switch to its
    /// scheduler), which returns when the process is resumed, maybe on another core (a thief
    /// took it meanwhile). The guard is consumed: it named the core the process left, which may
    /// no longer be the one it runs on. IRQs come back to the state the guard found, on
    /// whichever core that is, where no other guard is alive (whoever resumes a process holds
    /// none).
    #[inline(always)]
    pub fn switch_away(self, switch: impl FnOnce()) {
        #[cfg(debug_assertions)]
        // ORDERING: Relaxed: this core's own flag.
        self.scheduler.entered.store(false, Ordering::Relaxed);
        let irq = self.irq;
        core::mem::forget(self);
        switch();
        #[cfg(debug_assertions)]
        // ORDERING: Relaxed: the resuming core's own flag.
        debug_assert!(!SCHEDULERS[cpu::core_id()].entered.load(Ordering::Relaxed), "a process resumed under a guard");
        cpu::irq_restore(irq);
    }

    /// Runs `switch`, the scheduler loop's switch to a process, which makes an `OnCore` of its
    /// own while this one waits, and returns when the core comes back to the loop. Debug builds
    /// hand the "one guard" check over with it.
    /// Puts a process a message just woke on this core into its "run next" slot.
    #[inline]
    pub fn enqueue_woken(&mut self, slot: Slot) {
        let shared = &self.scheduler.queues;
        self.local().queues.push_woken(shared, slot);
    }

    /// Runs `switch`, a context switch to the other side of this core (a process, or the
    /// scheduler loop), which makes an `OnCore` of its own while this one waits, and returns
    /// when the core comes back. Debug builds hand the "one guard" check over with it.
    #[inline(always)]
    pub fn lend<R>(&mut self, switch: impl FnOnce() -> R) -> R {
        #[cfg(debug_assertions)]
        // ORDERING: Relaxed: this core's own flag.
        self.scheduler.entered.store(false, Ordering::Relaxed);
        let result = switch();
        #[cfg(debug_assertions)]
        // ORDERING: Relaxed, as above.
        self.scheduler.entered.store(true, Ordering::Relaxed);
        result
    }
}

impl Drop for OnCore {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(debug_assertions)]
        // ORDERING: Relaxed: this core's own flag.
        self.scheduler.entered.store(self.entered_before, Ordering::Relaxed);
        cpu::irq_restore(self.irq);
    }
}

/// Points this core's TPIDR_EL1 at its scheduler; the first thing a core does for the
/// scheduler, before any `OnCore`.
pub(crate) fn bind_this_core() {
    cpu::set_per_core(&SCHEDULERS[cpu::core_id()] as *const CoreScheduler as usize);
}
