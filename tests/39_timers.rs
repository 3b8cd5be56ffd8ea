//! Timers: `send_after`, `cancel_timer`, `read_timer`, `sleep`, and deadlines that fire at
//! their time rather than at the next tick.
//! - `receive_timeout(100 us)` returns after 100 to 150 us of guest time, 20 times in a row, on
//!   the main process and on a process bound to the last core.
//! - `send_after` delivers once, about on time; `cancel_timer` before the deadline says how
//!   long was left and the message never comes; after it, says `NotPending` and the message came.
//! - The race where a cancel meets the deadline, 1,000 times from another core: every timer is
//!   either cancelled (`Pending`, and its message never arrives) or fired (`NotPending`, and its
//!   message arrives exactly once).
//! - `sleep` leaves queued messages in place, in order, and lasts at least its time.
//! - 100,000 timers pending at once all fire, each exactly once (their order is the timer
//!   table's, checked on the host by `crates/timer-heap`'s model test).
//! - A timer whose receiver has ended is dropped: nothing reaches anyone, and it is no longer
//!   pending once its deadline has passed.
//!
//! Runs under `-icount shift=0,sleep=off`, so guest time is the instruction count (a bound in
//! guest time is repeatable).
//!
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: expect=^test: timers ok
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=300

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use beamcore::sched::{self, Cancelled, Message, SpawnOptions};
use beamcore::{ExitCode, println, smp, time};
use beamcore_apps::ensure;
use beamcore_apps::testing::{receive_must_arrive, spread};

const MANY: u64 = 100_000;
const RACES: u64 = 1_000;

/// The worst time past 100 us that `receive_timeout(100)` took, over 20 waits; an error if one
/// returned early, with a message, or more than 50 us late.
fn hundred_us_waits() -> Result<u64, u64> {
    let mut worst = 0;
    for _ in 0..20 {
        let started = time::now_count();
        let got = sched::receive_timeout(100);
        let waited_us = time::counts_to_us(time::now_count() - started);
        if got.is_some() || !(100..=150).contains(&waited_us) {
            return Err(waited_us);
        }
        worst = worst.max(waited_us - 100);
    }
    Ok(worst)
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let last = smp::cores_online() - 1;

    // Deadlines at their time: here and on a process bound to the last core.
    let late_here = match hundred_us_waits() {
        Ok(worst) => worst,
        Err(waited) => {
            ensure!(false, "receive_timeout(100 us) took {waited} us");
            0
        }
    };
    let checker = sched::spawn_with(SpawnOptions::default().bound_to(last), move || {
        let result = match hundred_us_waits() {
            Ok(worst) => worst,
            Err(waited) => 1_000_000 + waited,
        };
        let _ = sched::send(me, Message::Word(result));
    })
    .expect("spawn");
    let late_there = match receive_must_arrive() {
        Some(Message::Word(w)) if w < 1_000_000 => w,
        other => {
            ensure!(false, "receive_timeout(100 us) on core {last} ({checker}): {other:?}");
            0
        }
    };

    // send_after, cancelled before and after the deadline.
    let timer = sched::send_after(me, 2_000, Message::Word(1)).expect("send_after");
    let left = sched::read_timer(timer);
    ensure!(left.is_some_and(|us| us <= 2_000), "read_timer: {left:?}");
    let started = time::now_count();
    match receive_must_arrive() {
        Some(Message::Word(1)) => {}
        other => ensure!(false, "send_after's message: {other:?}"),
    }
    let after_us = time::counts_to_us(time::now_count() - started);
    ensure!(after_us >= 1_900, "the message came after {after_us} us, before its 2,000");
    ensure!(sched::cancel_timer(timer) == Cancelled::NotPending, "a fired timer is not pending");
    ensure!(sched::read_timer(timer).is_none(), "a fired timer has no time left");
    let timer = sched::send_after(me, 5_000, Message::Word(2)).expect("send_after");
    match sched::cancel_timer(timer) {
        Cancelled::Pending { left_us } => ensure!(left_us <= 5_000 && left_us > 4_000, "left {left_us} us of 5,000"),
        Cancelled::NotPending => ensure!(false, "a timer cancelled at once had fired"),
    }
    ensure!(sched::cancel_timer(timer) == Cancelled::NotPending, "cancelled twice");
    let stray = sched::receive_timeout(10_000);
    ensure!(stray.is_none(), "a cancelled timer's message came: {stray:?}");

    // Cancel racing the deadline, from another core.
    let (mut cancelled, mut fired) = (0u64, 0u64);
    let mut outcome = vec![0u8; RACES as usize];
    for i in 0..RACES {
        let delay = (i * 7) % 40;
        let timer = sched::send_after(me, delay, Message::Word(10_000 + i)).expect("send_after");
        let canceller = sched::spawn_with(spread(i as usize + 1), move || {
            let result = sched::cancel_timer(timer);
            let _ = sched::send_value(me, (i, result == Cancelled::NotPending));
        })
        .expect("spawn");
        let (j, was_fired) = sched::receive_value::<(u64, bool)>();
        ensure!(j == i, "race {i}: answer for {j} from {canceller}");
        outcome[i as usize] = if was_fired { 1 } else { 2 };
        if was_fired {
            fired += 1;
        } else {
            cancelled += 1;
        }
    }
    // Every fired timer's message, once; no cancelled one's.
    sched::sleep(1_000);
    let mut seen = vec![0u32; RACES as usize];
    while let Some(message) =
        sched::receive_matching_timeout(0, |m| matches!(m, Message::Word(w) if (10_000..10_000 + RACES).contains(w)))
    {
        if let Message::Word(w) = message {
            seen[(w - 10_000) as usize] += 1;
        }
    }
    for i in 0..RACES as usize {
        let expected = u32::from(outcome[i] == 1);
        ensure!(seen[i] == expected, "race {i}: fired={} but {} messages", outcome[i] == 1, seen[i]);
    }

    // sleep leaves the queue alone.
    for w in [21u64, 22, 23] {
        sched::send(me, Message::Word(w)).unwrap();
    }
    let started = time::now_count();
    sched::sleep(500);
    let slept_us = time::counts_to_us(time::now_count() - started);
    ensure!(slept_us >= 500, "slept {slept_us} us of 500");
    for w in [21u64, 22, 23] {
        let next = sched::receive_timeout(0);
        ensure!(matches!(next, Some(Message::Word(x)) if x == w), "after sleep, expected {w}: {next:?}");
    }

    // 100,000 pending at once, each fires once.
    for i in 0..MANY {
        // Deadlines inserted out of order: 300 ms (longer than making them all takes) plus a
        // permutation of 0..MANY, in tenths of a microsecond.
        let slot = (i * 7_919) % MANY;
        sched::send_after(me, 300_000 + slot / 10, Message::Word(slot)).expect("send_after");
    }
    let pending: usize = (0..smp::cores_online()).map(sched::timers_pending_on).sum();
    ensure!(pending as u64 == MANY, "{pending} timers pending of {MANY} made");
    let mut got = vec![false; MANY as usize];
    for _ in 0..MANY {
        match receive_must_arrive() {
            Some(Message::Word(w)) if w < MANY => {
                ensure!(!got[w as usize], "timer {w} fired twice");
                got[w as usize] = true;
            }
            other => ensure!(false, "a timer's message: {other:?}"),
        }
    }
    ensure!(got.iter().all(|&g| g), "a timer never fired");
    ensure!(sched::receive_timeout(1_000).is_none(), "more than {MANY} messages");

    // A timer to a process that has ended is dropped.
    let (gone, reference) = sched::spawn_monitor(SpawnOptions::default(), || {}).expect("spawn");
    match receive_must_arrive() {
        Some(Message::Down { pid, reference: r, .. }) if pid == gone && r == reference => {}
        other => ensure!(false, "Down of the ended process: {other:?}"),
    }
    let orphan = sched::send_after(gone, 1_000, Message::Word(77)).expect("send_after");
    let waiters: Vec<_> = (0..20)
        .map(|n| {
            sched::spawn_with(spread(n), move || {
                let got = sched::receive_timeout(5_000);
                let _ = sched::send_value(me, got.is_none());
            })
            .expect("spawn")
        })
        .collect();
    for _ in &waiters {
        ensure!(sched::receive_value::<bool>(), "a new process received a dead process's timer message");
    }
    ensure!(sched::read_timer(orphan).is_none(), "the orphan timer is still pending after its deadline");
    ensure!(sched::receive_timeout(1_000).is_none(), "a stray message");

    println!(
        "test: timers ok (100 us timeouts at most {late_here} us late here, {late_there} us on core {last}; \
         {RACES} cancel races: {cancelled} cancelled, {fired} fired; {MANY} pending timers fired once each)"
    );
    ExitCode::Success
}

beamcore::entry!(main);
