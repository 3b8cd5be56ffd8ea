//! PSCI (Arm DEN 0022) calls to the firmware: start a core, stop the calling core, ask whether a
//! core is off, power the system off.

use core::fmt;

use crate::platform::PsciConduit;

const CPU_OFF: u64 = 0x8400_0002;
const CPU_ON_64: u64 = 0xC400_0003;
const AFFINITY_INFO_64: u64 = 0xC400_0004;
const SYSTEM_OFF: u64 = 0x8400_0008;

/// A PSCI error return code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsciError {
    NotSupported,
    InvalidParameters,
    Denied,
    AlreadyOn,
    OnPending,
    InternalFailure,
    NotPresent,
    Disabled,
    InvalidAddress,
    Unknown(i64),
}

impl PsciError {
    /// The PSCI return code this error stands for.
    pub fn code(self) -> i64 {
        match self {
            PsciError::NotSupported => -1,
            PsciError::InvalidParameters => -2,
            PsciError::Denied => -3,
            PsciError::AlreadyOn => -4,
            PsciError::OnPending => -5,
            PsciError::InternalFailure => -6,
            PsciError::NotPresent => -7,
            PsciError::Disabled => -8,
            PsciError::InvalidAddress => -9,
            PsciError::Unknown(code) => code,
        }
    }

    /// The error a PSCI return code stands for (a code that is not an error: `Unknown`).
    pub fn from_return(code: i64) -> PsciError {
        PsciError::from_code(code).err().unwrap_or(PsciError::Unknown(code))
    }

    fn from_code(code: i64) -> Result<(), PsciError> {
        Err(match code {
            0 => return Ok(()),
            -1 => PsciError::NotSupported,
            -2 => PsciError::InvalidParameters,
            -3 => PsciError::Denied,
            -4 => PsciError::AlreadyOn,
            -5 => PsciError::OnPending,
            -6 => PsciError::InternalFailure,
            -7 => PsciError::NotPresent,
            -8 => PsciError::Disabled,
            -9 => PsciError::InvalidAddress,
            other => PsciError::Unknown(other),
        })
    }
}

impl fmt::Display for PsciError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PsciError::NotSupported => write!(f, "PSCI: not supported"),
            PsciError::InvalidParameters => write!(f, "PSCI: invalid parameters (no such core?)"),
            PsciError::Denied => write!(f, "PSCI: denied"),
            PsciError::AlreadyOn => write!(f, "PSCI: core already on"),
            PsciError::OnPending => write!(f, "PSCI: core start already pending"),
            PsciError::InternalFailure => write!(f, "PSCI: internal failure"),
            PsciError::NotPresent => write!(f, "PSCI: core not present"),
            PsciError::Disabled => write!(f, "PSCI: core disabled"),
            PsciError::InvalidAddress => write!(f, "PSCI: invalid entry address"),
            PsciError::Unknown(code) => write!(f, "PSCI: unknown error {code}"),
        }
    }
}

fn call(conduit: PsciConduit, function: u64, arg1: u64, arg2: u64, arg3: u64) -> i64 {
    let mut result = function;
    match conduit {
        // SAFETY: a PSCI call per the SMC Calling Convention: x0-x3 in, x0 out, x4-x17 may be
        // clobbered by the firmware; no memory of ours is touched.
        PsciConduit::Hvc => unsafe {
            core::arch::asm!("hvc #0", inout("x0") result, inout("x1") arg1 => _, inout("x2") arg2 => _,
                inout("x3") arg3 => _, out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _, out("x12") _, out("x13") _,
                out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
        },
        // SAFETY: as above, through the secure monitor.
        PsciConduit::Smc => unsafe {
            core::arch::asm!("smc #0", inout("x0") result, inout("x1") arg1 => _, inout("x2") arg2 => _,
                inout("x3") arg3 => _, out("x4") _, out("x5") _, out("x6") _, out("x7") _,
                out("x8") _, out("x9") _, out("x10") _, out("x11") _, out("x12") _, out("x13") _,
                out("x14") _, out("x15") _, out("x16") _, out("x17") _, options(nostack))
        },
    }
    result as i64
}

/// Starts the core `target_mpidr` at physical address `entry` (MMU off) with `context` in x0.
pub fn cpu_on(conduit: PsciConduit, target_mpidr: u64, entry: u64, context: u64) -> Result<(), PsciError> {
    PsciError::from_code(call(conduit, CPU_ON_64, target_mpidr, entry, context))
}

/// Powers the calling core off (its caches and coherency are the firmware's to handle, PSCI
/// 5.1.2); returns only if the firmware refuses, with why.
pub fn cpu_off(conduit: PsciConduit) -> PsciError {
    PsciError::from_code(call(conduit, CPU_OFF, 0, 0, 0)).err().unwrap_or(PsciError::Unknown(0))
}

/// What PSCI says of a core's power state (`AFFINITY_INFO` at level 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerState {
    On,
    Off,
    OnPending,
}

/// The power state of the core `target_mpidr`: a core that called `CPU_OFF` is `Off` only once
/// the firmware has taken it down, and only then may `CPU_ON` start it again.
pub fn affinity_info(conduit: PsciConduit, target_mpidr: u64) -> Result<PowerState, PsciError> {
    match call(conduit, AFFINITY_INFO_64, target_mpidr, 0, 0) {
        0 => Ok(PowerState::On),
        1 => Ok(PowerState::Off),
        2 => Ok(PowerState::OnPending),
        code => Err(PsciError::from_code(code).err().unwrap_or(PsciError::Unknown(code))),
    }
}

/// Powers the machine off; returns only if the firmware refuses.
pub fn system_off(conduit: PsciConduit) -> PsciError {
    PsciError::from_code(call(conduit, SYSTEM_OFF, 0, 0, 0)).err().unwrap_or(PsciError::Unknown(0))
}
