//! A program's formatting code is the program's own: a `Display` that panics, in a process's
//! `println!` and in the message of its `panic!`, ends only that process (its monitor gets
//! `Panic` and the console the inner panic's `ended:` line), never the machine. The lines of a
//! process that prints past the inline buffer (a 1 KiB line) and past the longest line kept
//! (100 KiB, cut and marked) come out whole, and a run of prints from every core keeps each
//! line in one piece.
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: expect-count=2 ^process <\d+\.\d+> on core \d+ ended: panic: inner panic inside Display at
//! qemu-test: expect=^long: x{1024}$
//! qemu-test: expect=^cut: y{65000,65535} \[line cut\]$
//! qemu-test: expect-count=64 ^chorus \d+ line \d+: (z{40})$
//! qemu-test: expect=^test: a panicking Display ended only its process, twice
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

use core::fmt;

use beamcore::sched::{self, ExitReason, Message};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;
use beamcore_apps::testing::{PanickingDisplay, down_must_arrive};

struct Repeat(char, usize);

impl fmt::Display for Repeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for _ in 0..self.1 {
            fmt::Write::write_char(f, self.0)?;
        }
        Ok(())
    }
}

fn run(body: fn()) -> Option<ExitReason> {
    let pid = sched::spawn(move || {
        let _go = sched::receive();
        body();
    })
    .ok()?;
    sched::monitor(pid).ok()?;
    sched::send(pid, Message::Word(0)).ok()?;
    down_must_arrive(pid)
}

fn main() -> ExitCode {
    let in_println = run(|| println!("before {} after", PanickingDisplay));
    ensure!(in_println == Some(ExitReason::Panic), "println of a panicking Display: {in_println:?}");
    let in_panic = run(|| panic!("outer {}", PanickingDisplay));
    ensure!(in_panic == Some(ExitReason::Panic), "panic! with a panicking Display: {in_panic:?}");

    let long = run(|| println!("long: {}", Repeat('x', 1024)));
    ensure!(long == Some(ExitReason::Normal), "a 1 KiB line: {long:?}");
    let cut = run(|| println!("cut: {}", Repeat('y', 100 * 1024)));
    ensure!(cut == Some(ExitReason::Normal), "a 100 KiB line: {cut:?}");

    let mut chorus = [None; 8];
    for (i, slot) in chorus.iter_mut().enumerate() {
        // Monitored from birth: a member may end before a separate `monitor` would be set.
        let pid = sched::spawn_monitor(sched::SpawnOptions::default(), move || {
            for line in 0..8 {
                println!("chorus {i} line {line}: {}", Repeat('z', 40));
                sched::yield_now();
            }
        });
        ensure!(pid.is_ok(), "spawn chorus {i}");
        let (pid, _) = pid.unwrap();
        *slot = Some(pid);
    }
    // Their `Down`s come in any order: each must be one of theirs, once, and normal.
    for _ in 0..chorus.len() {
        match sched::receive_timeout(20_000_000) {
            Some(Message::Down { pid, reason, .. }) => {
                let member = chorus.iter().position(|c| *c == Some(pid));
                ensure!(member.is_some(), "a Down from {pid}, not a chorus member (or twice)");
                ensure!(reason == ExitReason::Normal, "chorus {pid}: {reason}");
                chorus[member.unwrap()] = None;
            }
            other => ensure!(false, "waiting for the chorus: {other:?}"),
        }
    }
    println!("test: a panicking Display ended only its process, twice; long and cut lines came out whole");
    ExitCode::Success
}

beamcore::entry!(main);
