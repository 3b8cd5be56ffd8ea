//! Giving a process its turn and acting on how the turn ended: the switch from the scheduler
//! to a process and back, and the end of a process (its monitors told, its stack and slot
//! freed).
//!
//! A process asks for something (requeue, block, exit) by setting `pending` and switching back;
//! the scheduler acts only after the switch, once the process's stack is no longer in use, so
//! no other core can see a process that is still running (no process runs twice).

use core::sync::atomic::{AtomicU64, Ordering};

use super::mailbox;
use super::percore::{OnCore, Pending, this_scheduler_checked};
use super::process::{self, ExitReason, Message, Pid, State};
use super::settings::reductions_per_slice;
use super::stats::bump;
use super::trace::{self, Event};
use crate::arch::context::{self, Context};
use crate::arch::cpu;
use crate::mm::heap;
use crate::mm::stacks;

/// Runs the process in `slot` (taken from this core's queues) for one turn and acts on what it
/// asked for when it gives the core back. Scheduler side.
pub(super) fn run(core: &mut OnCore, slot: u32) {
    let id = core.id();
    let process = process::slot(slot);
    // ORDERING: Relaxed: the flag carries no data; `kill` writes it under the slot lock (see there).
    if process.kill_requested.load(Ordering::Relaxed) {
        finish(core, slot, ExitReason::Killed);
        return;
    }
    // SAFETY: the process is out of every queue: this core owns it.
    let process_local = unsafe { process.local() };
    process_local.reductions = reductions_per_slice();
    bump(&core.scheduler().stats.executed);
    trace::process_event(Event::Run, id, slot, 0);
    let local = core.local();
    local.current = Some(slot);
    local.pending = Pending::Nothing;
    local.slice_started = cpu::counter();
    local.turn_heap_mark = heap::net_bytes_on(id);
    let scheduler_context: *mut Context = &mut local.context;
    let preempted = process_local.preempted_frame.take();
    let process_context: *const Context = &process_local.context;
    core.lend(|| match preempted {
        // SAFETY: scheduler side, IRQs masked, the frame lies on the process's live stack.
        Some(frame) => unsafe { context::resume_preempted(&mut *scheduler_context, frame) },
        // SAFETY: scheduler side, IRQs masked, the context was saved by the process's last
        // switch (or made at spawn) and its stack is allocated.
        None => unsafe { context::switch_to_process(&mut *scheduler_context, &*process_context) },
    });
    // Back on the scheduler's stack: the process is not running anywhere now.
    let local = core.local();
    local.current = None;
    let heap_used = heap::net_bytes_on(id) - local.turn_heap_mark;
    let pending = core::mem::replace(&mut local.pending, Pending::Nothing);
    // SAFETY: as above; the process is in no queue until the match below puts it in one.
    unsafe { process.local().heap_net_bytes += heap_used };
    match pending {
        Pending::Requeue => {
            trace::process_event(Event::Yield, id, slot, 0);
            core.enqueue(slot);
        }
        Pending::Preempted => {
            trace::process_event(Event::Preempt, id, slot, 0);
            core.enqueue(slot);
        }
        Pending::Block => trace::process_event(Event::Block, id, slot, 0),
        Pending::Nothing => {}
        Pending::Exit(reason) => {
            trace::process_event(Event::Exit, id, slot, 0);
            finish(core, slot, reason);
        }
    }
}

/// Ends a process: wakes nobody twice, tells its monitors, frees its stack and slot.
fn finish(core: &mut OnCore, slot: u32, reason: ExitReason) {
    let process = process::slot(slot);
    let (pid, monitors, mailbox) = {
        let mut shared = process.shared.lock();
        let pid = Pid { index: slot, generation: shared.generation };
        shared.state = State::Free;
        shared.generation = shared.generation.wrapping_add(1);
        shared.timed_out = false;
        // Cleared under the lock that ends this generation: a `kill` of the old pid either
        // came before (and is cleared here) or sees the new generation and refuses.
        // ORDERING: Relaxed: written and read under the slot lock (see `kill`).
        process.kill_requested.store(false, Ordering::Relaxed);
        (pid, core::mem::take(&mut shared.monitors), core::mem::take(&mut shared.mailbox))
    };
    drop(mailbox);
    // SAFETY: the process has ended and is in no queue; this core owns what is left of it.
    let local = unsafe { process.local() };
    local.entry.clear();
    local.preempted_frame = None;
    if reason == ExitReason::Panic {
        // ORDERING: Relaxed: a total for the report.
        HEAP_NOT_RECLAIMED.fetch_add(local.heap_net_bytes.max(0) as u64, Ordering::Relaxed);
    }
    local.heap_net_bytes = 0;
    if let Some(stack) = local.stack.take() {
        stacks::free(stack);
    }
    // ORDERING: Relaxed: the slot is ours until `release_slot`, whose lock publishes it.
    process.migrations.store(0, Ordering::Relaxed);
    // Counted before the slot is released: whoever sees the slot free (through the free list's
    // lock) also sees this count, so spawned = completed + alive holds whenever nothing is
    // ending (the soak's exactly-once check relies on it).
    bump(&core.scheduler().stats.completed);
    process::release_slot(slot);
    if is_program_main(pid) {
        panic!("the program's main process {pid} ended: {reason}");
    }
    for watcher in monitors {
        let _ = mailbox::send(core, watcher, Message::Down { pid, reason });
    }
}

/// Called by the running process: records what it asks for and gives the core back. Returns
/// when the process runs again, possibly on another core: the guard is used up (see
/// `OnCore::switch_away`).
pub(super) fn switch_out(mut core: OnCore, pending: Pending) {
    let local = core.local();
    let slot = local.current.expect("switch_out from a process");
    local.pending = pending;
    let scheduler_context: *const Context = &local.context;
    // SAFETY: the running process on its own core, IRQs masked; its own `Local` is not
    // otherwise borrowed here.
    let process_context: *mut Context = unsafe { &mut process::slot(slot).local().context };
    // SAFETY: process side (SPSel 0), IRQs masked, `scheduler_context` is this core's.
    core.switch_away(|| unsafe { context::switch_to_scheduler(&mut *process_context, &*scheduler_context) });
}

/// The slot of the process running on this core, if any.
pub(super) fn current_slot() -> Option<u32> {
    OnCore::enter().local().current
}

/// The mapped part of the stack of the process running on this core, if any: where a
/// backtrace taken on this core may read besides the core's boot stack (the rest of the stack's
/// reservation would fault).
pub(crate) fn current_stack() -> Option<core::ops::Range<usize>> {
    // Also called on the way down, possibly before this core has recorded its id, or from a
    // fault in the middle of scheduler code: no `OnCore` (whose check would panic inside the
    // panic path), only copies read.
    let me = this_scheduler_checked()?;
    let irq = cpu::irq_save();
    let stack = me.current_unborrowed().and_then(|slot| {
        // SAFETY: the process runs (or ran last) on this core, which owns its `Local`; IRQs
        // are masked and only a copy of its stack bounds is taken.
        unsafe { process::slot(slot).local().stack.as_ref() }.map(|s| s.mapped())
    });
    cpu::irq_restore(irq);
    stack
}

/// The program's main process (slot in the high half, generation in the low; `u64::MAX` for
/// none): its end is the end of the run, so if it ends other than by returning (a panic, a
/// fault, a kill) the kernel stops with a `PANIC` rather than wait forever for its verdict.
static PROGRAM_MAIN: AtomicU64 = AtomicU64::new(u64::MAX);

fn pid_word(pid: Pid) -> u64 {
    u64::from(pid.index) << 32 | u64::from(pid.generation)
}

/// Names the program's main process (the boot code, once).
pub(crate) fn set_program_main(pid: Pid) {
    // ORDERING: Relaxed: set before the main process can end (it is being spawned).
    PROGRAM_MAIN.store(pid_word(pid), Ordering::Relaxed);
}

/// Is `pid` the program's main process?
pub(super) fn is_program_main(pid: Pid) -> bool {
    // ORDERING: Relaxed, as in `set_program_main`.
    PROGRAM_MAIN.load(Ordering::Relaxed) == pid_word(pid)
}

/// Heap bytes left allocated by processes that panicked (a panic does not unwind, so what they
/// held is not freed): counted here and in the report instead of being lost without a trace.
static HEAP_NOT_RECLAIMED: AtomicU64 = AtomicU64::new(0);

/// Heap bytes processes that panicked left allocated, in total.
pub fn heap_not_reclaimed_bytes() -> u64 {
    // ORDERING: Relaxed: a total for the report.
    HEAP_NOT_RECLAIMED.load(Ordering::Relaxed)
}
