//! Free (unbound) processes run first in, first out on their core: the owner takes the oldest
//! process of its stealable queue, not the newest (which a Chase-Lev deque's own `pop` would
//! give). 300 free processes, more than the lock-free deque holds (256) so the last ones spill to
//! the overflow queue, are queued on one core and must start in the order they were spawned;
//! each then yields once and must run again in that same order (a yield goes to the back).
//! Tests 16 and 17 cover the private queue of bound processes; this covers the stealable one.
//!
//! One core, so nothing is stolen; a max-priority spawner queues them all before any runs
//! (max is served first, even if the spawner is preempted); `-icount shift=0,sleep=off` keeps
//! time slices in guest instructions, so no child's short turn is cut by a preemption.
//! qemu-test: configs=a72-smp1
//! qemu-test: qemu-args=-icount shift=0,sleep=off
//! qemu-test: expect=^test: 300 free processes ran in spawn order
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicUsize, Ordering};

use beamcore::sched::{self, Affinity, Message, Priority, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

const CHILDREN: usize = 300;
static LOG: [AtomicUsize; 2 * CHILDREN] = [const { AtomicUsize::new(usize::MAX) }; 2 * CHILDREN];
static NEXT: AtomicUsize = AtomicUsize::new(0);
static FREE: AtomicUsize = AtomicUsize::new(0);

fn record(child: usize) -> usize {
    let at = NEXT.fetch_add(1, Ordering::Relaxed);
    if at < LOG.len() {
        LOG[at].store(child, Ordering::Relaxed);
    }
    at + 1
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    let spawner = SpawnOptions::default().priority(Priority::Max);
    let spawned = sched::spawn_with(spawner, move || {
        for child in 0..CHILDREN {
            let pid = sched::spawn(move || {
                record(child);
                sched::yield_now();
                if record(child) == 2 * CHILDREN {
                    let _ = sched::send(me, Message::Word(0));
                }
            })
            .expect("spawn child");
            if sched::placement(pid).is_some_and(|p| p.affinity == Affinity::Free) {
                FREE.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    ensure!(spawned.is_ok(), "spawn spawner: {spawned:?}");
    let done = sched::receive_timeout(10_000_000);
    ensure!(matches!(done, Some(Message::Word(0))), "children did not all run twice: {done:?}");
    ensure!(
        FREE.load(Ordering::Relaxed) == CHILDREN,
        "only {} of {CHILDREN} children were free",
        FREE.load(Ordering::Relaxed)
    );
    for (at, entry) in LOG.iter().enumerate() {
        let child = entry.load(Ordering::Relaxed);
        let expected = at % CHILDREN;
        let round = at / CHILDREN + 1;
        ensure!(
            child == expected,
            "run {at} (round {round}) was child {child}, expected {expected}: not first in, first out"
        );
    }
    println!("test: {CHILDREN} free processes ran in spawn order, and again in that order after a yield");
    ExitCode::Success
}

beamcore::entry!(main);
