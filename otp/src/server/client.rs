//! The client side of a server: calls, casts and the orderly stop, run in the calling process.
//!
//! A call is OTP's: monitor the server with a reply reference (`sched::monitor_for_reply`), send
//! the request, wait for the reply or the server's end (`sched::receive_reply`). The reference
//! marks the end of the caller's queue when it is made, so the wait looks only at what arrives
//! after it: a caller with thousands of unrelated messages queued pays nothing for them.

use core::fmt;
use core::marker::PhantomData;

use beamcore::sched::{self, ExitReason, Message, Pid, Ref, SendError};

use super::{Caller, Request, Server, StopRequest};

/// Why a call (or a stop) did not get its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// No answer within the timeout. The server may still answer later; that reply then
    /// stays in the caller's queue (a plain `receive` sees it as a `sched::Reply`).
    Timeout,
    /// The server ended first, with this reason (`NoProc`: it had ended before the call, or no
    /// process is registered under the name called).
    Down(ExitReason),
    /// A process called itself: it would wait for a reply only it could make.
    CallingSelf,
    /// No memory was left to monitor the server or to send the request.
    OutOfMemory,
}

impl From<sched::CallError> for CallError {
    fn from(error: sched::CallError) -> Self {
        match error {
            sched::CallError::Timeout => CallError::Timeout,
            sched::CallError::Down(reason) => CallError::Down(reason),
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout => write!(f, "call: no reply within the timeout"),
            CallError::Down(reason) => write!(f, "call: the server ended: {reason}"),
            CallError::CallingSelf => write!(f, "call: a process called itself"),
            CallError::OutOfMemory => write!(f, "call: no memory to monitor the server or send the request"),
        }
    }
}

/// Sends the request `make` builds (from the caller's pid and the call's reference) to `server`
/// and waits for the reply of type `T` (`None`: as long as it takes), or for the server's end.
fn request<T: 'static>(
    server: Pid,
    timeout_us: Option<u64>,
    make: impl FnOnce(Pid, Ref) -> Message,
) -> Result<T, CallError> {
    let me = sched::self_pid().expect("a call is made by a process");
    if me == server {
        return Err(CallError::CallingSelf);
    }
    let reply = sched::monitor_for_reply(server).map_err(|_| CallError::OutOfMemory)?;
    match sched::send(server, make(me, reply.reference())) {
        // `NoProc`: the server ended after the monitor was set, whose `Down` ends the wait
        // with the reason.
        Ok(()) | Err(SendError::NoProc(_)) => {}
        Err(_) => {
            sched::demonitor(reply.reference(), true);
            return Err(CallError::OutOfMemory);
        }
    }
    sched::receive_reply::<T>(reply, timeout_us).map_err(CallError::from)
}

/// Calls `server`, a `S`, with `request` and waits for its reply (Erlang's
/// `gen_server:call`): `timeout_us` bounds the wait (`None`: no bound, OTP's `infinity`).
pub fn call<S: Server>(server: Pid, request: S::Call, timeout_us: Option<u64>) -> Result<S::Reply, CallError> {
    self::request(server, timeout_us, |pid, reference| {
        Message::new(Request::<S>::Call { caller: Caller { pid, reference, reply: PhantomData }, request })
    })
}

/// Calls the server registered under `name` (`Down(NoProc)` if there is none, as OTP's
/// `gen_server:call` exits with `noproc`).
pub fn call_named<S: Server>(name: &str, request: S::Call, timeout_us: Option<u64>) -> Result<S::Reply, CallError> {
    let server = sched::whereis(name).ok_or(CallError::Down(ExitReason::NoProc))?;
    call::<S>(server, request, timeout_us)
}

/// Sends `request` to `server`, a `S`, without waiting (Erlang's `gen_server:cast`). Unlike
/// OTP's cast, an ended server is reported (`NoProc`): the kernel's send knows it at no cost.
pub fn cast<S: Server>(server: Pid, request: S::Cast) -> Result<(), SendError> {
    sched::send_value(server, Request::<S>::Cast(request))
}

/// Casts to the server registered under `name` (`NotRegistered` if there is none).
pub fn cast_named<S: Server>(name: &str, request: S::Cast) -> Result<(), SendError> {
    sched::send_named(name, Message::new(Request::<S>::Cast(request)))
}

/// Stops `server` in order (Erlang's `gen_server:stop/3`): it runs `terminate(reason)` and ends
/// with `reason`; this returns once it has ended. `Err(Down(other))` if it ended with another
/// reason (it crashed, or had ended already: `NoProc`), `Err(Timeout)` if it had not ended
/// within `timeout_us` (it goes on then, and may still stop later).
pub fn stop(server: Pid, reason: ExitReason, timeout_us: Option<u64>) -> Result<(), CallError> {
    // The server never replies to a stop: its end is the answer, through the call's monitor.
    match request::<()>(server, timeout_us, |_, _| Message::new(StopRequest(reason))) {
        Err(CallError::Down(ended)) if ended == reason => Ok(()),
        Err(error) => Err(error),
        Ok(()) => unreachable!("a server does not reply to a stop"),
    }
}
