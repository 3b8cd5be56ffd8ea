//! The worker pool: a one_for_one supervisor of workers that take jobs from the tally and crash
//! at random doing them, half of the crashes panics, half faults.

use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use beamcore::sched::{self, Pid, SpawnOptions};
use beamcore::smp;
use beamcore_otp::start::StartError;
use beamcore_otp::supervisor::{self, ChildSpec, Intensity, Strategy};

use crate::jobs::{self, Rng};
use crate::tally;

/// The pool's patience: crashes are this subtree's daily business, so it is generous (100
/// restarts a second, where about one job in eight crashes). Only a failure far beyond the odds,
/// every worker crashing at once and again, would make it give up.
pub const INTENSITY: Intensity = Intensity { max_restarts: 100, period_us: 1_000_000 };

/// A worker's draw per job: 0 panics, 1 faults, anything else reports the result.
const DRAWS: u64 = 16;

/// The crashes the workers made, counted by each just before it crashes.
pub struct Crashes {
    panics: AtomicU32,
    faults: AtomicU32,
}

impl Crashes {
    pub const fn new() -> Crashes {
        Crashes { panics: AtomicU32::new(0), faults: AtomicU32::new(0) }
    }

    pub fn panics(&self) -> u32 {
        // ORDERING: Relaxed: read once the workers' messages have been seen, which ordered them.
        self.panics.load(Ordering::Relaxed)
    }

    pub fn faults(&self) -> u32 {
        // ORDERING: Relaxed, as in `panics`.
        self.faults.load(Ordering::Relaxed)
    }
}

impl Default for Crashes {
    fn default() -> Self {
        Crashes::new()
    }
}

/// Starts the pool, linked to the caller: `workers` workers, worker w on core w mod cores.
pub fn start_link(workers: usize, crashes: &'static Crashes) -> Result<Pid, StartError> {
    let specs: Vec<ChildSpec> = (0..workers).map(|w| worker_spec(w, crashes)).collect();
    supervisor::start_link(Strategy::OneForOne, INTENSITY, specs)
}

/// Worker w's child specification. Its start function runs in the pool's process, at the first
/// start and at every restart.
fn worker_spec(w: usize, crashes: &'static Crashes) -> ChildSpec {
    // Each incarnation of the worker seeds its PRNG with its start count: a restarted worker
    // draws afresh instead of repeating the draws that crashed its predecessor.
    let starts = AtomicU64::new(0);
    ChildSpec::worker(format!("worker-{w}"), move || {
        // ORDERING: Relaxed: a counter only its supervisor's process touches.
        let seed = (w as u64) << 32 | starts.fetch_add(1, Ordering::Relaxed);
        let options = SpawnOptions::default().on_core(w % smp::cores_online());
        sched::spawn_link(options, move || worker(Rng::new(seed), crashes))
    })
}

/// A worker: takes a job, does it, and reports it, unless its draw says crash. The crash comes
/// after the work and before the report, so the result dies with the worker and only the
/// tally's monitor can tell that the job must be done again.
fn worker(mut rng: Rng, crashes: &'static Crashes) {
    loop {
        let job = tally::take();
        let result = jobs::work(job);
        match rng.below(DRAWS) {
            0 => {
                // ORDERING: Relaxed: see `Crashes::panics`.
                crashes.panics.fetch_add(1, Ordering::Relaxed);
                panic!("worker crashes on job {job}, on purpose");
            }
            1 => {
                // ORDERING: Relaxed: see `Crashes::panics`.
                crashes.faults.fetch_add(1, Ordering::Relaxed);
                fault();
            }
            _ => tally::report(job, result),
        }
    }
}

/// Reads address 0, which nothing maps: the kernel ends the process with a data abort, as it
/// would a real bug's.
fn fault() -> ! {
    // SAFETY: none: the read is meant to fault (nothing is mapped at 0); it never returns.
    let _ = unsafe { core::ptr::read_volatile(core::hint::black_box(core::ptr::null::<u64>())) };
    unreachable!("address 0 is not mapped")
}
