//! Signal-model micro-benchmarks, on one core under `-icount shift=0,sleep=off` (one nanosecond
//! of guest time per instruction; scripts/bench.py runs it that way, `make bench BENCH=signals`).
//!
//! Prints `bench: signals.whereis_10k <instructions> insns`: one `whereis` with 10,000 names
//! registered (each looked up 10 times, in an order unrelated to registration), and
//! `signals.whereis_1`: the same with one name registered, so the two side by side show what
//! the table's size costs; and `signals.register`: registering a name (and unregistering it).

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use beamcore::sched::{self, Message, SpawnOptions};
use beamcore::{ExitCode, arch::cpu, println, time};

const NAMES: usize = 10_000;
const LOOKUPS_PER_NAME: usize = 10;

fn report(name: &str, counts: u64, operations: usize) {
    let instructions = time::counts_to_ns(counts) as f64 / operations as f64;
    println!("bench: signals.{name} {instructions:.0} insns");
}

/// Counts for `LOOKUPS_PER_NAME` lookups of each of `names`, in a stride order.
fn lookups(names: &[String]) -> u64 {
    let stride = 7919 % names.len().max(1);
    let start = cpu::counter();
    let mut index = 0;
    for _ in 0..LOOKUPS_PER_NAME * names.len() {
        core::hint::black_box(sched::whereis(&names[index]));
        index = (index + stride.max(1)) % names.len();
    }
    cpu::counter() - start
}

fn main() -> ExitCode {
    println!("bench: config cores=1 names={NAMES} counter_hz={}", cpu::counter_frequency());
    let names: Vec<String> = (0..NAMES).map(|i| format!("worker-{i}")).collect();
    let mut pids = Vec::with_capacity(NAMES);
    for _ in 0..NAMES {
        let pid = sched::spawn_with(SpawnOptions::default().stack_bytes(4096).on_core(0), || {
            let _ = sched::receive();
        })
        .expect("spawn");
        pids.push(pid);
    }
    // One name first.
    sched::register(&names[0], pids[0]).expect("register");
    let one = lookups(&names[..1]);
    report("whereis_1", one, LOOKUPS_PER_NAME);
    let start = cpu::counter();
    for (name, pid) in names.iter().zip(&pids).skip(1) {
        sched::register(name, *pid).expect("register");
    }
    let registering = cpu::counter() - start;
    report("register", registering, NAMES - 1);
    let all = lookups(&names);
    report("whereis_10k", all, LOOKUPS_PER_NAME * NAMES);
    for pid in pids {
        let _ = sched::send(pid, Message::Word(0));
    }
    ExitCode::Success
}

beamcore::entry!(main);
