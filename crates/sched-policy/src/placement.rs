//! Where runnable processes wait (`queues=`) and on which core a new process starts
//! (`placement=`): the two choices that turn beamcore's per-core design into its own baseline.
//!
//! beamcore's claim is that one run queue per core (LDXR/STXR deques and stealing) beats the
//! obvious alternative, one run queue for the whole machine under a lock. `queues=shared` is
//! that alternative, built into the same kernel so both run the same workloads with the same
//! priorities, preemption, process code and report (`shared_queue.rs`, docs/balancer.md,
//! "The shared-queue baseline"). `placement=round_robin` deals new processes over the cores
//! instead of starting them on the spawning core, which separates "the work started in the
//! wrong place" from "the balancer is slow to move it".
//!
//! Pure: tested on the host.

#![forbid(unsafe_code)]

use core::fmt;

/// Where runnable processes wait (bootarg `queues=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// One set of run queues per core (Chase-Lev deques), idle cores steal: beamcore's design.
    #[default]
    PerCore,
    /// One lock-protected FIFO per priority level for the whole machine; nothing to steal.
    Shared,
}

impl QueueMode {
    pub const ALL: [QueueMode; 2] = [QueueMode::PerCore, QueueMode::Shared];
    /// The bootarg values, in the order of [`QueueMode::ALL`].
    pub const NAMES: &'static [&'static str] = &["percore", "shared"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl fmt::Display for QueueMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// On which core a new free process starts when its spawner names none (bootarg `placement=`).
/// Bound processes and `SpawnOptions::on_core` always start where they say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SpawnPlacement {
    /// On the spawning core (the ERTS default: the child's data is in this core's cache).
    #[default]
    Local,
    /// Dealt over the online cores in turn, from one machine-wide counter.
    RoundRobin,
}

impl SpawnPlacement {
    pub const ALL: [SpawnPlacement; 2] = [SpawnPlacement::Local, SpawnPlacement::RoundRobin];
    /// The bootarg values, in the order of [`SpawnPlacement::ALL`].
    pub const NAMES: &'static [&'static str] = &["local", "round_robin"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The core a new process starts on: `spawner` for `Local`; for `RoundRobin`, the core the
    /// `ticket`-th spawn of the machine is dealt to (`ticket` comes from a counter every spawn
    /// increments, so consecutive spawns from any cores go to consecutive cores). `cores` is the
    /// number of cores online (at least 1).
    ///
    /// # Examples
    ///
    /// ```
    /// use beamcore::sched::placement::SpawnPlacement;
    /// assert_eq!(SpawnPlacement::Local.start_core(2, 7, 4), 2);
    /// assert_eq!(SpawnPlacement::RoundRobin.start_core(2, 7, 4), 3);
    /// ```
    pub fn start_core(self, spawner: usize, ticket: usize, cores: usize) -> usize {
        match self {
            SpawnPlacement::Local => spawner,
            SpawnPlacement::RoundRobin => ticket % cores.max(1),
        }
    }
}

impl fmt::Display for SpawnPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Capacity of each lock-free run queue (one per priority level per core); more runnable
/// processes spill to the core's overflow queue, where thieves do not see them.
pub const RUN_QUEUE_DEQUE_CAPACITY: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_defaults_are_todays_behaviour() {
        assert_eq!(QueueMode::default(), QueueMode::PerCore);
        assert_eq!(SpawnPlacement::default(), SpawnPlacement::Local);
        for (i, mode) in QueueMode::ALL.iter().enumerate() {
            assert_eq!(mode.name(), QueueMode::NAMES[i]);
            assert_eq!(mode.to_string(), QueueMode::NAMES[i]);
        }
        for (i, placement) in SpawnPlacement::ALL.iter().enumerate() {
            assert_eq!(placement.name(), SpawnPlacement::NAMES[i]);
        }
    }

    #[test]
    fn local_placement_keeps_the_spawner() {
        for ticket in 0..10 {
            assert_eq!(SpawnPlacement::Local.start_core(3, ticket, 8), 3);
        }
    }

    #[test]
    fn round_robin_deals_every_core_equally_whoever_spawns() {
        for cores in 1..=16 {
            let mut dealt = [0usize; 16];
            for ticket in 0..cores * 5 {
                let core = SpawnPlacement::RoundRobin.start_core(ticket % 3, ticket, cores);
                assert!(core < cores);
                dealt[core] += 1;
            }
            assert!(dealt[..cores].iter().all(|&n| n == 5), "{cores} cores: {dealt:?}");
        }
        // A counter that wrapped still lands on a core.
        assert!(SpawnPlacement::RoundRobin.start_core(0, usize::MAX, 3) < 3);
        // Zero cores (never online) is read as one rather than dividing by zero.
        assert_eq!(SpawnPlacement::RoundRobin.start_core(0, 5, 0), 0);
    }
}
