//! Exit signals and monitor `Down`s: how they reach a process, and how both ends of every link
//! and monitor are kept consistent, so that every live link carries exactly one exit signal and
//! every monitor exactly one `Down`.
//!
//! **One rule makes it exact.** Everything a signal depends on is in the receiver's
//! `Relations`, under its slot lock, and the signal consumes its entry there: an exit signal
//! through a link is delivered only if the receiver still lists the sender among its links
//! (and removes it), a `Down` only if the watcher still holds the monitor's reference (and
//! removes it). A link or monitor is set under both processes' locks, after checking both are
//! alive; `finish` takes a process's relations out under its lock, in the same step as it ends
//! the generation. So whichever of "set" and "end" comes first under the target's lock decides:
//! set first, and the end finds the entry and signals once; end first, and the setter finds it
//! dead and signals `NoProc` itself. An unlink or a demonitor removes the entry first, and no
//! signal follows. A signal to a reused slot is refused by the generation check, as a message
//! is. `crates/repo-checks/tests/link_exit_model.rs` checks the protocol with loom.
//!
//! Signals go into the one signal queue, behind the messages the same sender queued before
//! them: a process's `Down` or `Exit` never overtakes a message it sent (Erlang's ordering
//! guarantee between a pair of processes). Its messages were pushed before it ended, and its
//! `Down`s and `Exit`s are pushed by `finish` after, and the queue keeps each pusher's order.
//!
//! **Lock order.** The registry's lock (`registry.rs`) before any slot lock; two slot locks in slot index order
//! (`lock_pair`); the heap's lock innermost. `finish` holds one slot lock at a time.

use core::sync::atomic::{Ordering, fence};

use super::mailbox::push_signal;
use crate::proc::process::{self, ExitReason, Message, Pid, Process, Ref, Relations, Shared, State};
use crate::run::percore::OnCore;
use crate::run::wake::{make_runnable, wake_by_message};
use beamcore_hal::ids::Slot;
use beamcore_hal::sync::IrqSpinLockGuard;
use beamcore_mm::heap::{self, OutOfMemory};

/// A locked control block.
pub(crate) type Locked = IrqSpinLockGuard<'static, Shared>;

/// Whether the locked slot holds the process `pid` names.
#[inline]
pub(crate) fn is_live(shared: &Shared, pid: Pid) -> bool {
    shared.generation == pid.generation && shared.state != State::Free
}

/// The live process `pid` names, locked. IRQs masked (the caller's `OnCore`).
pub(crate) fn lock_live(pid: Pid) -> Option<(&'static Process, Locked)> {
    let process = process::slot_checked(pid.index)?;
    let shared = process.shared.lock_irqs_masked();
    is_live(&shared, pid).then_some((process, shared))
}

/// Locks the slots of `mine` and `theirs` (different slots) in index order, the one order every
/// caller keeps, so two processes linking each other at once cannot deadlock. IRQs masked.
/// `None` if `theirs` names a slot never made.
pub(crate) fn lock_pair(mine: Slot, theirs: Slot) -> Option<(Locked, Locked)> {
    debug_assert_ne!(mine, theirs, "lock_pair takes two different slots");
    let other = process::slot_checked(theirs)?;
    let own = process::slot(mine);
    Some(if mine < theirs {
        let first = own.shared.lock_irqs_masked();
        (first, other.shared.lock_irqs_masked())
    } else {
        let first = other.shared.lock_irqs_masked();
        (own.shared.lock_irqs_masked(), first)
    })
}

/// The locked process's relations, made if it has none yet (fallible: a program's request).
pub(crate) fn relations(shared: &mut Shared) -> Result<&mut Relations, OutOfMemory> {
    if shared.relations.is_none() {
        shared.relations = Some(heap::try_box_with(Relations::default)?);
    }
    Ok(shared.relations.as_mut().expect("made above"))
}

/// Room for one more link (fallible: a program's request); none is needed while the links
/// fit in place.
pub(crate) fn reserve_link(links: &mut process::Links) -> Result<(), OutOfMemory> {
    links.try_reserve(1).map_err(|_| OutOfMemory { requested_bytes: core::mem::size_of::<Pid>() * links.len().max(4) })
}

/// Entries a relation list gets room for when it first needs any (as `Vec`'s own growth
/// would give it).
const FIRST_ROOM: usize = 4;

/// Room for one more entry in a relation list (fallible: a program's request). An empty list
/// gets room for [`FIRST_ROOM`] at once.
pub(crate) fn reserve<T>(list: &mut alloc::vec::Vec<T>) -> Result<(), OutOfMemory> {
    if list.capacity() == 0 {
        *list = heap::try_vec_with_capacity(FIRST_ROOM)?;
        return Ok(());
    }
    list.try_reserve(1).map_err(|_| OutOfMemory { requested_bytes: core::mem::size_of::<T>() * list.len().max(4) })
}

/// Ends the locked process at its next safe point with `reason` (the first reason asked
/// wins): the start of its next turn, or `receive`. True if it waited, is now `Runnable`, and
/// the caller must queue it. A reason other than `Killed` is kept in its `Relations`: made here
/// if it has none, and if that fails the reason is lost and it ends `Killed` (the heap's reserve
/// too is gone; `send_exit` reports `OutOfMemory` before it comes to that).
pub(crate) fn request_exit(process: &Process, shared: &mut Shared, reason: ExitReason) -> bool {
    if reason != ExitReason::Killed
        && let Ok(relations) = relations(shared)
        && relations.pending_exit.is_none()
        && !process.exit_requested.load(Ordering::Relaxed)
    {
        relations.pending_exit = Some(reason);
    }
    request_kill(process, shared)
}

/// Ends the locked process at its next safe point (with the reason asked first, `Killed` if
/// none): `kill`, which needs no memory. True as `request_exit`.
pub(crate) fn request_kill(process: &Process, _locked: &mut Shared) -> bool {
    // ORDERING: Relaxed is enough: the flag is written only under the slot lock, and the
    // scheduler that acts on it reads it after taking the process from a run queue or inbox,
    // whose release/acquire (or this lock, for a wake) orders it after us; it then reads the
    // reason under the lock.
    process.exit_requested.store(true, Ordering::Relaxed);
    // ORDERING: SeqCst fence, against the one `wait_for_message` makes between writing WAITING
    // and reading this flag (a store-buffering pair): either our claim below reads its WAITING,
    // or it reads our flag and does not sleep.
    fence(Ordering::SeqCst);
    process.claim_wake()
}

/// How an exit signal was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// A linked process ended: delivered only if the link still stands (it is consumed).
    Link,
    /// `send_exit`: no link needed.
    Call,
}

/// What became of an exit signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitOutcome {
    /// The target is not alive (or, through a link, no longer linked to the sender).
    NotDelivered,
    /// It traps exits: queued as `Message::Exit`.
    Queued,
    /// `Normal`, and it does not trap exits: nothing happens.
    Ignored,
    /// It will end with the reason at its next safe point.
    Ends,
    /// It does not trap exits, and there was no memory to keep the reason (`send_exit`).
    NoMemory,
}

/// Delivers an exit signal from `from` with `reason` to `target` (Erlang's rules): a process
/// that traps exits receives `Exit { from, reason }`; one that does not ignores `Normal` and
/// ends with any other reason, with that reason.
pub(crate) fn exit_signal(core: &mut OnCore, target: Pid, from: Pid, reason: ExitReason, via: Via) -> ExitOutcome {
    let Some((process, mut shared)) = lock_live(target) else { return ExitOutcome::NotDelivered };
    if via == Via::Link {
        let link = shared.relations.as_mut().and_then(|r| r.links.iter().position(|&p| p == from).map(|i| (r, i)));
        let Some((relations, index)) = link else { return ExitOutcome::NotDelivered };
        relations.links.swap_remove(index);
    }
    let mut wake = false;
    let outcome = if shared.trap_exits {
        if !push_signal(core, process, &mut shared, Message::Exit { from, reason }, &mut wake) {
            // Not even the kernel's reserve has room: it cannot be told, so it ends as if it
            // did not trap (a signal is never dropped).
            wake = request_exit(process, &mut shared, reason);
        }
        ExitOutcome::Queued
    } else if reason == ExitReason::Normal {
        ExitOutcome::Ignored
    } else if reason != ExitReason::Killed && relations(&mut shared).is_err() {
        // No room to keep the reason (only `send_exit` gets here: a link's target has its
        // relations already). Refused rather than turned into `Killed`.
        ExitOutcome::NoMemory
    } else {
        wake = request_exit(process, &mut shared, reason);
        ExitOutcome::Ends
    };
    drop(shared);
    if wake {
        if outcome == ExitOutcome::Queued {
            wake_by_message(core, target.index);
        } else {
            make_runnable(core, target.index);
        }
    }
    outcome
}

/// Queues `Down { pid, reason, reference }` for `watcher` if it still holds the monitor
/// (consuming it), so a `Down` after `demonitor` never arrives.
fn deliver_down(core: &mut OnCore, watcher: Pid, reference: Ref, pid: Pid, reason: ExitReason) {
    let Some((process, mut shared)) = lock_live(watcher) else { return };
    let held =
        shared.relations.as_mut().and_then(|r| r.watching.iter().position(|&(m, _)| m == reference).map(|i| (r, i)));
    let Some((relations, index)) = held else { return };
    relations.watching.swap_remove(index);
    let mut wake = false;
    if !push_signal(core, process, &mut shared, Message::Down { pid, reason, reference }, &mut wake) {
        // Not even the kernel's reserve has room: the watcher cannot be told, and ends.
        wake = request_exit(process, &mut shared, ExitReason::OutOfMemory);
        drop(shared);
        if wake {
            make_runnable(core, watcher.index);
        }
        return;
    }
    drop(shared);
    if wake {
        wake_by_message(core, watcher.index);
    }
}

/// Removes the monitor `reference` of `watcher` from `target`'s watchers (the watcher ended or
/// demonitored: the target must not keep a stale entry for ever).
pub(crate) fn forget_watcher(target: Pid, reference: Ref) {
    let Some((_, mut shared)) = lock_live(target) else { return };
    if let Some(relations) = shared.relations.as_mut()
        && let Some(index) = relations.watchers.iter().position(|&(m, _)| m == reference)
    {
        relations.watchers.swap_remove(index);
    }
}

/// What a process's end does for the processes related to it (`finish`, after its slot is
/// released and its name freed): the monitors it held are dropped at their targets, its links
/// get an exit signal each and then its watchers a `Down` each, with its reason.
pub(crate) fn on_end(core: &mut OnCore, pid: Pid, reason: ExitReason, relations: &Relations) {
    for &(reference, target) in &relations.watching {
        forget_watcher(target, reference);
    }
    // Links first: once a watcher has the `Down`, every link has had its exit signal (a
    // process that does not trap is marked to end, one that traps has its `Exit` queued).
    for &linked in &relations.links {
        exit_signal(core, linked, pid, reason, Via::Link);
    }
    for &(reference, watcher) in &relations.watchers {
        deliver_down(core, watcher, reference, pid, reason);
    }
}
