//! Every core's shared state, bringing secondary cores up, core-to-core interrupts (SGIs), the
//! per-core timer tick, and running work on a chosen core.
//!
//! ```text
//!  boot core: start_secondaries ──PSCI CPU_ON / spin table──▶ core n: _secondary_start
//!                    ◀────────────── CORES[n].online ─────────  bring_core_online, idle_loop
//!  any core:  run_on(n, job) ─push─▶ CORES[n].jobs ─SGI Wake─▶ core n wakes from WFI, runs job
//! ```
//!
//! Jobs are small pieces of kernel work run by a core's scheduler loop between processes (tests
//! and bring-up use them); an SGI or the tick wakes a sleeping core to run them.
//!
//! This layer sits below the scheduler and names none of it: what a tick does beyond counting
//! and re-arming (end a slice), who is told that a job was queued, and what the deadline
//! watchdog prints are handlers the boot code registers ([`set_handlers`]).

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::arch::cpu;
use crate::arch::exception::TrapFrame;
use crate::arch::timer;
use crate::core_set::CoreSet;
use crate::drivers::gic::{Gic, GicError};
use crate::mm::layout::MAX_CORES;
use crate::sync::IrqSpinLock;

/// Software-generated interrupts the kernel uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Sgi {
    /// "Look at your queues": wakes a core sleeping in WFI.
    Wake = 0,
    /// A counted core-to-core ping; the receiver records who sent it.
    Ping = 1,
    /// "Stop for good": the receiver stops scheduling and parks (end of a run without
    /// semihosting, where nothing ends the machine).
    Halt = 2,
}

/// A unit of work queued for a core.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// What a core shares with the others. One cache line apart from its neighbours, so one
/// core's counters do not bounce another's line.
#[repr(C, align(64))]
pub struct PerCore {
    online: AtomicBool,
    mpidr: AtomicU64,
    /// Timer ticks this core has taken.
    ticks: AtomicU64,
    /// When this core's next tick is due (its own: written and read by the core only). The
    /// generic timer is armed for the earlier of this and the earliest timer deadline.
    next_tick: AtomicU64,
    /// Cores with a ping not yet counted by this core.
    pings_pending: CoreSet,
    /// Pings counted, by sending core.
    pings_from: [AtomicU32; MAX_CORES],
    /// Interrupts this core acknowledged that no handler expected.
    unexpected_irqs: AtomicU64,
    jobs: IrqSpinLock<VecDeque<Job>>,
    job_count: AtomicUsize,
    /// Set when the core has parked for good ([`halt_this_core`]).
    parked: AtomicBool,
    /// Interrupts this core acknowledged, of every kind: an offline core takes none.
    irqs: AtomicU64,
    /// The core has been online once: a start after that is a return from offline.
    ever_online: AtomicBool,
    /// Written under the `jobs` lock: the core is leaving and takes no more jobs.
    jobs_closed: AtomicBool,
    /// Times the core went offline.
    offline_count: AtomicU64,
    /// The release word of a core parked offline without PSCI (`core_power`).
    pub(crate) release: AtomicBool,
}

impl PerCore {
    const fn new() -> Self {
        PerCore {
            online: AtomicBool::new(false),
            mpidr: AtomicU64::new(0),
            ticks: AtomicU64::new(0),
            next_tick: AtomicU64::new(0),
            pings_pending: CoreSet::new(),
            pings_from: [const { AtomicU32::new(0) }; MAX_CORES],
            unexpected_irqs: AtomicU64::new(0),
            jobs: IrqSpinLock::new(VecDeque::new()),
            job_count: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            irqs: AtomicU64::new(0),
            ever_online: AtomicBool::new(false),
            jobs_closed: AtomicBool::new(false),
            offline_count: AtomicU64::new(0),
            release: AtomicBool::new(false),
        }
    }

    pub fn is_online(&self) -> bool {
        // ORDERING: Acquire, paired with the Release store of `online` in `bring_core_online`:
        // who sees the core online sees its GIC registration and mpidr.
        self.online.load(Ordering::Acquire)
    }

    pub fn mpidr(&self) -> u64 {
        self.mpidr.load(Ordering::Relaxed)
    }

    pub fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }

    /// Pings this core has received from core `from`.
    pub fn pings_from(&self, from: usize) -> u32 {
        self.pings_from[from].load(Ordering::Relaxed)
    }

    pub fn unexpected_irqs(&self) -> u64 {
        self.unexpected_irqs.load(Ordering::Relaxed)
    }

    /// Interrupts this core has acknowledged (ticks, SGIs, anything else).
    pub fn irqs(&self) -> u64 {
        self.irqs.load(Ordering::Relaxed)
    }

    /// Times this core has gone offline ([`crate::sched::take_offline`]).
    pub fn offline_count(&self) -> u64 {
        self.offline_count.load(Ordering::Relaxed)
    }

    /// True once the core has come online at least once (a start after that is a return).
    pub fn was_online_before(&self) -> bool {
        // ORDERING: Acquire, paired with the Release store in `bring_core_online`.
        self.ever_online.load(Ordering::Acquire)
    }

    /// True once the core has parked for good.
    pub fn is_parked(&self) -> bool {
        // ORDERING: Acquire, paired with the Release store of `parked` in `halt_this_core`.
        self.parked.load(Ordering::Acquire)
    }
}

static CORES: [PerCore; MAX_CORES] = [const { PerCore::new() }; MAX_CORES];
static CORES_ONLINE: AtomicUsize = AtomicUsize::new(0);
static GIC: spin::Once<Gic> = spin::Once::new();
/// The tick period in counts.
static TICK_PERIOD: AtomicU64 = AtomicU64::new(0);
/// Set when the run is ending and every core is being parked.
static HALTING: AtomicBool = AtomicBool::new(false);
/// How long [`halt_other_cores`] waits for the others to report parked.
const HALT_TIMEOUT_US: u64 = 500_000;

/// Errors from asking another core to do something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmpError {
    /// No core has this id (ids run from 0 to `cores_online() - 1`).
    NoSuchCore(usize),
    /// The heap could not hold the job.
    OutOfMemory,
    /// The core is offline, or leaving (`sched::take_offline`).
    CoreOffline(usize),
}

impl fmt::Display for SmpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmpError::NoSuchCore(core) => write!(f, "no online core {core}"),
            SmpError::OutOfMemory => write!(f, "out of memory for the job"),
            SmpError::CoreOffline(core) => write!(f, "core {core} is offline"),
        }
    }
}

/// The state core `id` shares.
pub fn core(id: usize) -> &'static PerCore {
    &CORES[id]
}

/// Cores brought up at boot. Ids are `0..cores_online()`. A core taken offline at run time
/// keeps its id and still counts here (ids stay dense); `core(id).is_online()` says whether it
/// is up now, and `sched::core_is_active` whether it schedules.
pub fn cores_online() -> usize {
    // ORDERING: Acquire, paired with the Release `fetch_add` in `bring_core_online`. All changes
    // of the counter are read-modify-writes, so they form one release sequence: seeing n
    // synchronises with every core that counted itself, and their set-up is visible.
    CORES_ONLINE.load(Ordering::Acquire)
}

/// The interrupt controller (after boot).
pub fn gic() -> &'static Gic {
    GIC.get().expect("GIC initialised during boot")
}

/// Boot core: sets up the interrupt controller's distributor and the tick period.
pub(crate) fn init_boot(gic: Gic, tick_period_counts: u64) {
    gic.init_distributor();
    GIC.call_once(|| gic);
    TICK_PERIOD.store(tick_period_counts.max(1), Ordering::Relaxed);
}

/// Every core, once, with IRQs still masked: its interrupt interface and timer, then it is
/// online. Prints the console contract's `core <id> online` line.
pub(crate) fn bring_core_online(id: usize) -> Result<(), GicError> {
    let mpidr = cpu::mpidr();
    let me = &CORES[id];
    me.mpidr.store(mpidr, Ordering::Relaxed);
    let gic = gic();
    gic.init_core_interface(id, mpidr)?;
    gic.enable_private(timer::TIMER_INTID);
    start_tick(me);
    crate::println!("core {id} online el={} mpidr={mpidr:#x}", cpu::current_el());
    // ORDERING: Release publishes this core's GIC registration (its SGI target) and mpidr to
    // whoever sees it online (Acquire in `is_online`) and may then send it SGIs.
    me.online.store(true, Ordering::Release);
    // ORDERING: Release, paired with the Acquire load in `cores_online` (same publication as
    // `online`). Was AcqRel: the acquire half paired with nothing, since this core reads none
    // of what the cores counted before it published; the release sequence of the increments
    // already carries each core's publication to the reader.
    CORES_ONLINE.fetch_add(1, Ordering::Release);
    // ORDERING: Release, paired with `was_online_before`: a later start of this core (a return
    // from offline) takes the rejoin path instead of counting itself again; and, stored after
    // the count, it tells the boot core (`wait_online` in kernel_init) that this core is
    // counted. (Waiting on `online` alone let the boot core print `smp: 63 cores online` of 64
    // when the last core was descheduled between its two stores, on a loaded host.)
    me.ever_online.store(true, Ordering::Release);
    Ok(())
}

/// A core coming back from offline (PSCI `CPU_ON` again, or released from its park), IRQs
/// masked: its interrupt interface and timer again, then it is online. It does not count itself
/// in `cores_online` again: its id was counted at boot. Its jobs queue opens again.
pub(crate) fn rejoin_this_core(id: usize) -> Result<(), GicError> {
    let me = &CORES[id];
    let mpidr = cpu::mpidr();
    let gic = gic();
    gic.init_core_interface(id, mpidr)?;
    gic.enable_private(timer::TIMER_INTID);
    start_tick(me);
    {
        let _jobs = me.jobs.lock();
        // ORDERING: Relaxed: read and written under the jobs lock.
        me.jobs_closed.store(false, Ordering::Relaxed);
    }
    // ORDERING: Release, as in `bring_core_online`: its GIC registration is visible to whoever
    // sees it online and sends it SGIs.
    me.online.store(true, Ordering::Release);
    Ok(())
}

/// The leaving core closes its jobs queue: `run_on` refuses it from now on (`CoreOffline`).
/// Returns the jobs queued before, for the caller to run before it goes.
pub(crate) fn close_jobs() -> VecDeque<Job> {
    let me = &CORES[cpu::core_id()];
    let mut jobs = me.jobs.lock();
    // ORDERING: Relaxed: read and written under the jobs lock, which `run_on` holds to check it.
    me.jobs_closed.store(true, Ordering::Relaxed);
    me.job_count.store(0, Ordering::Relaxed);
    core::mem::take(&mut *jobs)
}

/// The leaving core's last step before its power goes or it parks: its timer stops, its GIC
/// interface closes (so it takes no interrupt), and it is no longer online (no SGI is sent to
/// it). IRQs must be masked.
pub(crate) fn stop_this_core_for_offline() {
    let me = &CORES[cpu::core_id()];
    timer::stop();
    gic().disable_this_core();
    // ORDERING: Release: whoever sees the core offline sees its last counters.
    me.online.store(false, Ordering::Release);
}

/// Counts one more offline period of core `id` (once it is off).
pub(crate) fn note_offline(id: usize) {
    CORES[id].offline_count.fetch_add(1, Ordering::Relaxed);
}

/// Sends `sgi` to core `target`.
pub fn send_sgi(target: usize, sgi: Sgi) -> Result<(), SmpError> {
    if target >= MAX_CORES || !CORES[target].is_online() {
        return Err(SmpError::NoSuchCore(target));
    }
    gic().send_sgi(target, sgi as u8);
    Ok(())
}

/// Pings core `target`; it counts the ping against the calling core.
pub fn ping(target: usize) -> Result<(), SmpError> {
    if target >= MAX_CORES || !CORES[target].is_online() {
        return Err(SmpError::NoSuchCore(target));
    }
    // ORDERING: Release pairs with the receiver's Acquire swap in `on_ping` (`take_all`, on the
    // same word); the GIC driver's DSB makes the bit visible before the interrupt can be taken.
    CORES[target].pings_pending.insert(cpu::core_id(), Ordering::Release);
    send_sgi(target, Sgi::Ping)
}

fn on_ping(me: &PerCore) {
    // ORDERING: Acquire (each word's swap) pairs with the senders' Release `insert`.
    let pending = me.pings_pending.take_all(Ordering::Acquire);
    for from in pending.iter() {
        me.pings_from[from].fetch_add(1, Ordering::Relaxed);
    }
}

/// What a tick does besides counting itself and re-arming the timer, who hears of a queued job,
/// and what the deadline watchdog prints before it panics: registered at boot (the scheduler's).
#[derive(Clone, Copy)]
pub struct Handlers {
    /// Every core's tick (IRQ context, IRQs masked); may rewrite the frame to end a slice.
    pub tick: fn(&mut TrapFrame),
    /// Fires the timers due on this core (IRQ context, IRQs masked), at every timer
    /// interrupt: a tick, or a deadline the timer was armed for.
    pub timers: fn(),
    /// The earliest timer deadline this core serves (`u64::MAX`: none), to arm the timer for.
    pub earliest_deadline: fn() -> u64,
    /// A job was queued for this core (called by [`run_on`] once it is in the queue).
    pub job_queued: fn(usize),
    /// Prints the state of the run when the deadline watchdog fires.
    pub dump: fn(),
    /// Holds the calling process on its core (true) or lets it move again (false); nothing
    /// outside a process. [`run_on_all_and_wait`] holds its caller while it runs the caller's
    /// own share.
    pub hold_current: fn(bool),
}

static HANDLERS: spin::Once<Handlers> = spin::Once::new();

/// Registers the handlers (the boot core, before ticks are taken or jobs queued). Later calls
/// are ignored.
pub fn set_handlers(handlers: Handlers) {
    HANDLERS.call_once(|| handlers);
}

/// Counter value after which core 0's tick declares the run stuck (0 = no watchdog).
static WATCHDOG_AT: AtomicU64 = AtomicU64::new(0);

/// Arms the watchdog: if the run is still going `seconds` from now, core 0 prints every core's
/// scheduler state and panics (a hung test then says where it hung).
pub fn arm_watchdog(seconds: u64) {
    WATCHDOG_AT.store(cpu::counter() + seconds * cpu::counter_frequency(), Ordering::Relaxed);
}

fn check_watchdog(frame: &TrapFrame) {
    let at = WATCHDOG_AT.load(Ordering::Relaxed);
    if at != 0 && cpu::counter() > at {
        WATCHDOG_AT.store(0, Ordering::Relaxed);
        crate::println!(
            "watchdog: core 0 was at ELR={:#x} LR={:#x} SPSR={:#x} ({})",
            frame.elr,
            frame.x[30],
            frame.spsr,
            if crate::arch::context::interrupted_process(frame) { "a process" } else { "the kernel" }
        );
        if let Some(handlers) = HANDLERS.get() {
            (handlers.dump)();
        }
        panic!("watchdog: the run made no end within its deadline");
    }
}

/// The IRQ handler (called from the exception vector with IRQs masked).
pub fn handle_irq(_frame: &mut TrapFrame) {
    let me = &CORES[cpu::core_id()];
    let gic = gic();
    while let Some(irq) = gic.acknowledge() {
        me.irqs.fetch_add(1, Ordering::Relaxed);
        match irq.intid {
            timer::TIMER_INTID => {
                let now = cpu::counter();
                // ORDERING: Relaxed: the core's own value.
                let tick_due = now >= me.next_tick.load(Ordering::Relaxed);
                if tick_due {
                    me.ticks.fetch_add(1, Ordering::Relaxed);
                    advance_tick(me, now);
                }
                if let Some(handlers) = HANDLERS.get() {
                    // Timers first, so a process they wake is queued before a slice ends.
                    (handlers.timers)();
                }
                // Ends with an ISB, so the new compare value is in force before the EOI below.
                arm(me);
                if tick_due {
                    if cpu::core_id() == 0 {
                        check_watchdog(_frame);
                    }
                    // May end the running process's slice: the frame then returns to the
                    // scheduler.
                    if let Some(handlers) = HANDLERS.get() {
                        (handlers.tick)(_frame);
                    }
                }
            }
            id if id == Sgi::Wake as u32 => {}
            id if id == Sgi::Ping as u32 => on_ping(me),
            id if id == Sgi::Halt as u32 => {
                gic.end_of_interrupt(irq);
                halt_this_core();
            }
            _ => {
                me.unexpected_irqs.fetch_add(1, Ordering::Relaxed);
            }
        }
        gic.end_of_interrupt(irq);
    }
}

/// The first tick of a core coming online, a period from now.
fn start_tick(me: &PerCore) {
    let period = TICK_PERIOD.load(Ordering::Relaxed);
    // ORDERING: Relaxed: the core's own value.
    me.next_tick.store(cpu::counter() + period, Ordering::Relaxed);
    arm(me);
}

/// The tick after the one due now: a period after it, so ticks do not drift by handler
/// latency, or a period from now after a long stall (no burst of stale ticks).
fn advance_tick(me: &PerCore, now: u64) {
    let period = TICK_PERIOD.load(Ordering::Relaxed);
    // ORDERING: Relaxed: the core's own value.
    let mut next = me.next_tick.load(Ordering::Relaxed).wrapping_add(period);
    if next <= now {
        next = now + period;
    }
    me.next_tick.store(next, Ordering::Relaxed);
}

/// Arms this core's generic timer for the earlier of its next tick and the earliest timer
/// deadline it serves (the scheduler's, through `Handlers::earliest_deadline`).
fn arm(me: &PerCore) {
    // ORDERING: Relaxed: the core's own value.
    let next_tick = me.next_tick.load(Ordering::Relaxed);
    let deadline = HANDLERS.get().map_or(u64::MAX, |handlers| (handlers.earliest_deadline)());
    timer::arm_at(next_tick.min(deadline));
}

/// A timer deadline was set on this core (IRQs masked): arms the generic timer for it if it
/// comes before what the timer is armed for, so it fires at its time, not at the next tick.
pub fn deadline_added(deadline: u64) {
    if deadline < timer::armed_at() {
        timer::arm_at(deadline);
    }
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

/// Sleeps in WFI until `condition` holds. The check runs with IRQs masked, and WFI wakes on a
/// pending interrupt even while masked, so a wake-up arriving between check and sleep is not
/// lost; the tick bounds every sleep anyway.
pub fn wait_until(condition: impl Fn() -> bool) {
    loop {
        let irq = cpu::irq_save();
        if condition() {
            cpu::irq_restore(irq);
            return;
        }
        cpu::wait_for_interrupt();
        cpu::irq_restore(irq);
    }
}

/// The next job queued for the calling core (scheduler side, IRQs masked).
pub(crate) fn take_job() -> Option<Job> {
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
pub(crate) fn has_jobs() -> bool {
    // Relaxed (was SeqCst, "paired" with a SeqCst increment that reads nothing after it, so
    // it closed no store-buffering race): a sleeper that misses a just-queued job still wakes,
    // because `run_on` always sends the Wake SGI after counting (see there).
    CORES[cpu::core_id()].job_count.load(Ordering::Relaxed) != 0
}

/// True once the run is ending ([`halt_other_cores`] was called): cores waiting for something
/// that may never come (the console after the final words) park instead.
pub fn halting() -> bool {
    HALTING.load(Ordering::Relaxed)
}

/// Asks every other online core to park for good and waits (bounded) until they have. Returns
/// `(parked, asked)`. For the end of a run without semihosting: afterwards no other core
/// schedules, prints or takes interrupts.
pub fn halt_other_cores() -> (usize, usize) {
    HALTING.store(true, Ordering::Relaxed);
    let me = cpu::core_id();
    let others = || (0..MAX_CORES).filter(move |&c| c != me && CORES[c].is_online());
    let mut asked = 0;
    for core in others() {
        if send_sgi(core, Sgi::Halt).is_ok() {
            asked += 1;
        }
    }
    let parked = || others().filter(|&c| CORES[c].is_parked()).count();
    let deadline = crate::time::Deadline::after_us(HALT_TIMEOUT_US);
    while parked() < asked && !deadline.expired() {
        cpu::relax();
    }
    (parked(), asked)
}

/// Parks the calling core for good, in a low-power wait that nothing ends: IRQs masked, its
/// timer stopped and its GIC interface closed (a pending interrupt, even a masked one, would
/// end every WFI at once). Safe before the GIC exists and with the MMU off (plain stores).
pub fn halt_this_core() -> ! {
    let _ = cpu::irq_save();
    timer::stop();
    if let Some(gic) = GIC.get() {
        gic.disable_this_core();
    }
    // ORDERING: Release pairs with the Acquire in `is_parked`: whoever sees this core parked
    // also sees that it stopped touching shared state. (`get`: a panic before the core id is
    // set must not index out of bounds and panic again.)
    if let Some(me) = CORES.get(cpu::core_id()) {
        me.parked.store(true, Ordering::Release);
    }
    loop {
        cpu::wait_for_interrupt();
    }
}
