//! One scheduler per core: its loop, what an idle core does (search, then sleep), each core's
//! set-up, and how the pieces fit.
//!
//! ```text
//!   spawn / wake (same core) ──push──▶ run queues (runqueue/: levels, Chase-Lev + overflow)
//!   message wake (same core) ──▶ run-next slot ─┘             │ owner takes FIFO
//!   wake from another core ─▶ inbox ─SGI─▶ drained by the loop ┘
//!   loop: jobs, inbox, timeouts, rebalance, pick (max > high > normal/low) ─▶ run a process
//!   a process gives the core up ─▶ attention word clear? ─yes─▶ hand-off: end its turn, pick
//!                                                       └─no──▶ back to the loop
//!   nothing to run: steal (steal/), search a little longer, sleep in WFI
//! ```
//!
//! The scheduler runs on the core's boot stack (SP_EL1) with IRQs masked except while it
//! sleeps, while it searches, and while a job or a process runs. Processes hand the core to each
//! other without it while it has nothing else to do (`dispatch`, `attention`); it ends the turn
//! of whichever process ran last when the core comes back.
//!
//! The files stand in folders, one per concern, each using only the ones below it: `proc/` (what a
//! process is, the table), `settings.rs`, `record/` (counters, the trace), `run/` (run queues,
//! per-core state, waking), `steal/` and `msg/` (balancing; mailboxes, signals, timers, names),
//! `turn/` (dispatch, unwinding, the end of a process), `api/` (the calls a program makes),
//! `offline/`, `report/` (telemetry, the stall dump, the watchdog), and this file and `hooks.rs`
//! on top. docs/layout.md ("The scheduler's folders") says what each may use; docs/scheduler.md
//! maps the files.

use core::sync::atomic::Ordering;

use crate::msg::timers;
use crate::offline;
use crate::record::stats::{self, add};
use crate::record::trace::{self, Event};
use crate::run::active;
use crate::run::attention;
use crate::run::idle::{self, SEARCHING, SLEEPERS, wake_a_thief};
use crate::run::percore::{self, OnCore};
use crate::run::shared_queue;
use crate::run::wake::drain_inbox;
use crate::settings;
use crate::settings::{search_timing, shared_queues, slice_counts};
use crate::steal::rebalance::rebalance;
use crate::steal::round::{StealRound, steal_would_succeed, stealable_on, try_steal, work_elsewhere};
use crate::turn::dispatch::run;
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::CoreId;
use beamcore_sched_policy::balance::{Rng, max_searchers, search_pause_counts, search_spent};
use beamcore_smp as smp;

/// Each core, before its loop: its run queues and its random number generator.
pub fn init_core_scheduler() {
    percore::bind_this_core();
    active::join_at_boot(CoreId::this());
    let mut core = OnCore::enter();
    let me = core.scheduler();
    me.inbox.lock().reserve(64);
    stats::of(CoreId::this()).init_wait_clock(cpu::counter_frequency());
    let local = core.local();
    local.queues.init(&me.queues);
    // Bootarg `seed`: the same choices run after run (under `-icount`), other choices for another
    // seed; without it, a counter reading mixed with the core's number.
    local.rng = match crate::settings::config().seed {
        0 => Rng::new(cpu::counter() ^ ((cpu::core_id() as u64 + 1) << 32)),
        seed => Rng::for_core(seed, cpu::core_id()),
    };
    // Core 0 pushes rebalancing work; `rebalance` (steal/rebalance.rs) clears the bit if it never will.
    if cpu::core_id() == 0 {
        attention::set_own(&core, attention::REBALANCE, true);
    }
    if settings::trace_requested() {
        attention::set_own(&core, attention::TRACING, true);
    }
    let telemetry = attention::telemetry_bit(settings::telemetry());
    if telemetry != 0 {
        attention::set_own(&core, telemetry, true);
    }
}

/// The boot core, once every core is online: the trace buffers (`trace=on`), made after every
/// core's first tick is armed so that tracing does not move the ticks' phases
/// (`trace::start`).
pub fn start_tracing() {
    let events = settings::trace_events();
    for core in trace::start(settings::trace_requested(), events, beamcore_smp::cores_online()) {
        beamcore_smp::println!("trace: core {core}: no memory for a buffer of {events} events; not tracing there");
    }
}

/// The core's life once online: run processes and queued jobs, else sleep until woken.
pub fn run_loop() -> ! {
    let id = CoreId::this();
    loop {
        // The scheduler runs with IRQs masked; they are unmasked while a job or a process runs
        // and to take the interrupt that ends a sleep. (Masked before the guard is made, so the
        // guard's end keeps them masked: the only windows are the ones opened below.)
        let _ = cpu::irq_save();
        let mut core = OnCore::enter();
        if attention::is_set(&core, attention::LEAVE) {
            // Between two turns: whatever ran last has ended its turn (`run`).
            drop(offline::leave(core));
            continue;
        }
        attention::take(&core, attention::JOBS);
        if let Some(job) = smp::take_job() {
            // More may be queued: the bit stays until a look finds none.
            attention::set_own(&core, attention::JOBS, true);
            core.local().end_search();
            drop(core);
            cpu::irq_enable();
            job();
            continue;
        }
        drain_inbox(&mut core);
        expire_timeouts(&mut core);
        if id == CoreId::BOOT {
            rebalance(&mut core);
        }
        let next = {
            let telemetry = attention::telemetry(&core);
            let shared = &core.scheduler().queues;
            let stats = core.scheduler().stats;
            core.local().queues.take_next(shared, stats, telemetry)
        };
        if let Some(slot) = next {
            core.local().end_search();
            run(&mut core, slot);
            continue;
        }
        if shared_queues() {
            // Nothing to steal and no one to search: every core looks at the same queue.
            sleep(core);
            continue;
        }
        match try_steal(&mut core) {
            StealRound::Took(victim) => {
                core.local().end_search();
                // If the victim still has work to spare and no core searches, wake another
                // thief for it (Go wakes a spinning M when the last one finds work): without
                // this, cores that slept through a burst of spawns would wait for their tick.
                wake_a_thief(stealable_on(victim));
            }
            // A victim with work is cooling down. Soon: come round the loop again (serving
            // jobs, the inbox and timeouts) with an interrupt window each time, so ticks and
            // SGIs are taken; later than a slice: sleep, and the tick or a wake-up brings the
            // core back. Never a wait with IRQs masked, however long the cooldown.
            StealRound::CoolingUntil(at) if at.wrapping_sub(cpu::counter()) as i64 <= slice_counts() as i64 => {
                drop(core);
                cpu::irq_enable();
                cpu::relax();
            }
            StealRound::CoolingUntil(_) | StealRound::Nothing => match search_a_little_longer(&mut core) {
                Some((since, until)) => {
                    let stats = core.scheduler().stats;
                    drop(core);
                    cpu::irq_enable();
                    while cpu::counter() < until {
                        cpu::relax();
                    }
                    if work_elsewhere(id) {
                        add(&stats.idle_with_work_counts, cpu::counter().wrapping_sub(since));
                    }
                }
                None => sleep(core),
            },
        }
    }
}

/// Fires the timers due in the tables this core serves (the interrupt fires them too; this
/// catches a deadline that passed while IRQs were masked, and tables served for offline cores).
fn expire_timeouts(core: &mut OnCore) {
    if timers::any_here(core) {
        timers::expire_due(core);
        // The earliest deadline may have moved later: the generic timer stays armed for the
        // old one at worst (one early interrupt), and for a table adopted meanwhile it is
        // armed here.
        beamcore_smp::deadline_added(timers::earliest_here());
    }
}

/// An idle core that found nothing: keep searching (a short pause, growing exponentially with
/// jitter, IRQs open so ticks and SGIs are served, then the loop's next round of jobs, inbox,
/// timeouts and stealing) until the search budget is spent, if no more than half the cores
/// search already. Returns when the search began this pause and when the pause ends, or
/// `None` when the core should sleep now.
fn search_a_little_longer(core: &mut OnCore) -> Option<(u64, u64)> {
    let cores = active::active_cores();
    if cores < 2 {
        return None;
    }
    let timing = search_timing();
    let now = cpu::counter();
    let local = core.local();
    if !local.searching {
        let limit = max_searchers(cores);
        // ORDERING: Relaxed: the count only limits how many search; an overshoot by a racing
        // core costs a little spinning, never correctness.
        if SEARCHING.fetch_add(1, Ordering::Relaxed) >= limit {
            SEARCHING.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        local.searching = true;
        local.search_started = now;
        local.search_rounds = 0;
    } else if search_spent(&timing, local.search_started, now) {
        local.stop_searching();
        return None;
    }
    let pause = search_pause_counts(&timing, local.search_rounds, local.rng.next_u64());
    local.search_rounds += 1;
    Some((now, now + pause))
}

/// Sleeps in WFI until an interrupt (a wake-up SGI, the tick), unless work came in meanwhile.
fn sleep(mut core: OnCore) {
    let me = core.scheduler();
    let id = core.id();
    // ORDERING: SeqCst store then SeqCst load, pairing with `make_runnable` (see there).
    me.sleeping.store(true, Ordering::SeqCst);
    if me.inbox_len.load(Ordering::SeqCst) == 0 && !smp::has_jobs() {
        // WFI wakes on a pending interrupt even with IRQs masked: a wake-up SGI that arrived
        // after the checks is not lost. The tick bounds the sleep (timeouts are checked, and
        // stealing tried again, then).
        // For the statistics: whether work already waits, and no offer or wake-up yet.
        idle::sleep_begins(id.index(), cpu::counter(), work_elsewhere(id));
        // ORDERING: SeqCst read-modify-write, then the fresh look at the other cores' queues
        // below: work pushed before this point is seen there, or the pusher (which reads
        // `SLEEPERS` after pushing) sees this core asleep and may wake it.
        SLEEPERS.insert(id.index(), Ordering::SeqCst);
        let work_to_take = if shared_queues() { shared_queue::has_work() } else { steal_would_succeed(&mut core) };
        if work_to_take {
            SLEEPERS.remove(id.index(), Ordering::Relaxed);
            me.sleeping.store(false, Ordering::Relaxed);
            drop(core);
            cpu::irq_enable();
            return;
        }
        let fell_asleep = cpu::counter();
        trace::core_event(Event::Sleep, id, 0);
        cpu::wait_for_interrupt();
        trace::core_event(Event::IdleEnd, id, 0);
        let slept = cpu::counter() - fell_asleep;
        SLEEPERS.remove(id.index(), Ordering::Relaxed);
        idle::sleep_ended(id.index());
        let stats = core.scheduler().stats;
        add(&stats.asleep_counts, slept);
        if let Some(latency) = idle::wake_latency(id.index(), fell_asleep, fell_asleep + slept) {
            add(&stats.wakes, 1);
            add(&stats.wake_latency_counts, latency);
        }
        if work_elsewhere(id) {
            let waited = idle::idle_with_work(id.index(), fell_asleep, fell_asleep + slept);
            add(&core.scheduler().stats.idle_with_work_counts, waited);
        }
    }
    // ORDERING: Relaxed: nobody needs to see the end of the sleep in order; a waker that still
    // sees it asleep sends a spare SGI.
    me.sleeping.store(false, Ordering::Relaxed);
    // Take the interrupt that woke us before looking again (the loop masks IRQs at its top).
    drop(core);
    cpu::irq_enable();
}
