//! The README's API example, compiled and run as a test (a host test checks that README.md
//! shows exactly this code between its markers).
//! qemu-test: configs=a72-smp4
//! qemu-test: expect=^sum of squares 1\.\.=10 = 385$
//! qemu-test: expect=^worker <\d+\.\d+> ended: normal$
//! qemu-test: forbid=PANIC

// README-EXAMPLE-BEGIN
#![no_std]
#![no_main]

use beamcore::sched::{self, Message, Priority, SpawnOptions};
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

    // A high-priority worker we monitor: we are told how it ended. It waits for a go message,
    // so the monitor is in place before it can end.
    let options = SpawnOptions::default().priority(Priority::High);
    let worker = sched::spawn_with(options, || {
        let _go = sched::receive();
    })
    .expect("spawn");
    sched::monitor(worker).expect("monitor");
    sched::send(worker, Message::Word(0)).expect("worker is alive");
    if let Some(Message::Down { pid, reason, .. }) = sched::receive_timeout(1_000_000) {
        println!("worker {pid} ended: {reason}");
    }
    ExitCode::Success
}

beamcore::entry!(main);
// README-EXAMPLE-END
