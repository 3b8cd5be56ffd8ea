//! OTP's supervisor (`beamcore_otp::supervisor`). Every worker reports to the test when its
//! supervisor starts it (`+id`, sent by the start function, in the supervisor's process) and
//! when it stops on an exit signal (`-id`, it traps exits), so each case checks the exact
//! sequence of starts and stops, then that nothing else follows. The workers are plain
//! `spawn_link` processes and, in one_for_all and the nested tree, generic servers
//! (`server::start_link`, stopping through `terminate`):
//! - one_for_one: a worker that panics, faults (a null read), is killed, exits with a code or
//!   normally (permanent) ends with that reason and is restarted alone; its siblings keep their
//!   pids;
//! - one_for_all: the others are stopped in reverse start order, then all started in order;
//! - rest_for_one: only the later ones are stopped (reverse order) and restarted with it;
//! - transient: `Normal` and `Shutdown` are not restarted, a panic or an exit code is;
//! - temporary: never restarted, and forgotten (also when a sibling's one_for_all restart stops
//!   it);
//! - intensity: the third restart within the period (max 2) makes the supervisor stop its
//!   children (reverse order) and end with `Shutdown`; nothing of the tree is left alive;
//! - ordered shutdown on the parent's exit signal: a child that traps exits and ignores
//!   `Shutdown` is killed after its timeout, a `Brutal` one at once, a well-behaved one stops;
//! - a nested tree: a crash below is handled below; the inner supervisor killed is restarted
//!   with fresh children; shutting the tree down stops everything depth-first in reverse order;
//! - a child that fails to start fails the supervisor's start (the started ones stopped), and
//!   duplicate ids are refused.
//!
//! Each case ends with as many processes alive as before it.
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: expect=^test: otp supervisor ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=240

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use beamcore::sched::{self, ExitReason, Message, Pid};
use beamcore::{ExitCode, println, time};
use beamcore_apps::ensure;
use beamcore_apps::testing::{MUST_ARRIVE_US, spread};
use beamcore_otp::server::{self, Answer, Caller, Control, Server};
use beamcore_otp::start::StartError;
use beamcore_otp::supervisor::{self, ChildCounts, ChildInfo, ChildSpec, Intensity, Restart, Shutdown, Strategy};

/// How long a case waits to be sure nothing more happens (guest time).
const QUIET_US: u64 = 50_000;
/// The stubborn child's shutdown timeout.
const STUBBORN_US: u64 = 30_000;

/// What a worker tells the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    Started(&'static str, Pid),
    Stopping(&'static str, Pid),
}

// The words a worker obeys.
const PANIC: u64 = 0;
const FAULT: u64 = 1;
const NORMAL: u64 = 2;
const EXIT_5: u64 = 3;
const SHUTDOWN: u64 = 4;

/// A worker's word that it traps exits now: its start function waits for it, as a synchronous
/// start (`proc_lib`) would, so a stop that comes at once finds it trapping.
#[derive(Clone, Copy)]
struct Ready;

/// Crashes or ends as `word` says.
fn obey(id: &'static str, word: u64) {
    match word {
        PANIC => panic!("worker {id} crashes"),
        FAULT => {
            // SAFETY: none: the null read is meant to fault (nothing is mapped at 0).
            let _ = unsafe { core::ptr::read_volatile(core::hint::black_box(core::ptr::null::<u64>())) };
        }
        NORMAL => sched::exit(ExitReason::Normal),
        EXIT_5 => sched::exit(ExitReason::Exit(5)),
        SHUTDOWN => sched::exit(ExitReason::Shutdown),
        _ => {}
    }
}

/// A plain worker: traps exits, reports an exit signal and ends with its reason (or ignores
/// it, if stubborn), and crashes or ends as told.
fn worker(id: &'static str, report: Pid, stubborn: bool, supervisor: Pid) {
    sched::trap_exits(true);
    sched::send_value(supervisor, Ready).expect("the supervisor waits");
    let me = sched::self_pid().unwrap();
    loop {
        match sched::receive() {
            Message::Exit { .. } if stubborn => {}
            Message::Exit { reason, .. } => {
                sched::send_value(report, Event::Stopping(id, me)).expect("the test is alive");
                sched::exit(reason)
            }
            Message::Word(word) => obey(id, word),
            _ => {}
        }
    }
}

fn placement(id: &str) -> sched::SpawnOptions {
    spread(id.len() + usize::from(id.as_bytes()[0]))
}

/// A plain worker's child specification: `sched::spawn_link`, then the wait for its `Ready`.
fn spec_of(id: &'static str, report: Pid, stubborn: bool) -> ChildSpec {
    ChildSpec::worker(id, move || -> Result<Pid, StartError> {
        let supervisor = sched::self_pid().unwrap();
        let pid = sched::spawn_link(placement(id), move || worker(id, report, stubborn, supervisor))?;
        if sched::receive_value_timeout::<Ready>(MUST_ARRIVE_US).is_none() {
            return Err(StartError::Init(ExitReason::NoProc));
        }
        sched::send_value(report, Event::Started(id, pid)).expect("the test is alive");
        Ok(pid)
    })
}

/// The same worker as a generic server: it traps exits in `init`, obeys words in `handle_info`
/// and reports its stop from `terminate` (which the supervisor's exit signal runs).
struct Worker {
    id: &'static str,
    report: Pid,
}

impl Server for Worker {
    type Call = ();
    type Reply = ();
    type Cast = ();

    fn init(&mut self) -> Result<(), ExitReason> {
        sched::trap_exits(true);
        Ok(())
    }

    fn handle_call(&mut self, _request: (), _caller: Caller<()>) -> Answer<()> {
        Answer::Reply(())
    }

    fn handle_info(&mut self, message: Message) -> Control {
        if let Message::Word(word) = message {
            obey(self.id, word);
        }
        Control::Continue
    }

    fn terminate(&mut self, _reason: ExitReason) {
        let me = sched::self_pid().unwrap();
        sched::send_value(self.report, Event::Stopping(self.id, me)).expect("the test is alive");
    }
}

/// A generic server worker's child specification (`server::start_link`).
fn server_spec(id: &'static str, report: Pid) -> ChildSpec {
    ChildSpec::worker(id, move || -> Result<Pid, StartError> {
        let pid = server::start_link(Worker { id, report }, placement(id))?;
        sched::send_value(report, Event::Started(id, pid)).expect("the test is alive");
        Ok(pid)
    })
}

fn spec(id: &'static str, report: Pid) -> ChildSpec {
    spec_of(id, report, false)
}

fn intensity(max_restarts: u32) -> Intensity {
    Intensity { max_restarts, period_us: 10_000_000 }
}

/// Events as `+id` (started) / `-id` (stopping), the shape the checks compare.
type Kinds = Vec<(char, &'static str)>;

/// The next `n` events, as `+id` / `-id`, with the events themselves.
fn events(n: usize) -> Option<(Kinds, Vec<Event>)> {
    let mut kinds = Vec::new();
    let mut all = Vec::new();
    for _ in 0..n {
        let event = sched::receive_value_timeout::<Event>(MUST_ARRIVE_US)?;
        kinds.push(match event {
            Event::Started(id, _) => ('+', id),
            Event::Stopping(id, _) => ('-', id),
        });
        all.push(event);
    }
    Some((kinds, all))
}

/// An event that comes although none should.
fn stray_event() -> Option<Event> {
    sched::receive_value_timeout::<Event>(QUIET_US)
}

fn children(supervisor: Pid) -> Vec<ChildInfo> {
    supervisor::which_children(supervisor).expect("which_children")
}

fn pid_of(children: &[ChildInfo], id: &str) -> Option<Pid> {
    children.iter().find(|child| child.id == id).and_then(|child| child.pid)
}

fn ids(children: &[ChildInfo]) -> Vec<&str> {
    children.iter().map(|child| &*child.id).collect()
}

/// The exit signal of `from` (we trap exits): its reason.
fn exit_of(from: Pid) -> Option<ExitReason> {
    match sched::receive_matching_timeout(
        MUST_ARRIVE_US,
        |message| matches!(message, Message::Exit { from: f, .. } if *f == from),
    ) {
        Some(Message::Exit { reason, .. }) => Some(reason),
        _ => None,
    }
}

/// The `Down` of the monitor `reference`: its reason.
fn down_of(reference: sched::Ref) -> Option<ExitReason> {
    match sched::receive_matching_timeout(
        MUST_ARRIVE_US,
        |message| matches!(message, Message::Down { reference: r, .. } if *r == reference),
    ) {
        Some(Message::Down { reason, .. }) => Some(reason),
        _ => None,
    }
}

/// Waits (bounded) until as many processes are alive as `baseline`.
fn back_to(baseline: usize) -> bool {
    for _ in 0..1_000 {
        if sched::process_count() == baseline {
            return true;
        }
        sched::sleep(1_000);
    }
    false
}

/// Stops `sup` through its parent's exit signal (ours): the children stop in reverse order
/// (`expected`), then it ends with `Shutdown`, and none of `pids` is left alive.
fn shut_down(sup: Pid, expected: &[(char, &'static str)], pids: &[Pid]) -> Result<(), alloc::string::String> {
    sched::send_exit(sup, ExitReason::Shutdown).map_err(|e| alloc::format!("send_exit: {e}"))?;
    let (kinds, _) = events(expected.len()).ok_or("shutdown: an event is missing")?;
    if kinds != expected {
        return Err(alloc::format!("shutdown order {kinds:?}, expected {expected:?}"));
    }
    match exit_of(sup) {
        Some(ExitReason::Shutdown) => {}
        other => return Err(alloc::format!("the supervisor ended {other:?}")),
    }
    if sched::is_alive(sup) || pids.iter().any(|&pid| sched::is_alive(pid)) {
        return Err(alloc::format!("alive after the shutdown: {sup} or one of {pids:?}"));
    }
    if let Some(event) = stray_event() {
        return Err(alloc::format!("after the shutdown: {event:?}"));
    }
    Ok(())
}

macro_rules! check {
    ($result:expr) => {
        if let Err(message) = $result {
            ensure!(false, "{message}");
        }
    };
}

fn one_for_one(me: Pid) -> ExitCode {
    let specs = vec![spec("a", me), spec("b", me), spec("c", me)];
    let sup = supervisor::start_link(Strategy::OneForOne, intensity(10), specs).expect("start");
    let Some((kinds, _)) = events(3) else { return fail("one_for_one: start events") };
    ensure!(kinds == [('+', "a"), ('+', "b"), ('+', "c")], "one_for_one start order {kinds:?}");
    let first = children(sup);
    ensure!(ids(&first) == ["a", "b", "c"], "one_for_one children {first:?}");
    let counts = supervisor::count_children(sup).unwrap();
    ensure!(counts == ChildCounts { specs: 3, active: 3 }, "one_for_one counts {counts:?}");
    // Each crash of one child: only it restarts.
    let fault = ExitReason::Fault { class: 0x25, address: 0 };
    let cases: [(&str, Option<u64>, ExitReason); 5] = [
        ("b", Some(PANIC), ExitReason::Panic),
        ("b", Some(FAULT), fault),
        ("c", None, ExitReason::Killed),
        ("a", Some(EXIT_5), ExitReason::Exit(5)),
        ("a", Some(NORMAL), ExitReason::Normal),
    ];
    for (n, (id, word, reason)) in cases.into_iter().enumerate() {
        let before = children(sup);
        let old = pid_of(&before, id).unwrap();
        let watch = sched::monitor(old).unwrap();
        match word {
            Some(word) => sched::send(old, Message::Word(word)).unwrap(),
            None => sched::kill(old).unwrap(),
        }
        let ended = down_of(watch);
        ensure!(ended == Some(reason), "one_for_one case {n}: {id} ended {ended:?}, not {reason:?}");
        let Some((kinds, all)) = events(1) else { return fail("one_for_one: no restart") };
        ensure!(kinds == [('+', id)], "one_for_one case {n}: {kinds:?}");
        ensure!(stray_event().is_none(), "one_for_one case {n}: more than the one restart");
        let after = children(sup);
        let new = pid_of(&after, id).unwrap();
        ensure!(all[0] == Event::Started(id, new), "one_for_one case {n}: the pid reported is {all:?}, not {new}");
        ensure!(new != old && !sched::is_alive(old) && sched::is_alive(new), "one_for_one case {n}: {old} -> {new}");
        for other in ["a", "b", "c"].into_iter().filter(|&other| other != id) {
            ensure!(pid_of(&after, other) == pid_of(&before, other), "one_for_one case {n}: {other} changed");
        }
        ensure!(supervisor::restart_count(sup) == Ok(n as u64 + 1), "one_for_one case {n}: restarts");
    }
    let last = children(sup);
    let pids: Vec<Pid> = last.iter().filter_map(|child| child.pid).collect();
    check!(shut_down(sup, &[('-', "c"), ('-', "b"), ('-', "a")], &pids));
    ExitCode::Success
}

fn one_for_all(me: Pid) -> ExitCode {
    let specs = vec![server_spec("a", me), server_spec("b", me), server_spec("c", me)];
    let sup = supervisor::start_link(Strategy::OneForAll, intensity(10), specs).expect("start");
    ensure!(events(3).is_some(), "one_for_all: start events");
    let before = children(sup);
    sched::send(pid_of(&before, "b").unwrap(), Message::Word(PANIC)).unwrap();
    let Some((kinds, _)) = events(5) else { return fail("one_for_all: restart events") };
    let expected = [('-', "c"), ('-', "a"), ('+', "a"), ('+', "b"), ('+', "c")];
    ensure!(kinds == expected, "one_for_all restart {kinds:?}");
    ensure!(stray_event().is_none(), "one_for_all: more than one restart");
    let after = children(sup);
    for (old, new) in before.iter().zip(&after) {
        let (old, new) = (old.pid.unwrap(), new.pid.unwrap());
        ensure!(old != new && !sched::is_alive(old) && sched::is_alive(new), "one_for_all: {old} -> {new}");
    }
    ensure!(supervisor::restart_count(sup) == Ok(1), "one_for_all: one restart for all three");
    let pids: Vec<Pid> = after.iter().filter_map(|child| child.pid).collect();
    check!(shut_down(sup, &[('-', "c"), ('-', "b"), ('-', "a")], &pids));
    ExitCode::Success
}

fn rest_for_one(me: Pid) -> ExitCode {
    let specs = vec![spec("a", me), spec("b", me), spec("c", me), spec("d", me)];
    let sup = supervisor::start_link(Strategy::RestForOne, intensity(10), specs).expect("start");
    ensure!(events(4).is_some(), "rest_for_one: start events");
    let before = children(sup);
    sched::send(pid_of(&before, "b").unwrap(), Message::Word(PANIC)).unwrap();
    let Some((kinds, _)) = events(5) else { return fail("rest_for_one: restart events") };
    let expected = [('-', "d"), ('-', "c"), ('+', "b"), ('+', "c"), ('+', "d")];
    ensure!(kinds == expected, "rest_for_one restart {kinds:?}");
    ensure!(stray_event().is_none(), "rest_for_one: more than one restart");
    let after = children(sup);
    ensure!(pid_of(&after, "a") == pid_of(&before, "a"), "rest_for_one: a was restarted");
    for id in ["b", "c", "d"] {
        ensure!(pid_of(&after, id) != pid_of(&before, id), "rest_for_one: {id} kept its pid");
    }
    // The last one crashing takes nobody with it.
    sched::send(pid_of(&after, "d").unwrap(), Message::Word(PANIC)).unwrap();
    let Some((kinds, _)) = events(1) else { return fail("rest_for_one: the last one's restart") };
    ensure!(kinds == [('+', "d")], "rest_for_one: the last one's restart {kinds:?}");
    ensure!(stray_event().is_none(), "rest_for_one: more than the last one restarted");
    ensure!(supervisor::restart_count(sup) == Ok(2), "rest_for_one: restarts");
    let last = children(sup);
    ensure!(pid_of(&last, "c") == pid_of(&after, "c"), "rest_for_one: c restarted with the last one");
    let pids: Vec<Pid> = last.iter().filter_map(|child| child.pid).collect();
    check!(shut_down(sup, &[('-', "d"), ('-', "c"), ('-', "b"), ('-', "a")], &pids));
    ExitCode::Success
}

fn transient(me: Pid) -> ExitCode {
    let specs = vec![
        spec("t1", me).restart(Restart::Transient),
        spec("t2", me).restart(Restart::Transient),
        spec("t3", me).restart(Restart::Transient),
        spec("p", me),
    ];
    let sup = supervisor::start_link(Strategy::OneForOne, intensity(10), specs).expect("start");
    ensure!(events(4).is_some(), "transient: start events");
    let first = children(sup);
    // Normal and Shutdown: done, not restarted, still listed.
    sched::send(pid_of(&first, "t1").unwrap(), Message::Word(NORMAL)).unwrap();
    sched::send(pid_of(&first, "t2").unwrap(), Message::Word(SHUTDOWN)).unwrap();
    ensure!(stray_event().is_none(), "transient: a normal end restarted");
    let now = children(sup);
    ensure!(ids(&now) == ["t1", "t2", "t3", "p"], "transient: children {now:?}");
    ensure!(pid_of(&now, "t1").is_none() && pid_of(&now, "t2").is_none(), "transient: ended ones {now:?}");
    ensure!(supervisor::restart_count(sup) == Ok(0), "transient: restarts after normal ends");
    let counts = supervisor::count_children(sup).unwrap();
    ensure!(counts == ChildCounts { specs: 4, active: 2 }, "transient counts {counts:?}");
    // A panic and an exit code: restarted.
    for (n, word) in [PANIC, EXIT_5].into_iter().enumerate() {
        let old = pid_of(&children(sup), "t3").unwrap();
        sched::send(old, Message::Word(word)).unwrap();
        let Some((kinds, _)) = events(1) else { return fail("transient: no restart") };
        ensure!(kinds == [('+', "t3")], "transient crash {n}: {kinds:?}");
        ensure!(stray_event().is_none(), "transient crash {n}: more than one restart");
        ensure!(supervisor::restart_count(sup) == Ok(n as u64 + 1), "transient crash {n}: restarts");
    }
    let last = children(sup);
    let pids: Vec<Pid> = last.iter().filter_map(|child| child.pid).collect();
    check!(shut_down(sup, &[('-', "p"), ('-', "t3")], &pids));
    ExitCode::Success
}

fn temporary(me: Pid) -> ExitCode {
    let specs = vec![
        spec("tmp1", me).restart(Restart::Temporary),
        spec("a", me),
        spec("tmp2", me).restart(Restart::Temporary),
        spec("b", me),
    ];
    let sup = supervisor::start_link(Strategy::OneForAll, intensity(10), specs).expect("start");
    ensure!(events(4).is_some(), "temporary: start events");
    let first = children(sup);
    sched::send(pid_of(&first, "tmp1").unwrap(), Message::Word(PANIC)).unwrap();
    ensure!(stray_event().is_none(), "temporary: a temporary child's crash restarted something");
    let now = children(sup);
    ensure!(ids(&now) == ["a", "tmp2", "b"], "temporary: not forgotten: {now:?}");
    ensure!(supervisor::restart_count(sup) == Ok(0), "temporary: restarts");
    // A sibling's one_for_all restart stops the other temporary one for good.
    sched::send(pid_of(&now, "a").unwrap(), Message::Word(PANIC)).unwrap();
    let Some((kinds, _)) = events(4) else { return fail("temporary: restart events") };
    ensure!(kinds == [('-', "b"), ('-', "tmp2"), ('+', "a"), ('+', "b")], "temporary: restart {kinds:?}");
    ensure!(stray_event().is_none(), "temporary: more than one restart");
    let last = children(sup);
    ensure!(ids(&last) == ["a", "b"], "temporary: after the restart {last:?}");
    ensure!(!sched::is_alive(pid_of(&now, "tmp2").unwrap()), "temporary: tmp2 still runs");
    let counts = supervisor::count_children(sup).unwrap();
    ensure!(counts == ChildCounts { specs: 2, active: 2 }, "temporary counts {counts:?}");
    let pids: Vec<Pid> = last.iter().filter_map(|child| child.pid).collect();
    check!(shut_down(sup, &[('-', "b"), ('-', "a")], &pids));
    ExitCode::Success
}

fn too_many_restarts(me: Pid) -> ExitCode {
    let specs = vec![spec("a", me), spec("b", me), spec("c", me)];
    let sup = supervisor::start_link(Strategy::OneForOne, intensity(2), specs).expect("start");
    ensure!(events(3).is_some(), "intensity: start events");
    let mut pids: Vec<Pid> = children(sup).iter().filter_map(|child| child.pid).collect();
    for n in 0..2 {
        let a = pid_of(&children(sup), "a").unwrap();
        sched::send(a, Message::Word(PANIC)).unwrap();
        let Some((kinds, all)) = events(1) else { return fail("intensity: a restart") };
        ensure!(kinds == [('+', "a")], "intensity: restart {n}: {kinds:?}");
        if let Event::Started(_, pid) = all[0] {
            pids.push(pid);
        }
    }
    ensure!(supervisor::restart_count(sup) == Ok(2), "intensity: two restarts");
    // The third within the period: the supervisor stops b and c (reverse order) and ends.
    let a = pid_of(&children(sup), "a").unwrap();
    sched::send(a, Message::Word(PANIC)).unwrap();
    let Some((kinds, _)) = events(2) else { return fail("intensity: the stops") };
    ensure!(kinds == [('-', "c"), ('-', "b")], "intensity: the stops {kinds:?}");
    let reason = exit_of(sup);
    ensure!(reason == Some(ExitReason::Shutdown), "intensity: the supervisor ended {reason:?}");
    ensure!(!sched::is_alive(sup), "intensity: the supervisor is alive");
    for pid in pids {
        ensure!(!sched::is_alive(pid), "intensity: child {pid} is alive");
    }
    ensure!(stray_event().is_none(), "intensity: a start after giving up");
    ExitCode::Success
}

fn ordered_shutdown(me: Pid) -> ExitCode {
    let specs = vec![
        spec("polite", me),
        spec("brutal", me).shutdown(Shutdown::Brutal),
        spec_of("stubborn", me, true).shutdown(Shutdown::Timeout(STUBBORN_US)),
    ];
    let sup = supervisor::start_link(Strategy::OneForOne, intensity(10), specs).expect("start");
    ensure!(events(3).is_some(), "ordered shutdown: start events");
    let kids = children(sup);
    let watch = |id| sched::monitor(pid_of(&kids, id).unwrap()).unwrap();
    let (polite, brutal, stubborn) = (watch("polite"), watch("brutal"), watch("stubborn"));
    let start = time::now_count();
    sched::send_exit(sup, ExitReason::Shutdown).unwrap();
    let reason = exit_of(sup);
    let took_us = time::counts_to_us(time::now_count() - start);
    ensure!(reason == Some(ExitReason::Shutdown), "ordered shutdown: the supervisor ended {reason:?}");
    ensure!(down_of(stubborn) == Some(ExitReason::Killed), "the stubborn child was not killed");
    ensure!(down_of(brutal) == Some(ExitReason::Killed), "the brutal child was not killed");
    ensure!(down_of(polite) == Some(ExitReason::Shutdown), "the polite child did not stop with shutdown");
    let Some((kinds, _)) = events(1) else { return fail("ordered shutdown: the polite child's stop") };
    ensure!(kinds == [('-', "polite")], "ordered shutdown: {kinds:?}");
    ensure!(stray_event().is_none(), "ordered shutdown: another event");
    ensure!(took_us >= STUBBORN_US, "the stubborn child was killed after {took_us} us, before its timeout");
    ensure!(took_us < 2_000_000, "the shutdown took {took_us} us");
    ExitCode::Success
}

fn nested(me: Pid) -> ExitCode {
    let inner = vec![server_spec("x", me), server_spec("y", me)];
    let sub =
        ChildSpec::supervisor("sub", move || supervisor::start_link(Strategy::OneForOne, intensity(10), inner.clone()));
    let specs = vec![spec("a", me), sub, spec("b", me)];
    let top = supervisor::start_link(Strategy::OneForOne, intensity(10), specs).expect("start");
    let Some((kinds, _)) = events(4) else { return fail("nested: start events") };
    ensure!(kinds == [('+', "a"), ('+', "x"), ('+', "y"), ('+', "b")], "nested start order {kinds:?}");
    let first = children(top);
    let sub = pid_of(&first, "sub").unwrap();
    let inner = children(sub);
    ensure!(ids(&inner) == ["x", "y"], "nested: the inner children {inner:?}");
    // A crash below is handled below.
    sched::send(pid_of(&inner, "x").unwrap(), Message::Word(PANIC)).unwrap();
    let Some((kinds, _)) = events(1) else { return fail("nested: the inner restart") };
    ensure!(kinds == [('+', "x")], "nested: inner restart {kinds:?}");
    ensure!(stray_event().is_none(), "nested: more than the inner restart");
    ensure!(supervisor::restart_count(sub) == Ok(1), "nested: the inner supervisor's restarts");
    ensure!(supervisor::restart_count(top) == Ok(0), "nested: the top supervisor restarted something");
    // The inner supervisor killed: its children get its exit signal, the top restarts it.
    let inner = children(sub);
    sched::kill(sub).unwrap();
    let Some((mut kinds, all)) = events(4) else { return fail("nested: the inner supervisor's restart") };
    let started: Vec<_> = kinds.iter().filter(|(kind, _)| *kind == '+').copied().collect();
    ensure!(started == [('+', "x"), ('+', "y")], "nested: the restarted inner children {kinds:?}");
    kinds.sort();
    ensure!(kinds == [('+', "x"), ('+', "y"), ('-', "x"), ('-', "y")], "nested: inner restart events {kinds:?}");
    for event in &all {
        if let Event::Stopping(id, pid) = *event {
            ensure!(Some(pid) == pid_of(&inner, id), "nested: {id} stopped was {pid}, not the old one");
        }
    }
    ensure!(stray_event().is_none(), "nested: more than the inner supervisor's restart");
    let now = children(top);
    let new_sub = pid_of(&now, "sub").unwrap();
    ensure!(new_sub != sub && !sched::is_alive(sub), "nested: the inner supervisor {sub} -> {new_sub}");
    ensure!(pid_of(&now, "a") == pid_of(&first, "a") && pid_of(&now, "b") == pid_of(&first, "b"), "nested: a or b");
    ensure!(supervisor::restart_count(top) == Ok(1), "nested: the top supervisor's restarts");
    ensure!(supervisor::restart_count(new_sub) == Ok(0), "nested: the new inner supervisor's restarts");
    // The whole tree, depth first, in reverse start order.
    let mut pids: Vec<Pid> = now.iter().filter_map(|child| child.pid).collect();
    pids.extend(children(new_sub).iter().filter_map(|child| child.pid));
    check!(shut_down(top, &[('-', "b"), ('-', "y"), ('-', "x"), ('-', "a")], &pids));
    ExitCode::Success
}

fn failed_start(me: Pid) -> ExitCode {
    let bad = ChildSpec::worker("bad", || Err::<Pid, _>(StartError::Init(ExitReason::Exit(1))));
    let result = supervisor::start_link(Strategy::OneForOne, intensity(10), vec![spec("a", me), bad]);
    ensure!(result == Err(StartError::Init(ExitReason::Shutdown)), "a child that fails to start: {result:?}");
    let Some((kinds, _)) = events(2) else { return fail("failed start: events") };
    ensure!(kinds == [('+', "a"), ('-', "a")], "failed start: {kinds:?}");
    ensure!(stray_event().is_none(), "failed start: another event");
    let twice = vec![spec("a", me), spec("a", me)];
    let result = supervisor::start_link(Strategy::OneForOne, intensity(10), twice);
    ensure!(result == Err(StartError::DuplicateChildId), "duplicate ids: {result:?}");
    ensure!(stray_event().is_none(), "duplicate ids started something");
    ExitCode::Success
}

fn fail(what: &str) -> ExitCode {
    println!("test failed: {what}");
    ExitCode::Failure(1)
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    // The supervisors are linked to us: their ends arrive as messages.
    sched::trap_exits(true);
    let baseline = sched::process_count();
    type Case = fn(Pid) -> ExitCode;
    let cases: [(&str, Case); 9] = [
        ("one_for_one", one_for_one),
        ("one_for_all", one_for_all),
        ("rest_for_one", rest_for_one),
        ("transient", transient),
        ("temporary", temporary),
        ("intensity", too_many_restarts),
        ("ordered shutdown", ordered_shutdown),
        ("nested", nested),
        ("failed start", failed_start),
    ];
    for (name, case) in cases {
        let code = case(me);
        if code != ExitCode::Success {
            return code;
        }
        ensure!(back_to(baseline), "{name}: {} processes alive, {baseline} before", sched::process_count());
        let left: Vec<Message> = core::iter::from_fn(|| sched::receive_timeout(0)).collect();
        ensure!(left.is_empty(), "{name}: messages left {left:?}");
        println!("{name}: ok");
    }
    println!("test: otp supervisor ok");
    ExitCode::Success
}

beamcore::entry!(main);
