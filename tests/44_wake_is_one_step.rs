//! A wake is one step: once `send` has made a waiting process `Runnable`, that process is in a
//! run queue (or its core's inbox) before the sender can be preempted. Were the sender's slice
//! to end in between, the receiver would be `Runnable` in no queue, where no later message can
//! wake it (it no longer waits), until the sender ran again: if something of higher priority
//! keeps the sender's core busy, that is much later or never (the stall `make soak` and
//! `workload=bounce` hit under plain MTTCG).
//!
//! Core 1 runs a sender that wakes 64 receivers (on cores 0, 2 and 3) in turn without ever
//! yielding, so the tick ends its slices at arbitrary points, and a high-priority process that
//! looks at every pass of core 1's scheduler whether the sender's slice ended inside `send`:
//! the adversarial moment. If so, it sends a probe carrying the time to the receiver the sender
//! was waking and keeps the core busy for 5 ms. A receiver that was waiting or properly queued
//! takes the probe within about a slice (the cores' tick phases under `-icount`); one left
//! `Runnable` in no queue waits out the 5 ms. Under `-icount` the run is the same every time;
//! with the enqueue done after IRQs were unmasked, the worst probe waited 5 ms.
//! qemu-test: configs=a72-smp4
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: append=slice_us=200
//! qemu-test: expect=^test: wake is one step: \d+ sends, \d+ probes, worst probe latency \d+ us \(slice 200 us\)
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=120

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use beamcore::sched::{self, Message, Pid, Priority, SpawnOptions};
use beamcore::{ExitCode, boot_config, println, time};
use beamcore_apps::ensure;

const RECEIVERS: usize = 64;
/// Sends by core 1's sender, one every `GAP_US` or so.
const SENDS: u64 = 15_000;
const GAP_US: u64 = 5;
/// How long the high-priority process stays busy once it finds the sender preempted in `send`.
const BUSY_US: u64 = 5_000;
/// Message words: a plain wake, the end, or (anything else) a probe's send time.
const WAKE: u64 = u64::MAX;
const STOP: u64 = u64::MAX - 1;

static DONE: AtomicBool = AtomicBool::new(false);
/// Core 1's sender is inside `send` to the receiver numbered `TARGET`.
static IN_SEND: AtomicBool = AtomicBool::new(false);
static TARGET: AtomicUsize = AtomicUsize::new(0);
static PROBES: AtomicU64 = AtomicU64::new(0);
static PROBES_TAKEN: AtomicU64 = AtomicU64::new(0);
static WORST_PROBE: AtomicU64 = AtomicU64::new(0);

fn spin_us(us: u64) {
    let until = time::now_count() + time::us_to_counts(us);
    while time::now_count() < until {
        core::hint::spin_loop();
    }
}

fn main() -> ExitCode {
    let main_pid = sched::self_pid().expect("main is a process");
    let mut receivers: Vec<Pid> = Vec::new();
    for i in 0..RECEIVERS {
        let core = [0, 2, 3][i % 3];
        let options = SpawnOptions::default().bound_to(core).stack_bytes(4096);
        let pid = sched::spawn_with(options, || {
            loop {
                match sched::receive() {
                    Message::Word(WAKE) => {}
                    Message::Word(STOP) => return,
                    Message::Word(sent_at) => {
                        WORST_PROBE.fetch_max(time::now_count().saturating_sub(sent_at), Ordering::Relaxed);
                        PROBES_TAKEN.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {}
                }
            }
        });
        receivers.push(pid.expect("spawn a receiver"));
    }
    let on_core_1 = SpawnOptions::default().bound_to(1);
    let targets = receivers.clone();
    sched::spawn_with(on_core_1, move || {
        for n in 0..SENDS {
            let target = n as usize % RECEIVERS;
            TARGET.store(target, Ordering::Relaxed);
            IN_SEND.store(true, Ordering::Relaxed);
            let _ = sched::send(targets[target], Message::Word(WAKE));
            IN_SEND.store(false, Ordering::Relaxed);
            spin_us(GAP_US);
        }
        DONE.store(true, Ordering::Relaxed);
        let _ = sched::send(main_pid, Message::Word(0));
    })
    .expect("spawn core 1's sender");
    // Its wait times out at once, so it runs at every pass of core 1's scheduler, ahead of the
    // sender (only max priority would run before it).
    let targets = receivers.clone();
    sched::spawn_with(on_core_1.priority(Priority::High), move || {
        while !DONE.load(Ordering::Relaxed) {
            let _ = sched::receive_timeout(1);
            if IN_SEND.load(Ordering::Relaxed) {
                PROBES.fetch_add(1, Ordering::Relaxed);
                let _ = sched::send(targets[TARGET.load(Ordering::Relaxed)], Message::Word(time::now_count()));
                spin_us(BUSY_US);
            }
        }
    })
    .expect("spawn core 1's busy process");
    let _ = sched::receive();
    for &pid in &receivers {
        let _ = sched::send(pid, Message::Word(STOP));
    }
    while sched::process_count() > 1 {
        let _ = sched::receive_timeout(1_000);
    }
    let probes = PROBES.load(Ordering::Relaxed);
    let worst_us = WORST_PROBE.load(Ordering::Relaxed) * 1_000_000 / beamcore::arch::cpu::counter_frequency();
    let slice_us = u64::from(boot_config().slice_us);
    println!("test: {probes} probes (sender preempted inside send), worst probe latency {worst_us} us");
    ensure!(probes >= 10, "the sender was preempted inside send only {probes} times: the test did not test");
    ensure!(PROBES_TAKEN.load(Ordering::Relaxed) == probes, "a probe was lost");
    ensure!(
        worst_us < 3 * slice_us,
        "a probe waited {worst_us} us (slice {slice_us} us): its receiver was left Runnable in no queue"
    );
    println!(
        "test: wake is one step: {SENDS} sends, {probes} probes, worst probe latency {worst_us} us (slice {slice_us} us)"
    );
    ExitCode::Success
}

beamcore::entry!(main);
