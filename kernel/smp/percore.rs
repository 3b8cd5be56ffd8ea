//! The state each core shares with the others, and the table of it: apart from the code that
//! uses it (bring-up, interrupts, jobs, halting), because every one of those reads the same
//! record and none owns it.

use alloc::collections::VecDeque;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::Job;
use crate::core_set::CoreSet;
use crate::layout::MAX_CORES;
use crate::sync::IrqSpinLock;

/// What a core shares with the others. One cache line apart from its neighbours, so one
/// core's counters do not bounce another's line.
#[repr(C, align(64))]
pub struct PerCore {
    pub(super) online: AtomicBool,
    pub(super) mpidr: AtomicU64,
    /// Timer ticks this core has taken.
    pub(super) ticks: AtomicU64,
    /// When this core's next tick is due (its own: written and read by the core only). The
    /// generic timer is armed for the earlier of this and the earliest timer deadline.
    pub(super) next_tick: AtomicU64,
    /// Cores with a ping not yet counted by this core.
    pub(super) pings_pending: CoreSet,
    /// Pings counted, by sending core.
    pub(super) pings_from: [AtomicU32; MAX_CORES],
    /// Interrupts this core acknowledged that no handler expected.
    pub(super) unexpected_irqs: AtomicU64,
    pub(super) jobs: IrqSpinLock<VecDeque<Job>>,
    pub(super) job_count: AtomicUsize,
    /// Set when the core has parked for good ([`halt_this_core`]).
    ///
    /// [`halt_this_core`]: super::halt_this_core
    pub(super) parked: AtomicBool,
    /// Interrupts this core acknowledged, of every kind: an offline core takes none.
    pub(super) irqs: AtomicU64,
    /// The core has been online once: a start after that is a return from offline.
    pub(super) ever_online: AtomicBool,
    /// Written under the `jobs` lock: the core is leaving and takes no more jobs.
    pub(super) jobs_closed: AtomicBool,
    /// Times the core went offline.
    pub(super) offline_count: AtomicU64,
    /// The release word of a core parked offline without PSCI (`core_power`).
    pub release: AtomicBool,
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

    /// When this core's next tick is due (a counter reading). Read from another core it may be
    /// one period stale (the owner advances it in its tick handler): the simulator's turn
    /// model reads each core's tick phase from it, and a phase is the same a period later.
    pub fn next_tick(&self) -> u64 {
        // ORDERING: Relaxed: a statistic of another core's own value; either period will do.
        self.next_tick.load(Ordering::Relaxed)
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

pub(super) static CORES: [PerCore; MAX_CORES] = [const { PerCore::new() }; MAX_CORES];
pub(super) static CORES_ONLINE: AtomicUsize = AtomicUsize::new(0);

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
