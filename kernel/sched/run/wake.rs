//! Making a process that was just marked `Runnable` reachable by its core's scheduler: straight
//! into the run queue on its own core, else through that core's inbox (a locked queue the owner
//! drains into its run queues) and a wake-up SGI when that core sleeps. With `queues=shared` a
//! process that may wait in the shared queue goes there from whichever core wakes it.
//!
//! Callers hold an [`OnCore`] from the moment the process's state says `Runnable` until it is
//! queued: IRQs stay masked, so the wake is one step (see `mailbox::send`).

use core::sync::atomic::Ordering;

use super::active;
use super::attention;
use super::idle;
use super::percore::{OnCore, scheduler};
use crate::proc::process;
use crate::record::stats;
use crate::record::trace::{self, Event};
use crate::settings::shared_queues;
use beamcore_hal::ids::{CoreId, Slot};

/// Queues the process in `slot` (already `Runnable`) on its core.
pub(crate) fn make_runnable(core: &mut OnCore, slot: Slot) {
    wake(core, slot, false);
}

/// Queues the process in `slot`, just made `Runnable` by a message, on its core: into the "run
/// next" slot when that is this core (it runs once the sender gives the core up), as any
/// wake otherwise.
pub(crate) fn wake_by_message(core: &mut OnCore, slot: Slot) {
    wake(core, slot, true);
}

#[inline(always)]
fn wake(core: &mut OnCore, slot: Slot, by_message: bool) {
    // ORDERING: Relaxed: the process is ours to queue (we made it `Runnable` under its lock, or
    // it is new); its core was last written by whoever owned it, before that lock or queue
    // handed it on.
    let target = process::slot(slot).core.load(Ordering::Relaxed);
    if target == core.id() {
        if by_message {
            core.enqueue_woken(slot);
        } else {
            core.enqueue(slot);
        }
        return;
    }
    // ORDERING: Relaxed: the flag is the process's own, written by its owner (as for `core`).
    if shared_queues() && process::slot(slot).movable.load(Ordering::Relaxed) {
        // One queue for the machine: no inbox, the waker queues it (and wakes a sleeper).
        core.enqueue(slot);
        return;
    }
    deliver(core, slot, target);
}

/// Puts the process in `slot` (runnable, owned by the caller) into core `target`'s inbox and
/// wakes that core if it sleeps. If `target` has closed its inbox (it has left, or is leaving:
/// `offline::leave`), the process is retargeted to the next active core and tried there
/// (queued here if that is this core). The closed flag is read under the inbox's lock, which the
/// leaving core holds to set it and drain: a push lands before the drain, or sees it closed.
#[inline(never)]
pub(crate) fn deliver(core: &mut OnCore, slot: Slot, mut target: CoreId) {
    loop {
        let scheduler = scheduler(target);
        {
            let mut inbox = scheduler.inbox.lock();
            // ORDERING: Relaxed: written under this lock (`close_and_drain_inbox`).
            if !scheduler.inbox_closed.load(Ordering::Relaxed) {
                // The inbox's reserve covers the common case; growing it may allocate, and a
                // failure here would lose a process, so it is a kernel panic, not an error.
                inbox.push_back(slot);
                // ORDERING: SeqCst pairs with the sleeper's SeqCst store of `sleeping` and load
                // of `inbox_len` (a Dekker pair): either it sees this item or we see it asleep.
                scheduler.inbox_len.fetch_add(1, Ordering::SeqCst);
                break;
            }
        }
        let gone = target;
        target = active::retarget(slot, gone, active::substitute(gone));
        if target == core.id() {
            core.enqueue(slot);
            return;
        }
    }
    attention::inbox_filled(target);
    let scheduler = scheduler(target);
    // ORDERING: SeqCst: the other half of the Dekker pair above.
    if scheduler.sleeping.load(Ordering::SeqCst) {
        idle::send_wake(target.index());
    }
}

/// The leaving core closes its inbox (wakers go elsewhere from now on, see `deliver`) and
/// queues what was in it, to be handed over with the rest of its queues.
pub(crate) fn close_and_drain_inbox(core: &mut OnCore) {
    let me = core.scheduler();
    let mut inbox = me.inbox.lock();
    // ORDERING: Relaxed: read by wakers under this lock.
    me.inbox_closed.store(true, Ordering::Relaxed);
    while let Some(slot) = inbox.pop_front() {
        // ORDERING: Relaxed: the lock orders the queue (see `drain_inbox`).
        me.inbox_len.fetch_sub(1, Ordering::Relaxed);
        core.enqueue(slot);
    }
}

/// A core rejoining opens its inbox again.
pub(crate) fn open_inbox(core: &mut OnCore) {
    let me = core.scheduler();
    let _inbox = me.inbox.lock();
    // ORDERING: Relaxed: read by wakers under this lock.
    me.inbox_closed.store(false, Ordering::Relaxed);
}

/// Queues what other cores left in this core's inbox.
pub(crate) fn drain_inbox(core: &mut OnCore) {
    let me = core.scheduler();
    attention::take(core, attention::INBOX);
    // ORDERING: a hint only: the inbox itself is published by its lock (acquired below). A
    // stale zero delays an item to the next pass, never loses it: the pusher's SeqCst
    // `fetch_add` and our SeqCst check in `sleep` (a Dekker pair) keep us from sleeping on it.
    if me.inbox_len.load(Ordering::Relaxed) == 0 {
        return;
    }
    {
        let mut inbox = me.inbox.lock();
        while let Some(slot) = inbox.pop_front() {
            // ORDERING: Relaxed: the count is a hint (see above); the lock orders the queue.
            me.inbox_len.fetch_sub(1, Ordering::Relaxed);
            core.enqueue(slot);
        }
    }
}

/// Queues a newly spawned process (already `Runnable`) on `target`.
pub(crate) fn admit(core: &mut OnCore, target: CoreId, slot: Slot) {
    // ORDERING: Relaxed: a statistic other cores write too (a spawn on another core).
    stats::of(target).spawned.fetch_add(1, Ordering::Relaxed);
    trace::process_event(Event::Spawn, target, slot, core.id().index() as u32);
    make_runnable(core, slot);
}
