//! Taking a core's hardware down and bringing it back, once the scheduler has moved its work
//! away (`sched::take_offline`): PSCI `CPU_OFF` and `CPU_ON` where the platform starts its cores
//! with PSCI (QEMU `virt`), a park the kernel manages itself where it releases them from a spin
//! table (the Raspberry Pi 4, which has no PSCI firmware).
//!
//! ```text
//!  PSCI:  leaving core: CPU_OFF ──▶ (power off) ... CPU_ON(id) ─▶ _secondary_start ─▶ rejoin
//!  park:  leaving core: WFE until RELEASE[id] ... writer: RELEASE[id] = 1, DSB, SEV ─▶ rejoin
//! ```
//!
//! A core that comes back through PSCI starts from scratch (`_secondary_start`: exception level,
//! FP, its boot stack, vectors, then MMU and caches in `kernel_init::secondary_core`). A parked
//! core never lost them (its caches and MMU stay on, its vectors set), so it only rejoins.

use core::fmt;
use core::sync::atomic::Ordering;

use aarch64_cpu::asm::barrier;

use crate::arch::{cpu, psci};
use crate::platform::{EnableMethod, PsciConduit};

/// Why the hardware side of a transition failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerError {
    /// The PSCI firmware refused the call.
    Psci(psci::PsciError),
}

impl fmt::Display for PowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PowerError::Psci(error) => write!(f, "{error} (code {})", error.code()),
        }
    }
}

/// How this platform stops and restarts a core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// PSCI `CPU_OFF` / `CPU_ON` through this conduit.
    Psci(PsciConduit),
    /// The kernel's own park: WFE on a release word, no firmware involved.
    Park,
}

/// The platform's mechanism (fixed at boot by how it started the cores).
pub fn mechanism() -> Mechanism {
    match crate::platform().enable_method {
        EnableMethod::Psci(conduit) => Mechanism::Psci(conduit),
        EnableMethod::SpinTable => Mechanism::Park,
    }
}

/// The calling core, already stopped (`smp::stop_this_core_for_offline`) with IRQs masked:
/// powers it off, or parks it. PSCI: never returns unless the firmware refuses, with why (the
/// caller then rejoins at once). Park: returns once released (the caller then rejoins).
pub fn power_down_this_core() -> Result<(), PowerError> {
    match mechanism() {
        Mechanism::Psci(conduit) => Err(PowerError::Psci(psci::cpu_off(conduit))),
        Mechanism::Park => {
            park_until_released();
            Ok(())
        }
    }
}

/// WFE until the release word says go. IRQs are masked and the GIC interface is closed, so
/// nothing but an event ends a WFE; a spurious wake just looks at the word again.
fn park_until_released() {
    let me = crate::core(cpu::core_id());
    loop {
        // ORDERING: Acquire, paired with the Release store in `power_up`: the core that released
        // us published everything before it (nothing in particular: the scheduler's state is
        // reached through its own locks and atomics afterwards).
        if me.release.swap(false, Ordering::Acquire) {
            return;
        }
        cpu::wait_for_event();
    }
}

/// Is core `id` (which said it is offline) really off, so that [`power_up`] may start it?
/// PSCI: `AFFINITY_INFO` says `Off` (a core that called `CPU_OFF` is off only once the firmware
/// has taken it down). Park: always (the release word waits for it).
pub fn is_powered_down(id: usize) -> Result<bool, PowerError> {
    match mechanism() {
        Mechanism::Psci(conduit) => psci::affinity_info(conduit, crate::core(id).mpidr())
            .map(|state| state == psci::PowerState::Off)
            .map_err(PowerError::Psci),
        Mechanism::Park => Ok(true),
    }
}

/// Starts core `id` again (it is off or parked): PSCI `CPU_ON` at `_secondary_start` with its
/// id, or its release word and an event.
pub fn power_up(id: usize) -> Result<(), PowerError> {
    match mechanism() {
        Mechanism::Psci(conduit) => {
            let entry = crate::boot::_secondary_start as *const () as u64;
            psci::cpu_on(conduit, crate::core(id).mpidr(), entry, id as u64).map_err(PowerError::Psci)
        }
        Mechanism::Park => {
            // ORDERING: Release, paired with the parked core's Acquire swap.
            crate::core(id).release.store(true, Ordering::Release);
            // ORDERING: DSB: the word is visible before the event that wakes the parked core
            // (SEV is no memory access, so a DMB would not order it).
            barrier::dsb(barrier::ISH);
            cpu::send_event();
            Ok(())
        }
    }
}
