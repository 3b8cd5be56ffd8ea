//! Cores that leave scheduling at run time and come back: the API (`take_offline`,
//! `bring_online`), the leaving core's last steps (every process it holds goes to an online
//! core), and where work meant for a core that has left goes instead. docs/cores.md gives the
//! protocol and the argument that no process is lost or run twice.
//!
//! ```text
//!  caller: take_offline(n) ─ state Leaving, LEAVE bit, SGI ─▶ core n, at its loop's top:
//!     out of ACTIVE ─▶ jobs closed, run ─▶ inbox closed, drained ─▶ queues emptied ─▶
//!     each process to an online core's inbox (bound ones rebound) ─▶ timeouts handed over ─▶
//!     frames at hand to the pool ─▶ timer and GIC off ─▶ state Offline ─▶ CPU_OFF / park
//!  caller: bring_online(n) ─ state Joining, CPU_ON / release ─▶ core n: GIC, timer,
//!     inbox open, into ACTIVE, state Online ─▶ its loop
//! ```
//!
//! One transition at a time in the whole machine (`TRANSITION`): while a core leaves, no other
//! core leaves or joins, so the cores it hands its work to stay online while it does.

mod errors;

use core::sync::atomic::{AtomicI64, AtomicU8, AtomicU64, AtomicUsize, Ordering};

use crate::run::active::{ACTIVE, MOVED, retarget, substitute};
use crate::run::attention;
use crate::run::percore::{self, OnCore};
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::CoreId;
use beamcore_hal::time::Deadline;
use beamcore_mm::frames;
use beamcore_mm::layout::MAX_CORES;
use beamcore_smp::core_power::{self, PowerError};
use beamcore_smp::{self as smp, Sgi};
pub use errors::{OfflineError, OnlineError};

const ONLINE: u8 = 0;
const LEAVING: u8 = 1;
const OFFLINE: u8 = 2;
const JOINING: u8 = 3;

/// Each core's place in the transitions (`ONLINE` .. `JOINING`).
static STATE: [AtomicU8; MAX_CORES] = [const { AtomicU8::new(ONLINE) }; MAX_CORES];
/// The core in transition, or `NO_TRANSITION`.
static TRANSITION: AtomicUsize = AtomicUsize::new(NO_TRANSITION);
const NO_TRANSITION: usize = usize::MAX;
/// The PSCI code a leaving core got from `CPU_OFF` (0: none), for the caller's error.
static REFUSED: [AtomicI64; MAX_CORES] = [const { AtomicI64::new(0) }; MAX_CORES];
/// `receive_timeout` deadlines handed over by leaving cores.
static TIMEOUTS_MOVED: AtomicU64 = AtomicU64::new(0);

/// How long `bring_online` waits for the firmware to report the core off, then for the core to
/// come back.
const POWER_WAIT_US: u64 = 2_000_000;

/// Frames that leaving cores gave back to the pool (their caches and runs), since boot.
static FRAMES_RELEASED: AtomicU64 = AtomicU64::new(0);

/// How many frames cores that went offline gave back to the pool, since boot: each leaving
/// core gives what it held at hand, so that the online cores can take it.
pub fn frames_released() -> u64 {
    // ORDERING: Relaxed: a count, read after the `take_offline` that returned once the core
    // was off (its Acquire on the core's state orders the add before).
    FRAMES_RELEASED.load(Ordering::Relaxed)
}

/// `receive_timeout` deadlines leaving cores handed to online ones.
pub fn timeouts_moved() -> u64 {
    // ORDERING: Relaxed: a figure for the report.
    TIMEOUTS_MOVED.load(Ordering::Relaxed)
}

/// Holds the machine's one transition; released when dropped.
struct Transition;

impl Transition {
    fn begin(core: usize) -> Result<Transition, usize> {
        // ORDERING: AcqRel: the winner sees the previous transition's end (its state stores)
        // and publishes its own start; losers learn which core is in transition.
        TRANSITION.compare_exchange(NO_TRANSITION, core, Ordering::AcqRel, Ordering::Acquire).map(|_| Transition)
    }
}

impl Drop for Transition {
    fn drop(&mut self) {
        // ORDERING: Release: the next transition sees this one's state stores.
        TRANSITION.store(NO_TRANSITION, Ordering::Release);
    }
}

fn state(core: usize) -> u8 {
    // ORDERING: Acquire, paired with the Release stores of the core in transition: seeing
    // `OFFLINE` means its work has been handed over; seeing `ONLINE` again, that it rejoined.
    STATE[core].load(Ordering::Acquire)
}

/// Waits for `done`, giving the core up between looks when called from a process (the leaving
/// core may be the caller's own: it leaves once the caller's turn ends), spinning politely
/// otherwise. Returns false if `deadline` passes first.
fn wait_for(mut done: impl FnMut() -> bool, deadline: Option<Deadline>) -> bool {
    while !done() {
        if deadline.is_some_and(|d| d.expired()) {
            return false;
        }
        if crate::api::calls::self_pid().is_some() {
            crate::api::calls::yield_now();
        } else {
            cpu::relax();
        }
    }
    true
}

/// Takes `core` out of scheduling and stops it: every process queued there, in its inbox or
/// waiting on its timeouts goes to the online cores (processes bound to it are rebound there,
/// for good; docs/cores.md says why), then the core powers off (PSCI `CPU_OFF`) or parks
/// (Raspberry Pi 4). Returns once it is off. A process may call it for its own core: it is
/// moved like the others once its turn ends.
pub fn take_offline(core: usize) -> Result<(), OfflineError> {
    if core >= smp::cores_online() {
        return Err(OfflineError::NoSuchCore(core));
    }
    let active = ACTIVE.load();
    if active.len() == 1 && active.contains(core) {
        return Err(OfflineError::LastOnline(core));
    }
    if core == 0 {
        return Err(OfflineError::BootCore);
    }
    let transition = Transition::begin(core).map_err(|busy| OfflineError::TransitionInProgress { core: busy })?;
    match state(core) {
        ONLINE => {}
        OFFLINE => return Err(OfflineError::AlreadyOffline(core)),
        _ => return Err(OfflineError::TransitionInProgress { core }),
    }
    REFUSED[core].store(0, Ordering::Relaxed);
    // ORDERING: Release: the leaving core (Acquire in `leave`) sees the request's state.
    STATE[core].store(LEAVING, Ordering::Release);
    attention::leave_requested(CoreId::new(core));
    let _ = smp::send_sgi(core, Sgi::Wake);
    // Bounded by one slice: the tick ends whatever runs there, and the loop then leaves.
    wait_for(|| state(core) != LEAVING, None);
    if state(core) == ONLINE {
        // ORDERING: Relaxed: written before the core's Release store of `ONLINE`, read after
        // our Acquire load of it.
        let code = REFUSED[core].load(Ordering::Relaxed);
        let error = PowerError::Psci(beamcore_hal::arch::psci::PsciError::from_return(code));
        return Err(OfflineError::PsciRefused { core, error });
    }
    smp::note_offline(core);
    // Until the firmware has it off, `CPU_ON` would be refused: wait here (bounded), so the
    // caller may bring it back at once. `bring_online` checks again anyway.
    let deadline = Deadline::after_us(POWER_WAIT_US);
    wait_for(|| core_power::is_powered_down(core).unwrap_or(true), Some(deadline));
    drop(transition);
    Ok(())
}

/// Starts an offline `core` again and waits until it schedules.
pub fn bring_online(core: usize) -> Result<(), OnlineError> {
    if core >= smp::cores_online() {
        return Err(OnlineError::NoSuchCore(core));
    }
    let _transition = Transition::begin(core).map_err(|busy| OnlineError::TransitionInProgress { core: busy })?;
    match state(core) {
        OFFLINE => {}
        ONLINE => return Err(OnlineError::AlreadyOnline(core)),
        _ => return Err(OnlineError::TransitionInProgress { core }),
    }
    let deadline = Deadline::after_us(POWER_WAIT_US);
    let mut powered_down = Ok(false);
    wait_for(
        || {
            powered_down = core_power::is_powered_down(core);
            !matches!(powered_down, Ok(false))
        },
        Some(deadline),
    );
    match powered_down {
        Ok(true) => {}
        Ok(false) => return Err(OnlineError::StillPoweredOn(core)),
        Err(error) => return Err(OnlineError::PsciRefused { core, error }),
    }
    // ORDERING: Relaxed: the core reads nothing through it; `TRANSITION` orders our stores.
    STATE[core].store(JOINING, Ordering::Relaxed);
    if let Err(error) = core_power::power_up(core) {
        STATE[core].store(OFFLINE, Ordering::Relaxed);
        return Err(OnlineError::PsciRefused { core, error });
    }
    if !wait_for(|| state(core) == ONLINE, Some(Deadline::after_us(POWER_WAIT_US))) {
        return Err(OnlineError::DidNotStart(core));
    }
    Ok(())
}

/// The calling core, at its loop's top with nothing running, asked to leave (the `LEAVE` bit):
/// hands over everything it holds and stops. Returns (with a fresh guard) only if it comes back
/// without a restart: released from its park, or refused by the firmware.
pub(super) fn leave(mut core: OnCore) -> OnCore {
    let me = core.id();
    attention::take(&core, attention::LEAVE);
    debug_assert!(core.local().current.is_none(), "core {me} leaves between processes");
    // 1. No new work is sent here from now on: placement, thieves, the balancer and the
    //    wake-up of sleepers look at ACTIVE. (Work already on its way is caught below.)
    // ORDERING: SeqCst, as every change of ACTIVE: a core that reads ACTIVE after this sees
    // the core gone; one that read it before reaches the inbox, closed below under its lock.
    ACTIVE.remove(me.index(), Ordering::SeqCst);
    core.local().end_search();
    // 2. Jobs queued before the close run now, as the loop would have run them (IRQs open).
    let jobs = smp::close_jobs();
    attention::take(&core, attention::JOBS);
    if !jobs.is_empty() {
        drop(core);
        cpu::irq_enable();
        for job in jobs {
            job();
        }
        let _ = cpu::irq_save();
        core = OnCore::enter();
    }
    // 3. The inbox closes: a waker that takes its lock after this goes to another core (see
    //    `wake::deliver`); what is in it joins the run queues here, to go with the rest.
    attention::take(&core, attention::INBOX);
    crate::run::wake::close_and_drain_inbox(&mut core);
    // 4. Everything queued here goes, round robin over the active cores.
    let mut targets = ActiveRoundRobin::after(me);
    let mut moved = 0u64;
    loop {
        let next = {
            let shared = &core.scheduler().queues;
            core.local().queues.take_any(shared)
        };
        let Some(slot) = next else { break };
        let target = retarget(slot, me, targets.next());
        crate::run::wake::deliver(&mut core, slot, target);
        moved += 1;
    }
    MOVED.fetch_add(moved, Ordering::Relaxed);
    // 5. Its timers' table goes to one online core, which serves it from now on (fires its
    // timers, arms its own generic timer for them) until this core is back.
    let target = targets.next();
    let pending = crate::msg::timers::hand_over(me, target);
    if pending != 0 {
        TIMEOUTS_MOVED.fetch_add(pending as u64, Ordering::Relaxed);
        // Wake it so that it arms its timer for them now (`scheduler::expire_timeouts`).
        let _ = beamcore_smp::send_sgi(target.index(), beamcore_smp::Sgi::Wake);
    }
    attention::set_own(&core, attention::TIMEOUTS, false);
    // 6. Its frames at hand (cache and run) go to the pool's free list: nothing of the pool
    //    waits for a core that is off. It takes frames again when it is back.
    FRAMES_RELEASED.fetch_add(frames::release_this_core() as u64, Ordering::Relaxed);
    // 7. Stop: no interrupt, no tick, nothing runs here until the core rejoins.
    smp::stop_this_core_for_offline();
    drop(core);
    let _ = cpu::irq_save();
    // ORDERING: Release: the caller (Acquire in `state`) sees everything above done.
    STATE[me.index()].store(OFFLINE, Ordering::Release);
    if let Err(PowerError::Psci(error)) = core_power::power_down_this_core() {
        REFUSED[me.index()].store(error.code(), Ordering::Relaxed);
    }
    // Released from its park, or the firmware refused: rejoin where we are.
    if let Err(error) = smp::rejoin_this_core(me.index()) {
        panic!("core {me}: cannot rejoin: {error}");
    }
    rejoin_scheduling();
    let _ = cpu::irq_save();
    OnCore::enter()
}

/// A core coming back (after its restart through PSCI, or on leaving its park): its TPIDR_EL1,
/// its inbox open again, back in ACTIVE, state `ONLINE`. Its run queues, statistics and trace
/// buffer are kept from before (the queues are empty: everything went at the leave).
pub fn rejoin_scheduling() {
    percore::bind_this_core();
    let me = CoreId::this();
    // Its timers' table is its own again (served by another core while it was away).
    crate::msg::timers::take_back(me);
    {
        let mut core = OnCore::enter();
        crate::run::wake::open_inbox(&mut core);
        attention::set_own(&core, attention::TIMEOUTS, true);
        let local = core.local();
        local.searching = false;
        local.search_rounds = 0;
    }
    // ORDERING: SeqCst, as every change of ACTIVE (see `leave`).
    ACTIVE.insert(me.index(), Ordering::SeqCst);
    // ORDERING: Release: the caller of `bring_online` sees the core ready.
    STATE[me.index()].store(ONLINE, Ordering::Release);
}

/// The active cores, one after another, starting after a given core.
struct ActiveRoundRobin {
    last: CoreId,
}

impl ActiveRoundRobin {
    fn after(core: CoreId) -> ActiveRoundRobin {
        ActiveRoundRobin { last: core }
    }

    fn next(&mut self) -> CoreId {
        self.last = substitute(self.last);
        self.last
    }
}
