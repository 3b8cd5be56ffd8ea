//! Taking messages: `receive`, `receive_timeout`, and the wait hand-shake with the signal
//! queue's word that blocks the calling process until a signal, its deadline or an exit comes
//! (docs/scheduler.md, "Messages"). Sending is `mailbox.rs`.

use core::sync::atomic::{Ordering, fence};

use beamcore_signal_queue::{Cancel, Wait};

use super::attention;
use super::dispatch::{exit_out, requested_exit, switch_out};
use super::percore::{OnCore, Pending};
use super::process::{self, Message, Process};
use crate::time;

/// Waits for the next message (FIFO from any one sender). Blocks the calling process; its core
/// runs others or sleeps meanwhile.
pub fn receive() -> Message {
    loop {
        if let Some(message) = wait_for_message(None) {
            return message;
        }
    }
}

/// Like [`receive`], but gives up after `timeout_us` microseconds and returns `None`.
pub fn receive_timeout(timeout_us: u64) -> Option<Message> {
    let deadline = time::now_count().saturating_add(time::us_to_counts(timeout_us));
    loop {
        match wait_for_message(Some(deadline)) {
            Some(message) => return Some(message),
            None if time::now_count() >= deadline => return None,
            None => {}
        }
    }
}

/// Takes a message, or blocks once (until a message or the deadline) and returns `None`.
/// Called by the running process, the consumer of its own signal queue.
///
/// The hand-shake (docs/scheduler.md, "Messages"): `prepare_wait` turns the queue's word to
/// WAITING unless a signal is queued; from then on exactly one party claims the wake-up with a
/// read-modify-write of that word, and that party, and no other, queues the process: a sender
/// whose push reads WAITING, a waker that is not a sender (a timeout, a kill, an exit signal:
/// `claim_wake`), or the process itself taking its wait back (`cancel_wait`).
fn wait_for_message(deadline: Option<u64>) -> Option<Message> {
    let mut core = OnCore::enter();
    let slot = core.local().current.expect("receive is called from a process");
    let process = process::slot(slot);
    // An exit pending already (a kill that came while this process ran found it not waiting
    // and only set the flag): ends here, as it would at its next turn.
    // ORDERING: Relaxed: a first look; the one that matters follows the wait below.
    if process.exit_requested.load(Ordering::Relaxed) {
        exit_requested_out(core, slot);
    }
    if let Some(message) = take(&mut core, process) {
        return Some(message);
    }
    if deadline.is_some_and(|d| time::now_count() >= d) {
        return None;
    }
    // ORDERING: Relaxed: written only by the process itself; a timeout reads it as a hint
    // (at worst a stale timeout wakes a later wait, which `receive` takes as no message).
    let sequence = process.wait_sequence.load(Ordering::Relaxed).wrapping_add(1);
    process.wait_sequence.store(sequence, Ordering::Relaxed);
    // Until this core has saved our registers, a waker's core must not resume us (see
    // `Process::registers_live`).
    process.mark_registers_live();
    // ORDERING: Release fence, paired with the acquire fence a waker makes after its claim
    // (`mailbox::push_locked`, `Process::claim_wake`): `registers_live` and everything this
    // process wrote happen before the waker queues it.
    fence(Ordering::Release);
    // SAFETY: the running process waits on its own queue (the consumer contract).
    match unsafe { process.signals.prepare_wait() } {
        Wait::Blocked => {}
        // Something came in meanwhile (or, never for a live process, the queue is closed).
        Wait::NotEmpty | Wait::Closed => {
            process.registers_not_live();
            return take(&mut core, process);
        }
    }
    // ORDERING: SeqCst fence, against the one `signals::request_kill` makes between setting
    // `exit_requested` and its claim: a store-buffering pair (our write of WAITING, then our
    // read of the flag; its write of the flag, then its read of the word). With a SeqCst fence
    // on both sides at least one sees the other: it claims our wait, or we see its flag.
    fence(Ordering::SeqCst);
    // ORDERING: Relaxed: ordered by the fence above.
    if process.exit_requested.load(Ordering::Relaxed) {
        // SAFETY: as above, right after a `prepare_wait` that said `Blocked`.
        match unsafe { process.signals.cancel_wait() } {
            Cancel::Cancelled => {
                process.registers_not_live();
                exit_requested_out(core, slot);
            }
            // A sender or the killer claimed the wake-up and queues us: block, and the
            // scheduler ends us at that turn (it checks the flag before every turn).
            Cancel::WakeClaimed => {}
        }
    } else if let Some(deadline) = deadline {
        core.local().timeouts.add(slot, deadline, sequence);
        attention::set_own(&core, attention::TIMEOUTS, true);
    }
    // A check build (`make test-shared-wake`) holds the process here, waiting but its
    // registers not yet saved, so that a waker on another core queues it inside that window.
    #[cfg(sched_widen_block_window)]
    {
        let until = time::now_count().saturating_add(time::us_to_counts(50));
        while time::now_count() < until {
            core::hint::spin_loop();
        }
    }
    switch_out(core, Pending::Block);
    // Woken, the process runs again, on whichever core (the guard was used up by the switch).
    take(&mut OnCore::enter(), process)
}

/// The oldest signal in the calling process's queue, its node kept in the core's cache.
#[inline(always)]
fn take(core: &mut OnCore, process: &Process) -> Option<Message> {
    // SAFETY: the running process takes from its own queue (the consumer contract).
    let node = unsafe { process.take_signal() }?;
    let heap_turn = core.scheduler().heap_turn;
    Some(core.local().node_cache.give(heap_turn, node))
}

/// Ends the calling process, whose `exit_requested` is set, with the pending reason.
#[cold]
fn exit_requested_out(core: OnCore, slot: u32) -> ! {
    exit_out(core, requested_exit(slot))
}
