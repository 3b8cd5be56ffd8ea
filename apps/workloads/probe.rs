//! The share probe (`probe_ms=N`): after the workload, one bound process per core computes for
//! N ms of guest time and counts its units apart from the workload's. Why: under `-icount`
//! QEMU runs the vCPUs in turn and does not give them equal shares of the machine, and which
//! core it favours changes from boot to boot (docs/benchmarks.md). With nothing to balance, the
//! probe's units per core are the shares this boot's vCPUs got; the calibration of the
//! simulator (`scripts/sim-calibrate.py`) scales its cores by them.

use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use beamcore::arch::cpu;
use beamcore::mm::layout::MAX_CORES;
use beamcore::sched::{self, Message, SpawnOptions};
use beamcore::smp;
use beamcore::time;

use super::{collect_words, exactly_once, spin_unit};

/// What a probe process sends instead of its core when it finds itself on another core.
const OFF_CORE: u64 = u64::MAX;

/// When the probes start counting (a counter value; 0: not yet set).
static START: AtomicU64 = AtomicU64::new(0);
/// How far ahead of now the start is set, in microseconds of guest time.
const START_MARGIN_US: u64 = 200;

/// Probe units per core, kept apart from the workload's `work`.
static PROBE: [AtomicU64; MAX_CORES] = [const { AtomicU64::new(0) }; MAX_CORES];

/// Runs the probe for `ms` milliseconds of guest time on every online core and returns each
/// core's units, or why it could not.
pub fn share_probe(ms: u64) -> Result<Vec<u64>, alloc::string::String> {
    let cores = smp::cores_online();
    let me = sched::self_pid().expect("run from a process");
    for units in &PROBE[..cores] {
        units.store(0, Ordering::Relaxed);
    }
    // Every probe waits for one start time, set once all are spawned: under `-icount` the
    // spawning itself takes guest time, which would shorten the window of the cores spawned last.
    START.store(0, Ordering::Relaxed);
    let window = time::us_to_counts(ms * 1000);
    for core in 0..cores {
        let options = SpawnOptions::default().stack_bytes(4096).bound_to(core);
        let prober = move || {
            let start = loop {
                // ORDERING: Acquire pairs with main's Release store: nothing else is read.
                match START.load(Ordering::Acquire) {
                    0 => core::hint::spin_loop(),
                    start => break start,
                }
            };
            while time::now_count() < start {
                core::hint::spin_loop();
            }
            while time::now_count() < start + window {
                spin_unit();
                let here = cpu::core_id();
                PROBE[here].fetch_add(1, Ordering::Relaxed);
                if here != core {
                    // A bound process off its core: the probe's shares would be wrong.
                    let _ = sched::send(me, Message::Word(OFF_CORE));
                    return;
                }
            }
            let _ = sched::send(me, Message::Word(core as u64));
        };
        sched::spawn_with(options, prober).map_err(|error| format!("probe on core {core}: {error}"))?;
    }
    // A little ahead, so that every probe has seen the start before it comes.
    // ORDERING: Release: see the probes' load.
    START.store(time::now_count() + time::us_to_counts(START_MARGIN_US), Ordering::Release);
    let words = collect_words(cores)?;
    if words.contains(&OFF_CORE) {
        return Err("a probe process bound to a core ran on another".into());
    }
    exactly_once(&words, cores)?;
    Ok(PROBE[..cores].iter().map(|units| units.load(Ordering::Relaxed)).collect())
}
