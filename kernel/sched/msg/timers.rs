//! Timers: `send_after`, `cancel_timer`, `read_timer`, and the deadlines of `receive` with a
//! timeout and of `sleep`, in one table per core (docs/scheduler.md, "Timers").
//!
//! Each core's table is a `beamcore_timer_heap::TimerHeap` (a 4-ary heap by deadline over a slab:
//! insert O(log n), cancel O(1), the earliest in O(1)) behind its own lock, so that a process on
//! any core can cancel a timer that another core's table holds. A timer is inserted in the
//! table of the core its maker runs on; that core programs its generic timer for the earliest
//! deadline it serves (`smp::deadline_added`), so a deadline fires at its time rather than at
//! the next tick, and the interrupt handler expires what is due (`expire_due`), as does the
//! scheduler loop. A table stays its core's: a core that goes offline has another serve it
//! (`hand_over`) until it comes back, so a `TimerRef` never goes stale while its timer waits.
//!
//! Exactly once: a timer leaves its table under the table's lock, by firing or by a cancel, and
//! whichever takes it acts on it; the other finds it gone.

use alloc::boxed::Box;
use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore_timer_heap::{Handle, TimerHeap};

use super::mailbox;
use crate::proc::process::{self, Message, Pid, SendError, Signal};
use crate::record::trace::{self, Event};
use crate::run::attention;
use crate::run::percore::OnCore;
use crate::run::wake::make_runnable;
use beamcore_core_set::AtomicCoreSet;
use beamcore_hal::ids::{CoreId, Slot};
use beamcore_hal::sync::IrqSpinLock;
use beamcore_hal::time;
use beamcore_mm::layout::MAX_CORES;
use beamcore_smp as smp;

/// What a timer does when it fires.
pub(crate) enum Action {
    /// Ends the wait numbered `wait_sequence` of the process in `slot` (a receive's timeout or
    /// a sleep), if it is still that wait.
    Wake { slot: Slot, wait_sequence: u16 },
    /// Delivers a message (`send_after`); dropped if `to` has ended.
    Send { to: Pid, node: Box<Signal> },
}

/// One core's table, on cache lines of its own.
#[repr(align(64))]
struct Table {
    heap: IrqSpinLock<TimerHeap<Action>>,
    /// The earliest deadline in `heap` (`u64::MAX`: none), written under the lock, read
    /// without it by the cores that serve the table to decide whether to look.
    earliest: AtomicU64,
    /// The tables of offline cores this core serves besides its own (`hand_over`).
    adopted: AtomicCoreSet<1>,
}

static TABLES: [Table; MAX_CORES] = [const {
    Table {
        heap: IrqSpinLock::new(TimerHeap::new()),
        earliest: AtomicU64::new(u64::MAX),
        adopted: AtomicCoreSet::new(),
    }
}; MAX_CORES];

/// Names a pending timer: its table and its place there. Cancelling a timer that has fired (or
/// was cancelled) is harmless and says so.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimerRef {
    table: u16,
    handle: Handle,
}

impl fmt::Debug for TimerRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#Timer<{}.{}.{}>", self.table, self.handle.index(), self.handle.generation())
    }
}

/// What `cancel_timer` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancelled {
    /// The timer was pending and will never fire; it had this many microseconds left.
    Pending { left_us: u64 },
    /// It had fired already (its message is delivered or dropped) or was cancelled before.
    NotPending,
}

impl Table {
    /// Inserts under the lock and keeps `earliest`; the caller arms the timer. `None`: no memory
    /// for it (the action is dropped: a `Send`'s node is freed).
    fn insert(&self, deadline: u64, action: Action) -> Option<Handle> {
        let mut heap = self.heap.lock();
        let handle = heap.insert(deadline, action).ok()?;
        // ORDERING: Relaxed: a hint for the serving cores, which take the lock to act.
        self.earliest.store(heap.earliest().unwrap_or(u64::MAX), Ordering::Relaxed);
        Some(handle)
    }

    fn cancel(&self, handle: Handle) -> Option<(u64, Action)> {
        let mut heap = self.heap.lock();
        let cancelled = heap.cancel(handle);
        // ORDERING: Relaxed: as in `insert`.
        self.earliest.store(heap.earliest().unwrap_or(u64::MAX), Ordering::Relaxed);
        cancelled
    }

    fn pop_due(&self, now: u64) -> Option<Action> {
        // ORDERING: Relaxed: a stale value costs a look under the lock, or a deadline seen at
        // the next look (the owner updates it under the lock it then takes).
        if self.earliest.load(Ordering::Relaxed) > now {
            return None;
        }
        let mut heap = self.heap.lock();
        let due = heap.pop_expired(now).map(|(_, _, action)| action);
        // ORDERING: Relaxed: as in `insert`.
        self.earliest.store(heap.earliest().unwrap_or(u64::MAX), Ordering::Relaxed);
        due
    }
}

/// Sets a timer on the calling core's table and arms the core's timer for it if it is the
/// earliest. IRQs are masked (the caller's `OnCore`), so the core cannot change underneath.
fn set(core: &mut OnCore, deadline: u64, action: Action) -> Option<TimerRef> {
    let id = core.id();
    let handle = TABLES[id.index()].insert(deadline, action)?;
    let local = core.local();
    local.timers_due = local.timers_due.min(deadline);
    attention::set_own(core, attention::TIMEOUTS, true);
    smp::deadline_added(deadline);
    Some(TimerRef { table: id.index() as u16, handle })
}

/// Registers the deadline of a wait of the process in `slot` (a receive with a timeout, a
/// sleep). `None` when no memory was left for it: the caller then polls instead of blocking.
pub(crate) fn set_wait_deadline(core: &mut OnCore, slot: Slot, deadline: u64, wait_sequence: u16) -> Option<TimerRef> {
    set(core, deadline, Action::Wake { slot, wait_sequence })
}

/// Removes a wait's deadline once the wait is over (woken by a message, or by the deadline
/// itself, when this finds it gone): a process that waits with a long timeout many times does
/// not leave a timer per wait behind.
pub(crate) fn clear_wait_deadline(timer: TimerRef) {
    drop(TABLES[usize::from(timer.table)].cancel(timer.handle));
}

/// Sends `message` to `pid` after `delay_us` microseconds (Erlang's `erlang:send_after/3`).
/// The message is made now; if `pid` has ended by the deadline it is dropped. `OutOfMemory`
/// if no memory is left for the message or the timer.
pub fn send_after(pid: Pid, delay_us: u64, message: Message) -> Result<TimerRef, SendError> {
    let deadline = time::count_after_us(delay_us);
    let mut core = OnCore::enter();
    let node = mailbox::new_node(&mut core, message).ok_or(SendError::OutOfMemory(pid))?;
    set(&mut core, deadline, Action::Send { to: pid, node }).ok_or(SendError::OutOfMemory(pid))
}

/// Cancels a timer made by [`send_after`]: if it was still pending it never fires (its message
/// is dropped) and the time it had left is returned; if it had fired, its message is delivered
/// (or dropped, its receiver gone) and this says so. Exactly one of the two, however close the
/// call comes to the deadline. Callable from any process on any core.
pub fn cancel_timer(timer: TimerRef) -> Cancelled {
    let table = TABLES.get(usize::from(timer.table));
    match table.and_then(|table| table.cancel(timer.handle)) {
        Some((deadline, action)) => {
            drop(action);
            Cancelled::Pending { left_us: time::counts_to_us(deadline.saturating_sub(time::now_count())) }
        }
        None => Cancelled::NotPending,
    }
}

/// The microseconds a pending timer has left, `None` if it has fired or was cancelled
/// (Erlang's `erlang:read_timer/1`).
pub fn read_timer(timer: TimerRef) -> Option<u64> {
    let table = TABLES.get(usize::from(timer.table))?;
    let deadline = table.heap.lock().deadline(timer.handle)?;
    Some(time::counts_to_us(deadline.saturating_sub(time::now_count())))
}

/// Pending timers in the table of `core` (for reports and tests).
pub fn pending_on(core: usize) -> usize {
    TABLES.get(core).map_or(0, |table| table.heap.lock().len())
}

/// The earliest deadline among the tables this core serves (`u64::MAX`: none): what its
/// generic timer is armed for, at the latest.
pub fn earliest_here() -> u64 {
    let id = beamcore_hal::arch::cpu::core_id();
    let table = &TABLES[id];
    // ORDERING: Relaxed: see `Table::pop_due`.
    let mut earliest = table.earliest.load(Ordering::Relaxed);
    if !table.adopted.is_empty() {
        for other in table.adopted.load().iter() {
            earliest = earliest.min(TABLES[other].earliest.load(Ordering::Relaxed));
        }
    }
    earliest
}

/// Whether any timer is pending in the tables this core serves.
#[inline]
pub(crate) fn any_here(core: &OnCore) -> bool {
    let table = &TABLES[core.id().index()];
    // ORDERING: Relaxed: see `Table::pop_due`; a table adopted just now is seen at the latest
    // when the SGI that `offline::leave` sends after adopting brings this core round its loop.
    table.earliest.load(Ordering::Relaxed) != u64::MAX || !table.adopted.is_empty()
}

/// Fires every timer due in the tables this core serves: the scheduler loop's step, and the
/// timer interrupt's (the interrupted process ran with IRQs open, so it held no `OnCore`).
/// Each timer is taken under its table's lock and acted on after it.
pub(crate) fn expire_due(core: &mut OnCore) {
    let now = beamcore_hal::arch::cpu::counter();
    let id = core.id();
    expire_table(core, id, now);
    let adopted = TABLES[id.index()].adopted.load();
    if !adopted.is_empty() {
        for other in adopted.iter() {
            expire_table(core, CoreId::new(other), now);
        }
    }
    // ORDERING: Relaxed: only this core inserts into its table (`set`, which sets the bit).
    let earliest = TABLES[id.index()].earliest.load(Ordering::Relaxed);
    core.local().timers_due = if adopted.is_empty() { earliest } else { 0 };
    let any_left = earliest != u64::MAX || !adopted.is_empty();
    attention::set_own(core, attention::TIMEOUTS, any_left);
}

fn expire_table(core: &mut OnCore, owner: CoreId, now: u64) {
    while let Some(action) = TABLES[owner.index()].pop_due(now) {
        fire(core, action);
    }
}

fn fire(core: &mut OnCore, action: Action) {
    match action {
        Action::Wake { slot, wait_sequence } => {
            let process = process::slot(slot);
            // ORDERING: Relaxed: a hint that the wait is still the one the deadline was set for
            // (the process bumps it before each wait, and removes the deadline after it).
            // Racing a new wait it may be stale, and the claim then wakes that wait early, which
            // `receive` takes as no message; the claim itself, one read-modify-write of the
            // queue's word, is what makes the wake-up happen once.
            if process.wait_sequence.load(Ordering::Relaxed) == wait_sequence && process.claim_wake() {
                trace::process_event(Event::Wake, core.id(), slot, core.id().index() as u32);
                // ORDERING: Relaxed: this core made it `Runnable` by its claim and owns it now.
                if process.core.load(Ordering::Relaxed) == core.id() {
                    core.enqueue(slot);
                } else {
                    // A table served for an offline core, or a process moved while it waited:
                    // it goes where it belongs (its core's inbox, or that core's substitute).
                    make_runnable(core, slot);
                }
            }
        }
        Action::Send { to, node } => {
            // An ended receiver: the node is freed, the message dropped (Erlang drops a timer
            // message for a process that is gone, too).
            let _ = mailbox::send(core, to, node);
        }
    }
}

/// A leaving core's table goes to `target`, which serves it (fires its timers, arms its own
/// generic timer for them) until this core comes back: returns how many timers were pending.
pub(crate) fn hand_over(me: CoreId, target: CoreId) -> usize {
    // ORDERING: SeqCst, as every change of a core set another core reads; the target's read
    // (`any_here`, Relaxed) comes after the wake-up SGI the caller sends (`send_sgi` makes a DSB
    // before it), and a target that still missed it sees it at its next loop round (every
    // tick): the table's deadlines may fire a tick late then, never be lost. The timers
    // themselves are read under the table's lock.
    TABLES[target.index()].adopted.insert(me.index(), Ordering::SeqCst);
    pending_on(me.index())
}

/// A core back online serves its own table again; whoever served it stops.
pub(crate) fn take_back(me: CoreId) {
    for table in TABLES.iter() {
        // ORDERING: SeqCst, as in `hand_over`. A server that still sees the table for a while
        // serves it along with its owner, which is harmless: every pop is under its lock.
        table.adopted.remove(me.index(), Ordering::SeqCst);
    }
}
