//! Spawning until memory runs out gives `SpawnError::OutOfMemory` (never a panic or a hang), at
//! several memory sizes, and the kernel still runs every process it has: each answers a
//! message, stops, and the memory can be used again. Each process may grow its stack to 256
//! KiB, but only what it uses is RAM: thousands fit where a few hundred 256 KiB stacks would.
//! qemu-test: configs=a72-smp4
//! qemu-test: memory=32M,128M,512M
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use beamcore::sched::{self, Message, Pid, SpawnError, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

/// More than fit in 512 MiB (about 5.6 KiB each with a 256 KiB reservation).
const MOST: usize = 200_000;

fn echo_until_stopped(main: Pid) {
    loop {
        match sched::receive() {
            Message::Word(0) => return,
            Message::Word(n) => {
                while let Err(sched::SendError::OutOfMemory(_)) = sched::send(main, Message::Word(n)) {
                    sched::yield_now();
                }
            }
            _ => {}
        }
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let cores = smp::cores_online();
    let ram_mib = beamcore::platform().memory.iter().map(|r| r.bytes).sum::<u64>() >> 20;
    let mut alive: Vec<Pid> = Vec::new();
    ensure!(alive.try_reserve(MOST).is_ok(), "bookkeeping");
    let error = loop {
        let options = SpawnOptions::default().stack_bytes(256 * 1024).on_core(alive.len() % cores);
        match sched::spawn_with(options, move || echo_until_stopped(me)) {
            Ok(pid) => alive.push(pid),
            Err(error) => break error,
        }
        ensure!(alive.len() < MOST, "memory never ran out");
    };
    ensure!(matches!(error, SpawnError::OutOfMemory(_)), "expected OutOfMemory, got {error:?}");
    let count = alive.len();
    // 256 KiB stacks fully backed would allow RAM / 260 KiB; growing ones far more.
    let backed = (ram_mib as usize) * 1024 / 260;
    ensure!(count > 8 * backed, "only {count} processes fit in {ram_mib} MiB");
    for (i, &pid) in alive.iter().enumerate() {
        ensure!(sched::send(pid, Message::Word(i as u64 + 1)).is_ok(), "send to {pid}");
    }
    let mut answered = 0;
    while answered < count {
        match sched::receive_timeout(60_000_000) {
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
        "test: {count} processes with 256 KiB stacks in {ram_mib} MiB, then {error}; all {count} answered and \
         stopped; spawning works again"
    );
    ExitCode::Success
}

beamcore::entry!(main);
