//! The "run next" slot has a cap: a process a message wakes on the sender's core runs before
//! the rest of its level (for locality), but a pair passing a message back and forth must not
//! keep a third process of the same priority from running. Here a pinger and an echo process
//! exchange 2,000 round trips on one core while a third process of the same (normal) priority
//! yields in a loop on that core, noting how many turns the pair took since its last run. Each
//! time the slot has given `RUN_NEXT_CAP` turns in a row while others wait, its process goes to
//! the back of the level, so the third runs after at most `RUN_NEXT_CAP + 1` of the pair's
//! turns. Without the cap it would not run until the pair ended.
//!
//! One core (free processes, the stealable queue) and four (all three bound to core 3, the
//! private queue); under `-icount` the run is the same every time.
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: expect=^test: run next cap: the third process ran \d+ times, at most \d+ of the pair's turns apart \(cap \d+\)
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=60

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use beamcore::sched::{self, Message, RUN_NEXT_CAP, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const ROUND_TRIPS: u64 = 2_000;
/// Turns the pair has taken (each increments it when its receive returns).
static PAIR_TURNS: AtomicU64 = AtomicU64::new(0);
static DONE: AtomicBool = AtomicBool::new(false);

fn main() -> ExitCode {
    let me = sched::self_pid().expect("main is a process");
    let cores = smp::cores_online();
    let options =
        if cores > 1 { SpawnOptions::default().bound_to(cores - 1) } else { SpawnOptions::default().on_core(0) };
    // The third process: queued first, then yields for as long as the pair plays.
    let third = sched::spawn_with(options, move || {
        let (mut runs, mut widest, mut seen) = (0u64, 0u64, 0u64);
        loop {
            let done = DONE.load(Ordering::Relaxed);
            let turns = PAIR_TURNS.load(Ordering::Relaxed);
            widest = widest.max(turns - seen);
            seen = turns;
            runs += 1;
            if done {
                break;
            }
            sched::yield_now();
        }
        let _ = sched::send(me, Message::Word(runs << 32 | widest));
    });
    ensure!(third.is_ok(), "spawn the third process: {third:?}");
    let echo = sched::spawn_with(options, || {
        for _ in 0..ROUND_TRIPS {
            let Message::Boxed(reply_to) = sched::receive() else { return };
            PAIR_TURNS.fetch_add(1, Ordering::Relaxed);
            let reply_to = *reply_to.downcast::<sched::Pid>().expect("a pid");
            let _ = sched::send(reply_to, Message::Word(0));
        }
    });
    let Ok(echo) = echo else { return ExitCode::Failure(1) };
    let pinger = sched::spawn_with(options, move || {
        let me_too = sched::self_pid().expect("a process");
        for _ in 0..ROUND_TRIPS {
            let _ = sched::send(echo, Message::Boxed(alloc::boxed::Box::new(me_too)));
            let _ = sched::receive();
            PAIR_TURNS.fetch_add(1, Ordering::Relaxed);
        }
        DONE.store(true, Ordering::Relaxed);
    });
    ensure!(pinger.is_ok(), "spawn the pinger: {pinger:?}");
    let Some(Message::Word(report)) = sched::receive_timeout(30_000_000) else {
        println!(
            "test failed: the third process did not finish within 30 s (pair turns {})",
            PAIR_TURNS.load(Ordering::Relaxed)
        );
        return ExitCode::Failure(1);
    };
    let (runs, widest) = (report >> 32, report & 0xffff_ffff);
    let turns = PAIR_TURNS.load(Ordering::Relaxed);
    ensure!(turns == 2 * ROUND_TRIPS, "the pair took {turns} turns, expected {}", 2 * ROUND_TRIPS);
    let bound = u64::from(RUN_NEXT_CAP) + 1;
    ensure!(
        widest <= bound,
        "the third process waited {widest} of the pair's turns (cap {RUN_NEXT_CAP}: at most {bound})"
    );
    ensure!(runs >= turns / bound, "the third process ran only {runs} times in {turns} pair turns");
    println!(
        "test: run next cap: the third process ran {runs} times, at most {widest} of the pair's turns apart (cap {RUN_NEXT_CAP})"
    );
    ExitCode::Success
}

extern crate alloc;

beamcore::entry!(main);
