//! The README's API example, compiled and run as a test (a host test checks that README.md
//! shows exactly this code between its markers).
//! qemu-test: configs=a72-smp4
//! qemu-test: expect=^sum of squares 1\.\.=10 = 385$
//! qemu-test: expect=^worker <\d+\.\d+> ended: exit\(42\)$
//! qemu-test: expect=^monitor ours: true, name free: true$
//! qemu-test: forbid=PANIC

// README-EXAMPLE-BEGIN
#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, Priority, SpawnOptions};
use beamcore::{ExitCode, println, smp};

fn main() -> ExitCode {
    let me = sched::self_pid().expect("main runs as a process");
    // One worker per number, spread over the cores; each sends its result back.
    for n in 1..=10u64 {
        let options = SpawnOptions::default().on_core(n as usize % smp::cores_online());
        sched::spawn_with(options, move || {
            sched::bump_reductions(10); // account for the work done
            sched::send(me, Message::Word(n * n)).expect("main is alive");
        })
        .expect("spawn");
    }
    let sum: u64 = (0..10)
        .map(|_| match sched::receive() {
            Message::Word(square) => square,
            other => panic!("unexpected {other:?}"),
        })
        .sum();
    println!("sum of squares 1..=10 = {sum}");

    // A supervisor's shape: trap exits, start a worker linked to us (in the same step as the
    // spawn), name it, and monitor it; its crash then arrives as a message.
    sched::trap_exits(true);
    let options = SpawnOptions::default().priority(Priority::High);
    let worker = sched::spawn_link(options, || {
        let _request = sched::receive();
        sched::exit(ExitReason::Exit(42)); // a crash with a reason of its own
    })
    .expect("spawn");
    sched::register("worker", worker).expect("the name is free");
    let watch = sched::monitor(worker).expect("monitor");
    sched::send_named("worker", Message::Word(0)).expect("worker is alive");
    // Its links are told first, then its monitors, and its name is free by then.
    if let Some(Message::Exit { from, reason }) = sched::receive_timeout(1_000_000) {
        println!("worker {from} ended: {reason}");
    }
    if let Some(Message::Down { reference, .. }) = sched::receive_timeout(1_000_000) {
        println!("monitor ours: {}, name free: {}", reference == watch, sched::whereis("worker").is_none());
    }
    ExitCode::Success
}

beamcore::entry!(main);
// README-EXAMPLE-END
