//! The races of a core leaving, with real parallelism (no `-icount`): while main takes one core
//! after another offline and back (`ROUNDS` times), on every core at once
//!
//! - receivers get numbered messages from senders on other cores (wakes into the inboxes of
//!   cores that are leaving or have left), each checking every sender's arrive complete, in
//!   order and once;
//! - sleepers loop in `receive_timeout` (deadlines pending on the leaving core, handed over);
//! - bursts of short processes are spawned onto the next core to leave just before it goes
//!   (thieves mid-steal from it while it empties its queues).
//!
//! Every process reports exactly once at its end, and the scheduler's counters balance
//! (spawned = completed + main): nothing lost, nothing run twice.
//! qemu-test: configs=a72-smp4,a72-smp8,gicv3-smp4
//! qemu-test: expect=^test: offline races: \d+ transitions, \d+ messages, \d+ timeouts, \d+ burst processes, \d+ moved
//! qemu-test: forbid=PANIC
//! qemu-test: timeout=240

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use beamcore::sched::{self, Message, SpawnOptions, telemetry::total};
use beamcore::{ExitCode, println, smp};
use beamcore_apps::ensure;

const ROUNDS: usize = 24;
const MESSAGES: u64 = 300;
const SLEEPS: u64 = 60;
const BURST: u64 = 40;
/// Report tags (high bits of the final word), so main can tell kinds apart.
const RECEIVER: u64 = 1 << 40;
const SENDER: u64 = 2 << 40;
const SLEEPER: u64 = 3 << 40;
const BURSTER: u64 = 4 << 40;

static STOP: AtomicBool = AtomicBool::new(false);
static BURST_RAN: AtomicU64 = AtomicU64::new(0);
static TIMEOUTS: AtomicU64 = AtomicU64::new(0);

fn main() -> ExitCode {
    sched::arm_progress_watchdog(30);
    let cores = smp::cores_online();
    ensure!(cores >= 2, "needs 2 cores");
    let me = sched::self_pid().expect("main is a process");
    let mut reports_due = 0u64;
    // A receiver on every core; a sender on every core for each receiver elsewhere.
    let mut receivers = Vec::new();
    for core in 0..cores {
        let senders = (cores - 1) as u64;
        let pid = sched::spawn_with(SpawnOptions::default().on_core(core), move || {
            let mut next = [0u64; 64];
            let mut got = 0;
            while got < senders * MESSAGES {
                if let Message::Word(word) = sched::receive() {
                    let (from, n) = ((word >> 32) as usize, word & 0xffff_ffff);
                    assert!(next[from] == n, "from core {from}: message {n}, expected {}", next[from]);
                    next[from] += 1;
                    got += 1;
                }
            }
            let _ = sched::send(me, Message::Word(RECEIVER | core as u64));
        })
        .expect("spawn receiver");
        receivers.push(pid);
        reports_due += 1;
    }
    for from in 0..cores {
        for (to, &receiver) in receivers.iter().enumerate().filter(|&(to, _)| to != from) {
            sched::spawn_with(SpawnOptions::default().on_core(from), move || {
                for n in 0..MESSAGES {
                    sched::send(receiver, Message::Word(((from as u64) << 32) | n)).expect("receiver alive");
                    if n % 8 == 0 {
                        sched::yield_now();
                    }
                }
                let _ = sched::send(me, Message::Word(SENDER | ((from * 64 + to) as u64)));
            })
            .expect("spawn sender");
            reports_due += 1;
        }
        sched::spawn_with(SpawnOptions::default().on_core(from), move || {
            let mut timeouts = 0;
            while timeouts < SLEEPS {
                if sched::receive_timeout(300).is_none() {
                    timeouts += 1;
                }
            }
            TIMEOUTS.fetch_add(timeouts, Ordering::Relaxed);
            let _ = sched::send(me, Message::Word(SLEEPER | from as u64));
        })
        .expect("spawn sleeper");
        reports_due += 1;
    }
    let mut transitions = 0;
    let mut bursts = 0u64;
    for round in 0..ROUNDS {
        let core = 1 + round % (cores - 1);
        for i in 0..BURST {
            let index = bursts * BURST + i;
            let spawned = sched::spawn_with(SpawnOptions::default().on_core(core).stack_bytes(4096), move || {
                BURST_RAN.fetch_add(1, Ordering::Relaxed);
                let _ = sched::send(me, Message::Word(BURSTER | index));
            });
            ensure!(spawned.is_ok(), "burst spawn on core {core}: {spawned:?}");
            reports_due += 1;
        }
        bursts += 1;
        ensure!(sched::take_offline(core) == Ok(()), "round {round}: take_offline({core}) failed");
        sched::yield_now();
        ensure!(sched::bring_online(core) == Ok(()), "round {round}: bring_online({core}) failed");
        transitions += 2;
    }
    STOP.store(true, Ordering::Relaxed);
    let mut seen = alloc::collections::BTreeMap::new();
    for received in 0..reports_due {
        match sched::receive_timeout(60_000_000) {
            Some(Message::Word(word)) => *seen.entry(word).or_insert(0u32) += 1,
            other => {
                println!("test failed: report {received} of {reports_due}: {other:?}");
                return ExitCode::Failure(1);
            }
        }
    }
    ensure!(seen.len() as u64 == reports_due, "{} distinct reports of {reports_due}", seen.len());
    if let Some((word, n)) = seen.iter().find(|&(_, &n)| n != 1) {
        println!("test failed: report {word:#x} arrived {n} times");
        return ExitCode::Failure(1);
    }
    let ran = BURST_RAN.load(Ordering::Relaxed);
    ensure!(ran == bursts * BURST, "burst processes ran {ran} times, {} spawned", bursts * BURST);
    while sched::process_count() > 1 {
        sched::yield_now();
    }
    let (spawned, completed) = (total(|s| &s.spawned), total(|s| &s.completed));
    ensure!(spawned == completed + 1, "spawned {spawned}, completed {completed} (+1 for main)");
    let messages = (cores * (cores - 1)) as u64 * MESSAGES;
    let (moved, _) = sched::offline_moves();
    println!(
        "test: offline races: {transitions} transitions, {messages} messages, {} timeouts, {ran} burst processes, \
         {moved} moved off leaving cores",
        TIMEOUTS.load(Ordering::Relaxed)
    );
    ExitCode::Success
}

beamcore::entry!(main);
