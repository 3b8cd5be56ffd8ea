//! Messages: FIFO from one sender to one receiver across cores, none lost or duplicated;
//! `receive_timeout` gives up when nothing comes; sending to an ended process is an error,
//! also when its slot has been reused by a newer process (the pid's generation differs).
//! qemu-test: configs=a72-smp4,a72-smp1
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use beamcore::sched::{self, Message, SendError, SpawnOptions};
use beamcore::{ExitCode, ensure, println, smp, time};

const COUNT: u64 = 20_000;

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let other_core = smp::cores_online() - 1;
    let sender = sched::spawn_with(SpawnOptions::default().on_core(other_core), move || {
        for n in 1..=COUNT {
            sched::send(me, Message::Word(n)).expect("receiver alive");
            if n % 64 == 0 {
                sched::yield_now();
            }
        }
    });
    ensure!(sender.is_ok(), "spawn sender");
    for expected in 1..=COUNT {
        match sched::receive_timeout(10_000_000) {
            Some(Message::Word(n)) => ensure!(n == expected, "got message {n}, expected {expected}"),
            other => ensure!(false, "message {expected}: {other:?}"),
        }
    }

    let started = time::now_ticks();
    let nothing = sched::receive_timeout(20_000);
    let waited = time::now_ticks() - started;
    ensure!(nothing.is_none(), "receive_timeout returned {nothing:?} with nobody sending");
    ensure!(waited >= time::us_to_ticks(20_000), "receive_timeout returned early after {waited} ticks");

    let short_lived = sched::spawn(|| {}).expect("spawn");
    while sched::is_alive(short_lived) {
        sched::yield_now();
    }
    let refused = sched::send(short_lived, Message::Word(1));
    ensure!(refused == Err(SendError::NoProc(short_lived)), "send to ended pid: {refused:?}");
    // Reuse slots until one lands in the ended process's slot; the old pid must still fail.
    let mut reused = None;
    for _ in 0..64 {
        let pid = sched::spawn(|| {
            let _ = sched::receive_timeout(1_000_000);
        })
        .expect("spawn");
        if pid.index() == short_lived.index() {
            reused = Some(pid);
            break;
        }
    }
    if let Some(newer) = reused {
        ensure!(newer.generation() != short_lived.generation(), "reused slot kept its generation");
        let stale = sched::send(short_lived, Message::Word(2));
        ensure!(stale == Err(SendError::NoProc(short_lived)), "stale pid reached the new process: {stale:?}");
        ensure!(sched::send(newer, Message::Word(3)).is_ok(), "new process unreachable");
    }
    println!(
        "test: {COUNT} messages in order across cores; timeout after {waited} ticks; send to ended pid refused{}",
        if reused.is_some() { "; stale pid refused after slot reuse" } else { "" }
    );
    ExitCode::Success
}

beamcore::entry!(main);
