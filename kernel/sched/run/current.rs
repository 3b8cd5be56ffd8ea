//! Which process runs on this core, and its stack: what the API's `self_pid` and a backtrace
//! ask, apart from the dispatch code that changes it.

use super::percore::{OnCore, this_scheduler_checked};
use crate::proc::process;
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::Slot;

/// The slot of the process running on this core, if any.
pub(crate) fn current_slot() -> Option<Slot> {
    OnCore::enter().local().current
}

/// The mapped part of the stack of the process running on this core, if any: where a
/// backtrace taken on this core may read besides the core's boot stack (the rest of the stack's
/// reservation would fault).
pub fn current_stack() -> Option<core::ops::Range<usize>> {
    // Also called on the way down, possibly before this core has recorded its id, or from a
    // fault in the middle of scheduler code: no `OnCore` (whose check would panic inside the
    // panic path), only copies read.
    let me = this_scheduler_checked()?;
    let irq = cpu::irq_save();
    let stack = me.current_unborrowed().and_then(|slot| {
        // SAFETY: the process runs (or ran last) on this core, which owns its `ProcessLocal`; IRQs
        // are masked and only a copy of its stack bounds is taken.
        unsafe { process::slot(slot).local().stack.as_ref() }.map(|s| s.mapped())
    });
    cpu::irq_restore(irq);
    stack
}
