//! PSCI (Arm DEN 0022) calls to the firmware: start a core, power the system off.

use core::fmt;

use crate::platform::PsciConduit;

const CPU_ON_64: u64 = 0xC400_0003;
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

/// Powers the machine off; returns only if the firmware refuses.
pub fn system_off(conduit: PsciConduit) -> PsciError {
    PsciError::from_code(call(conduit, SYSTEM_OFF, 0, 0, 0)).err().unwrap_or(PsciError::Unknown(0))
}
