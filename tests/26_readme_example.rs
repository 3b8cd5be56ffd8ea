//! The README's API example, compiled and run as a test (a host test checks that README.md
//! shows exactly this code between its markers).
//! qemu-test: configs=a72-smp4
//! qemu-test: expect=^sum of squares 1\.\.=10 = 385$
//! qemu-test: expect=^worker <\d+\.\d+> ended: exit\(42\)$
//! qemu-test: expect=^monitor ours: true, name free: true$
//! qemu-test: expect=^21 doubled = Ok\(42\)$
//! qemu-test: expect=^the timer's word: Some\(Word\(7\)\)$
//! qemu-test: forbid=PANIC

// README-EXAMPLE-BEGIN
#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, Pid, Priority, Ref, SpawnOptions};
use beamcore::{ExitCode, println, smp};

fn main() -> ExitCode {
    let me = sched::self_pid().expect("main runs as a process");
    // One worker per number, spread over the cores; each sends its result back.
    for n in 1..=10u64 {
        let options = SpawnOptions::default().on_core(n as usize % smp::cores_online());
        sched::spawn_with(options, move || {
            sched::bump_reductions(10); // account for the work done
            sched::send_value(me, n * n).expect("main is alive"); // Me ! N * N
        })
        .expect("spawn");
    }
    let sum: u64 = (0..10).map(|_| sched::receive_value::<u64>()).sum();
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

    // A server, and a call to it as gen_server:call makes one: the reply carries the call's
    // reference, and its receive skips whatever else waits in our queue.
    #[derive(Clone, Copy)]
    struct Double(Pid, Ref, u64);
    let server = sched::spawn(|| {
        loop {
            let Double(from, reference, n) = sched::receive_value::<Double>();
            let _ = sched::reply(from, reference, 2 * n);
        }
    })
    .expect("spawn");
    let call = sched::monitor_for_reply(server).expect("monitor");
    sched::send_value(server, Double(me, call.reference(), 21)).expect("server is alive");
    println!("21 doubled = {:?}", sched::receive_reply::<u64>(call, Some(1_000_000)));

    // A timer: a word to ourselves in 1 ms; the sleep leaves it queued until we look.
    sched::send_after(me, 1_000, Message::Word(7)).expect("timer");
    sched::sleep(2_000);
    println!("the timer's word: {:?}", sched::receive_timeout(0));
    ExitCode::Success
}

beamcore::entry!(main);
// README-EXAMPLE-END
