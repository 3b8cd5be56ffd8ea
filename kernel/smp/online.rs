//! A core's life as the interrupt controller sees it: the boot core's set-up of the
//! distributor, each core coming online (at boot, or back from offline), and the last steps of
//! one going offline. One file, because coming and going undo each other's steps and must be
//! read side by side.

use core::sync::atomic::Ordering;

use super::percore::{CORES, CORES_ONLINE};
use super::tick::{TICK_PERIOD, start_tick};
use crate::arch::cpu;
use crate::arch::timer;
use crate::drivers::gic::{Gic, GicError};

pub(super) static GIC: spin::Once<Gic> = spin::Once::new();

/// The interrupt controller (after boot).
pub fn gic() -> &'static Gic {
    GIC.get().expect("GIC initialised during boot")
}

/// Boot core: sets up the interrupt controller's distributor and the tick period.
pub fn init_boot(gic: Gic, tick_period_counts: u64) {
    gic.init_distributor();
    GIC.call_once(|| gic);
    TICK_PERIOD.store(tick_period_counts.max(1), Ordering::Relaxed);
}

/// Every core, once, with IRQs still masked: its interrupt interface and timer, then it is
/// online. Prints the console contract's `core <id> online` line.
pub fn bring_core_online(id: usize) -> Result<(), GicError> {
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
pub fn rejoin_this_core(id: usize) -> Result<(), GicError> {
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

/// The leaving core's last step before its power goes or it parks: its timer stops, its GIC
/// interface closes (so it takes no interrupt), and it is no longer online (no SGI is sent to
/// it). IRQs must be masked.
pub fn stop_this_core_for_offline() {
    let me = &CORES[cpu::core_id()];
    timer::stop();
    gic().disable_this_core();
    // ORDERING: Release: whoever sees the core offline sees its last counters.
    me.online.store(false, Ordering::Release);
}

/// Counts one more offline period of core `id` (once it is off).
pub fn note_offline(id: usize) {
    CORES[id].offline_count.fetch_add(1, Ordering::Relaxed);
}
