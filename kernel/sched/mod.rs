//! Scheduling: BEAM-style processes on one scheduler per core, their run queues (the per-core
//! work-stealing deque), priorities and messages.
//!
//! The pure parts (the deque, the priority rules, the balancer's policy) compile for the host
//! too; the processes and the scheduler proper are bare-metal only. `scheduler.rs` says how the
//! bare-metal files fit together.

pub use beamcore_deque as deque;
pub use beamcore_sched_policy::{balance, placement, priority, queue_wait};
pub use beamcore_trace_ring as trace_ring;

#[cfg(target_os = "none")]
mod active;
#[cfg(target_os = "none")]
mod api;
#[cfg(target_os = "none")]
mod attention;
#[cfg(target_os = "none")]
mod dispatch;
#[cfg(target_os = "none")]
mod dump;
#[cfg(target_os = "none")]
mod ending;
#[cfg(target_os = "none")]
mod entry;
#[cfg(target_os = "none")]
mod hooks;
#[cfg(target_os = "none")]
mod idle;
#[cfg(all(test, loom))]
mod kill_model;
#[cfg(target_os = "none")]
mod mailbox;
#[cfg(target_os = "none")]
mod offline;
#[cfg(target_os = "none")]
mod percore;
#[cfg(target_os = "none")]
mod process;
#[cfg(target_os = "none")]
mod process_types;
#[cfg(target_os = "none")]
mod runqueue;
#[cfg(target_os = "none")]
mod scheduler;
#[cfg(target_os = "none")]
mod settings;
#[cfg(target_os = "none")]
mod shared_queue;
#[cfg(target_os = "none")]
mod stats;
#[cfg(target_os = "none")]
mod steal;
#[cfg(target_os = "none")]
mod table;
#[cfg(target_os = "none")]
pub mod telemetry;
#[cfg(target_os = "none")]
mod timeouts;
#[cfg(target_os = "none")]
pub mod trace;
#[cfg(target_os = "none")]
mod wake;
#[cfg(target_os = "none")]
mod watchdog;

#[cfg(target_os = "none")]
pub use active::{active_cores, core_is_active, offline_moves};
#[cfg(target_os = "none")]
pub use api::{
    Placement, bump_reductions, core_load, core_stats, exit, is_alive, kill, memory_in_use, monitor, placement,
    process_count, receive, receive_timeout, self_pid, self_placement, send, spawn, spawn_with, yield_now,
};
#[cfg(target_os = "none")]
pub(crate) use attention::job_queued;
#[cfg(target_os = "none")]
pub(crate) use dispatch::current_stack;
#[cfg(target_os = "none")]
pub use dump::debug_dump;
#[cfg(target_os = "none")]
pub use ending::heap_not_reclaimed_bytes;
#[cfg(target_os = "none")]
pub(crate) use ending::set_program_main;
#[cfg(target_os = "none")]
pub(crate) use hooks::{on_panic, on_process_fault, on_tick};
#[cfg(target_os = "none")]
pub(crate) use offline::rejoin_scheduling;
#[cfg(target_os = "none")]
pub use offline::{OfflineError, OnlineError, bring_online, take_offline, timeouts_moved};
#[cfg(target_os = "none")]
pub use process::{
    Affinity, CONTROL_BLOCK_BYTES, DEFAULT_STACK_BYTES, ExitReason, MAX_PROCESSES, Message, Pid, SendError, SpawnError,
    SpawnOptions, limit as process_limit,
};
#[cfg(target_os = "none")]
pub use runqueue::RUN_NEXT_CAP;
#[cfg(target_os = "none")]
pub(crate) use scheduler::init_core_scheduler;
#[cfg(target_os = "none")]
pub(crate) use scheduler::run_loop;
#[cfg(target_os = "none")]
pub(crate) use settings::init_global;
#[cfg(target_os = "none")]
pub use settings::{balance_config, queue_mode, set_strategy, spawn_placement};
#[cfg(target_os = "none")]
pub use stats::{CoreStats, LATENCY_BUCKETS};
#[cfg(target_os = "none")]
pub use steal::max_migrations_seen;
#[cfg(target_os = "none")]
pub use table::SPAWN_FRAME_RESERVE_BYTES;

pub use crate::core_set::CoreMask;
pub use placement::{QueueMode, SpawnPlacement};
pub use priority::Priority;
#[cfg(target_os = "none")]
pub use watchdog::{arm_progress_watchdog, disarm_progress_watchdog};
