//! What a program may learn about a process, and change about itself: `process_info` (Erlang's
//! `process_info/1`) and `set_priority` (`process_flag(priority, P)`).

use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use super::calls::self_pid;
use crate::msg::signals;
use crate::proc::process::{self, Pid};
use crate::run::percore::OnCore;
use crate::run::runqueue::movable;
use beamcore_mm::layout::PAGE_BYTES;
use beamcore_sched_policy::priority::Priority;

/// Whether a process waits in `receive` or may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Running, or in a run queue.
    Runnable,
    /// Blocked in `receive`.
    Waiting,
}

/// A snapshot of a live process (each figure read under its lock, or from a counter only it
/// writes, or from its signal queue's word): what Erlang's `process_info/1` tells about the scheduler's side of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessInfo {
    pub pid: Pid,
    pub status: Status,
    /// Signals waiting in its queue: messages, and `Down`s and `Exit`s it has not yet received.
    /// Exact for the caller's own, and for another process whenever no signal to it is in
    /// flight (a push is counted under its lock, a take by the process alone).
    pub message_queue_len: usize,
    /// Reductions charged to it so far (`bump_reductions`).
    pub reductions: u64,
    /// Bytes of its stack mapped now (it grows a page at a time, up to its maximum).
    pub stack_bytes_mapped: usize,
    pub priority: Priority,
    /// The core that runs it or holds it in its queues.
    pub core: usize,
    /// Processes linked to it.
    pub links: Vec<Pid>,
    /// Processes it monitors.
    pub monitors: Vec<Pid>,
    /// Processes that monitor it.
    pub monitored_by: Vec<Pid>,
    pub registered_name: Option<String>,
    pub trap_exits: bool,
}

/// A snapshot of `pid`, or `None` if it has ended.
pub fn process_info(pid: Pid) -> Option<ProcessInfo> {
    let _core = OnCore::enter();
    let (process, shared) = signals::lock_live(pid)?;
    let relations = shared.relations.as_deref();
    let pids = |list: Option<&Vec<(crate::proc::process::Ref, Pid)>>| {
        list.map_or(Vec::new(), |l| l.iter().map(|e| e.1).collect())
    };
    Some(ProcessInfo {
        pid,
        status: if process.signals.is_waiting() { Status::Waiting } else { Status::Runnable },
        message_queue_len: process.queue_len(&shared),
        // ORDERING: Relaxed, for all four: figures for a report, each written by one writer.
        reductions: process.reductions.load(Ordering::Relaxed),
        stack_bytes_mapped: usize::from(process.stack_mapped_pages.load(Ordering::Relaxed)) * PAGE_BYTES,
        priority: process.priority(),
        core: process.core.load(Ordering::Relaxed).index(),
        links: relations.map_or(Vec::new(), |r| r.links.to_vec()),
        monitors: pids(relations.map(|r| &r.watching)),
        monitored_by: pids(relations.map(|r| &r.watchers)),
        registered_name: relations.and_then(|r| r.name.as_deref()).map(String::from),
        trap_exits: shared.trap_exits,
    })
}

/// Sets the calling process's priority (Erlang's `process_flag(priority, P)`); it takes effect
/// from the process's next time in a run queue. Returns the previous priority.
pub fn set_priority(priority: Priority) -> Priority {
    let me = self_pid().expect("set_priority is called from a process");
    let _core = OnCore::enter();
    let process = process::slot(me.index);
    // ORDERING: Relaxed: the running process's own fields, owned by its core (which reads them
    // when it next queues it); another core reaches them only through a queue's release/acquire.
    let old = Priority::from_u8(process.priority.swap(priority as u8, Ordering::Relaxed));
    // Whether the balancer may move it depends on its priority (a max process stays put).
    process.movable.store(movable(process), Ordering::Relaxed);
    old
}
