//! Scheduling: BEAM-style processes on one scheduler per core, their run queues (the per-core
//! work-stealing deque), priorities and messages.
//!
//! The pure parts (the deque, the priority rules, the balancer's policy, the trace ring) are
//! crates of their own (crates/deque, crates/sched-policy, crates/trace-ring), host-tested and
//! re-exported here; the processes and the scheduler proper are this module's. `scheduler.rs`
//! says how its files fit together.

pub use beamcore_deque as deque;
pub use beamcore_sched_policy::{balance, placement, priority, queue_wait};
pub use beamcore_trace_ring as trace_ring;

mod active;
mod api;
mod attention;
mod cleanup_walk;
mod current;
mod dispatch;
mod dump;
mod ending;
mod entry;
mod hooks;
mod idle;
mod info;
mod links;
mod mailbox;
mod monitors;
mod node_cache;
mod offline;
mod percore;
mod process;
mod process_types;
mod receive;
mod registry;
mod reply;
mod runqueue;
mod scheduler;
mod settings;
mod shared_queue;
mod signals;
mod stats;
mod steal;
mod table;
pub mod telemetry;
mod timers;
pub mod trace;
mod unwind;
mod wake;
mod watchdog;

pub use active::{active_cores, core_is_active, offline_moves};
pub use api::{
    Placement, bump_reductions, core_load, core_stats, exit, is_alive, kill, memory_in_use, placement, process_count,
    self_pid, self_placement, send, send_value, spawn, spawn_with, yield_now,
};
pub(crate) use attention::job_queued;
pub use cleanup_walk::rows_only as quick_end_walks_rows_only;
pub(crate) use current::current_stack;
pub use dump::debug_dump;
pub use ending::heap_not_reclaimed_bytes;
pub(crate) use ending::set_program_main;
pub use hooks::set_crash_reports;
pub(crate) use hooks::{hold_current_on_core, on_panic, on_process_fault, on_tick, on_timers};
pub use info::{ProcessInfo, Status, process_info, set_priority};
pub use links::{link, send_exit, spawn_link, trap_exits, unlink};
pub use monitors::{demonitor, make_ref, monitor, spawn_monitor};
pub(crate) use offline::rejoin_scheduling;
pub use offline::{OfflineError, OnlineError, bring_online, take_offline, timeouts_moved};
pub use process::{
    Affinity, CONTROL_BLOCK_BYTES, DEFAULT_STACK_BYTES, ExitReason, INLINE_BYTES, InlineValue, MAX_PROCESSES, Message,
    Pid, Ref, SendError, SpawnError, SpawnOptions, limit as process_limit,
};
pub use receive::{
    receive, receive_matching, receive_matching_timeout, receive_timeout, receive_value, receive_value_timeout, sleep,
};
pub use registry::{MAX_NAME_BYTES, RegisterError, register, registered_count, send_named, unregister, whereis};
pub use reply::{CallError, Reply, ReplyRef, monitor_for_reply, receive_reply, reply, reply_ref};
pub use runqueue::RUN_NEXT_CAP;
pub(crate) use scheduler::init_core_scheduler;
pub(crate) use scheduler::run_loop;
pub use settings::{NotCollected, Telemetry, balance_config, queue_mode, set_strategy, spawn_placement, telemetry};
pub(crate) use settings::{init_global, init_telemetry};
pub use stats::{CoreStats, LATENCY_BUCKETS};
pub use steal::max_migrations_seen;
pub use table::SPAWN_FRAME_RESERVE_BYTES;
pub(crate) use timers::earliest_here as earliest_deadline_here;
pub use timers::{Cancelled, TimerRef, cancel_timer, pending_on as timers_pending_on, read_timer, send_after};

pub use crate::core_set::CoreMask;
pub use placement::{QueueMode, SpawnPlacement};
pub use priority::Priority;
pub use watchdog::{arm_progress_watchdog, disarm_progress_watchdog};
