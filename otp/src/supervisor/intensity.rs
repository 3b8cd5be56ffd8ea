//! The restart window: the times of the restarts made within the intensity's period, to tell
//! when there have been too many.

use alloc::collections::VecDeque;

use beamcore::time;

use super::spec::Intensity;

/// The restarts made within the last period, oldest first. It never holds more than
/// `max_restarts + 1` entries: the one past that ends the supervisor.
pub(super) struct RestartWindow {
    max_restarts: usize,
    period_counts: u64,
    times: VecDeque<u64>,
}

impl RestartWindow {
    pub(super) fn new(intensity: Intensity) -> RestartWindow {
        RestartWindow {
            max_restarts: intensity.max_restarts as usize,
            period_counts: time::us_to_counts(intensity.period_us),
            times: VecDeque::new(),
        }
    }

    /// Records a restart now; false if it is one too many (more than `max_restarts` within the
    /// period, OTP's rule).
    pub(super) fn allow(&mut self) -> bool {
        let now = time::now_count();
        while self.times.front().is_some_and(|&then| now.saturating_sub(then) > self.period_counts) {
            self.times.pop_front();
        }
        self.times.push_back(now);
        self.times.len() <= self.max_restarts
    }
}
