//! A monitor receives one `Down` message with the right reason for every way a process ends:
//! normal return, `exit` with a code, a fault, a stack overflow, a kill, and `NoProc` for a
//! process that had already ended. A process killed while it runs and that then calls `receive`
//! ends too (it used to block for ever: the kill had found it running and only set its flag).
//! qemu-test: configs=a72-smp4
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let buffer = core::hint::black_box([depth; 64]);
    if depth == u64::MAX { 0 } else { recurse(depth + 1) + buffer[1] }
}

fn expect_down(pid: Pid, expected: ExitReason) -> Result<(), Message> {
    match sched::receive_timeout(10_000_000) {
        Some(Message::Down { pid: who, reason, .. }) if who == pid && reason == expected => Ok(()),
        Some(other) => Err(other),
        None => Err(Message::Word(u64::MAX)),
    }
}

/// A kill that finds its target running (so it only sets the flag the scheduler checks at the
/// target's next turn), after which the target blocks in `receive`: it must still end, `Killed`.
/// The process kills itself, so the kill lands while it runs every time; a kill from another
/// core lands there only when it does not catch the target between two turns.
fn killed_while_running() -> Result<(), Message> {
    let victim = sched::spawn_with(SpawnOptions::default().on_core(1), || {
        let _go = sched::receive();
        let me = sched::self_pid().expect("a process");
        sched::kill(me).expect("kill a live process");
        let _ = sched::receive();
    })
    .expect("spawn victim");
    sched::monitor(victim).expect("monitor victim");
    sched::send(victim, Message::Word(0)).expect("go");
    expect_down(victim, ExitReason::Killed)
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
    if let Err(got) = killed_while_running() {
        ensure!(false, "for killed while running: got {got:?}");
    }
    let extra = sched::receive_timeout(100_000);
    ensure!(extra.is_none(), "an extra message arrived: {extra:?}");
    println!(
        "test: Down received once each for normal, exit(7), fault, stack overflow, killed, noproc, killed while running"
    );
    ExitCode::Success
}

beamcore::entry!(main);
