//! A supervisor-shaped program: it traps exits, starts a worker with `spawn_link` and registers
//! it by name, and restarts it each time it crashes, 10,000 times. Each worker serves one
//! request sent by name, then crashes in one of three ways: `exit` with a reason of its own, a
//! fault, or (every 1,000th) a panic. The supervisor must see each crash exactly once with its
//! reason, the name must always lead to the live worker, and at the end as many processes must
//! be alive as at the start (no process, name or link left behind).
//! qemu-test: configs=a72-smp1,a72-smp4,a72-smp8
//! qemu-test: expect=^test: 10000 restarts, 10000 exits seen, processes back to \d+
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=300

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const RESTARTS: u64 = 10_000;

/// How worker `n` crashes.
fn crash_reason(n: u64) -> ExitReason {
    match n % 1_000 {
        999 => ExitReason::Panic,
        r if r % 2 == 0 => ExitReason::Exit(n),
        _ => ExitReason::Fault { class: 0x25, address: 0x20 },
    }
}

fn worker(n: u64, supervisor: Pid) {
    if let Message::Word(request) = sched::receive() {
        sched::send(supervisor, Message::Word(request + 1)).expect("supervisor alive");
    }
    match crash_reason(n) {
        ExitReason::Panic => panic!("worker {n} crashes"),
        ExitReason::Exit(code) => sched::exit(ExitReason::Exit(code)),
        _ => {
            // SAFETY: none: the store is meant to fault (address 0x20 is unmapped).
            unsafe { (0x20 as *mut u64).write_volatile(1) }
        }
    }
}

fn start(n: u64, supervisor: Pid) -> Pid {
    let options = SpawnOptions::default().on_core(n as usize % smp::cores_online()).stack_bytes(4096);
    let pid = sched::spawn_link(options, move || worker(n, supervisor)).expect("spawn worker");
    sched::register("worker", pid).expect("the name is free");
    pid
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let baseline = sched::process_count();
    sched::trap_exits(true);
    let mut current = start(0, me);
    let mut exits = 0;
    for n in 0..RESTARTS {
        ensure!(sched::whereis("worker") == Some(current), "restart {n}: the name leads elsewhere");
        sched::send_named("worker", Message::Word(n)).expect("send by name");
        match sched::receive_timeout(60_000_000) {
            Some(Message::Word(w)) if w == n + 1 => {}
            other => ensure!(false, "restart {n}: reply {other:?}"),
        }
        match sched::receive_timeout(60_000_000) {
            Some(Message::Exit { from, reason }) if from == current => {
                let expected = crash_reason(n);
                let same = match (reason, expected) {
                    (ExitReason::Fault { class, address }, ExitReason::Fault { .. }) => {
                        class == 0x25 && address == 0x20
                    }
                    _ => reason == expected,
                };
                ensure!(same, "restart {n}: worker ended {reason}, expected {expected}");
                exits += 1;
            }
            other => ensure!(false, "restart {n}: {other:?}"),
        }
        // The name is freed by the end, which came before the Exit.
        ensure!(sched::whereis("worker").is_none(), "restart {n}: the name outlived its worker");
        if n + 1 < RESTARTS {
            current = start(n + 1, me);
        }
    }
    ensure!(sched::process_count() == baseline, "{} processes alive, {baseline} at the start", sched::process_count());
    ensure!(sched::process_info(me).is_some_and(|i| i.links.is_empty()), "links left at the supervisor");
    println!("test: {RESTARTS} restarts, {exits} exits seen, processes back to {baseline}");
    ExitCode::Success
}

beamcore::entry!(main);
