//! A stack that cannot grow for want of memory ends its process with a clear reason, and only
//! that process: memory is filled with idle processes until spawning fails, then a process that
//! needs 2 MiB more stack finds no page, ends with "out of memory: no page to grow its stack"
//! (its monitor told), while the idle ones still answer. Once they have ended the same recursion
//! runs to completion: its 512 pages come mostly from the stack pages the ended processes' slots
//! kept mapped, which the frame pool takes back when it runs dry.
//! qemu-test: configs=a72-smp4
//! qemu-test: memory=64M
//! qemu-test: expect=^process <\d+\.\d+> on core \d+ ended: out of memory: no page to grow its stack
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnError, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

/// Two megabytes of stack, a kilobyte a level.
#[inline(never)]
fn deep(depth: u64) -> u64 {
    let buffer = core::hint::black_box([depth as u8; 1000]);
    if depth == 0 { 0 } else { deep(depth - 1) + u64::from(buffer[7]) }
}

fn grower(main: Pid) -> impl FnOnce() + Send + 'static {
    move || {
        let _ = sched::receive();
        let sum = deep(2048);
        let _ = sched::send(main, Message::Word(sum));
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let cores = smp::cores_online();
    let options = SpawnOptions::default().stack_bytes(4 << 20).on_core(1 % cores);
    let Ok(first) = sched::spawn_with(options, grower(me)) else {
        println!("test failed: spawn the grower");
        return ExitCode::Failure(1);
    };
    ensure!(sched::monitor(first).is_ok(), "monitor");

    let mut idle: Vec<Pid> = Vec::new();
    ensure!(idle.try_reserve(100_000).is_ok(), "bookkeeping");
    let error = loop {
        let options = SpawnOptions::default().on_core(idle.len() % cores);
        match sched::spawn_with(options, move || {
            let _ = sched::receive();
            let _ = sched::send(me, Message::Word(0));
        }) {
            Ok(pid) => idle.push(pid),
            Err(error) => break error,
        }
        ensure!(idle.len() < 100_000, "memory never ran out");
    };
    ensure!(matches!(error, SpawnError::OutOfMemory(_)), "spawning stopped with {error:?}");

    ensure!(sched::send(first, Message::Word(0)).is_ok(), "go");
    match sched::receive_timeout(60_000_000) {
        Some(Message::Down { pid, reason: ExitReason::OutOfMemory, .. }) if pid == first => {}
        other => ensure!(false, "the grower: {other:?}, expected its Down with OutOfMemory"),
    }
    for &pid in &idle {
        ensure!(sched::send(pid, Message::Word(0)).is_ok(), "idle {pid} ended early");
    }
    for answered in 0..idle.len() {
        match sched::receive_timeout(60_000_000) {
            Some(Message::Word(0)) => {}
            other => ensure!(false, "answer {answered} of {}: {other:?}", idle.len()),
        }
    }
    while sched::process_count() > 1 {
        sched::yield_now();
    }

    let options = SpawnOptions::default().stack_bytes(4 << 20);
    let Ok(second) = sched::spawn_with(options, grower(me)) else {
        println!("test failed: spawn the second grower");
        return ExitCode::Failure(1);
    };
    ensure!(sched::send(second, Message::Word(0)).is_ok(), "go");
    let expected: u64 = (1..=2048u64).map(|depth| depth % 256).sum();
    match sched::receive_timeout(60_000_000) {
        Some(Message::Word(sum)) if sum == expected => {}
        other => ensure!(false, "the second grower: {other:?}, expected {expected}"),
    }
    println!(
        "test: {} idle processes filled memory ({error}); a stack that could not grow ended its process with \
         OutOfMemory, the idle ones all answered; afterwards the same 2 MiB recursion completed",
        idle.len()
    );
    ExitCode::Success
}

beamcore::entry!(main);
