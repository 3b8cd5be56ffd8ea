//! A chain of 10,000 linked processes: each spawns the next with `spawn_link`; the last one
//! crashes (a panic), and its reason travels the chain, each process ending with it, until the
//! head, which traps exits and receives exactly one `Exit` (from its neighbour, `panic`).
//! Afterwards every process of the chain is gone.
//! qemu-test: configs=a72-smp1,a72-smp4,a72-smp8
//! qemu-test: expect=^test: chain of 10000 linked processes ended, head got one Exit
//! qemu-test: expect-count=1 ^process <\d+\.\d+> on core \d+ ended: panic: the end of the chain
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=300

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

const LENGTH: u64 = 10_000;

/// Link `n` of the chain: spawns link `n + 1` linked to it, or, the last, tells the head the
/// chain is built and crashes.
fn link_of_chain(n: u64, head: Pid) {
    if n == LENGTH {
        sched::send(head, Message::Word(n)).expect("head alive");
        panic!("the end of the chain");
    }
    sched::spawn_link(SpawnOptions::default().stack_bytes(4096), move || link_of_chain(n + 1, head))
        .expect("spawn the next link");
    // Waits for ever: only the exit signal ends it.
    loop {
        let _ = sched::receive();
    }
}

fn main() -> ExitCode {
    let head = sched::self_pid().unwrap();
    let baseline = sched::process_count();
    sched::trap_exits(true);
    let first = sched::spawn_link(SpawnOptions::default().stack_bytes(4096), move || link_of_chain(1, head)).unwrap();
    match sched::receive_timeout(60_000_000) {
        Some(Message::Word(LENGTH)) => {}
        other => ensure!(false, "chain built: {other:?}"),
    }
    match sched::receive_timeout(60_000_000) {
        Some(Message::Exit { from, reason: ExitReason::Panic }) if from == first => {}
        other => ensure!(false, "the head's Exit: {other:?}"),
    }
    let mut spins = 0u64;
    while sched::process_count() != baseline {
        sched::yield_now();
        spins += 1;
        ensure!(spins < 100_000_000, "{} processes alive, {baseline} at the start", sched::process_count());
    }
    sched::send(head, Message::Word(0)).unwrap();
    match sched::receive_timeout(60_000_000) {
        Some(Message::Word(0)) => {}
        other => ensure!(false, "a second signal at the head: {other:?}"),
    }
    println!("test: chain of {LENGTH} linked processes ended, head got one Exit");
    ExitCode::Success
}

beamcore::entry!(main);
