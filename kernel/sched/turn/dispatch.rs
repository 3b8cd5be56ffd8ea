//! Giving a process its turn and acting on how the turn ended, from the scheduler loop or
//! straight from the process that gives the core up.
//!
//! A process asks for something (requeue, block, exit) by setting `pending` and switching away;
//! what it asked is done only after the switch, once its registers are saved and its stack is no
//! longer in use, so no other core can see a process that is still running (no process runs
//! twice). The switch saves the process and moves onto the scheduler's stack, where
//! [`next_turn_from_process`] ends the turn and starts the next process's when the loop has
//! nothing else to do (the attention word is clear): the core goes from one process to the next
//! without the loop's round. Otherwise it resumes the loop, which ends the turn itself.

use core::mem;
use core::sync::atomic::Ordering;

use super::ending::finish;
use super::unwind::{self, Why, exit_requested, requested_exit};
use crate::proc::process::{self, ExitReason};
use crate::record::stats::{bump, record_wait};
use crate::record::trace::{self, Event};
use crate::run::attention;
use crate::run::percore::{OnCore, Pending};
use crate::run::runqueue::{Accepted, InlinePush};
use crate::settings::{Telemetry, reductions_per_slice};
use beamcore_hal::arch::context::{self, Context, Next};
use beamcore_hal::{arch::cpu, ids::Slot};
use beamcore_mm::heap::TurnCount;

/// Runs the process in `slot` (taken from this core's queues) until the core comes back to the
/// loop, then ends the turn of whichever process ran last (processes may have handed the core
/// to each other meanwhile). Scheduler side.
pub(crate) fn run(core: &mut OnCore, slot: Slot) {
    if exit_requested(slot) && unwind::ends_unrun(slot) {
        finish(core, slot, requested_exit(slot));
        return;
    }
    let telemetry = attention::telemetry(core);
    let next = begin_turn(core, slot, true, telemetry);
    let scheduler_context: *mut Context = &mut core.local().context;
    core.lend(|| match next.preempted_frame() {
        // SAFETY: scheduler side, IRQs masked, the frame lies on the process's live stack.
        Some(frame) => unsafe { context::resume_preempted(&mut *scheduler_context, frame) },
        // SAFETY: scheduler side, IRQs masked; the context was saved by the process's last
        // switch (or made at spawn) and its stack is allocated.
        None => unsafe { context::switch_to_process(&mut *scheduler_context, &next_context(&next)) },
    });
    // Back on the scheduler's stack: no process is running on this core now.
    let local = core.local();
    if let Some(ended) = local.current.take() {
        let pending = mem::replace(&mut local.pending, Pending::Nothing);
        end_turn(core, ended, pending);
    }
}

fn next_context(next: &Next) -> Context {
    next.saved_context().expect("a saved context unless preempted")
}

/// Makes the process in `slot` (owned by this core, in no queue) the running one and says how
/// to resume it. `may_trace` false: the caller found tracing off (no trace call to inline).
/// `telemetry` is a constant where the caller chose its copy by the level (the hand-off).
#[inline(always)]
fn begin_turn(core: &mut OnCore, slot: Slot, may_trace: bool, telemetry: Telemetry) -> Next {
    // SAFETY: the process is out of every queue: this core owns it.
    let process_local = unsafe { process::slot(slot).local() };
    process_local.reductions = reductions_per_slice();
    let stats = core.scheduler().stats;
    bump(&stats.executed);
    if may_trace {
        trace::process_event(Event::Run, core.id(), slot, 0);
    }
    let now = cpu::counter();
    if telemetry == Telemetry::Full {
        record_wait(stats, now.wrapping_sub(process_local.queued_at));
    }
    let local = core.local();
    local.current = Some(slot);
    local.pending = Pending::Nothing;
    local.slice_started = now;
    if telemetry == Telemetry::Full {
        core.scheduler().heap_turn.start();
    }
    match process_local.preempted_frame.take() {
        Some(frame) => Next::preempted(frame.as_ptr()),
        None => Next::saved(&process_local.context),
    }
}

/// Does what the process in `slot`, whose turn just ended (its registers saved), asked for.
#[inline(never)]
fn end_turn(core: &mut OnCore, slot: Slot, pending: Pending) {
    let id = core.id();
    let heap_turn = core.scheduler().heap_turn;
    account_heap(heap_turn, slot, attention::telemetry(core));
    match pending {
        Pending::Requeue => {
            trace::process_event(Event::Yield, id, slot, 0);
            core.enqueue(slot);
        }
        Pending::Preempted => {
            trace::process_event(Event::Preempt, id, slot, 0);
            core.enqueue(slot);
        }
        Pending::Block => {
            process::slot(slot).registers_saved();
            trace::process_event(Event::Block, id, slot, 0);
        }
        Pending::Nothing => {}
        Pending::Exit(reason) => {
            trace::process_event(Event::Exit, id, slot, 0);
            finish(core, slot, reason);
        }
    }
}

/// Called by the running process: records what it asks for and gives the core up. Returns
/// when the process runs again, possibly on another core: the guard is used up (see
/// `OnCore::switch_away`).
pub(crate) fn switch_out(mut core: OnCore, pending: Pending) {
    let local = core.local();
    let slot = local.current.expect("switch_out from a process");
    local.pending = pending;
    let scheduler_context: *const Context = &local.context;
    // SAFETY: the running process on its own core, IRQs masked; its own `ProcessLocal` is not
    // otherwise borrowed here.
    let process_context: *mut Context = unsafe { &mut process::slot(slot).local().context };
    // SAFETY: process side (SPSel 0), IRQs masked; `scheduler_context` is this core's, saved
    // when its loop switched to the first process of this run of turns; what
    // `next_turn_from_process` returns is a process this core owns.
    core.switch_away(|| unsafe { context::switch_from_process(process_context, scheduler_context) });
}

/// Ends the calling process for `why` (a reason given, or its pending exit's: a kill, an exit
/// signal it does not trap), unwinding its stack first where it can (`unwind::begin`), else
/// where it stands.
pub(crate) fn end_unwinding(core: OnCore, why: Why) -> ! {
    let (core, reason) = unwind::begin(core, why, exit_out);
    exit_out(core, reason)
}

/// Called by the running process to end itself with `reason`: as [`switch_out`] with
/// `Pending::Exit`, but without saving its registers, which nothing reads again (its turn's end
/// frees its stack and slot).
pub(crate) fn exit_out(mut core: OnCore, reason: ExitReason) -> ! {
    let local = core.local();
    // Checked in every build, as `switch_out` does: from outside a process (a kernel job, say)
    // the switch below would leave for a scheduler context that is not waiting for it.
    local.current.expect("exit from a process");
    local.pending = Pending::Exit(reason);
    let scheduler_context: *const Context = &local.context;
    // SAFETY: process side (SPSel 0), IRQs masked; `scheduler_context` as in `switch_out`; the
    // process asks to exit, so nothing resumes it.
    core.switch_away(|| unsafe { context::leave_process(scheduler_context) });
    unreachable!("an exited process is never scheduled again")
}

/// Where the core goes once its running process has given it up: called by
/// `context_switch_from_process` on the scheduler's stack, with the process's registers saved.
/// When the loop has something to do first (see `attention`), the loop, which ends the turn;
/// else the turn ends here and the next process runs, as the loop would have picked it, or the
/// loop when nothing is left to run.
///
/// The usual hand-off (a yield or a blocking receive, tracing off, the run queues' inline
/// cases) is written so that it calls nothing out of line: every other case is a tail call
/// that does the rest. So this function saves no callee-saved registers, which would be
/// wasted work here: the switch's assembly restores all of them from the next context anyway.
/// The functions it tail-calls are `extern "C"` like it, because a tail call needs one calling
/// convention on both sides; only Rust calls them, so what they take needs no C layout.
/// Worth 12 instructions per yield and 13 per message hop when it came (docs/scheduler.md, "Cost").
#[unsafe(no_mangle)]
extern "C" fn next_turn_from_process() -> Next {
    let core = OnCore::enter();
    // ORDERING: Relaxed, as in `attention::loop_needed`.
    let bits = core.scheduler().attention.load(Ordering::Relaxed);
    // What telemetry costs here: nothing for the default, `telemetry=full`, which sets no bit:
    // its hand-off is behind the one test of the word this path always made. The other levels
    // set a bit each (never cleared) and take the tail call any set bit takes, which compares the
    // word already loaded with each. Each level has its own copy of the hand-off (`hand_off`
    // inlined with a constant): what it leaves out is gone at compile time, not tested per turn.
    // (Compared here, the compiler tested them before the default's hand-off: 4 instructions.)
    if bits != 0 {
        return next_turn_flagged(core, bits);
    }
    hand_off(core, Telemetry::Full)
}

/// `next_turn_from_process` when the attention word is not zero: the hand-off of
/// `telemetry=counters` or `off` when that is the only bit set, else the general path.
#[inline(never)]
#[allow(improper_ctypes_definitions)] // Rust to Rust only (see `next_turn_from_process`).
extern "C" fn next_turn_flagged(core: OnCore, bits: u32) -> Next {
    if bits == attention::TELEMETRY_COUNTERS {
        return hand_off(core, Telemetry::Counters);
    }
    if bits == attention::TELEMETRY_OFF {
        return hand_off(core, Telemetry::Off);
    }
    next_turn_general(core)
}

/// The hand-off of `next_turn_from_process` for one telemetry level (a constant wherever it is
/// called, so each copy keeps only its level's accounting).
#[inline(always)]
fn hand_off(mut core: OnCore, telemetry: Telemetry) -> Next {
    let shared = &core.scheduler().queues;
    let heap_turn = core.scheduler().heap_turn;
    let local = core.local();
    let Some(ended) = local.current else { return next_turn_general(core) };
    match local.pending {
        Pending::Requeue => {
            local.current = None;
            local.pending = Pending::Nothing;
            account_heap(heap_turn, ended, telemetry);
            match local.queues.push_inline(shared, ended, telemetry) {
                InlinePush::Done => {}
                rest => return next_turn_after_push(core, ended, rest),
            }
        }
        Pending::Block => {
            local.current = None;
            local.pending = Pending::Nothing;
            // The heap count first: once its registers are saved another core may run it.
            account_heap(heap_turn, ended, telemetry);
            process::slot(ended).registers_saved();
        }
        _ => return next_turn_ended(core),
    }
    let stats = core.scheduler().stats;
    match core.local().queues.take_next_inline(shared, stats, telemetry) {
        Some(Accepted::Run(slot)) if !exit_requested(slot) => begin_turn(&mut core, slot, false, telemetry),
        Some(Accepted::Run(slot)) => next_turn_after_kill(core, slot),
        Some(Accepted::Low(slot)) => next_turn_low(core, slot),
        None => next_turn_take(core),
    }
}

/// `next_turn_from_process` once the ended process is pushed, but not all the way
/// (`RunQueues::push_inline`): finishes the push, then picks the next process.
#[inline(never)]
#[allow(improper_ctypes_definitions)] // Rust to Rust only (see `next_turn_from_process`).
extern "C" fn next_turn_after_push(mut core: OnCore, ended: Slot, rest: InlinePush) -> Next {
    let shared = &core.scheduler().queues;
    core.local().queues.push_rest(shared, ended, rest);
    next_turn_take(core)
}

/// `next_turn_from_process` when the inline take found a low-priority process: the
/// low-priority rule decides whether it runs, else the next process.
#[inline(never)]
#[allow(improper_ctypes_definitions)] // Rust to Rust only (see `next_turn_from_process`).
extern "C" fn next_turn_low(mut core: OnCore, slot: Slot) -> Next {
    let shared = &core.scheduler().queues;
    let stats = core.scheduler().stats;
    let next = core.local().queues.take_low_or_next(shared, stats, slot);
    let telemetry = attention::telemetry(&core);
    begin_next_turn(core, next, telemetry)
}

/// `next_turn_from_process` once the ended process is dealt with: the next process as the
/// loop would pick it, or the loop.
#[inline(never)]
#[allow(improper_ctypes_definitions)] // Rust to Rust only (see `next_turn_from_process`).
extern "C" fn next_turn_take(core: OnCore) -> Next {
    let telemetry = attention::telemetry(&core);
    take_and_begin_turn(core, telemetry)
}

/// The next process from this core's queues and the start of its turn, or the loop.
#[inline(always)]
fn take_and_begin_turn(mut core: OnCore, telemetry: Telemetry) -> Next {
    let next = {
        let shared = &core.scheduler().queues;
        let stats = core.scheduler().stats;
        core.local().queues.take_next(shared, stats, telemetry)
    };
    begin_next_turn(core, next, telemetry)
}

/// The turn of `next` taken from this core's queues (ended instead if a kill waits for it), or
/// the loop when there is none.
#[inline(always)]
fn begin_next_turn(mut core: OnCore, next: Option<Slot>, telemetry: Telemetry) -> Next {
    match next {
        Some(slot) if !exit_requested(slot) => begin_turn(&mut core, slot, true, telemetry),
        Some(slot) => next_turn_after_kill(core, slot),
        None => Next::LOOP,
    }
}

/// `next_turn_from_process` for every case: the loop first if it has work, any way a turn
/// ends, tracing on.
#[inline(never)]
#[allow(improper_ctypes_definitions)] // Rust to Rust only (see `next_turn_from_process`).
extern "C" fn next_turn_general(core: OnCore) -> Next {
    next_turn_after_exit_or_any(core)
}

/// Where `context_leave_process` goes (the running process exits): as
/// `next_turn_from_process`, without its look for the usual ends of a turn.
#[unsafe(no_mangle)]
extern "C" fn next_turn_after_exit() -> Next {
    next_turn_after_exit_or_any(OnCore::enter())
}

/// The loop first if it has work, else the end of the turn, however it ended, and the next.
#[inline(always)]
fn next_turn_after_exit_or_any(mut core: OnCore) -> Next {
    if attention::loop_needed(&mut core) {
        return Next::LOOP;
    }
    next_turn_ended(core)
}

/// `next_turn_from_process` once the loop is known to have nothing to do first: ends the turn
/// however it ended, then picks the next process.
#[inline(never)]
#[allow(improper_ctypes_definitions)] // Rust to Rust only (see `next_turn_from_process`).
extern "C" fn next_turn_ended(core: OnCore) -> Next {
    // A copy per level, as the hand-off's: one look at the level instead of one per figure.
    match attention::telemetry(&core) {
        Telemetry::Full => end_and_begin_turn(core, Telemetry::Full),
        Telemetry::Counters => end_and_begin_turn(core, Telemetry::Counters),
        Telemetry::Off => end_and_begin_turn(core, Telemetry::Off),
    }
}

/// `next_turn_ended` for one telemetry level.
#[inline(always)]
fn end_and_begin_turn(mut core: OnCore, telemetry: Telemetry) -> Next {
    let id = core.id();
    let heap_turn = core.scheduler().heap_turn;
    let local = core.local();
    let Some(ended) = local.current.take() else { return Next::LOOP };
    // The usual ends of a turn (a yield, a receive that blocks) inline; the rest as the loop
    // does them.
    match local.pending {
        Pending::Requeue => {
            local.pending = Pending::Nothing;
            account_heap(heap_turn, ended, telemetry);
            trace::process_event(Event::Yield, id, ended, 0);
            core.enqueue(ended);
        }
        Pending::Block => {
            local.pending = Pending::Nothing;
            // The heap count first: once its registers are saved another core may run it (and
            // end its turn, adding to the same count).
            account_heap(heap_turn, ended, telemetry);
            process::slot(ended).registers_saved();
            trace::process_event(Event::Block, id, ended, 0);
        }
        pending => {
            local.pending = Pending::Nothing;
            end_turn(&mut core, ended, pending);
        }
    }
    // The take inline (not `next_turn_take`, whose frame would come on top of this one's).
    take_and_begin_turn(core, telemetry)
}

/// Adds what the heap grew by on this core during the turn that just ended to the process's
/// own count (see `ProcessLocal::heap_net_bytes`); nothing below `telemetry=full`.
#[inline(always)]
fn account_heap(heap_turn: &TurnCount, slot: Slot, telemetry: Telemetry) {
    if telemetry != Telemetry::Full {
        return;
    }
    let heap_used = heap_turn.counted();
    // SAFETY: the process ran on this core and is in no queue yet: this core owns it.
    unsafe { process::slot(slot).local().heap_net_bytes += heap_used };
}

/// `next_turn_from_process` when the process it took has been killed: ends it, and goes on as
/// the loop would.
#[cold]
#[inline(never)]
#[allow(improper_ctypes_definitions)] // Rust to Rust only (see `next_turn_from_process`).
extern "C" fn next_turn_after_kill(mut core: OnCore, mut slot: Slot) -> Next {
    loop {
        if !unwind::ends_unrun(slot) {
            let telemetry = attention::telemetry(&core);
            return begin_turn(&mut core, slot, true, telemetry);
        }
        let reason = requested_exit(slot);
        finish(&mut core, slot, reason);
        if attention::loop_needed(&mut core) {
            return Next::LOOP;
        }
        let telemetry = attention::telemetry(&core);
        let next = {
            let shared = &core.scheduler().queues;
            let stats = core.scheduler().stats;
            core.local().queues.take_next(shared, stats, telemetry)
        };
        match next {
            Some(next) if !exit_requested(next) => return begin_turn(&mut core, next, true, telemetry),
            Some(next) => slot = next,
            None => return Next::LOOP,
        }
    }
}
