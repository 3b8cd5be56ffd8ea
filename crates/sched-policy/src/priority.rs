//! Process priorities and the order a core runs them in, with BEAM's semantics.
//!
//! Each core has three run levels: max, high, and one shared by normal and low. A level runs
//! only when every level above it is empty. In the shared level a low process is passed over
//! (sent to the back) until it has been picked [`LOW_PRIORITY_PASSES`] times; then it runs.
//! ERTS does the same with its `RESCHEDULE_LOW` count of 8.
//!
//! Pure: tested on the host.

#![forbid(unsafe_code)]

use core::fmt;

/// A process's priority, highest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    Max,
    High,
    #[default]
    Normal,
    Low,
}

/// How many times a low-priority process is picked and sent to the back before it runs.
pub const LOW_PRIORITY_PASSES: u8 = 8;

/// The run levels of a core, in the order they are served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Max = 0,
    High = 1,
    NormalLow = 2,
}

/// Number of run levels per core.
pub const LEVELS: usize = 3;

impl Priority {
    pub const ALL: [Priority; 4] = [Priority::Max, Priority::High, Priority::Normal, Priority::Low];

    /// The run level that holds processes of this priority.
    pub fn level(self) -> Level {
        match self {
            Priority::Max => Level::Max,
            Priority::High => Level::High,
            Priority::Normal | Priority::Low => Level::NormalLow,
        }
    }

    /// `level() as usize`, computed as the smaller of the priority's number and 2: a compare and
    /// a select where the `match` above compiles to two of each (a run-queue push does this once
    /// per process queued).
    #[inline]
    pub fn level_index(self) -> usize {
        (self as usize).min(Level::NormalLow as usize)
    }

    /// The weight of one runnable process of this priority in a core's load (4, 3, 2, 1).
    pub fn load_weight(self) -> u64 {
        match self {
            Priority::Max => 4,
            Priority::High => 3,
            Priority::Normal => 2,
            Priority::Low => 1,
        }
    }

    pub fn as_u8(self) -> u8 {
        self as u8
    }

    /// The inverse of [`as_u8`](Self::as_u8). Only its two low bits are read: the byte is always
    /// one `as_u8` wrote, and the mask makes the decoding one `and` with no clamp.
    #[inline]
    pub fn from_u8(value: u8) -> Priority {
        debug_assert!(value < 4, "not a priority: {value}");
        match value & 3 {
            0 => Priority::Max,
            1 => Priority::High,
            2 => Priority::Normal,
            _ => Priority::Low,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Priority::Max => "max",
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The first level (in serving order) that has work, given which levels are non-empty.
pub fn first_nonempty(nonempty: [bool; LEVELS]) -> Option<Level> {
    [Level::Max, Level::High, Level::NormalLow].into_iter().find(|&level| nonempty[level as usize])
}

/// What to do with a process just taken from the normal/low level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LowPriorityDecision {
    Run,
    /// Put it at the back of its level and pick again.
    PassOver,
}

/// Applies the low-priority rule to a process taken from its level. `passes` is the process's
/// own count of times it was passed over; it is reset when the process runs.
pub fn low_priority_rule(priority: Priority, passes: &mut u8) -> LowPriorityDecision {
    if priority != Priority::Low {
        return LowPriorityDecision::Run;
    }
    if *passes + 1 >= LOW_PRIORITY_PASSES {
        *passes = 0;
        LowPriorityDecision::Run
    } else {
        *passes += 1;
        LowPriorityDecision::PassOver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn levels_are_served_highest_first() {
        assert_eq!(first_nonempty([false, false, false]), None);
        assert_eq!(first_nonempty([false, false, true]), Some(Level::NormalLow));
        assert_eq!(first_nonempty([false, true, true]), Some(Level::High));
        assert_eq!(first_nonempty([true, true, true]), Some(Level::Max));
        assert_eq!(Priority::Low.level(), Priority::Normal.level());
        for p in Priority::ALL {
            assert_eq!(p.level_index(), p.level() as usize, "{p:?}");
        }
    }

    #[test]
    fn load_weights_match_the_formula() {
        let weights: Vec<u64> = Priority::ALL.iter().map(|p| p.load_weight()).collect();
        assert_eq!(weights, vec![4, 3, 2, 1]);
        for p in Priority::ALL {
            assert_eq!(Priority::from_u8(p.as_u8()), p);
        }
    }

    /// The names are what the console and the report print (and what a reader greps for).
    #[test]
    fn priorities_print_their_names() {
        let shown: Vec<String> = Priority::ALL.iter().map(|p| p.to_string()).collect();
        assert_eq!(shown, ["max", "high", "normal", "low"]);
    }

    /// Simulates one shared level with `normals` normal processes and one low process, all
    /// always runnable, and returns how many normal runs happen between low runs.
    fn normal_runs_between_low_runs(normals: usize, rounds: usize) -> Vec<usize> {
        let mut queue: VecDeque<(Priority, u8)> = VecDeque::new();
        queue.push_back((Priority::Low, 0));
        for _ in 0..normals {
            queue.push_back((Priority::Normal, 0));
        }
        let mut gaps = Vec::new();
        let mut since_low = 0;
        let mut runs = 0;
        while runs < rounds {
            let (priority, mut passes) = queue.pop_front().unwrap();
            match low_priority_rule(priority, &mut passes) {
                LowPriorityDecision::PassOver => queue.push_back((priority, passes)),
                LowPriorityDecision::Run => {
                    runs += 1;
                    if priority == Priority::Low {
                        gaps.push(since_low);
                        since_low = 0;
                    } else {
                        since_low += 1;
                    }
                    queue.push_back((priority, passes));
                }
            }
        }
        gaps
    }

    #[test]
    fn a_low_process_runs_once_per_eight_passes_of_its_level() {
        // With 3 normal processes the low one comes up once per round of the queue; it runs
        // every 8th time, so 8 rounds x 3 normal runs separate two of its runs.
        let gaps = normal_runs_between_low_runs(3, 400);
        assert!(gaps.len() > 5, "{gaps:?}");
        assert_eq!(gaps[0], 3 * (LOW_PRIORITY_PASSES as usize - 1), "first run after 7 passes");
        assert!(gaps[1..].iter().all(|&gap| gap == 3 * LOW_PRIORITY_PASSES as usize), "{gaps:?}");
    }

    #[test]
    fn a_lone_low_process_still_runs() {
        let mut passes = 0;
        let mut decisions = 0;
        while low_priority_rule(Priority::Low, &mut passes) == LowPriorityDecision::PassOver {
            decisions += 1;
        }
        assert_eq!(decisions, LOW_PRIORITY_PASSES as usize - 1);
        assert_eq!(passes, 0);
    }
}
