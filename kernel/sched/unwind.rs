//! Let it crash: a process that panics, is killed or gets an exit signal it does not trap gives
//! back what it owned by unwinding its own stack, so every `Box`, `Vec` and guard on it is
//! dropped, as Rust code expects of a panic.
//!
//! The unwinder is the `unwinding` crate's (DWARF CFI from `.eh_frame`, found through the
//! `.eh_frame_hdr` search table the linker makes). Unwinding starts only on a process's own
//! stack, with IRQs unmasked and no kernel guard held, and stops at [`run_catching`], the base
//! of every process: nothing ever unwinds into the scheduler, whose frames lie on another stack
//! anyway. Where unwinding is not possible (a fault, which has no unwind tables at the faulting
//! instruction; a second end while already unwinding; a process that never reaches a safe point
//! after a kill), the process is ended where it stands and the heap it held is counted as not
//! reclaimed (`sched::heap_not_reclaimed_bytes`). docs/scheduler.md, "How a process ends", has
//! the table of which end is which.

use alloc::boxed::Box;
use core::sync::atomic::Ordering;

use super::percore::OnCore;
use super::process::{self, ExitReason};
use crate::arch::cpu;

/// What an unwinding process's stack carries to its base: the reason it ends with.
struct Ending(ExitReason);

/// Runs a process's entry; an unwind of its stack stops here. Returns the reason the process
/// ends with: `Normal` when the entry returned, else the reason the unwind carried (`Panic` for
/// a panic, whatever the kill or exit signal said otherwise).
pub(super) fn run_catching(entry: impl FnOnce()) -> ExitReason {
    match unwinding::panic::catch_unwind(entry) {
        Ok(()) => ExitReason::Normal,
        // A payload of another kind cannot come from this kernel (only `end_unwinding` starts
        // an unwind); it would still be a failure of the process's own code.
        Err(payload) => payload.downcast::<Ending>().map_or(ExitReason::Panic, |ending| ending.0),
    }
}

/// Starts ending the calling process with `reason` by unwinding its stack to [`run_catching`],
/// which then ends it; `core` is let go first, so no kernel state is held while destructors run.
/// Returns (a guard again) only when it cannot unwind, and the caller then ends it where it
/// stands (`dispatch::end_unwinding`), what it holds counted as a fault's is: when it is
/// unwinding already (a panic in a destructor, or a kill seen at a safe point inside one), when
/// the caller had IRQs masked (kernel work on the process's behalf: the destructors would run
/// there), or if the unwinder fails.
pub(super) fn begin(mut core: OnCore, reason: ExitReason) -> OnCore {
    let slot = core.local().current.expect("a process unwinds only its own stack");
    let process = process::slot(slot);
    // SAFETY: the running process on its own core, IRQs masked by `core`; a flag is read and
    // set, no reference kept.
    let again = unsafe { core::mem::replace(&mut process.local().unwinding, true) };
    if again || !core.entered_unmasked() {
        return core;
    }
    // SAFETY: as above; the running process's own stack bounds, IRQs masked.
    if let Some(stack) = unsafe { process.local().stack.as_mut() } {
        stack.extend_for_unwinding();
    }
    // Allocated with IRQs masked still: the payload's allocation is the process's (the heap
    // count of its turn), and freed at its base in the same way.
    let payload: Box<dyn core::any::Any + Send> = Box::new(Ending(reason));
    drop(core);
    let code = unwinding::panic::begin_panic(payload);
    // Only if no frame caught it, which the base of every process does: the unwinder failed
    // (damaged unwind tables, say).
    crate::println!(
        "process on core {} could not unwind (unwinder code {}); ending it where it stands",
        cpu::core_id(),
        code.0
    );
    OnCore::enter()
}

/// Whether an exit is waiting for the process in `slot` (a kill, or an exit signal it does not
/// trap): it is ended instead of run, or runs once more to unwind (`unwind::ends_unrun`).
pub(super) fn exit_requested(slot: u32) -> bool {
    // ORDERING: Relaxed: the flag carries no data; it is written under the slot lock (see
    // `kill`), and the reason is read under that lock.
    process::slot(slot).exit_requested.load(Ordering::Relaxed)
}

/// Why the process in `slot` must end (its flag `exit_requested` is set).
#[cold]
pub(super) fn requested_exit(slot: u32) -> ExitReason {
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
pub(super) fn ends_unrun(slot: u32) -> bool {
    // SAFETY: the process is out of every queue and runs nowhere: this core owns it.
    let local = unsafe { process::slot(slot).local() };
    if local.entry.is_pending() {
        return true;
    }
    if local.preempted_frame.is_none() {
        return false;
    }
    let allowance = if local.unwinding { UNWINDING_GRACE_TURNS } else { 1 };
    if local.exit_grace_turns >= allowance {
        return true;
    }
    local.exit_grace_turns += 1;
    false
}
