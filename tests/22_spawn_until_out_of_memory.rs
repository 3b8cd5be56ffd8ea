//! Spawning until memory runs out gives `SpawnError::OutOfMemory` (never a panic or a hang),
//! and the kernel still runs every process it has: each answers a message, stops, and the
//! memory can be used again.
//! qemu-test: configs=a72-smp4
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use beamcore::sched::{self, Message, Pid, SpawnError, SpawnOptions};
use beamcore::{ExitCode, ensure, println, smp};

fn echo_until_stopped(main: Pid) {
    loop {
        match sched::receive() {
            Message::Word(0) => return,
            Message::Word(n) => sched::send(main, Message::Word(n)).expect("main alive"),
            _ => {}
        }
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let cores = smp::cores_online();
    let mut alive: Vec<Pid> = Vec::new();
    ensure!(alive.try_reserve(4096).is_ok(), "bookkeeping");
    let error = loop {
        let options = SpawnOptions::default().stack_bytes(256 * 1024).on_core(alive.len() % cores);
        match sched::spawn_with(options, move || echo_until_stopped(me)) {
            Ok(pid) => alive.push(pid),
            Err(error) => break error,
        }
        ensure!(alive.len() < 4096, "memory never ran out");
    };
    ensure!(matches!(error, SpawnError::OutOfMemory(_)), "expected OutOfMemory, got {error:?}");
    let count = alive.len();
    ensure!(count > 10, "only {count} processes fit");
    for (i, &pid) in alive.iter().enumerate() {
        ensure!(sched::send(pid, Message::Word(i as u64 + 1)).is_ok(), "send to {pid}");
    }
    let mut answered = 0;
    while answered < count {
        match sched::receive_timeout(20_000_000) {
            Some(Message::Word(_)) => answered += 1,
            other => ensure!(false, "answer {answered} of {count}: {other:?}"),
        }
    }
    for &pid in &alive {
        let _ = sched::send(pid, Message::Word(0));
    }
    while alive.iter().any(|&pid| sched::is_alive(pid)) {
        sched::yield_now();
    }
    let again = sched::spawn_with(SpawnOptions::default().stack_bytes(256 * 1024), || {});
    ensure!(again.is_ok(), "spawn after freeing: {again:?}");
    println!(
        "test: {count} processes with 256 KiB stacks, then {error}; all {count} answered and stopped; spawning works again"
    );
    ExitCode::Success
}

beamcore::entry!(main);
