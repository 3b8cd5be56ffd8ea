//! Floating point survives both kinds of switch: processes sharing a core compute with FP/SIMD
//! registers across voluntary yields and across timer preemptions, and get exact results: each
//! result is bit for bit the one the same computation gives run alone without being switched
//! out (same operations in the same order, round to nearest, no fused multiply-add: IEEE 754
//! makes that one result, so any difference is FP state lost or changed by a switch).
//! qemu-test: configs=a72-smp4,max-smp4
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::sched::{self, Message, SpawnOptions};
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

/// Each process's result, as f64 bits (written before it reports).
static RESULTS: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];

/// A computation whose every step depends on FP state; `yield_every` = 0 never yields.
fn compute(seed: f64, steps: u64, yield_every: u64) -> f64 {
    let mut a = seed;
    let mut b = 1.0 / seed;
    for step in 1..=steps {
        a = core::hint::black_box(a * 1.000_000_1 + b);
        b = core::hint::black_box(b * 0.999_999_9 - a * 1e-9);
        if yield_every != 0 && step % yield_every == 0 {
            sched::yield_now();
        }
    }
    a + b
}

fn main() -> ExitCode {
    let me = sched::self_pid().unwrap();
    const STEPS: u64 = 2_000_000;
    let seeds = [1.5f64, 2.25, 3.125, 4.0625];
    for (i, &seed) in seeds.iter().enumerate() {
        // Two yield often, two never yield (so only preemption switches them out).
        let yield_every = if i % 2 == 0 { 1000 } else { 0 };
        let spawned = sched::spawn_with(SpawnOptions::default().bound_to(1), move || {
            let result = compute(seed, STEPS, yield_every);
            RESULTS[i].store(result.to_bits(), Ordering::Relaxed);
            let _ = sched::send(me, Message::Word(i as u64));
        });
        ensure!(spawned.is_ok(), "spawn {i}");
    }
    let mut reported = [false; 4];
    for _ in 0..4 {
        match sched::receive_timeout(60_000_000) {
            Some(Message::Word(i)) if (i as usize) < 4 => reported[i as usize] = true,
            other => ensure!(false, "result missing: {other:?}"),
        }
    }
    ensure!(reported == [true; 4], "not every process reported: {reported:?}");
    let preemptions = sched::core_stats(1).preemptions.load(Ordering::Relaxed);
    for (i, &seed) in seeds.iter().enumerate() {
        let expected = compute(seed, STEPS, 0).to_bits();
        let result = RESULTS[i].load(Ordering::Relaxed);
        ensure!(
            result == expected,
            "process {i}: {result:#018x} ({}), computed alone {expected:#018x} ({}): {} ulp apart",
            f64::from_bits(result),
            f64::from_bits(expected),
            result.abs_diff(expected)
        );
    }
    ensure!(preemptions > 0, "no preemption happened on core 1");
    println!("test: 4 FP computations sharing core 1 bit-exact across yields and {preemptions} preemptions");
    ExitCode::Success
}

beamcore::entry!(main);
