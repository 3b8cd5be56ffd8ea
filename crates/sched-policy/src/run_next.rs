//! The "run next" slot: a process woken by a message sent on its own core runs before the rest of
//! its level, as Go's `runnext` and Tokio's LIFO slot do. The sender is about to block or yield
//! (a request waits for its reply), the message and the receiver's state are warm in this core's
//! cache, and a request-reply pair then hands the core back and forth without queueing behind the
//! level. The slot is not stealable: it is the process this core means to run next, and a thief
//! that took it would undo the point of it.
//!
//! Fairness: a pair passing messages back and forth would keep the rest of its level from running
//! for good, so the slot goes first at most [`RUN_NEXT_CAP`] times in a row while other processes
//! wait in its level (Tokio caps its LIFO slot at 3 polls for the same reason). The kernel's run
//! queues and the simulator both follow [`RunNextStreak`].
//!
//! Pure: tested on the host.

#![forbid(unsafe_code)]

/// Turns in a row the "run next" slot may give while other processes wait in its level.
pub const RUN_NEXT_CAP: u32 = 4;

/// How many times in a row the "run next" slot has gone before the rest of its level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunNextStreak(u32);

impl RunNextStreak {
    pub const fn new() -> RunNextStreak {
        RunNextStreak(0)
    }

    /// Whether the slot's process goes before the others of its level now: under its cap, or
    /// with nobody else waiting there (nobody to be fair to). `others_waiting` is asked only at
    /// the cap, so the usual case reads nothing but the streak.
    #[inline(always)]
    pub fn goes_first(self, others_waiting: impl FnOnce() -> bool) -> bool {
        self.0 < RUN_NEXT_CAP || !others_waiting()
    }

    /// The slot's process was taken: one more turn in a row (a streak at its cap, which goes on
    /// only when nobody waits, counts from one again).
    #[inline(always)]
    pub fn took_run_next(&mut self) {
        if self.0 >= RUN_NEXT_CAP {
            self.0 = 0;
        }
        self.0 += 1;
    }

    /// Another process of the slot's level was taken: the level had its turn, and the streak
    /// starts again.
    #[inline(always)]
    pub fn took_other(&mut self) {
        self.0 = 0;
    }

    /// The turns in a row so far.
    pub fn turns(self) -> u32 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_goes_first_up_to_its_cap_while_others_wait() {
        let mut streak = RunNextStreak::new();
        for turn in 0..RUN_NEXT_CAP {
            assert!(streak.goes_first(|| true), "turn {turn} of the cap");
            streak.took_run_next();
        }
        assert!(!streak.goes_first(|| true), "at the cap the level gets its turn");
        streak.took_other();
        assert!(streak.goes_first(|| true), "after the level's turn the slot goes first again");
    }

    #[test]
    fn with_nobody_waiting_the_cap_does_not_apply() {
        let mut streak = RunNextStreak::new();
        for _ in 0..RUN_NEXT_CAP {
            streak.took_run_next();
        }
        assert!(streak.goes_first(|| false));
        streak.took_run_next();
        assert_eq!(streak.turns(), 1, "a streak past its cap counts from one again");
    }

    #[test]
    fn under_the_cap_the_level_is_not_looked_at() {
        let streak = RunNextStreak::new();
        assert!(streak.goes_first(|| panic!("the level is read only at the cap")));
    }

    /// Whatever the order of wakes and takes, a process waiting in the slot's level runs after
    /// at most `RUN_NEXT_CAP` turns of the slot.
    #[test]
    fn a_waiting_process_runs_within_the_cap() {
        let mut streak = RunNextStreak::new();
        let mut slot_turns_while_waiting = 0;
        for _ in 0..100 {
            if streak.goes_first(|| true) {
                streak.took_run_next();
                slot_turns_while_waiting += 1;
                assert!(slot_turns_while_waiting <= RUN_NEXT_CAP);
            } else {
                streak.took_other();
                slot_turns_while_waiting = 0;
            }
        }
    }
}
