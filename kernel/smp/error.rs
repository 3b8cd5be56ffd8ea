//! The one error type of asking another core for something: the job and SGI paths return it,
//! and callers in the scheduler and the programs match on it, so it belongs to neither path.

use core::fmt;

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
