//! Delivering a signal to a process's signal queue (`Process::signals`), and waking the
//! receiver if it waits: what `send` does and what a process's end does for its monitors and
//! links. Taking a signal is `receive::wait_for_message`'s.
//!
//! A signal travels in a node the sender allocates ([`Signal`]): `api::send` boxes the message
//! in the caller (inlined, so the message is written once, into the node) and [`send`] pushes
//! the box. Every push is made under the receiver's slot lock, after the generation check:
//! `finish` closes the queue under the same lock, in the step that ends the generation, and a
//! spawn reopens it before the new pid exists, so a push under the lock with the generation
//! matching lands in that generation's queue and no other (a stale pid never reaches a newer
//! process). The receiver takes signals without the lock.

use alloc::boxed::Box;
use core::sync::atomic::{Ordering, fence};

use beamcore_signal_queue::Pushed;

use crate::proc::node_cache::uncount_allocated;
use crate::proc::process::{self, Message, Pid, Process, SendError, Shared, Signal, State};
use crate::record::trace::{self, Event};
use crate::run::percore::OnCore;
use crate::run::wake::wake_by_message;
use beamcore_mm::heap;

/// A node holding `message` for a program's send: from this core's cache of free nodes
/// (`node_cache`), else from the heap, refused (`None`) if that would cut into the kernel's
/// reserve (see `mm::heap`) or the heap is out of memory.
#[inline(always)]
pub(crate) fn new_node(core: &mut OnCore, message: Message) -> Option<Box<Signal>> {
    match core.local().node_cache.take(message) {
        Ok(node) => Some(node),
        Err(message) => new_node_from_heap(core, message),
    }
}

/// `new_node` when the core's cache is empty.
#[inline(never)]
fn new_node_from_heap(core: &mut OnCore, message: Message) -> Option<Box<Signal>> {
    let node = heap::try_box(Signal::new(message)).ok()?;
    uncount_allocated(core.scheduler().heap_turn);
    Some(node)
}

/// Delivers the signal in `node` to `pid` and queues `pid` if it was waiting.
///
/// The wake is one step from the waiter's point of view: the caller's `OnCore` keeps IRQs
/// masked from the moment the push claims the wake-up until the process is in a run queue or
/// inbox. Were the sender preempted in between, the woken process would be runnable yet in no
/// queue until the sender ran again, which a busy core may put off indefinitely (a max-priority
/// process woken by a normal one on a core kept busy by another max-priority process never ran
/// again).
#[inline(never)]
pub(crate) fn send(core: &mut OnCore, pid: Pid, node: Box<Signal>) -> Result<(), SendError> {
    let process = process::slot_checked(pid.index).ok_or(SendError::NoProc(pid))?;
    let wake = {
        // IRQs are masked already (the caller's `OnCore`).
        let mut shared = process.shared.lock_irqs_masked();
        if shared.generation != pid.generation || shared.state == State::Free {
            // The node is freed after the lock (locals drop in reverse order).
            return Err(SendError::NoProc(pid));
        }
        push_locked(process, &mut shared, node)
    };
    if wake {
        if trace::enabled() {
            // ORDERING: Relaxed: for the trace only (`make_runnable` reads it again).
            let target = process.core.load(Ordering::Relaxed);
            trace::process_event(Event::Wake, target, pid.index, core.id().index() as u32);
        }
        wake_by_message(core, pid.index);
    }
    Ok(())
}

/// Pushes `node` into a locked, live process's queue: true if the push claimed the wake-up,
/// and the caller must queue the process (`wake_by_message`), IRQs masked until it has.
#[inline(always)]
pub(crate) fn push_locked(process: &Process, shared: &mut Shared, node: Box<Signal>) -> bool {
    // Counted before the push: a reader of the length (under this lock) never sees a signal
    // taken that was not counted pushed.
    shared.pushed = shared.pushed.wrapping_add(1);
    match process.signals.push(node) {
        Ok(Pushed::Queued) => false,
        Ok(Pushed::Wake) => {
            // ORDERING: Acquire fence, paired with the release fence the receiver made before
            // its `prepare_wait` wrote the WAITING this push read: its `registers_live` (and
            // all it wrote before blocking) happens before we queue it where another core may
            // take it (`Process::registers_live`).
            fence(Ordering::Acquire);
            true
        }
        Err(refused) => {
            // Unreachable: the queue is closed only by `finish`, under this lock, in the step
            // that frees the slot, and the caller found the process live under it.
            debug_assert!(false, "a push into a live process's closed queue");
            shared.pushed = shared.pushed.wrapping_sub(1);
            drop(refused);
            false
        }
    }
}

/// Queues a signal the kernel sends (a `Down`, a trapped `Exit`) in a locked, live process's
/// queue: its node comes from the core's cache, else from the heap, and may come from the
/// kernel's reserve (a signal is the kernel's, and must not
/// be lost because a program filled the heap). False only when even that is exhausted; the
/// caller then ends the process instead (see `signals`). True in `wake` as `push_locked`.
pub(crate) fn push_signal(
    core: &mut OnCore,
    process: &Process,
    shared: &mut Shared,
    message: Message,
    wake: &mut bool,
) -> bool {
    let node = match core.local().node_cache.take(message) {
        Ok(node) => node,
        Err(message) => match heap::try_box_from_reserve(Signal::new(message)) {
            Ok(node) => {
                uncount_allocated(core.scheduler().heap_turn);
                node
            }
            Err(_) => return false,
        },
    };
    *wake = push_locked(process, shared, node);
    true
}
