//! Monitors with references, as a program asks for them: `make_ref`, `monitor`, `demonitor`,
//! `spawn_monitor` (Erlang's `make_ref/0`, `monitor(process, Pid)`, `demonitor/2`,
//! `spawn_monitor`). How a `Down` travels, and why each monitor gives exactly one, is
//! `msg/signals.rs`.

use core::sync::atomic::{AtomicU64, Ordering};

use beamcore_signal_queue::Mark;

use super::calls::{Relation, self_pid, spawn_related};
use crate::msg::mailbox::push_signal;
use crate::msg::signals::{self, is_live, lock_pair};
use crate::proc::process::{ExitReason, Message, Pid, Ref, SpawnError, SpawnOptions};
use crate::run::percore::OnCore;
use crate::run::wake::wake_by_message;
use beamcore_hal::arch::cpu;
use beamcore_mm::heap::OutOfMemory;
use beamcore_mm::layout::MAX_CORES;

/// Each core's count of references made, on a cache line of its own.
#[repr(align(64))]
struct RefCount(AtomicU64);

static REF_COUNTS: [RefCount; MAX_CORES] = [const { RefCount(AtomicU64::new(0)) }; MAX_CORES];

/// A new reference, unique for the run: the core that makes it in the top byte, that core's
/// count below. The count is an atomic add on the core's own line, so a process moved to
/// another core between reading the core id and adding still gets a unique value (the id
/// names the counter it added to).
pub fn make_ref() -> Ref {
    let core = cpu::core_id();
    // ORDERING: Relaxed: only uniqueness matters, which the atomic add gives.
    let count = REF_COUNTS[core].0.fetch_add(1, Ordering::Relaxed);
    Ref((core as u64) << 56 | (count & ((1 << 56) - 1)))
}

/// Monitors `pid`: when it ends, the caller receives `Message::Down { pid, reason, reference }`
/// with the reference returned here, exactly once (or at once with reason `NoProc` if `pid` has
/// already ended). Each call sets a monitor of its own. `OutOfMemory` if the monitor tables
/// cannot grow.
pub fn monitor(pid: Pid) -> Result<Ref, OutOfMemory> {
    let me = self_pid().expect("monitor is called from a process");
    let reference = make_ref();
    if pid == me {
        // A process cannot see its own end: the monitor would never fire, so none is kept.
        return Ok(reference);
    }
    let mut core = OnCore::enter();
    if pid.index != me.index
        && let Some((mut mine, mut theirs)) = lock_pair(me.index, pid.index)
        && is_live(&theirs, pid)
    {
        let own = signals::relations(&mut mine)?;
        signals::reserve(&mut own.watching)?;
        let other = signals::relations(&mut theirs)?;
        signals::reserve(&mut other.watchers)?;
        own.watching.push((reference, pid));
        other.watchers.push((reference, me));
        return Ok(reference);
    }
    // Ended already: the `Down` comes at once, and no monitor is kept.
    let (process, mut shared) = signals::lock_live(me).expect("the calling process is alive");
    let mut wake = false;
    if !push_signal(
        &mut core,
        process,
        &mut shared,
        Message::Down { pid, reason: ExitReason::NoProc, reference },
        &mut wake,
    ) {
        return Err(OutOfMemory { requested_bytes: core::mem::size_of::<Message>() });
    }
    drop(shared);
    if wake {
        wake_by_message(&mut core, me.index);
    }
    Ok(reference)
}

/// Removes the monitor `reference`: no `Down` for it arrives after this call. With `flush`, a
/// `Down` for it already queued is taken out too (Erlang's `demonitor(Ref, [flush])`). True if
/// the monitor was active (its process had not ended, or its `Down` was not yet queued).
pub fn demonitor(reference: Ref, flush: bool) -> bool {
    demonitor_flushing_from(reference, flush.then_some(Mark::START))
}

/// `demonitor`, flushing (when `flush_from` is given) only signals after that mark of the
/// caller's queue: a call's reply reference knows its `Down` can only be there, so the flush
/// does not scan a deep queue's older messages.
pub(crate) fn demonitor_flushing_from(reference: Ref, flush_from: Option<Mark>) -> bool {
    let me = self_pid().expect("demonitor is called from a process");
    let _core = OnCore::enter();
    let target = {
        let (process, mut shared) = signals::lock_live(me).expect("the calling process is alive");
        let held = shared.relations.as_mut().and_then(|r| {
            let index = r.watching.iter().position(|&(m, _)| m == reference)?;
            Some(r.watching.swap_remove(index).1)
        });
        // With the monitor gone from `watching` (under this lock, which `deliver_down` takes to
        // queue a `Down`), no `Down` for it can be queued after this point: one already queued
        // is the only one there can be.
        if let Some(mut from) = flush_from {
            let is_down = |m: &Message| matches!(m, Message::Down { reference: r, .. } if *r == reference);
            // SAFETY: the calling process takes from its own queue (the consumer contract),
            // from the start or a mark its own queue made (the caller's contract).
            if let Some(down) = unsafe { process.signals.take_matching_from(&mut from, is_down) } {
                process.count_taken();
                drop(down);
            }
        }
        held
    };
    match target {
        Some(target) => {
            signals::forget_watcher(target, reference);
            true
        }
        None => false,
    }
}

/// Spawns a process monitored by the caller, in one step (it cannot end before the monitor
/// exists): its pid and the monitor's reference.
pub fn spawn_monitor<F: FnOnce() + Send + 'static>(
    options: SpawnOptions,
    function: F,
) -> Result<(Pid, Ref), SpawnError> {
    let me = self_pid().expect("spawn_monitor is called from a process");
    let reference = make_ref();
    let pid = spawn_related(options, function, Relation::Monitor(me, reference))?;
    Ok((pid, reference))
}
