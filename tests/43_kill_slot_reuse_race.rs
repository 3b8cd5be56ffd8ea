//! A kill reaches only the process its pid names, also when it races with that process's end
//! and a new process spawned into the same slot (the kernel's own `kill`; `kill_model` checks
//! the protocol with loom). Each round, main (core 0) spawns a process that computes for a
//! while (a different time each round, under one slice) and returns, and hands its pid to a
//! killer bound to core 1, which kills it over and over (a running process acts on a kill only
//! when next scheduled, so it still ends normally). When it has ended, main spawns a second
//! process, which reuses the slot (free slots are reused last-in first-out), waits 5 ms and
//! returns. No kill ever named the second process: it must end normally.
//!
//! Were `kill` to check the generation under the slot lock but set the kill flag after
//! releasing it, a killer held up between the two would mark the new occupant. The hold-up is
//! made likely, not left to chance: the lock masks IRQs, so a timer tick that comes due while
//! the killer holds it is taken right after the release, before the mark, and a busy process
//! beside the killer on core 1 then takes the core for a whole slice, during which the first
//! process may end and the second be spawned. Under `-icount shift=0,sleep=off` every run takes
//! the same course.
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: expect=^test: \d+ rounds, slot reused in every one, no kill reached a newer process
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println, time};
use beamcore_apps::ensure;

const ROUNDS: u64 = 300;
/// How long the second process of a round lives (waiting for nothing): longer than a slice.
const SECOND_LIVES_US: u64 = 5_000;
/// Kills the killer issues between two looks at its mailbox.
const KILLS_PER_LOOK: u32 = 16;

/// Successful kills (of the first process of each round).
static KILLS: AtomicU64 = AtomicU64::new(0);
/// Ends the busy processes.
static STOP: AtomicBool = AtomicBool::new(false);

/// A process that never yields (the timer preempts it), sharing `core` with the killer.
fn busy(core: usize) -> bool {
    sched::spawn_with(SpawnOptions::default().bound_to(core).stack_bytes(4096), || {
        while !STOP.load(Ordering::Relaxed) {
            core::hint::spin_loop();
        }
    })
    .is_ok()
}

fn down_of(pid: Pid) -> Option<ExitReason> {
    match sched::receive_timeout(10_000_000) {
        Some(Message::Down { pid: ended, reason, .. }) if ended == pid => Some(reason),
        _ => None,
    }
}

fn main() -> ExitCode {
    ensure!(beamcore::smp::cores_online() >= 2, "needs 2 cores");
    let killer = sched::spawn_with(SpawnOptions::default().bound_to(1), move || {
        let mut target: Option<Pid> = None;
        loop {
            match sched::receive_timeout(0) {
                Some(Message::Boxed(boxed)) => match boxed.downcast::<Pid>() {
                    Ok(pid) => target = Some(*pid),
                    Err(_) => return,
                },
                Some(_) => return,
                None => {}
            }
            if let Some(pid) = target {
                for _ in 0..KILLS_PER_LOOK {
                    if sched::kill(pid).is_err() {
                        target = None;
                        break;
                    }
                    KILLS.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    let Ok(killer) = killer else {
        ensure!(false, "spawn killer: {killer:?}");
        unreachable!()
    };
    ensure!(busy(1), "spawn the busy process");
    for round in 0..ROUNDS {
        // Under a slice (1 ms), so it is not preempted: it runs from start to end in one turn.
        let computes = time::us_to_counts(round * 337 % 900);
        let first = sched::spawn_with(SpawnOptions::default().bound_to(0).stack_bytes(4096), move || {
            let started = time::now_count();
            while time::now_count() - started < computes {
                core::hint::spin_loop();
            }
        });
        let Ok(first) = first else {
            ensure!(false, "round {round}: spawn: {first:?}");
            unreachable!()
        };
        ensure!(sched::monitor(first).is_ok(), "round {round}: monitor {first}");
        ensure!(sched::send(killer, Message::Boxed(Box::new(first))).is_ok(), "killer ended");
        let reason = down_of(first);
        ensure!(
            matches!(reason, Some(ExitReason::Normal | ExitReason::Killed)),
            "round {round}: {first} ended {reason:?}"
        );
        let second = sched::spawn_with(SpawnOptions::default().bound_to(0).stack_bytes(4096), || {
            let _ = sched::receive_timeout(SECOND_LIVES_US);
        });
        let Ok(second) = second else {
            ensure!(false, "round {round}: spawn: {second:?}");
            unreachable!()
        };
        ensure!(sched::monitor(second).is_ok(), "round {round}: monitor {second}");
        ensure!(
            second.index() == first.index(),
            "round {round}: slot not reused: {second} spawned right after {first} ended"
        );
        let reason = down_of(second);
        ensure!(
            reason == Some(ExitReason::Normal),
            "round {round}: a kill of {first} reached {second}, the newer process in its slot: it ended {reason:?}"
        );
    }
    ensure!(sched::send(killer, Message::Word(0)).is_ok(), "killer ended early");
    STOP.store(true, Ordering::Relaxed);
    println!(
        "test: {ROUNDS} rounds, slot reused in every one, no kill reached a newer process ({} kills)",
        KILLS.load(Ordering::Relaxed)
    );
    ExitCode::Success
}

beamcore::entry!(main);
