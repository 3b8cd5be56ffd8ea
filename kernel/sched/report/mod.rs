//! What is read out of the schedulers: the telemetry report at the end of a run, the state dump
//! for a run that stopped making progress, and the progress watchdog that prints it. Reads every
//! part below it (and `offline/`, `steal/` for their figures); nothing but the entry points in
//! `hooks.rs` and `scheduler.rs` uses it.

pub(super) mod dump;
pub mod telemetry;
pub(super) mod watchdog;
