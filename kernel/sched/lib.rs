//! Scheduling: BEAM-style processes on one scheduler per core, their run queues (the per-core
//! work-stealing deque), priorities and messages.
//!
//! The pure parts (the deque, the priority rules, the balancer's policy, the trace ring) are
//! crates of their own (crates/deque, crates/sched-policy, crates/trace-ring), host-tested and
//! re-exported here; the processes and the scheduler proper are this module's, in folders by
//! concern (`scheduler.rs` says how they fit together). This file only declares them and
//! re-exports the public API: the scheduler's own files name what they use by its defining path,
//! never through these re-exports, so that each folder's imports show which floors it stands on.
//!
//! It is the scheduler layer of the kernel's stack of crates (docs/layout.md): it stands on the
//! cores, memory and hardware layers, which its files name by their crates (`beamcore_hal::arch`,
//! `beamcore_mm::heap`, `beamcore_smp`), and names nothing above it. The kernel crate builds its [`SchedConfig`] from the bootargs, hands it to
//! [`init_global`] at boot, and re-exports this crate to programs as `beamcore::sched`.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

extern crate alloc;

pub use beamcore_deque as deque;
pub use beamcore_sched_policy::{balance, placement, priority, queue_wait, run_next};
pub use beamcore_trace_ring as trace_ring;

mod api;
mod config;
mod hooks;
mod msg;
mod offline;
mod proc;
mod record;
mod report;
mod run;
mod scheduler;
mod settings;
mod steal;
mod turn;

pub use api::calls::{
    Placement, bump_reductions, core_load, core_stats, exit, is_alive, kill, memory_in_use, placement, process_count,
    self_pid, self_placement, send, send_value, spawn, spawn_with, yield_now,
};
pub use api::info::{ProcessInfo, Status, process_info, set_priority};
pub use api::links::{link, send_exit, spawn_link, trap_exits, unlink};
pub use api::monitors::{demonitor, make_ref, monitor, spawn_monitor};
pub use api::receive::{
    receive, receive_matching, receive_matching_timeout, receive_timeout, receive_value, receive_value_timeout, sleep,
};
pub use api::reply::{CallError, Reply, ReplyRef, monitor_for_reply, receive_reply, reply, reply_ref};
pub use hooks::set_crash_reports;
// `#[doc(hidden)] pub`: what the kernel crate's bring-up registers and calls (the handlers the
// layers below call through, each core's loop), not for programs.
pub use beamcore_sched_policy::run_next::RUN_NEXT_CAP;
pub use config::SchedConfig;
#[doc(hidden)]
pub use hooks::{hold_current_on_core, on_panic, on_process_fault, on_tick, on_timers};
pub use msg::registry::{MAX_NAME_BYTES, RegisterError, register, registered_count, send_named, unregister, whereis};
#[doc(hidden)]
pub use msg::timers::earliest_here as earliest_deadline_here;
pub use msg::timers::{Cancelled, TimerRef, cancel_timer, pending_on as timers_pending_on, read_timer, send_after};
#[doc(hidden)]
pub use offline::rejoin_scheduling;
pub use offline::{OfflineError, OnlineError, bring_online, frames_released, take_offline, timeouts_moved};
pub use proc::process::{
    Affinity, CONTROL_BLOCK_BYTES, DEFAULT_STACK_BYTES, ExitReason, INLINE_BYTES, InlineValue, MAX_PROCESSES, Message,
    Pid, Ref, SendError, SpawnError, SpawnOptions, limit as process_limit,
};
pub use proc::table::SPAWN_FRAME_RESERVE_BYTES;
pub use record::stats::{CoreStats, LATENCY_BUCKETS};
pub use report::dump::debug_dump;
pub use run::active::{active_cores, core_is_active, offline_moves};
#[doc(hidden)]
pub use run::attention::job_queued;
#[doc(hidden)]
pub use run::current::current_stack;
#[doc(hidden)]
pub use scheduler::init_core_scheduler;
#[doc(hidden)]
pub use scheduler::run_loop;
#[doc(hidden)]
pub use scheduler::start_tracing;
pub use settings::{NotCollected, Telemetry, balance_config, queue_mode, set_strategy, spawn_placement, telemetry};
pub use settings::{config, init_global};
pub use steal::migrate::max_migrations_seen;
pub use turn::cleanup_walk::learning_passes as quick_end_learning_passes;
pub use turn::cleanup_walk::rows_only as quick_end_walks_rows_only;
pub use turn::ending::heap_not_reclaimed_bytes;
#[doc(hidden)]
pub use turn::ending::set_program_main;

pub use beamcore_core_set::CoreMask;
pub use placement::{QueueMode, SpawnPlacement};
pub use priority::Priority;
pub use record::trace;
pub use report::telemetry;
pub use report::watchdog::{arm_progress_watchdog, disarm_progress_watchdog};
