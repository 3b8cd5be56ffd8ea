//! Jobs: small pieces of kernel work queued for a chosen core and run by its scheduler loop
//! between processes. The queue, its closing when a core leaves, and running one function on
//! every core are one concern: who may queue what, and when the queue is drained.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::handlers::HANDLERS;
use super::percore::CORES;
use super::{Sgi, SmpError, cores_online, send_sgi, wait_until};
use crate::arch::cpu;
use crate::layout::MAX_CORES;

/// A unit of work queued for a core.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// The leaving core closes its jobs queue: `run_on` refuses it from now on (`CoreOffline`).
/// Returns the jobs queued before, for the caller to run before it goes.
pub fn close_jobs() -> VecDeque<Job> {
    let me = &CORES[cpu::core_id()];
    let mut jobs = me.jobs.lock();
    // ORDERING: Relaxed: read and written under the jobs lock, which `run_on` holds to check it.
    me.jobs_closed.store(true, Ordering::Relaxed);
    me.job_count.store(0, Ordering::Relaxed);
    core::mem::take(&mut *jobs)
}

/// Queues `job` to run on core `target` and wakes it.
pub fn run_on(target: usize, job: Job) -> Result<(), SmpError> {
    if target >= MAX_CORES || !CORES[target].was_online_before() {
        return Err(SmpError::NoSuchCore(target));
    }
    if !CORES[target].is_online() {
        return Err(SmpError::CoreOffline(target));
    }
    {
        let mut jobs = CORES[target].jobs.lock();
        // ORDERING: Relaxed: written under this lock by the leaving core (`close_jobs`).
        if CORES[target].jobs_closed.load(Ordering::Relaxed) {
            return Err(SmpError::CoreOffline(target));
        }
        jobs.try_reserve(1).map_err(|_| SmpError::OutOfMemory)?;
        jobs.push_back(job);
        // Relaxed (was SeqCst): `job_count` is a hint that lets `take_job` skip the lock; the
        // job itself is published by the lock. No wake-up depends on the count being seen:
        // the Wake SGI below is sent unconditionally (DSB before the SGI, barrier after the
        // acknowledge), and a core sleeping in WFI wakes on it even with IRQs masked. SeqCst
        // paired with nothing: the sender reads no "sleeping" flag after the increment.
        CORES[target].job_count.fetch_add(1, Ordering::Relaxed);
    }
    // After the job is in the queue (and its lock released): the core's scheduler may look at
    // its queue because of this.
    if let Some(handlers) = HANDLERS.get() {
        (handlers.job_queued)(target);
    }
    if target != cpu::core_id() {
        send_sgi(target, Sgi::Wake)?;
    }
    Ok(())
}

/// Runs `work(core_id)` on every online core (the caller's own share on the caller) and
/// returns when all have finished. A process that calls it stays on its core until its own
/// share is done (see [`Handlers::hold_current`]), so every `work(c)` runs on core `c`.
///
/// [`Handlers::hold_current`]: super::Handlers::hold_current
pub fn run_on_all_and_wait(work: fn(usize)) -> Result<(), SmpError> {
    let held = HeldOnCore::new();
    let me = cpu::core_id();
    let cores = cores_online();
    let remaining = Arc::new(AtomicUsize::new(cores));
    for target in (0..cores).filter(|&c| c != me) {
        let remaining = Arc::clone(&remaining);
        run_on(
            target,
            Box::new(move || {
                work(target);
                // ORDERING: Release publishes the work's effects to the waiter's Acquire load.
                remaining.fetch_sub(1, Ordering::Release);
                let _ = send_sgi(me, Sgi::Wake);
            }),
        )?;
    }
    work(me);
    drop(held);
    // ORDERING: Release, as the other cores' decrements: publishes our share's effects.
    remaining.fetch_sub(1, Ordering::Release);
    // ORDERING: Acquire, paired with every Release `fetch_sub` (one release sequence of
    // read-modify-writes): seeing 0, this core sees every share's effects.
    wait_until(|| remaining.load(Ordering::Acquire) == 0);
    Ok(())
}

/// The calling process held on its core (a no-op outside a process, or before the scheduler
/// registered its handlers), released when dropped: also on an early return.
struct HeldOnCore;

impl HeldOnCore {
    fn new() -> HeldOnCore {
        if let Some(handlers) = HANDLERS.get() {
            (handlers.hold_current)(true);
        }
        HeldOnCore
    }
}

impl Drop for HeldOnCore {
    fn drop(&mut self) {
        if let Some(handlers) = HANDLERS.get() {
            (handlers.hold_current)(false);
        }
    }
}

/// The next job queued for the calling core (scheduler side, IRQs masked).
pub fn take_job() -> Option<Job> {
    let me = &CORES[cpu::core_id()];
    // Relaxed (was Acquire): a hint only, see `run_on`; the lock below publishes the job.
    if me.job_count.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let job = me.jobs.lock().pop_front();
    if job.is_some() {
        me.job_count.fetch_sub(1, Ordering::Relaxed);
    }
    job
}

/// True when jobs wait for the calling core.
pub fn has_jobs() -> bool {
    // Relaxed (was SeqCst, "paired" with a SeqCst increment that reads nothing after it, so
    // it closed no store-buffering race): a sleeper that misses a just-queued job still wakes,
    // because `run_on` always sends the Wake SGI after counting (see there).
    CORES[cpu::core_id()].job_count.load(Ordering::Relaxed) != 0
}
