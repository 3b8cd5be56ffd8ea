//! The end of a process: its slot's generation bumped (stale pids refused from then on), its
//! monitors and links told, its stack and slot freed; and the two ends that are more than a process's
//! own: the program's main process (its end is the run's), and what panicking processes left
//! on the heap.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::msg::registry;
use crate::msg::signals;
use crate::proc::process::{self, ExitReason, Pid, State};
use crate::proc::table;
use crate::record::stats::bump;
use crate::run::percore::OnCore;
use beamcore_hal::ids::Slot;
use beamcore_mm::stacks;

/// Ends a process that no longer runs anywhere (its stack is not in use): wakes nobody twice,
/// tells its monitors, frees its stack and slot.
pub(crate) fn finish(core: &mut OnCore, slot: Slot, reason: ExitReason) {
    let process = process::slot(slot);
    let (pid, relations, queued) = {
        // IRQs are masked already (the caller's `OnCore`).
        let mut shared = process.shared.lock_irqs_masked();
        let pid = Pid { index: slot, generation: shared.generation };
        shared.state = State::Free;
        shared.generation = shared.generation.wrapping_add(1);
        // Cleared under the lock that ends this generation: a `kill` of the old pid either
        // came before (and is cleared here) or sees the new generation and refuses.
        // ORDERING: Relaxed: written and read under the slot lock (see `kill`).
        process.exit_requested.store(false, Ordering::Relaxed);
        shared.trap_exits = false;
        // Closed in the step that ends the generation: every push is made under this lock
        // after the generation check (`mailbox::send`), so each one either came before (and
        // its signal is dropped here) or finds the slot `Free`. A spawn into the slot reopens
        // the queue before its pid exists.
        // SAFETY: the process runs nowhere any more: this core is the queue's consumer.
        let queued = unsafe { process.signals.close() };
        shared.pushed = 0;
        process.taken.store(0, Ordering::Relaxed);
        // Taken out in the step that ends the generation: from here on nobody can link to it
        // or monitor it (they find it `Free`), and everyone who did is in these lists.
        (pid, shared.relations.take(), queued)
    };
    drop(queued);
    // SAFETY: the process has ended and is in no queue; this core owns what is left of it.
    let local = unsafe { process.local() };
    local.entry.clear();
    if !local.ended_at_base {
        // Ended where it stood (a fault, a kill it reached no safe point for, a second end
        // while unwinding): what it allocated and did not free is lost; counted.
        // ORDERING: Relaxed: a total for the report.
        HEAP_NOT_RECLAIMED.fetch_add(local.heap_net_bytes.max(0) as u64, Ordering::Relaxed);
    }
    local.heap_net_bytes = 0;
    if let Some(stack) = local.stack.take() {
        stacks::free(stack);
    }
    // The migration count and the preempted frame are set afresh by the next spawn into the
    // slot (`api::calls`); nobody reads them while the slot is free (`process_info` refuses).
    // ORDERING: Relaxed: the slot is ours until `release_slot`, whose lock publishes it.
    process.reductions.store(0, Ordering::Relaxed);
    // Counted before the slot is released: whoever sees the slot free (through the free list's
    // lock) also sees this count, so spawned = completed + alive holds whenever nothing is
    // ending (the soak's exactly-once check relies on it).
    bump(&core.scheduler().stats.completed);
    table::release_slot(slot);
    if is_program_main(pid) {
        panic!("the program's main process {pid} ended: {reason}");
    }
    if let Some(relations) = relations {
        // The name first: once anyone hears of the end, the name is free.
        if let Some(name) = &relations.name {
            registry::forget(name, pid);
        }
        signals::on_end(core, pid, reason, &relations);
    }
}

/// The program's main process (slot in the high half, generation in the low; `u64::MAX` for
/// none): its end is the end of the run, so if it ends other than by returning (a panic, a
/// fault, a kill) the kernel stops with a `PANIC` rather than wait forever for its verdict.
static PROGRAM_MAIN: AtomicU64 = AtomicU64::new(u64::MAX);

fn pid_word(pid: Pid) -> u64 {
    u64::from(pid.index.get()) << 32 | u64::from(pid.generation)
}

/// Names the program's main process (the boot code, once).
pub fn set_program_main(pid: Pid) {
    // ORDERING: Relaxed: set before the main process can end (it is being spawned).
    PROGRAM_MAIN.store(pid_word(pid), Ordering::Relaxed);
}

/// Is `pid` the program's main process?
pub(crate) fn is_program_main(pid: Pid) -> bool {
    // ORDERING: Relaxed, as in `set_program_main`.
    PROGRAM_MAIN.load(Ordering::Relaxed) == pid_word(pid)
}

/// Heap bytes left allocated by processes that ended without unwinding (`unwind.rs` says when):
/// counted here and in the report instead of being lost without a trace.
static HEAP_NOT_RECLAIMED: AtomicU64 = AtomicU64::new(0);

/// Heap bytes left allocated by processes that ended without unwinding, in total; not known
/// below `telemetry=full`, which keeps no process's heap balance.
pub fn heap_not_reclaimed_bytes() -> Result<u64, crate::settings::NotCollected> {
    crate::settings::telemetry().heap_accounting()?;
    // ORDERING: Relaxed: a total for the report.
    Ok(HEAP_NOT_RECLAIMED.load(Ordering::Relaxed))
}
