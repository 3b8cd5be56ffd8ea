//! Let it crash: a process that panics, is killed or gets an exit signal it does not trap gives
//! back what it owned by unwinding its own stack, so every `Box`, `Vec` and guard on it is
//! dropped, as Rust code expects of a panic.
//!
//! The unwinder is the `unwinding` crate's (DWARF CFI from `.eh_frame`, found through the
//! `.eh_frame_hdr` search table the linker makes). Unwinding starts only on a process's own
//! stack, with IRQs unmasked and no kernel guard held, and stops at [`run_at_base`], the base
//! of every process: nothing ever unwinds into the scheduler, whose frames lie on another stack
//! anyway. It is a forced unwind (`_Unwind_ForcedUnwind`, as a POSIX thread's exit is): one pass
//! over the frames, running every cleanup, where a raised exception takes two (a search for a
//! handler, then the cleanups); there is nothing to search for, since nothing but the base may
//! stop a process's end, and the one pass halves what an unwind costs. Where unwinding is not
//! possible (a fault, which has no unwind tables at the faulting instruction; a second end while
//! already unwinding; a process that never reaches a safe point after a kill; a frame the
//! unwinder cannot pass), the process is ended where it stands and the heap it still holds is
//! counted as not reclaimed (`sched::heap_not_reclaimed_bytes`). docs/scheduler.md, "How a
//! process ends", has the table of which end is which.

use alloc::boxed::Box;
use core::alloc::Layout;
use core::ffi::c_void;
use core::sync::atomic::Ordering;

use unwinding::abi::{
    _Unwind_ForcedUnwind, _Unwind_GetRegionStart, UnwindAction, UnwindContext, UnwindException, UnwindReasonCode,
};

use super::cleanup_walk::{self, Finding};
use crate::proc::process::{self, ExitReason, Unwinding};
use crate::record::stats::bump;
use crate::run::percore::OnCore;
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::Slot;

/// How a process's end is carried out once its stack is unwound (the dispatcher's
/// `exit_out`, passed in so that this module needs nothing above it).
pub(crate) type EndProcess = fn(OnCore, ExitReason) -> !;

/// The exception object of a process's end: the unwinder's header first (it is handed around
/// as a pointer to that), then what the base needs to end the process.
#[repr(C)]
struct Ending {
    header: UnwindException,
    reason: ExitReason,
    end: EndProcess,
}

/// "BEAMEXIT": the exception class, which only this module reads.
const ENDING_CLASS: u64 = u64::from_be_bytes(*b"BEAMEXIT");

/// The base of every process's stack: runs its entry. Out of line so that its frame is always
/// on the stack under the process's own (the unwind stops at its address), and the call is not
/// a tail call for the same reason (`black_box` after it).
#[inline(never)]
pub(crate) fn run_at_base(entry: *mut process::Entry) {
    // SAFETY: the caller's (`process_entry`): the running process's own entry, taken once.
    unsafe { (*entry).run() };
    core::hint::black_box(());
}

/// Why a process is to end, as its end is asked for: a reason given (its own `exit`, a panic),
/// or the one pending for it (a kill, an exit signal it does not trap, found at a safe point),
/// which [`begin`] reads itself: the caller then holds nothing across that read, and its frame
/// has no landing pad for the quick end to stop at (`cleanup_walk`).
#[derive(Clone, Copy)]
pub(crate) enum Why {
    Given(ExitReason),
    Pending,
}

/// Starts ending the calling process for `why` by unwinding its stack to [`run_at_base`],
/// where `end` then ends it; `core` is let go first, so no kernel state is held while
/// destructors run. Returns (a guard again, and the reason) only when it cannot unwind, and the caller then
/// ends it where it stands, what it holds counted as a fault's is: when it is unwinding already
/// (a panic in a destructor, or a kill seen at a safe point inside one), when the caller had
/// IRQs masked (kernel work on the process's behalf: the destructors would run there), when
/// the heap has no room for the unwind's exception object, or if the unwinder fails.
///
/// Never inlined: the quick end's walk starts from this function's own frame record, whose
/// place is checked once for its one copy (`cleanup_walk::walk`).
#[inline(never)]
pub(crate) fn begin(mut core: OnCore, why: Why, end: EndProcess) -> (OnCore, ExitReason) {
    let slot = core.local().current.expect("a process unwinds only its own stack");
    let process = process::slot(slot);
    let reason = match why {
        Why::Given(reason) => reason,
        Why::Pending => requested_exit(slot),
    };
    // SAFETY: the running process on its own core, IRQs masked by `core`; flags and the
    // stack's bounds are read, no reference kept.
    let local = unsafe { process.local() };
    if local.unwinding.is_some() || !core.entered_unmasked() {
        return (core, reason);
    }
    // Most ends find nothing to drop on the way to the base: then the unwind would run no
    // code, and the process ends here at once, as it would at the base.
    if let Some(top) = local.stack.as_ref().map(|stack| stack.top()) {
        let here = cleanup_walk::here();
        let finding = match cleanup_walk::walk(&here, top) {
            Finding::Rows => cleanup_walk::walk_rows(&here, top),
            finding => finding,
        };
        let finding = match finding {
            Finding::Unknown => {
                // Reading the tables takes more stack than the process may have left.
                // SAFETY: as above.
                if let Some(stack) = unsafe { process.local().stack.as_mut() } {
                    stack.extend_for_unwinding();
                }
                cleanup_walk::walk_learning(&here, top, run_at_base as *const () as usize)
            }
            finding => finding,
        };
        if let Finding::NothingToRun = finding {
            // SAFETY: as above; a flag is set, no reference kept.
            unsafe { process.local().ended_at_base = true };
            bump(&core.scheduler().stats.ends_at_once);
            end(core, reason)
        }
    }
    (unwind(core, reason, end), reason)
}

/// [`begin`]'s unwind, out of line so that the quick end above saves only the registers it
/// uses.
#[cold]
#[inline(never)]
fn unwind(mut core: OnCore, reason: ExitReason, end: EndProcess) -> OnCore {
    let slot = core.local().current.expect("a process unwinds only its own stack");
    let process = process::slot(slot);
    let cause = match reason {
        ExitReason::Panic => Unwinding::Panic,
        // ORDERING: Relaxed: the flag only; the reason is read under the slot lock when used.
        _ if process.exit_requested.load(Ordering::Relaxed) => Unwinding::Requested,
        _ => Unwinding::Own,
    };
    // SAFETY: the running process on its own core, IRQs masked by `core`; a flag is set, no
    // reference kept.
    unsafe { process.local().unwinding = Some(cause) };
    // The exception object: on the heap, not on this frame, because the cleanups run on the
    // frames above this one and would overwrite it. Allocated with IRQs masked still, so it is
    // the process's (the heap count of its turn), and freed at its base in the same way. The
    // allocation may fail (a process killed because the heap ran out, say): then the process
    // cannot unwind and ends where it stands, its heap counted, rather than stopping the
    // machine on an allocation error.
    let layout = Layout::new::<Ending>();
    // SAFETY: `Ending` is not zero-sized.
    let ending = unsafe { alloc::alloc::alloc(layout) }.cast::<Ending>();
    if ending.is_null() {
        return core;
    }
    // SAFETY: as above; the running process's own stack bounds, IRQs masked.
    if let Some(stack) = unsafe { process.local().stack.as_mut() } {
        stack.extend_for_unwinding();
    }
    // SAFETY: an all-zero header is a valid one (a class of 0, no cleanup function, the
    // unwinder's private words zero, as it expects of a fresh exception).
    let mut header: UnwindException = unsafe { core::mem::zeroed() };
    header.exception_class = ENDING_CLASS;
    // SAFETY: `ending` is fresh memory with `Ending`'s layout; `Box::from_raw` (with the same
    // global allocator and layout) frees it.
    unsafe { ending.write(Ending { header, reason, end }) };
    drop(core);
    // SAFETY: `ending` is a live exception object whose header comes first (`repr(C)`); the
    // stop function is `stop_at_base` with no argument.
    let code = unsafe { _Unwind_ForcedUnwind(ending.cast::<UnwindException>(), stop_at_base, core::ptr::null_mut()) };
    // Only if the unwinder failed before reaching the base (a frame without unwind tables, or
    // one that must not be unwound: an `extern "C"` function of the process's own).
    beamcore_smp::println!(
        "process on core {} could not unwind (unwinder code {}); ending it where it stands",
        cpu::core_id(),
        code.0
    );
    let core = OnCore::enter();
    // SAFETY: `ending` is the allocation above, written with an `Ending`; the unwinder is done
    // with it.
    drop(unsafe { Box::from_raw(ending) });
    core
}

/// The unwinder's stop function, asked before each frame's cleanups: it lets every frame of the
/// process's own be unwound and, at [`run_at_base`], ends the process.
///
/// # Safety
///
/// Called by `_Unwind_ForcedUnwind` only, with the `Ending` that `begin` made.
unsafe extern "C" fn stop_at_base(
    _version: core::ffi::c_int,
    _actions: UnwindAction,
    _class: u64,
    exception: *mut UnwindException,
    context: &mut UnwindContext<'_>,
    _argument: *mut c_void,
) -> UnwindReasonCode {
    if _Unwind_GetRegionStart(context) != run_at_base as *const () as usize {
        return UnwindReasonCode::NO_REASON;
    }
    // Every frame above the base has run its cleanups: what the process owned is dropped.
    // SAFETY: `exception` is the `Ending` that `begin` boxed (only `begin` starts this unwind).
    let ending = unsafe { Box::from_raw(exception.cast::<Ending>()) };
    let (reason, end) = (ending.reason, ending.end);
    drop(ending);
    let mut core = OnCore::enter();
    let slot = core.local().current.expect("the base of a running process");
    // SAFETY: the running process on its own core, IRQs masked; a flag is set, no reference
    // kept.
    unsafe { process::slot(slot).local().ended_at_base = true };
    bump(&core.scheduler().stats.ends_unwound);
    end(core, reason)
}

/// Whether an exit is waiting for the process in `slot` (a kill, or an exit signal it does not
/// trap): it is ended instead of run, or runs once more to unwind (`unwind::ends_unrun`).
pub(crate) fn exit_requested(slot: Slot) -> bool {
    // ORDERING: Relaxed: the flag carries no data; it is written under the slot lock (see
    // `kill`), and the reason is read under that lock.
    process::slot(slot).exit_requested.load(Ordering::Relaxed)
}

/// Why the process in `slot` must end (its flag `exit_requested` is set).
#[cold]
pub(crate) fn requested_exit(slot: Slot) -> ExitReason {
    process::slot(slot).shared.lock_irqs_masked().exit_reason()
}

/// Slices a process that is unwinding may still be preempted in (its destructors run) before a
/// pending exit ends it where it stands: unwinding is the exit being carried out, and under
/// emulation or load it can take more than a slice; a destructor that never returns cannot
/// keep a killed process alive for ever.
const UNWINDING_GRACE_TURNS: u8 = 64;

/// Whether the process in `slot`, whose exit is pending, is ended without running again. It
/// runs once more, to unwind from its safe point, if it stopped in a kernel call (its registers
/// saved by a switch: `receive`, `yield_now`, `bump_reductions`, ...). Preempted in its own code,
/// it gets one more slice to reach a safe point (up to [`UNWINDING_GRACE_TURNS`] if it is
/// unwinding already); preempted again past that, it is ended unrun, and so is a process that
/// never ran (its closure, which owns all it has, is dropped by `finish`).
pub(crate) fn ends_unrun(slot: Slot) -> bool {
    // SAFETY: the process is out of every queue and runs nowhere: this core owns it.
    let local = unsafe { process::slot(slot).local() };
    if local.entry.is_pending() {
        return true;
    }
    if local.preempted_frame.is_none() {
        return false;
    }
    let allowance = if local.unwinding.is_some() { UNWINDING_GRACE_TURNS } else { 1 };
    if local.exit_grace_turns >= allowance {
        return true;
    }
    local.exit_grace_turns += 1;
    false
}
