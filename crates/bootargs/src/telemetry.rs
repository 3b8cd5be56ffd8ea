//! `telemetry=full|counters|off`: how much a process turn records beyond what correctness needs.
//! A setting because the per-turn accounting is a large share of a yield (about 34 of 212
//! instructions when it came) and not every program reads it; and a typed one, because every
//! reader of a figure that was not collected must say so ([`NotCollected`]) instead of showing
//! a zero as if it had been measured.

use core::fmt;

/// What a turn records. The kernel reads it once at boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Telemetry {
    /// Everything: each core's queue-wait histogram, each process's heap balance (which a
    /// panic's report names), the turn and take counters.
    #[default]
    Full,
    /// The counters only: no queue-wait histogram, no per-process heap accounting.
    Counters,
    /// Only what correctness needs: also no count of takes (`local_pops`). The turn count stays:
    /// the progress watchdog tells a frozen core by it.
    Off,
}

impl Telemetry {
    pub const ALL: [Telemetry; 3] = [Telemetry::Full, Telemetry::Counters, Telemetry::Off];
    /// The bootarg values, in the order of [`Telemetry::ALL`].
    pub const NAMES: &'static [&'static str] = &["full", "counters", "off"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Whether each core's queue-wait histogram (`wait_us_buckets`, `wait_us_mean`) is kept.
    pub fn queue_wait(self) -> Result<(), NotCollected> {
        self.collects(self == Telemetry::Full)
    }

    /// Whether each process's heap balance (the bytes a panicking process leaves behind) is kept.
    pub fn heap_accounting(self) -> Result<(), NotCollected> {
        self.collects(self == Telemetry::Full)
    }

    /// Whether takes from a core's own queues (`local_pops`) are counted.
    pub fn take_counts(self) -> Result<(), NotCollected> {
        self.collects(self != Telemetry::Off)
    }

    fn collects(self, kept: bool) -> Result<(), NotCollected> {
        if kept { Ok(()) } else { Err(NotCollected(self)) }
    }
}

impl fmt::Display for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A figure the `telemetry=` level in force does not collect: what a report shows in its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotCollected(pub Telemetry);

impl fmt::Display for NotCollected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not collected (telemetry={})", self.0)
    }
}
