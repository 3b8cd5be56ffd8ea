//! A monitor receives one `Down` message with the right reason for every way a process ends:
//! normal return, `exit` with a code, a fault, a stack overflow, a kill, and `NoProc` for a
//! process that had already ended.
//! qemu-test: configs=a72-smp4
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, ensure, println};

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let buffer = core::hint::black_box([depth; 64]);
    if depth == u64::MAX { 0 } else { recurse(depth + 1) + buffer[1] }
}

fn expect_down(pid: Pid, expected: ExitReason) -> Result<(), Message> {
    match sched::receive_timeout(10_000_000) {
        Some(Message::Down { pid: who, reason }) if who == pid && reason == expected => Ok(()),
        Some(other) => Err(other),
        None => Err(Message::Word(u64::MAX)),
    }
}

fn main() -> ExitCode {
    let gate = SpawnOptions::default().on_core(1);
    // Each process waits for a go message, so the monitor is in place before it ends.
    let wait_go = || {
        let _ = sched::receive();
    };
    let cases: [(fn(), ExitReason); 4] = [
        (|| {}, ExitReason::Normal),
        (|| sched::exit(ExitReason::Exit(7)), ExitReason::Exit(7)),
        (
            || {
                // SAFETY: none: the store is meant to fault (address 0x10 is unmapped).
                unsafe { (0x10 as *mut u64).write_volatile(1) }
            },
            ExitReason::Fault { class: 0x25, address: 0x10 },
        ),
        (
            || {
                core::hint::black_box(recurse(0));
            },
            ExitReason::StackOverflow,
        ),
    ];
    for (body, reason) in cases {
        let pid = sched::spawn_with(gate, move || {
            wait_go();
            body();
        });
        ensure!(pid.is_ok(), "spawn for {reason}");
        let pid = pid.unwrap();
        ensure!(sched::monitor(pid).is_ok(), "monitor {pid}");
        ensure!(sched::send(pid, Message::Word(0)).is_ok(), "go {pid}");
        if let Err(got) = expect_down(pid, reason) {
            ensure!(false, "for {reason}: got {got:?}");
        }
    }
    let waiting = sched::spawn_with(gate, || {
        let _ = sched::receive();
    })
    .expect("spawn");
    ensure!(sched::monitor(waiting).is_ok(), "monitor waiting");
    ensure!(sched::kill(waiting).is_ok(), "kill");
    if let Err(got) = expect_down(waiting, ExitReason::Killed) {
        ensure!(false, "for killed: got {got:?}");
    }
    ensure!(sched::monitor(waiting).is_ok(), "monitor of an ended pid");
    if let Err(got) = expect_down(waiting, ExitReason::NoProc) {
        ensure!(false, "for noproc: got {got:?}");
    }
    let extra = sched::receive_timeout(100_000);
    ensure!(extra.is_none(), "an extra message arrived: {extra:?}");
    println!("test: Down received once each for normal, exit(7), fault, stack overflow, killed, noproc");
    ExitCode::Success
}

beamcore::entry!(main);
