//! Synchronous start (Erlang's `proc_lib:start_link`): the starter waits until the new process
//! says it has initialised, or has failed to.
//!
//! Why synchronous: a supervisor starts its children in order so that a later child may rely on
//! an earlier one (its registered name, its state); that only holds if "started" means
//! "initialised", not "spawned". And a failed `init` is reported to the starter as an error
//! instead of as a crash it would have to tell apart from later ones.
//!
//! The protocol: the new process first waits for a `Go` carrying a reply reference, made by the
//! starter's `monitor_for_reply` on it. The monitor is set before the process can do anything,
//! so its end during `init` (a panic, a fault, a kill) ends the starter's wait with its reason,
//! and the reference's queue mark lets the wait skip whatever the starter had queued before.

use core::fmt;

use beamcore::sched::{self, CallError, ExitReason, Message, Pid, Ref, SpawnError, SpawnOptions};

/// Why a process could not be started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// The spawn itself failed (no memory, no core, the process table is full).
    Spawn(SpawnError),
    /// The process refused to start (its `init` returned this reason) or ended before it had
    /// initialised (with this reason: `Panic`, `Fault { .. }`, `Killed`, ...).
    Init(ExitReason),
    /// No memory was left to monitor the new process; it was killed, as it could not be
    /// watched through its `init`.
    OutOfMemory,
    /// A supervisor's child specifications name one id twice: children are addressed by id,
    /// so the ids must be unique.
    DuplicateChildId,
}

impl From<SpawnError> for StartError {
    fn from(error: SpawnError) -> Self {
        StartError::Spawn(error)
    }
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Spawn(error) => write!(f, "start: {error}"),
            StartError::Init(reason) => write!(f, "start: the process did not initialise: {reason}"),
            StartError::OutOfMemory => write!(f, "start: no memory to monitor the new process"),
            StartError::DuplicateChildId => write!(f, "start: two child specifications share an id"),
        }
    }
}

/// The starter's go-ahead: the reference to answer with.
struct Go(Ref);

/// What the new process answers: initialised, or the reason it will end with.
type Ack = Result<(), ExitReason>;

/// Given to the new process's body, which must answer through it exactly once: by value, so it
/// cannot answer twice.
pub(crate) struct Starter {
    parent: Pid,
    reference: Ref,
    linked: bool,
}

impl Starter {
    /// Tells the starter the process is ready; returns the starter if they are linked, whose
    /// exit signal a process that traps exits treats as the order to stop.
    pub(crate) fn started(self) -> Option<Pid> {
        // The starter may have been killed meanwhile; then nobody waits for the answer.
        let _ = sched::reply::<Ack>(self.parent, self.reference, Ok(()));
        self.linked.then_some(self.parent)
    }

    /// Tells the starter the process will not start, and ends it with `reason`. Unlinked first
    /// (as OTP 26's `proc_lib:init_fail`), so a refusal is an error the starter returns, not an
    /// exit signal that would end a starter that does not trap exits.
    pub(crate) fn failed(self, reason: ExitReason) -> ! {
        if self.linked {
            sched::unlink(self.parent);
        }
        let _ = sched::reply::<Ack>(self.parent, self.reference, Err(reason));
        sched::exit(reason)
    }
}

/// Spawns a process running `body` (linked to the caller if `link`) and waits until `body` has
/// answered through its [`Starter`] or the process has ended.
pub(crate) fn start<F>(options: SpawnOptions, link: bool, body: F) -> Result<Pid, StartError>
where
    F: FnOnce(Starter) + Send + 'static,
{
    let parent = sched::self_pid().expect("a process is started by a process");
    let run = move || {
        let Go(reference) = sched::receive_value::<Go>();
        body(Starter { parent, reference, linked: link })
    };
    let child = if link { sched::spawn_link(options, run)? } else { sched::spawn_with(options, run)? };
    let Ok(reply) = sched::monitor_for_reply(child) else {
        forget(child, link);
        let _ = sched::kill(child);
        return Err(StartError::OutOfMemory);
    };
    if sched::send_value(child, Go(reply.reference())).is_err() {
        // No memory for the message (the child cannot have ended: it waits for it).
        sched::demonitor(reply.reference(), true);
        forget(child, link);
        let _ = sched::kill(child);
        return Err(StartError::OutOfMemory);
    }
    match sched::receive_reply::<Ack>(reply, None) {
        Ok(Ok(())) => Ok(child),
        // The child unlinked itself before answering (`Starter::failed`): no exit signal.
        Ok(Err(reason)) => Err(StartError::Init(reason)),
        Err(CallError::Down(reason)) => {
            forget(child, link);
            Err(StartError::Init(reason))
        }
        Err(CallError::Timeout) => unreachable!("a wait without a deadline"),
    }
}

/// Drops the link to a child that did not start, and its exit signal if one is queued already
/// (the caller traps exits), so that a process that failed to start is reported once, as the
/// error, and not again as an `Exit` from a pid nobody knows.
fn forget(child: Pid, linked: bool) {
    if !linked {
        return;
    }
    sched::unlink(child);
    // After the unlink no exit signal from it can come; one queued before is taken out here.
    let _ =
        sched::receive_matching_timeout(0, |message| matches!(message, Message::Exit { from, .. } if *from == child));
}
