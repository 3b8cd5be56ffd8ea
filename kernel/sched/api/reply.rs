//! Calls and replies: a reference made together with a mark of the caller's queue, so that the
//! receive for the reply starts after every message that was queued before the request and a
//! deep queue does not slow a call (the optimisation ERTS makes when a `make_ref` or `monitor`
//! is followed by a receive that matches on it; docs/scheduler.md, "Selective receive").

use core::fmt;

use beamcore_signal_queue::Mark;

use super::calls::{self_pid, send};
use super::monitors::{demonitor_flushing_from, make_ref, monitor};
use super::receive::receive_matching_from;
use crate::proc::process::{self, ExitReason, Message, Pid, Ref, SendError};
use beamcore_hal::time;
use beamcore_mm::heap::OutOfMemory;

/// A reference for one request's reply and where the caller's queue ended when it was made.
/// Only the process that made it may wait on it (another's would name a node of the wrong
/// queue, so it scans from the start instead).
pub struct ReplyRef {
    reference: Ref,
    mark: Mark,
    owner: Pid,
    /// Made by [`monitor_for_reply`]: a `Down` with this reference ends the wait.
    monitored: bool,
}

impl ReplyRef {
    /// The reference to send with the request; the replier passes it to [`reply`].
    pub fn reference(&self) -> Ref {
        self.reference
    }
}

impl fmt::Debug for ReplyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReplyRef({:?}, owner {})", self.reference, self.owner)
    }
}

/// What a replier sends: the caller's reference and the value.
#[derive(Clone, Copy, Debug)]
pub struct Reply<T> {
    pub reference: Ref,
    pub value: T,
}

/// Why a call's reply did not come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No reply within the timeout. A reply that comes later stays in the queue (as in OTP
    /// before process aliases); a plain `receive` will see it.
    Timeout,
    /// The process called ended first (or had ended: `NoProc`), with this reason.
    Down(ExitReason),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout => write!(f, "no reply within the timeout"),
            CallError::Down(reason) => write!(f, "the process called ended: {reason}"),
        }
    }
}

/// The caller's mark: after every signal queued now.
fn mark_now() -> (Pid, Mark) {
    let me = self_pid().expect("a reply reference is made by a process");
    // SAFETY: the running process marks its own queue (the consumer contract).
    let mark = unsafe { process::slot(me.index).signals.mark() };
    (me, mark)
}

/// A fresh reference to tag a request with; the reply's receive skips every message queued
/// before this call.
pub fn reply_ref() -> ReplyRef {
    let (owner, mark) = mark_now();
    ReplyRef { reference: make_ref(), mark, owner, monitored: false }
}

/// Monitors `server` and tags the request with the monitor's reference, as OTP's
/// `gen_server:call` does: the wait then ends with the reply or with the server's end, and
/// [`receive_reply`] removes the monitor (and its `Down`, if one came).
pub fn monitor_for_reply(server: Pid) -> Result<ReplyRef, OutOfMemory> {
    // The mark first: a `Down` the monitor queues at once (`NoProc`) lands after it.
    let (owner, mark) = mark_now();
    let reference = monitor(server)?;
    Ok(ReplyRef { reference, mark, owner, monitored: true })
}

/// Replies to a request tagged with `reference` (see [`reply_ref`]).
pub fn reply<T: Send + 'static>(to: Pid, reference: Ref, value: T) -> Result<(), SendError> {
    send(to, Message::new(Reply { reference, value }))
}

/// Waits for the [`Reply`] of type `T` tagged with `reply`'s reference, looking only at
/// messages queued after the reference was made; other messages stay queued in their order.
/// `timeout_us`: `None` waits as long as it takes.
pub fn receive_reply<T: 'static>(reply: ReplyRef, timeout_us: Option<u64>) -> Result<T, CallError> {
    let deadline = timeout_us.map(time::count_after_us);
    let reference = reply.reference;
    let mut is_answer = |message: &Message| match message {
        Message::Down { reference: r, .. } => reply.monitored && *r == reference,
        other => other.get::<Reply<T>>().is_some_and(|r| r.reference == reference),
    };
    let mut from = if self_pid() == Some(reply.owner) { reply.mark } else { Mark::START };
    let answer = receive_matching_from(&mut from, &mut is_answer, deadline);
    if reply.monitored {
        // `from` is still exact (it names the answer's predecessor): a `Down` that raced the
        // reply can only lie after it.
        demonitor_flushing_from(reference, Some(from));
    }
    match answer {
        None => Err(CallError::Timeout),
        Some(Message::Down { reason, .. }) => Err(CallError::Down(reason)),
        Some(message) => match message.take::<Reply<T>>() {
            Ok(reply) => Ok(reply.value),
            Err(_) => unreachable!("the match said it is the reply"),
        },
    }
}
