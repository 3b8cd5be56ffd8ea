//! Let it crash: a worker that dies gives back everything it owned. A supervisor restarts a
//! worker RESTARTS times (below) in each of three ways to die; each worker allocates 4 KiB in several
//! boxes and a `Vec`, and has a boxed message waiting in its own queue that it never receives:
//! - it panics (its stack is unwound: the boxes and the `Vec` are dropped);
//! - it is killed while it waits in a selective `receive` (it unwinds from the receive);
//! - it is killed while it loops calling `bump_reductions` (it unwinds from that call).
//!
//! After each way, `memory_in_use()` is what it was before the loop, to the page, and
//! `heap_not_reclaimed_bytes()` has not moved. Then the one end that cannot unwind: a worker
//! killed while it spins with no kernel call is ended at its next preemption after a slice of
//! grace, and the 4 KiB it held is counted as not reclaimed.
//!
//! Under -icount: a slice of grace is then a fixed count of instructions. Without it a slice is
//! host time, and a vCPU the host does not run for a millisecond loses its grace slice without
//! having executed it (about once in 10,000 kills here), which says nothing about the kernel.
//! qemu-test: configs=a72-smp1,a72-smp4
//! qemu-test: expect=^test: let it crash: 3 x \d+ restarts, memory back to the page each time, 0 bytes not reclaimed; a spinning worker killed without unwinding left \d+ bytes counted$
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=2400
//! qemu-test: qemu-args=-icount shift=0,sleep=off

#![no_std]
#![no_main]

extern crate alloc;

use alloc::boxed::Box;
use alloc::vec::Vec;

use beamcore::sched::{self, ExitReason, Message, Pid, SpawnOptions};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

/// Restarts per way of dying: 1,000 in `make test`; `make test-let-it-crash` builds it with
/// LET_IT_CRASH_RESTARTS=100000 (each restart costs some milliseconds of emulation, so the full
/// count would add minutes to every run of the suite).
const RESTARTS: u64 = match option_env!("LET_IT_CRASH_RESTARTS") {
    Some(digits) => parse_u64(digits),
    None => 1_000,
};

/// `digits` as a number (a build-time setting: a mistake stops the build).
const fn parse_u64(digits: &str) -> u64 {
    let bytes = digits.as_bytes();
    assert!(!bytes.is_empty(), "LET_IT_CRASH_RESTARTS is empty");
    let mut value = 0u64;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "LET_IT_CRASH_RESTARTS is not a number");
        value = value * 10 + (bytes[i] - b'0') as u64;
        i += 1;
    }
    value
}

/// The page `memory_in_use` is compared to.
const PAGE_BYTES: usize = 4096;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Death {
    Panic,
    KilledInReceive,
    KilledInBumpLoop,
}

/// What a worker holds: 4 KiB on the heap in five allocations, four boxes and a `Vec`.
type Held = (Box<[u8; 512]>, Box<[u64; 64]>, Box<[u8; 1024]>, Box<u64>, Vec<u8>);

fn hold() -> Held {
    core::hint::black_box((
        Box::new([1; 512]),
        Box::new([2; 64]),
        Box::new([3; 1024]),
        Box::new(4),
        alloc::vec![5; 4096 - 512 - 512 - 1024 - 8],
    ))
}

fn worker(death: Death, supervisor: Pid) {
    let held = hold();
    // The go word comes after the boxed message (one sender: in order), so the boxed message is
    // in this queue, unreceived, from here on.
    let go = sched::receive_matching(|m| matches!(m, Message::Word(_)));
    core::hint::black_box(&go);
    match death {
        Death::Panic => panic!("worker crashes holding {} bytes", held.4.len() + 2568),
        Death::KilledInReceive => {
            sched::send(supervisor, Message::Word(1)).expect("supervisor alive");
            // Waits for a second word that never comes; the boxed message does not match.
            let never = sched::receive_matching(|m| matches!(m, Message::Word(_)));
            core::hint::black_box(never);
        }
        Death::KilledInBumpLoop => {
            sched::send(supervisor, Message::Word(1)).expect("supervisor alive");
            loop {
                sched::bump_reductions(1);
            }
        }
    }
    core::hint::black_box(held);
}

/// One worker's life: spawned with a monitor, sent a boxed message and its go word, then (for
/// the kills) killed once it says it is in place; returns the reason its `Down` gave.
fn one_life(death: Death, n: u64, me: Pid) -> Result<ExitReason, &'static str> {
    let options = SpawnOptions::default().on_core(n as usize % smp::cores_online());
    let (pid, reference) = sched::spawn_monitor(options, move || worker(death, me)).map_err(|_| "spawn")?;
    sched::send_value(pid, Box::new([n; 32])).map_err(|_| "send the boxed message")?;
    sched::send(pid, Message::Word(n)).map_err(|_| "send go")?;
    if death != Death::Panic {
        match sched::receive_timeout(60_000_000) {
            Some(Message::Word(1)) => {}
            _ => return Err("no word that the worker is in place"),
        }
        sched::kill(pid).map_err(|_| "kill")?;
    }
    match sched::receive_timeout(60_000_000) {
        Some(Message::Down { reference: r, pid: p, reason }) if r == reference && p == pid => Ok(reason),
        _ => Err("no Down for the worker"),
    }
}

/// The kernel's count of heap bytes not reclaimed (this test runs at `telemetry=full`).
fn not_reclaimed() -> u64 {
    sched::heap_not_reclaimed_bytes().expect("telemetry=full keeps heap balances")
}

fn restarts(death: Death, me: Pid) -> Result<(), &'static str> {
    let expected = if death == Death::Panic { ExitReason::Panic } else { ExitReason::Killed };
    // One life first: the first makes what every later one reuses (the worker's slot and its
    // tables, the core's message-node cache), which is not what a crash leaves behind.
    if one_life(death, 0, me)? != expected {
        return Err("a worker ended with another reason");
    }
    let baseline = sched::process_count();
    let memory = sched::memory_in_use();
    let lost = not_reclaimed();
    for n in 0..RESTARTS {
        if one_life(death, n, me)? != expected {
            return Err("a worker ended with another reason");
        }
    }
    let now = sched::memory_in_use();
    println!(
        "{death:?}: {RESTARTS} restarts, memory in use {memory} bytes before, {now} after; {} bytes more counted as \
         not reclaimed",
        not_reclaimed() - lost
    );
    if now.abs_diff(memory) >= PAGE_BYTES {
        return Err("memory in use is not back to the page");
    }
    if not_reclaimed() != lost {
        return Err("heap counted as not reclaimed after unwound ends");
    }
    if sched::process_count() != baseline {
        return Err("a process was left behind");
    }
    Ok(())
}

/// A worker killed while it spins with no kernel call: it never reaches a safe point, so after
/// its slice of grace it is ended where it stands, and what it holds is counted.
fn spinning_worker_killed(me: Pid) -> Result<u64, &'static str> {
    let lost = not_reclaimed();
    let options = SpawnOptions::default().on_core(smp::cores_online() - 1);
    let (pid, reference) = sched::spawn_monitor(options, move || {
        let held = hold();
        sched::send(me, Message::Word(1)).expect("supervisor alive");
        loop {
            core::hint::black_box(&held);
            core::hint::spin_loop();
        }
    })
    .map_err(|_| "spawn the spinner")?;
    match sched::receive_timeout(60_000_000) {
        Some(Message::Word(1)) => {}
        _ => return Err("no word that the spinner runs"),
    }
    sched::kill(pid).map_err(|_| "kill the spinner")?;
    match sched::receive_timeout(60_000_000) {
        Some(Message::Down { reference: r, reason: ExitReason::Killed, .. }) if r == reference => {}
        _ => return Err("no Down Killed for the spinner"),
    }
    let counted = not_reclaimed() - lost;
    if counted < 4096 {
        return Err("the spinner's 4 KiB was not counted as not reclaimed");
    }
    Ok(counted)
}

beamcore::entry!(main);

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    // Thousands of crashes: their reports off (the crashes are the same).
    sched::set_crash_reports(false);
    for death in [Death::Panic, Death::KilledInReceive, Death::KilledInBumpLoop] {
        if let Err(why) = restarts(death, me) {
            ensure!(false, "{death:?}: {why}");
        }
    }
    let counted = match spinning_worker_killed(me) {
        Ok(counted) => counted,
        Err(why) => {
            ensure!(false, "{why}");
            0
        }
    };
    println!(
        "test: let it crash: 3 x {RESTARTS} restarts, memory back to the page each time, 0 bytes not reclaimed; \
         a spinning worker killed without unwinding left {counted} bytes counted"
    );
    ExitCode::Success
}
