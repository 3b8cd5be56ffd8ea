//! `max_processes` bounds the processes alive at once: with `max_processes=1000`, spawning
//! fails with `TableFull` once 1,000 are alive (main among them), and works again as soon as
//! one ends. The slot the ended one leaves is reused, and its old pid reaches nothing: `send`,
//! `kill` and `monitor` see it as ended although its slot holds a live process again.
//! qemu-test: configs=a72-smp4
//! qemu-test: append=max_processes=1000
//! qemu-test: expect=^test: .*spawn: process limit reached \(1000 processes alive; bootarg max_processes\)
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use beamcore::sched::{self, ExitReason, Message, Pid, SendError, SpawnError, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

fn idle(main: Pid) -> impl FnOnce() + Send + 'static {
    move || {
        let _ = sched::receive();
        let _ = sched::send(main, Message::Word(1));
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let cores = smp::cores_online();
    ensure!(sched::process_limit() == 1000, "limit {}", sched::process_limit());
    let mut alive: Vec<Pid> = Vec::new();
    let error = loop {
        match sched::spawn_with(SpawnOptions::default().on_core(alive.len() % cores), idle(me)) {
            Ok(pid) => alive.push(pid),
            Err(error) => break error,
        }
        ensure!(alive.len() <= 1000, "more than 1000 processes alive");
    };
    ensure!(error == SpawnError::TableFull, "spawn {} failed with {error:?}, expected TableFull", alive.len() + 1);
    ensure!(alive.len() == 999, "{} spawned besides main, expected 999", alive.len());
    ensure!(sched::process_count() == 1000, "{} alive", sched::process_count());

    // One ends; its slot is free, and the next spawn gets it (the most recently freed first).
    let ended = alive.swap_remove(500);
    ensure!(sched::send(ended, Message::Word(0)).is_ok(), "send to {ended}");
    ensure!(sched::receive_timeout(10_000_000).is_some(), "its answer");
    // Its slot is released a moment after it stops being alive (at the end of its core's
    // clean-up): until then the table is still full.
    let again = loop {
        match sched::spawn_with(SpawnOptions::default(), idle(me)) {
            Ok(pid) => break pid,
            Err(SpawnError::TableFull) => sched::yield_now(),
            Err(other) => {
                println!("test failed: spawn after one ended: {other}");
                return ExitCode::Failure(1);
            }
        }
    };
    ensure!(again.index() == ended.index(), "{again} did not reuse the slot of {ended}");
    ensure!(again.generation() != ended.generation(), "{again} has the generation of {ended}");
    ensure!(sched::send(ended, Message::Word(0)) == Err(SendError::NoProc(ended)), "send to a stale pid");
    ensure!(sched::kill(ended) == Err(SendError::NoProc(ended)), "kill of a stale pid");
    ensure!(sched::monitor(ended).is_ok(), "monitor a stale pid");
    match sched::receive_timeout(10_000_000) {
        Some(Message::Down { pid, reason: ExitReason::NoProc, .. }) if pid == ended => {}
        other => ensure!(false, "monitor of a stale pid gave {other:?}"),
    }
    ensure!(sched::is_alive(again), "the stale pid's kill reached {again}");
    let full = sched::spawn_with(SpawnOptions::default(), idle(me));
    ensure!(full == Err(SpawnError::TableFull), "at the limit again: {full:?}");
    alive.push(again);

    for &pid in &alive {
        ensure!(sched::send(pid, Message::Word(0)).is_ok(), "send to {pid}");
    }
    for answered in 0..alive.len() {
        ensure!(sched::receive_timeout(10_000_000).is_some(), "answer {answered}");
    }
    while sched::process_count() > 1 {
        sched::yield_now();
    }
    let after = sched::spawn(|| {});
    ensure!(after.is_ok(), "spawn after all ended: {after:?}");
    println!(
        "test: 999 processes and main alive, then {error}; one ended, its slot reused by {again} and its pid {ended} \
         refused by send, kill and monitor; all ended and spawning works again"
    );
    ExitCode::Success
}

beamcore::entry!(main);
