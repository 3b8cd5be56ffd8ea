//! Scheduling: BEAM-style processes on one scheduler per core, their run queues (the per-core
//! work-stealing deque), priorities and messages.
//!
//! The pure parts (the deque, the priority rules) compile for the host too; the processes and
//! the scheduler proper are bare-metal only.

pub mod balance;
pub mod deque;
pub mod priority;
pub mod trace_ring;

#[cfg(target_os = "none")]
mod api;
#[cfg(all(test, loom))]
mod kill_model;
#[cfg(target_os = "none")]
mod process;
#[cfg(target_os = "none")]
mod scheduler;
#[cfg(target_os = "none")]
pub mod telemetry;
#[cfg(target_os = "none")]
pub mod trace;
#[cfg(target_os = "none")]
mod watchdog;

#[cfg(target_os = "none")]
pub use api::{
    Placement, bump_reductions, core_load, core_stats, exit, is_alive, kill, memory_in_use, monitor, placement,
    process_count, receive, receive_timeout, self_pid, send, spawn, spawn_with, yield_now,
};
#[cfg(target_os = "none")]
pub use process::{
    Affinity, CONTROL_BLOCK_BYTES, DEFAULT_STACK_BYTES, ExitReason, MAX_PROCESSES, Message, Pid,
    SPAWN_FRAME_RESERVE_BYTES, SendError, SpawnError, SpawnOptions, limit as process_limit,
};
#[cfg(target_os = "none")]
pub use scheduler::{
    CoreStats, LATENCY_BUCKETS, balance_config, debug_dump, heap_not_reclaimed_bytes, max_migrations_seen, set_strategy,
};
#[cfg(target_os = "none")]
pub(crate) use scheduler::{
    current_stack, init_global, init_this_core, on_panic, on_process_fault, on_tick, run_loop, set_program_main,
};

pub use priority::Priority;
#[cfg(target_os = "none")]
pub use watchdog::{arm_progress_watchdog, disarm_progress_watchdog};
