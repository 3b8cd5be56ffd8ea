//! Messages: FIFO from one sender to one receiver across cores, none lost or duplicated;
//! `receive_timeout` gives up when nothing comes, not before its timeout (test 42 bounds it
//! from above, in guest time under `-icount`; this test runs the cores truly in parallel);
//! sending to or killing an ended process is an error, also when its slot has been reused by a
//! newer process (the pid's generation differs), and the newer process is unharmed.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: expect=^test: .*stale pid refused after slot reuse
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, SendError, SpawnOptions};
use beamcore::{ExitCode, println, smp, time};
use beamcore_apps::ensure;

const COUNT: u64 = 20_000;
const TIMEOUT_US: u64 = 20_000;

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let other_core = smp::cores_online() - 1;
    let sender = sched::spawn_with(SpawnOptions::default().on_core(other_core), move || {
        for n in 1..=COUNT {
            sched::send(me, Message::Word(n)).expect("receiver alive");
            if n % 64 == 0 {
                sched::yield_now();
            }
        }
        // Ends only when told, so the end can be watched with a monitor set while it lives.
        let _ = sched::receive();
    });
    let Ok(sender) = sender else {
        ensure!(false, "spawn sender: {sender:?}");
        unreachable!()
    };
    for expected in 1..=COUNT {
        match sched::receive_timeout(10_000_000) {
            Some(Message::Word(n)) => ensure!(n == expected, "got message {n}, expected {expected}"),
            other => ensure!(false, "message {expected}: {other:?}"),
        }
    }
    // End the sender and wait for its end (its slot is back on the free list before its
    // monitors are told), so no slot is freed behind our back during the reuse check below.
    ensure!(sched::monitor(sender).is_ok(), "monitor sender");
    ensure!(sched::send(sender, Message::Word(0)).is_ok(), "sender ended early");
    match sched::receive_timeout(10_000_000) {
        Some(Message::Down { pid, reason: ExitReason::Normal, .. }) if pid == sender => {}
        other => ensure!(false, "sender's end not reported: {other:?}"),
    }

    let started = time::now_count();
    let nothing = sched::receive_timeout(TIMEOUT_US);
    let waited = time::now_count() - started;
    let waited_us = time::counts_to_us(waited);
    ensure!(nothing.is_none(), "receive_timeout returned {nothing:?} with nobody sending");
    ensure!(
        waited >= time::us_to_counts(TIMEOUT_US),
        "receive_timeout({TIMEOUT_US} us) returned early after {waited_us} us"
    );

    // Slot reuse, made certain: slots are reused last-in first-out from the free list and
    // nothing else spawns or ends now, so the process spawned right after `ended` has released
    // its slot (known from its Down message: `is_alive` turns false before the release) gets
    // that slot.
    let ended = sched::spawn(|| {
        let _ = sched::receive();
    })
    .expect("spawn");
    ensure!(sched::monitor(ended).is_ok(), "monitor short-lived process");
    ensure!(sched::send(ended, Message::Word(0)).is_ok(), "short-lived process ended early");
    match sched::receive_timeout(10_000_000) {
        Some(Message::Down { pid, reason: ExitReason::Normal, .. }) if pid == ended => {}
        other => ensure!(false, "short-lived process's end not reported: {other:?}"),
    }
    ensure!(!sched::is_alive(ended), "ended process still alive");
    let refused = sched::send(ended, Message::Word(1));
    ensure!(refused == Err(SendError::NoProc(ended)), "send to ended pid: {refused:?}");
    let newer = sched::spawn(move || {
        if let Message::Word(n) = sched::receive() {
            let _ = sched::send(me, Message::Word(n + 1));
        }
    })
    .expect("spawn");
    ensure!(
        newer.index() == ended.index(),
        "slot not reused: {newer} spawned right after {ended} ended (free slots are reused last-in first-out)"
    );
    ensure!(newer.generation() != ended.generation(), "reused slot kept its generation: {newer} after {ended}");
    let stale = sched::send(ended, Message::Word(2));
    ensure!(stale == Err(SendError::NoProc(ended)), "stale pid reached the new process: {stale:?}");
    let stale_kill = sched::kill(ended);
    ensure!(stale_kill == Err(SendError::NoProc(ended)), "kill of a stale pid: {stale_kill:?}");
    ensure!(sched::is_alive(newer), "the new process in the reused slot died");
    ensure!(sched::send(newer, Message::Word(3)).is_ok(), "new process unreachable");
    let answer = sched::receive_timeout(10_000_000);
    ensure!(
        matches!(answer, Some(Message::Word(4))),
        "new process in the reused slot did not answer (a stale message or kill reached it?): {answer:?}"
    );
    println!(
        "test: {COUNT} messages in order across cores; timeout of {TIMEOUT_US} us after {waited_us} us; send to \
         ended pid refused; stale pid refused after slot reuse ({ended} -> {newer}), send and kill"
    );
    ExitCode::Success
}

beamcore::entry!(main);
