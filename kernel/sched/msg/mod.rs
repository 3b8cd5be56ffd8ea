//! Signals between processes: delivering a message or signal to a mailbox (and waking its
//! owner), exit signals and monitor `Down`s between the two ends of a link or monitor, timers,
//! and registered names. Uses `run/` to make a receiver runnable; the calls a program makes
//! (`receive`, `link`, `monitor`, `reply`) are in `api/`, above the switch that blocking needs.

pub(super) mod mailbox;
pub(super) mod registry;
pub(super) mod signals;
pub(super) mod timers;
