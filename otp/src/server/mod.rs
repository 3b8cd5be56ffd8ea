//! The generic server (Erlang's `gen_server`): a process that owns a state and changes it one
//! request at a time, so the state needs no lock and every request sees the one before it.
//!
//! The program writes the callbacks ([`Server`]); this module writes the process around them:
//! the synchronous start, the receive loop, replies, the orderly stop and the parent's exit
//! signal. Requests travel as typed messages (`sched::send_value`) in an envelope private to this
//! module and keyed by the server's type, so a server tells its own requests from any other
//! message without a tag protocol, and everything else goes to [`Server::handle_info`].
//!
//! A pid does not say which [`Server`] runs behind it: the client functions name it
//! (`server::call::<Counter>(pid, ..)`). A request of the wrong type is not a request to the
//! server (its type id differs): it reaches `handle_info`, and a call then waits until its
//! timeout.

mod client;

use core::fmt;
use core::marker::PhantomData;

use beamcore::sched::{self, ExitReason, Message, Pid, Ref, SendError, SpawnOptions};

use crate::start::{self, StartError};

pub use client::{CallError, call, call_named, cast, cast_named, stop};

/// A server's callbacks. Each runs in the server's process, one message at a time.
///
/// `Call` requests get a `Reply` (the caller waits for it); `Cast` requests get none (the sender
/// goes on at once). Both are plain Rust values: no encoding, and the compiler checks that a
/// client sends what the server expects.
pub trait Server: Send + 'static {
    /// Requests that expect a reply.
    type Call: Send + 'static;
    /// What a call is answered with.
    type Reply: Send + 'static;
    /// Requests that expect none.
    type Cast: Send + 'static;

    /// Runs in the new process before `start` returns, so what it sets up (a registered name,
    /// `trap_exits`, a timer) is in place by the time anyone has the pid. `Err(reason)` makes
    /// `start` fail with [`StartError::Init`]`(reason)` and ends the process with it.
    fn init(&mut self) -> Result<(), ExitReason> {
        Ok(())
    }

    /// Answers a call. The [`Caller`] may be kept to answer later ([`Answer::NoReply`]), which
    /// frees the server to serve others while the answer is not ready.
    fn handle_call(&mut self, request: Self::Call, caller: Caller<Self::Reply>) -> Answer<Self::Reply>;

    /// Handles a cast. The default ignores it.
    fn handle_cast(&mut self, request: Self::Cast) -> Control {
        let _ = request;
        Control::Continue
    }

    /// Handles any other message: a timer's, a monitor's `Down`, a trapped `Exit` (but the
    /// parent's, see [`start_link`]), a plain `send`. The default ignores it, so stray messages
    /// do not pile up in the queue.
    fn handle_info(&mut self, message: Message) -> Control {
        let _ = message;
        Control::Continue
    }

    /// Runs when the server stops in order: a handler asked to, [`stop`] was called, or its
    /// parent's exit signal came while it traps exits. Not after a crash or a `kill`: a process
    /// that panics or faults does not unwind, and a kill cannot be trapped, so resources that
    /// must be released whatever happens belong to a process that outlives this one.
    fn terminate(&mut self, reason: ExitReason) {
        let _ = reason;
    }
}

/// Whether the server goes on after a handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Wait for the next message.
    Continue,
    /// Run [`Server::terminate`] and end the process with this reason.
    Stop(ExitReason),
}

/// What [`Server::handle_call`] does with the call.
#[derive(Debug)]
pub enum Answer<R> {
    /// Reply now and go on.
    Reply(R),
    /// Reply, then stop with the reason (after [`Server::terminate`]).
    ReplyAndStop(R, ExitReason),
    /// No reply now: the handler kept the [`Caller`] and answers through it later (or never,
    /// and the caller's timeout or the server's end ends its wait).
    NoReply,
    /// Stop without replying: the caller's wait ends with the server's end, this reason.
    Stop(ExitReason),
}

/// Who made a call, and the reference its reply must carry. `R` is the reply's type, so that a
/// reply made later, away from `handle_call`, is still checked against what the caller waits
/// for (a reply of another type would never match its receive).
pub struct Caller<R> {
    pid: Pid,
    reference: Ref,
    reply: PhantomData<fn(R)>,
}

// By hand: derived, they would require `R: Clone` for a type that holds no `R`.
impl<R> Clone for Caller<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Caller<R> {}

impl<R> fmt::Debug for Caller<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Caller({}, {})", self.pid, self.reference)
    }
}

impl<R: Send + 'static> Caller<R> {
    /// The calling process: to tell callers apart, or to monitor one whose answer is deferred
    /// (its end makes the answer moot).
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Answers the call (Erlang's `gen_server:reply/2`). A reply to a caller that gave up
    /// stays in its queue (there is no alias to drop it by); `NoProc` if the caller has ended.
    pub fn reply(self, value: R) -> Result<(), SendError> {
        sched::reply(self.pid, self.reference, value)
    }
}

/// A request as it travels: its type names the server, so that `Message::take` finds it.
enum Request<S: Server> {
    Call { caller: Caller<S::Reply>, request: S::Call },
    Cast(S::Cast),
}

/// [`stop`]'s request: any server takes it, whatever its type, as OTP's `gen_server:stop`
/// needs no knowledge of the callbacks.
#[derive(Clone, Copy)]
struct StopRequest(ExitReason);

/// Starts a server running `state`'s callbacks, unlinked (Erlang's `gen_server:start`), and
/// returns once its `init` has succeeded. Called from a process, which waits meanwhile.
pub fn start<S: Server>(state: S, options: SpawnOptions) -> Result<Pid, StartError> {
    start::start(options, false, move |starter| run(state, starter))
}

/// Starts a server linked to the caller (Erlang's `gen_server:start_link`), as a supervisor's
/// child must be. If the server traps exits, an exit signal from the caller makes it stop in
/// order ([`Server::terminate`], then the same reason), as OTP's does with its parent's.
pub fn start_link<S: Server>(state: S, options: SpawnOptions) -> Result<Pid, StartError> {
    start::start(options, true, move |starter| run(state, starter))
}

/// The server's process: `init`, the answer to the starter, then the loop.
fn run<S: Server>(mut state: S, starter: start::Starter) {
    if let Err(reason) = state.init() {
        starter.failed(reason);
    }
    let parent = starter.started();
    loop {
        let control = match sched::receive().take::<Request<S>>() {
            Ok(Request::Call { caller, request }) => match state.handle_call(request, caller) {
                Answer::Reply(value) => {
                    // A caller that has ended has no use for the reply.
                    let _ = caller.reply(value);
                    Control::Continue
                }
                Answer::ReplyAndStop(value, reason) => {
                    // OTP's order: terminate first, so the caller sees a server that has
                    // finished its work when the reply comes.
                    state.terminate(reason);
                    let _ = caller.reply(value);
                    sched::exit(reason)
                }
                Answer::NoReply => Control::Continue,
                Answer::Stop(reason) => Control::Stop(reason),
            },
            Ok(Request::Cast(request)) => state.handle_cast(request),
            Err(message) => match message.take::<StopRequest>() {
                Ok(StopRequest(reason)) => Control::Stop(reason),
                Err(Message::Exit { from, reason }) if Some(from) == parent => Control::Stop(reason),
                Err(message) => state.handle_info(message),
            },
        };
        if let Control::Stop(reason) = control {
            state.terminate(reason);
            sched::exit(reason);
        }
    }
}
