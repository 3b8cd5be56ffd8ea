//! Delivering a message to a process's mailbox, and waking the receiver if it waits: what `send`
//! does and what a process's end does for its monitors. The mailbox and the process's state
//! are under the slot's lock; taking a message is `api::receive`'s.

use alloc::collections::VecDeque;
use core::sync::atomic::Ordering;

use super::percore::OnCore;
use super::process::{self, Message, Pid, SendError, Shared, State};
use super::table;
use super::trace::{self, Event};
use super::wake::wake_by_message;
use crate::mm::heap;

/// Delivers `message` to `pid`'s mailbox and queues `pid` if it was waiting.
///
/// The wake is one step from the waiter's point of view: the caller's `OnCore` keeps IRQs
/// masked from the moment the state says `Runnable` until the process is in a run queue or
/// inbox. Were the sender preempted in between, the woken process would be `Runnable` yet in no
/// queue until the sender ran again, which a busy core may put off indefinitely (a max-priority
/// process woken by a normal one on a core kept busy by another max-priority process never ran
/// again).
pub(super) fn send(core: &mut OnCore, pid: Pid, message: Message) -> Result<(), SendError> {
    let process = process::slot_checked(pid.index).ok_or(SendError::NoProc(pid))?;
    let wake = {
        // IRQs are masked already (the caller's `OnCore`).
        let mut shared = process.shared.lock_irqs_masked();
        if shared.generation != pid.generation || shared.state == State::Free {
            return Err(SendError::NoProc(pid));
        }
        if shared.mailbox.len() == shared.mailbox.capacity() && !grow(&mut shared.mailbox) {
            return Err(SendError::OutOfMemory(pid));
        }
        push_and_mark(&mut shared, message)
    };
    if wake {
        if trace::enabled() {
            // ORDERING: Relaxed: for the trace only (`make_runnable` reads it again).
            let target = process.core.load(Ordering::Relaxed);
            trace::process_event(Event::Wake, target, pid.index, core.id() as u32);
        }
        wake_by_message(core, pid.index);
    }
    Ok(())
}

/// Queues `message` in a locked, live process's mailbox (room made already) and marks it
/// `Runnable` if it waited: true then, and the caller must queue it (`wake_by_message`).
#[inline(always)]
pub(super) fn push_and_mark(shared: &mut Shared, message: Message) -> bool {
    shared.mailbox.push_back(message);
    let wake = shared.state == State::Waiting;
    if wake {
        shared.state = State::Runnable;
    }
    wake
}

/// Queues a signal the kernel sends (a `Down`, a trapped `Exit`) in a locked, live process's
/// mailbox: it may use the kernel's reserve (a signal is the kernel's, and must not be lost
/// because a program filled the heap). False only when even that is exhausted; the caller then
/// ends the process instead (see `signals`). True in `wake` as `push_and_mark`.
pub(super) fn push_signal(shared: &mut Shared, message: Message, wake: &mut bool) -> bool {
    if shared.mailbox.try_reserve(1).is_err() {
        return false;
    }
    *wake = push_and_mark(shared, message);
    true
}

/// Makes room for one more message in a full mailbox (it doubles), unless that would dip into
/// the kernel's reserve (see `mm::heap`) or the heap is out of memory: false then. Out of line,
/// so that the usual send (room left) carries none of it.
#[cold]
#[inline(never)]
fn grow(mailbox: &mut VecDeque<Message>) -> bool {
    let growth = mailbox.capacity().max(4) * core::mem::size_of::<Message>();
    heap::within_reserve(growth, table::live_count()) && mailbox.try_reserve(1).is_ok()
}
