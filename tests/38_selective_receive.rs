//! Selective receive, typed messages and calls with reply references.
//! - Out of order: the oldest matching message is taken, the others stay in their order, and a
//!   later plain `receive` sees them first.
//! - With a timeout: no match gives `None` at the deadline and leaves every message queued; a
//!   match sent by another process while the receiver waits is taken.
//! - Typed: values of several types (a `u64`, small `Copy` structs, a `String`, a `Vec`) sent
//!   with `send_value` come back with `receive_value::<T>()`, each type in its own order; small
//!   `Copy` payloads travel inline (no box).
//! - Calls: with 10,000 unrelated messages waiting in the caller's queue, 100 calls to a server
//!   get their replies while the selective receive looks at fewer than 5 messages per call (the
//!   reply reference's mark skips the 10,000), and the 10,000 are still there in order after.
//!   A call to a server that dies gives `CallError::Down`, one to an ended pid `Down(NoProc)`,
//!   one that is never answered `Timeout`.
//!
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: expect=^test: selective receive ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=180

#![no_std]
#![no_main]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;

use beamcore::sched::{self, CallError, ExitReason, Message, Pid, Ref};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;
use beamcore_apps::testing::spread;

const DEEP: u64 = 10_000;
const CALLS: u64 = 100;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Point {
    x: i32,
    y: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tagged(Pid, u64);

/// A request to the server: who asks, the reference to answer with, and a number.
#[derive(Clone, Copy)]
struct Request {
    from: Pid,
    reference: Ref,
    n: u64,
}

fn scanned_everywhere() -> u64 {
    (0..smp::cores_online())
        .map(|core| sched::core_stats(core).receive_scanned.load(core::sync::atomic::Ordering::Relaxed))
        .sum()
}

fn server(n: usize) -> Pid {
    sched::spawn_with(spread(n), || {
        loop {
            let request = sched::receive_value::<Request>();
            if request.n == u64::MAX {
                sched::exit(ExitReason::Exit(7));
            }
            sched::reply(request.from, request.reference, request.n * 2).expect("reply");
        }
    })
    .expect("spawn server")
}

fn call(server: Pid, n: u64, timeout_us: Option<u64>) -> Result<u64, CallError> {
    let me = sched::self_pid().unwrap();
    let reply = sched::monitor_for_reply(server).expect("monitor");
    let _ = sched::send_value(server, Request { from: me, reference: reply.reference(), n });
    sched::receive_reply::<u64>(reply, timeout_us)
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();

    // Out of order, the rest kept in order.
    for w in 1..=6u64 {
        sched::send(me, Message::Word(w)).unwrap();
    }
    let taken = sched::receive_matching(|m| matches!(m, Message::Word(4)));
    ensure!(matches!(taken, Message::Word(4)), "took {taken:?}, not 4");
    let taken = sched::receive_matching(|m| matches!(m, Message::Word(w) if w % 2 == 0));
    ensure!(matches!(taken, Message::Word(2)), "the oldest even one is 2, took {taken:?}");
    let mut rest = Vec::new();
    for _ in 0..4 {
        match sched::receive_timeout(1_000_000) {
            Some(Message::Word(w)) => rest.push(w),
            other => ensure!(false, "plain receive after a selective one: {other:?}"),
        }
    }
    ensure!(rest == [1, 3, 5, 6], "the skipped messages in their order: {rest:?}");

    // With a timeout: nothing matches, nothing is lost.
    for w in [10u64, 11, 12] {
        sched::send(me, Message::Word(w)).unwrap();
    }
    let none = sched::receive_matching_timeout(2_000, |m| matches!(m, Message::Word(99)));
    ensure!(none.is_none(), "no 99 was sent, got {none:?}");
    // A match that another process sends while we wait is taken, past the three.
    let helper = sched::spawn_with(spread(1), move || {
        sched::sleep(1_000);
        let _ = sched::send(me, Message::Word(99));
    })
    .expect("spawn");
    let got = sched::receive_matching_timeout(5_000_000, |m| matches!(m, Message::Word(99)));
    ensure!(matches!(got, Some(Message::Word(99))), "the 99 from {helper}: {got:?}");
    for w in [10u64, 11, 12] {
        let next = sched::receive_timeout(1_000_000);
        ensure!(matches!(next, Some(Message::Word(x)) if x == w), "expected {w} still queued, got {next:?}");
    }

    // Typed messages of several types, each type in its own order.
    let text = String::from("hello, beamcore");
    sched::send_value(me, Point { x: 1, y: -1 }).unwrap();
    sched::send_value(me, 41u64).unwrap();
    sched::send_value(me, text.clone()).unwrap();
    sched::send_value(me, Tagged(me, 5)).unwrap();
    sched::send_value(me, Point { x: 2, y: -2 }).unwrap();
    sched::send_value(me, alloc::vec![1u8, 2, 3]).unwrap();
    let probe = Message::new(Point { x: 0, y: 0 });
    ensure!(matches!(probe, Message::Inline(_)), "a small Copy struct travels inline");
    ensure!(matches!(Message::new(7u64), Message::Word(7)), "a u64 travels as a word");
    ensure!(matches!(Message::new(String::new()), Message::Boxed(_)), "a String is boxed");
    ensure!(sched::receive_value::<Point>() == Point { x: 1, y: -1 }, "first point");
    ensure!(sched::receive_value::<Vec<u8>>() == [1, 2, 3], "the vec");
    ensure!(sched::receive_value::<Point>() == Point { x: 2, y: -2 }, "second point");
    ensure!(sched::receive_value::<String>() == text, "the string");
    ensure!(sched::receive_value::<Tagged>() == Tagged(me, 5), "the tagged pair");
    ensure!(sched::receive_value::<u64>() == 41, "the word as a u64");
    ensure!(sched::receive_value_timeout::<Point>(1_000).is_none(), "no third point");
    let wrong = Message::new(Point { x: 3, y: 3 });
    let wrong = match wrong.take::<Tagged>() {
        Ok(t) => {
            ensure!(false, "a point taken as a Tagged: {t:?}");
            return ExitCode::Failure(1);
        }
        Err(message) => message,
    };
    ensure!(wrong.get::<Point>() == Some(&Point { x: 3, y: 3 }), "the message given back intact");

    // Calls with a deep queue: the reply reference skips the 10,000.
    for w in 0..DEEP {
        sched::send(me, Message::Word(1_000_000 + w)).unwrap();
    }
    let s = server(1);
    let before = scanned_everywhere();
    for n in 0..CALLS {
        match call(s, n, Some(5_000_000)) {
            Ok(doubled) => ensure!(doubled == 2 * n, "call {n}: {doubled}"),
            Err(error) => ensure!(false, "call {n}: {error}"),
        }
    }
    let scanned = scanned_everywhere() - before;
    ensure!(scanned < 5 * CALLS, "{CALLS} calls looked at {scanned} messages: the mark did not skip the queue");
    for w in 0..DEEP {
        match sched::receive_timeout(1_000_000) {
            Some(Message::Word(x)) if x == 1_000_000 + w => {}
            other => ensure!(false, "deep message {w}: {other:?}"),
        }
    }

    // Calls that get no reply.
    match call(s, u64::MAX, Some(5_000_000)) {
        Err(CallError::Down(ExitReason::Exit(7))) => {}
        other => ensure!(false, "a call to a server that dies: {other:?}"),
    }
    match call(s, 1, Some(5_000_000)) {
        Err(CallError::Down(ExitReason::NoProc)) => {}
        other => ensure!(false, "a call to an ended server: {other:?}"),
    }
    let silent = sched::spawn_with(spread(1), || {
        let _ = sched::receive_value::<Point>();
    })
    .expect("spawn");
    match call(silent, 1, Some(2_000)) {
        Err(CallError::Timeout) => {}
        other => ensure!(false, "a call nobody answers: {other:?}"),
    }
    sched::send_value(silent, Point { x: 0, y: 0 }).unwrap();
    // Nothing left behind: no Down of the removed monitors, no stray reply.
    let stray = sched::receive_timeout(20_000);
    ensure!(stray.is_none(), "a stray message after the calls: {stray:?}");

    println!("test: selective receive ok ({CALLS} calls past {DEEP} messages looked at {scanned})");
    ExitCode::Success
}

beamcore::entry!(main);
