//! OTP's generic server (`beamcore_otp::server`) with a counter:
//! - calls get the right replies, casts change the state, 8 clients calling at once on every
//!   core see their own increments in order and none is lost;
//! - a call with 10,000 unrelated messages queued at the caller gets its reply while its
//!   receive looks at a handful of messages, and the 10,000 are still there, in order;
//! - a call to a server that panics or faults mid-call ends with `Err(Down(Panic))` /
//!   `Err(Down(Fault { .. }))`, to an ended one with `Down(NoProc)`; a call not answered in time
//!   with `Err(Timeout)`, and its late reply stays queued without confusing the next call;
//! - `handle_info` sees a `send_after` timer's message, and answers a call it had deferred
//!   (`Answer::NoReply`, `Caller::reply`);
//! - stops: `server::stop`, a call's `ReplyAndStop`, `handle_info`'s `Control::Stop`, the
//!   parent's exit signal when trapping exits (each runs `terminate` with the reason and ends the
//!   process with it); an exit signal from a process that is not the parent goes to
//!   `handle_info` instead;
//! - by name: `call_named`, `cast_named`; a process calling itself is refused;
//! - start: an `init` that refuses fails `start` and `start_link` with its reason and does not
//!   end a linked starter; one that panics fails it with `Panic` and leaves no `Exit` queued.
//!
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: expect=^test: otp server ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=180

#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use beamcore::sched::{self, ExitReason, Message, Pid, SendError};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;
use beamcore_apps::testing::{MUST_ARRIVE_US, receive_must_arrive, spread};
use beamcore_otp::server::{self, Answer, CallError, Caller, Control, Server};
use beamcore_otp::start::StartError;

const DEEP: u64 = 10_000;
const CLIENTS: usize = 8;
const CALLS_EACH: u64 = 500;
/// The info word that makes the counter stop from `handle_info`.
const STOP_WORD: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
enum Call {
    Get,
    Add(u64),
    /// Panics while handling the call.
    Crash,
    /// Reads through a null pointer while handling the call.
    Fault,
    /// Sleeps this long before replying.
    Sleep(u64),
    /// The oldest info word not yet asked for, waiting for one if there is none.
    NextInfo,
    /// Replies with the count, then stops with `Exit(code)`.
    StopWith(u64),
}

#[derive(Clone, Copy, Debug)]
enum Cast {
    Add(u64),
    Reset,
}

/// What `terminate` tells the test: which server, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Terminated(Pid, ExitReason);

/// A client's result: how many calls it made and whether each reply was above the last.
#[derive(Clone, Copy)]
struct ClientDone(u64, bool);

/// The started server's pid, from the process that started it.
#[derive(Clone, Copy)]
struct Started(Pid);

struct Counter {
    count: u64,
    report: Pid,
    name: Option<&'static str>,
    trap: bool,
    infos: VecDeque<u64>,
    waiting: Option<Caller<u64>>,
}

impl Counter {
    fn new(report: Pid) -> Counter {
        Counter { count: 0, report, name: None, trap: false, infos: VecDeque::new(), waiting: None }
    }
}

impl Server for Counter {
    type Call = Call;
    type Reply = u64;
    type Cast = Cast;

    fn init(&mut self) -> Result<(), ExitReason> {
        if self.trap {
            sched::trap_exits(true);
        }
        if let Some(name) = self.name {
            sched::register(name, sched::self_pid().unwrap()).map_err(|_| ExitReason::Exit(1))?;
        }
        Ok(())
    }

    fn handle_call(&mut self, request: Call, caller: Caller<u64>) -> Answer<u64> {
        match request {
            Call::Get => Answer::Reply(self.count),
            Call::Add(n) => {
                self.count += n;
                Answer::Reply(self.count)
            }
            Call::Crash => panic!("the counter crashes mid-call"),
            Call::Fault => {
                // SAFETY: none: the null read is meant to fault (nothing is mapped at 0).
                let value = unsafe { core::ptr::read_volatile(core::hint::black_box(core::ptr::null::<u64>())) };
                Answer::Reply(value)
            }
            Call::Sleep(us) => {
                sched::sleep(us);
                Answer::Reply(self.count)
            }
            Call::NextInfo => match self.infos.pop_front() {
                Some(word) => Answer::Reply(word),
                None => {
                    self.waiting = Some(caller);
                    Answer::NoReply
                }
            },
            Call::StopWith(code) => Answer::ReplyAndStop(self.count, ExitReason::Exit(code)),
        }
    }

    fn handle_cast(&mut self, request: Cast) -> Control {
        match request {
            Cast::Add(n) => self.count += n,
            Cast::Reset => self.count = 0,
        }
        Control::Continue
    }

    fn handle_info(&mut self, message: Message) -> Control {
        match message {
            Message::Word(STOP_WORD) => return Control::Stop(ExitReason::Exit(11)),
            Message::Word(word) => match self.waiting.take() {
                Some(caller) => caller.reply(word).expect("the caller waits"),
                None => self.infos.push_back(word),
            },
            // A trapped exit signal from a process other than the parent: remembered as an
            // info word (its code), so the test sees it arrived and did not stop the server.
            Message::Exit { reason: ExitReason::Exit(code), .. } => self.infos.push_back(code),
            _ => {}
        }
        Control::Continue
    }

    fn terminate(&mut self, reason: ExitReason) {
        let _ = sched::send_value(self.report, Terminated(sched::self_pid().unwrap(), reason));
    }
}

/// A server whose `init` refuses to start with a reason, or panics.
struct Refuses(Option<ExitReason>);

impl Server for Refuses {
    type Call = ();
    type Reply = ();
    type Cast = ();

    fn init(&mut self) -> Result<(), ExitReason> {
        match self.0 {
            Some(reason) => Err(reason),
            None => panic!("init panics"),
        }
    }

    fn handle_call(&mut self, _request: (), _caller: Caller<()>) -> Answer<()> {
        Answer::Reply(())
    }
}

fn scanned_everywhere() -> u64 {
    (0..smp::cores_online())
        .map(|core| sched::core_stats(core).receive_scanned.load(core::sync::atomic::Ordering::Relaxed))
        .sum()
}

fn start_counter(n: usize) -> Pid {
    let me = sched::self_pid().unwrap();
    server::start(Counter::new(me), spread(n)).expect("start the counter")
}

fn terminated() -> Option<Terminated> {
    sched::receive_value_timeout::<Terminated>(MUST_ARRIVE_US)
}

/// The `Down` of the monitor `reference`: its reason.
fn down_reason(reference: sched::Ref) -> Option<ExitReason> {
    let down = sched::receive_matching_timeout(
        MUST_ARRIVE_US,
        |message| matches!(message, Message::Down { reference: r, .. } if *r == reference),
    );
    match down {
        Some(Message::Down { reason, .. }) => Some(reason),
        _ => None,
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let baseline = sched::process_count();
    let call = |server: Pid, request: Call| server::call::<Counter>(server, request, Some(MUST_ARRIVE_US));

    // Calls and casts.
    let counter = start_counter(1);
    ensure!(call(counter, Call::Add(5)) == Ok(5), "add 5");
    ensure!(call(counter, Call::Add(7)) == Ok(12), "add 7");
    ensure!(call(counter, Call::Get) == Ok(12), "get after two adds");
    for _ in 0..3 {
        server::cast::<Counter>(counter, Cast::Add(10)).expect("cast");
    }
    ensure!(call(counter, Call::Get) == Ok(42), "three casts of 10 on 12");
    server::cast::<Counter>(counter, Cast::Reset).expect("cast");
    ensure!(call(counter, Call::Get) == Ok(0), "reset");

    // Clients on every core at once: every increment counted, each client's replies rising.
    for n in 0..CLIENTS {
        sched::spawn_with(spread(n + 2), move || {
            let mut last = 0;
            let mut rising = true;
            for _ in 0..CALLS_EACH {
                let count = server::call::<Counter>(counter, Call::Add(1), Some(MUST_ARRIVE_US)).expect("call");
                rising &= count > last;
                last = count;
            }
            sched::send_value(me, ClientDone(CALLS_EACH, rising)).expect("main is alive");
        })
        .expect("spawn client");
    }
    for _ in 0..CLIENTS {
        match sched::receive_value_timeout::<ClientDone>(MUST_ARRIVE_US) {
            Some(ClientDone(CALLS_EACH, true)) => {}
            Some(ClientDone(calls, rising)) => ensure!(false, "a client made {calls} calls, rising: {rising}"),
            None => ensure!(false, "a client never finished"),
        }
    }
    let total = CLIENTS as u64 * CALLS_EACH;
    ensure!(call(counter, Call::Get) == Ok(total), "{CLIENTS} clients' increments: {:?}", call(counter, Call::Get));

    // A deep queue at the caller: the call looks only past its reference's mark.
    for i in 0..DEEP {
        sched::send(me, Message::Word(i)).expect("to ourselves");
    }
    let before = scanned_everywhere();
    ensure!(call(counter, Call::Add(1)) == Ok(total + 1), "the call past {DEEP} messages");
    let scanned = scanned_everywhere() - before;
    ensure!(scanned < 50, "the call looked at {scanned} messages with {DEEP} queued");
    for i in 0..DEEP {
        match sched::receive_timeout(0) {
            Some(Message::Word(w)) if w == i => {}
            other => ensure!(false, "queued message {i}: {other:?}"),
        }
    }

    // A call that times out; its late reply stays queued and the next call is not confused.
    let slow = server::call::<Counter>(counter, Call::Sleep(100_000), Some(2_000));
    ensure!(slow == Err(CallError::Timeout), "a call past its timeout: {slow:?}");
    ensure!(call(counter, Call::Get) == Ok(total + 1), "the call after a timed-out one");
    match receive_must_arrive() {
        Some(message) if message.is::<sched::Reply<u64>>() => {}
        other => ensure!(false, "the late reply: {other:?}"),
    }

    // handle_info: a timer's message answers a deferred call; a word that came first is kept.
    sched::send_after(counter, 2_000, Message::Word(77)).expect("timer");
    ensure!(call(counter, Call::NextInfo) == Ok(77), "the timer's word through a deferred reply");
    sched::send(counter, Message::Word(78)).expect("send");
    ensure!(call(counter, Call::NextInfo) == Ok(78), "a word queued before the call");

    // Crashes mid-call.
    let crash = call(counter, Call::Crash);
    ensure!(crash == Err(CallError::Down(ExitReason::Panic)), "a call to a server that panics: {crash:?}");
    ensure!(!sched::is_alive(counter), "the crashed server is gone");
    let dead = call(counter, Call::Get);
    ensure!(dead == Err(CallError::Down(ExitReason::NoProc)), "a call to an ended server: {dead:?}");
    let cast = server::cast::<Counter>(counter, Cast::Add(1));
    ensure!(cast == Err(SendError::NoProc(counter)), "a cast to an ended server: {cast:?}");
    let faulty = start_counter(2);
    match call(faulty, Call::Fault) {
        Err(CallError::Down(ExitReason::Fault { class: 0x25, address: 0 })) => {}
        other => ensure!(false, "a call to a server that faults: {other:?}"),
    }

    // Stops, each through terminate.
    let s = start_counter(3);
    ensure!(server::stop(s, ExitReason::Normal, Some(MUST_ARRIVE_US)) == Ok(()), "stop");
    ensure!(terminated() == Some(Terminated(s, ExitReason::Normal)), "terminate after stop");
    ensure!(!sched::is_alive(s), "stopped server gone");
    let again = server::stop(s, ExitReason::Normal, Some(MUST_ARRIVE_US));
    ensure!(again == Err(CallError::Down(ExitReason::NoProc)), "stop of an ended server: {again:?}");

    let s = start_counter(4);
    let watch = sched::monitor(s).unwrap();
    ensure!(call(s, Call::Add(3)) == Ok(3), "add before stopping");
    ensure!(call(s, Call::StopWith(5)) == Ok(3), "ReplyAndStop replies");
    ensure!(terminated() == Some(Terminated(s, ExitReason::Exit(5))), "terminate after ReplyAndStop");
    ensure!(down_reason(watch) == Some(ExitReason::Exit(5)), "ReplyAndStop's reason");

    let s = start_counter(5);
    let watch = sched::monitor(s).unwrap();
    sched::send(s, Message::Word(STOP_WORD)).unwrap();
    ensure!(terminated() == Some(Terminated(s, ExitReason::Exit(11))), "terminate after Control::Stop");
    ensure!(down_reason(watch) == Some(ExitReason::Exit(11)), "Control::Stop's reason");

    // The parent's exit signal stops a server that traps exits; another process's does not.
    let parent = sched::spawn_with(spread(6), move || {
        let state = Counter { trap: true, ..Counter::new(me) };
        let s = server::start_link(state, spread(7)).expect("start_link");
        sched::send_value(me, Started(s)).unwrap();
        sched::exit(ExitReason::Exit(9))
    })
    .expect("spawn parent");
    let Some(Started(s)) = sched::receive_value_timeout::<Started>(MUST_ARRIVE_US) else {
        ensure!(false, "the parent {parent} never started its server");
        return ExitCode::Failure(1);
    };
    ensure!(terminated() == Some(Terminated(s, ExitReason::Exit(9))), "terminate after the parent's exit");
    let watch = sched::monitor(s).unwrap();
    let reason = down_reason(watch);
    ensure!(matches!(reason, Some(ExitReason::Exit(9) | ExitReason::NoProc)), "the parent's reason: {reason:?}");

    let s = server::start(Counter { trap: true, ..Counter::new(me) }, spread(8)).unwrap();
    sched::send_exit(s, ExitReason::Exit(2)).unwrap();
    ensure!(call(s, Call::NextInfo) == Ok(2), "a non-parent's exit signal reaches handle_info");
    ensure!(server::stop(s, ExitReason::Shutdown, Some(MUST_ARRIVE_US)) == Ok(()), "stop with shutdown");
    ensure!(terminated() == Some(Terminated(s, ExitReason::Shutdown)), "terminate after stop(shutdown)");

    // By name.
    let state = Counter { name: Some("counter"), ..Counter::new(me) };
    let named = server::start(state, spread(9)).expect("start named");
    ensure!(sched::whereis("counter") == Some(named), "init registered the name");
    ensure!(server::call_named::<Counter>("counter", Call::Add(2), None) == Ok(2), "call_named");
    server::cast_named::<Counter>("counter", Cast::Add(3)).expect("cast_named");
    ensure!(server::call_named::<Counter>("counter", Call::Get, None) == Ok(5), "call_named after cast_named");
    ensure!(server::stop(named, ExitReason::Normal, None) == Ok(()), "stop named");
    ensure!(terminated() == Some(Terminated(named, ExitReason::Normal)), "terminate named");
    let nobody = server::call_named::<Counter>("counter", Call::Get, None);
    ensure!(nobody == Err(CallError::Down(ExitReason::NoProc)), "call_named with no such name: {nobody:?}");
    let nobody = server::cast_named::<Counter>("counter", Cast::Reset);
    ensure!(nobody == Err(SendError::NotRegistered), "cast_named with no such name: {nobody:?}");
    ensure!(server::call::<Counter>(me, Call::Get, None) == Err(CallError::CallingSelf), "calling oneself");

    // init that refuses, or panics.
    let refused = server::start(Refuses(Some(ExitReason::Exit(3))), spread(10));
    ensure!(refused == Err(StartError::Init(ExitReason::Exit(3))), "start with init refusing: {refused:?}");
    let refused = server::start_link(Refuses(Some(ExitReason::Exit(4))), spread(11));
    ensure!(refused == Err(StartError::Init(ExitReason::Exit(4))), "start_link with init refusing: {refused:?}");
    // Were the refusing child still linked, its Exit(4) would end us (we do not trap) here.
    sched::sleep(10_000);
    sched::yield_now();
    sched::trap_exits(true);
    let crashed = server::start_link(Refuses(None), spread(12));
    ensure!(crashed == Err(StartError::Init(ExitReason::Panic)), "start_link with init panicking: {crashed:?}");
    let left = sched::receive_timeout(10_000);
    ensure!(left.is_none(), "a failed start left a message: {left:?}");
    sched::trap_exits(false);

    let leftovers: Vec<Message> = core::iter::from_fn(|| sched::receive_timeout(0)).collect();
    ensure!(leftovers.is_empty(), "messages left: {leftovers:?}");
    let mut spins = 0;
    while sched::process_count() != baseline && spins < 1_000 {
        sched::sleep(1_000);
        spins += 1;
    }
    ensure!(sched::process_count() == baseline, "{} processes alive, {baseline} at the start", sched::process_count());
    println!("test: otp server ok");
    ExitCode::Success
}

beamcore::entry!(main);
