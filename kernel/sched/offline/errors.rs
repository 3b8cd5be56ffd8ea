//! Why a core could not be taken offline or brought back: what `take_offline` and
//! `bring_online` tell their caller.

use core::fmt;

use super::POWER_WAIT_US;
use beamcore_smp as smp;
use beamcore_smp::core_power::PowerError;

/// Why a core could not be taken offline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OfflineError {
    /// No core has this id (ids run from 0 to `smp::cores_online() - 1`).
    NoSuchCore(usize),
    /// Core 0 runs the boot-time duties (push rebalancing, the watchdog's tick) and stays.
    BootCore,
    /// It is the only core still scheduling.
    LastOnline(usize),
    /// It is offline already.
    AlreadyOffline(usize),
    /// Another core is going offline or coming online right now; one at a time.
    TransitionInProgress { core: usize },
    /// The PSCI firmware refused `CPU_OFF`; the core went back to scheduling (what it held was
    /// moved and stays moved).
    PsciRefused { core: usize, error: PowerError },
}

impl fmt::Display for OfflineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OfflineError::NoSuchCore(core) => {
                write!(f, "take_offline: no core {core} (cores are 0..{})", smp::cores_online())
            }
            OfflineError::BootCore => write!(f, "take_offline: core 0 cannot go offline"),
            OfflineError::LastOnline(core) => write!(f, "take_offline: core {core} is the last online core"),
            OfflineError::AlreadyOffline(core) => write!(f, "take_offline: core {core} is already offline"),
            OfflineError::TransitionInProgress { core } => {
                write!(f, "take_offline: core {core} is in transition; one core at a time")
            }
            OfflineError::PsciRefused { core, error } => {
                write!(f, "take_offline: core {core}: CPU_OFF refused: {error}; the core is back online")
            }
        }
    }
}

/// Why a core could not be brought back online.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnlineError {
    /// No core has this id (ids run from 0 to `smp::cores_online() - 1`).
    NoSuchCore(usize),
    /// It is online already.
    AlreadyOnline(usize),
    /// Another core (or this one) is in transition right now; one at a time.
    TransitionInProgress { core: usize },
    /// The firmware still reports the core powered on after its `CPU_OFF`.
    StillPoweredOn(usize),
    /// The PSCI firmware refused `CPU_ON` (or `AFFINITY_INFO`); the core stays offline.
    PsciRefused { core: usize, error: PowerError },
    /// The core was started but did not come back within the wait; it may still.
    DidNotStart(usize),
}

impl fmt::Display for OnlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OnlineError::NoSuchCore(core) => {
                write!(f, "bring_online: no core {core} (cores are 0..{})", smp::cores_online())
            }
            OnlineError::AlreadyOnline(core) => write!(f, "bring_online: core {core} is already online"),
            OnlineError::TransitionInProgress { core } => {
                write!(f, "bring_online: core {core} is in transition; one core at a time")
            }
            OnlineError::StillPoweredOn(core) => {
                write!(f, "bring_online: core {core} still powered on {} ms after it left", POWER_WAIT_US / 1000)
            }
            OnlineError::PsciRefused { core, error } => write!(f, "bring_online: core {core}: CPU_ON refused: {error}"),
            OnlineError::DidNotStart(core) => {
                write!(f, "bring_online: core {core} did not come back within {} ms", POWER_WAIT_US / 1000)
            }
        }
    }
}
