//! Deque micro-benchmarks for one core under `-icount shift=0,sleep=off` (scripts/bench.py):
//! uncontended instructions per `push`, `pop` and `steal`, the hand-written LDXR/STXR version
//! and the portable `core::sync::atomic` version side by side in the same run.
//!
//! Each figure is measured over batches of 1,024 operations, repeated, with the cost of the
//! measuring loop itself (measured the same way around an empty body) subtracted.

#![no_std]
#![no_main]

use core::hint::black_box;

use beamcore::sched::deque::{Aarch64Asm, DequeAtomics, Pop, Portable, Steal, Worker};
use beamcore::{ExitCode, arch::cpu, println, time};

const BATCH: u64 = 1024;
const REPEATS: u64 = 64;

/// Guest nanoseconds (= instructions under icount) per operation of `body` run `BATCH` times
/// per repeat, after `setup` (not timed) before each repeat.
fn per_op(mut setup: impl FnMut(), mut body: impl FnMut(u64)) -> f64 {
    let mut counts = 0;
    for _ in 0..REPEATS {
        setup();
        let start = cpu::counter();
        for i in 0..BATCH {
            body(black_box(i));
        }
        counts += cpu::counter() - start;
    }
    time::counts_to_ns(counts) as f64 / (REPEATS * BATCH) as f64
}

fn bench<A: DequeAtomics>(name: &str, overhead: f64) {
    let worker: Worker<A> = Worker::new(BATCH as usize).expect("capacity");
    let stealer = worker.stealer();
    let drain = |w: &Worker<A>| while let Pop::Item(_) = w.pop() {};
    let fill = |w: &Worker<A>| {
        for i in 0..BATCH {
            let _ = w.push(i);
        }
    };
    let push = per_op(
        || drain(&worker),
        |i| {
            let _ = black_box(worker.push(i));
        },
    );
    let pop = per_op(
        || fill(&worker),
        |_| {
            let _ = black_box(worker.pop());
        },
    );
    let steal = per_op(
        || fill(&worker),
        |_| {
            let taken = stealer.steal();
            debug_assert!(matches!(taken, Steal::Success(_)));
            let _ = black_box(taken);
        },
    );
    println!("bench: deque.{name}.push {:.0} insns", push - overhead);
    println!("bench: deque.{name}.pop {:.0} insns", pop - overhead);
    println!("bench: deque.{name}.steal {:.0} insns", steal - overhead);
}

fn main() -> ExitCode {
    let overhead = per_op(
        || {},
        |i| {
            black_box(i);
        },
    );
    println!("bench: deque.loop_overhead {overhead:.1} insns");
    bench::<Aarch64Asm>("asm", overhead);
    bench::<Portable>("portable", overhead);
    ExitCode::Success
}

beamcore::entry!(main);
