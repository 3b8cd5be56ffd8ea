//! The low-priority rule: sharing a core with 3 always-runnable normal processes, a low process
//! runs once every 8 times it comes up: 8 rounds of 3 normal runs between two of its runs.
//! (A 1 s slice keeps timer preemption, which depends on host timing under QEMU, out of the
//! exact count.)
//! qemu-test: configs=a72-smp4
//! qemu-test: append=slice_us=1000000
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use beamcore::sched::{self, Message, Priority, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

const EVENTS: usize = 600;
static LOG: [AtomicU8; EVENTS] = [const { AtomicU8::new(0) }; EVENTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);

fn worker(priority: Priority, runs: usize) {
    for _ in 0..runs {
        let at = NEXT.fetch_add(1, Ordering::Relaxed);
        if at < EVENTS {
            LOG[at].store(priority as u8, Ordering::Relaxed);
        }
        sched::yield_now();
    }
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let spawner = SpawnOptions::default().priority(Priority::Max).bound_to(1);
    let spawned = sched::spawn_with(spawner, move || {
        let low = SpawnOptions::default().priority(Priority::Low).bound_to(1);
        sched::spawn_with(low, || worker(Priority::Low, 10)).expect("spawn low");
        for _ in 0..3 {
            let normal = SpawnOptions::default().bound_to(1);
            sched::spawn_with(normal, || worker(Priority::Normal, 150)).expect("spawn normal");
        }
        let watcher = SpawnOptions::default().priority(Priority::Low).bound_to(1);
        sched::spawn_with(watcher, move || {
            let _ = sched::send(me, Message::Word(0));
        })
        .expect("spawn watcher");
    });
    ensure!(spawned.is_ok(), "spawn failed");
    // The watcher (low, queued last) reports once it gets its turn; wait for the log to fill.
    let _ = sched::receive_timeout(10_000_000);
    while NEXT.load(Ordering::Relaxed) < 460 {
        sched::yield_now();
    }
    let mut low_at = heapless::Vec::<usize, 16>::new();
    for (i, event) in LOG.iter().enumerate().take(460) {
        if event.load(Ordering::Relaxed) == Priority::Low as u8 {
            let _ = low_at.push(i);
        }
    }
    ensure!(low_at.len() >= 4, "low ran only {} times in 460 runs", low_at.len());
    let gaps: heapless::Vec<usize, 16> = low_at.windows(2).map(|w| w[1] - w[0] - 1).collect();
    ensure!(low_at[0] == 21, "first low run after {} normal runs, expected 21 (7 passes x 3)", low_at[0]);
    ensure!(gaps.iter().all(|&gap| gap == 24), "normal runs between low runs: {gaps:?}, expected 24 each");
    println!("test: low ran after 21 normal runs, then every 24 ({} low runs checked)", low_at.len());
    ExitCode::Success
}

beamcore::entry!(main);
