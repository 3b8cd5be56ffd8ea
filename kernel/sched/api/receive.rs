//! Taking messages: `receive` (the oldest), selective receive (the oldest that matches, the
//! rest left in order), typed receive, `sleep`, and the wait hand-shake with the signal queue's
//! word that blocks the calling process until a signal, its deadline or an exit comes
//! (docs/scheduler.md, "Messages" and "Selective receive"). Sending is `msg/mailbox.rs`.

use core::sync::atomic::{Ordering, fence};

use beamcore_signal_queue::{Cancel, Mark, Wait};

use crate::msg::timers;
use crate::proc::process::{self, Message, Process};
use crate::record::stats::add;
use crate::run::percore::{OnCore, Pending};
use crate::turn::dispatch::{end_unwinding, switch_out};
use crate::turn::unwind::{Why, exit_requested};
use beamcore_hal::ids::Slot;
use beamcore_hal::time;

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
    let deadline = time::count_after_us(timeout_us);
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
fn wait_for_message(deadline: Option<u64>) -> Option<Message> {
    let mut core = OnCore::enter();
    let slot = core.local().current.expect("receive is called from a process");
    let process = process::slot(slot);
    // An exit pending already (a kill that came while this process ran found it not waiting
    // and only set the flag): ends here, as it would at its next turn.
    // ORDERING: Relaxed: a first look; the one that matters follows the wait below.
    if process.exit_requested.load(Ordering::Relaxed) {
        end_unwinding(core, Why::Pending);
    }
    if let Some(message) = take(&mut core, process) {
        return Some(message);
    }
    if deadline.is_some_and(|d| time::now_count() >= d) {
        return None;
    }
    match block(core, slot, process, deadline, WaitFor::Any) {
        Some(mut core) => take(&mut core, process),
        // Woken, the process runs again, on whichever core (the guard was used up).
        None => take(&mut OnCore::enter(), process),
    }
}

/// What a wait waits for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WaitFor {
    /// Any signal (the queue is empty).
    Any,
    /// A signal newer than every queued one (a selective receive scanned them all).
    More,
}

/// Blocks the calling process until a signal comes (`WaitFor`), `deadline` passes or an exit
/// is requested (then it ends here). `Some(core)` when it did not block because a signal came
/// in meanwhile; `None` once it has blocked and been woken (the guard is used up by the switch).
///
/// The hand-shake (docs/scheduler.md, "Messages"): `prepare_wait` turns the queue's word to
/// WAITING unless a signal is queued; from then on exactly one party claims the wake-up with a
/// read-modify-write of that word, and that party, and no other, queues the process: a sender
/// whose push reads WAITING, a waker that is not a sender (a timeout, a kill, an exit signal:
/// `claim_wake`), or the process itself taking its wait back (`cancel_wait`).
#[inline(always)]
fn block(mut core: OnCore, slot: Slot, process: &Process, deadline: Option<u64>, wait_for: WaitFor) -> Option<OnCore> {
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
    let wait = unsafe {
        match wait_for {
            WaitFor::Any => process.signals.prepare_wait(),
            WaitFor::More => process.signals.prepare_wait_for_more(),
        }
    };
    match wait {
        Wait::Blocked => {}
        // Something came in meanwhile (or, never for a live process, the queue is closed).
        Wait::NotEmpty | Wait::Closed => {
            process.registers_not_live();
            return Some(core);
        }
    }
    // ORDERING: SeqCst fence, against the one `signals::request_kill` makes between setting
    // `exit_requested` and its claim: a store-buffering pair (our write of WAITING, then our
    // read of the flag; its write of the flag, then its read of the word). With a SeqCst fence
    // on both sides at least one sees the other: it claims our wait, or we see its flag.
    fence(Ordering::SeqCst);
    let mut timer = None;
    // ORDERING: Relaxed: ordered by the fence above.
    if process.exit_requested.load(Ordering::Relaxed) {
        // SAFETY: as above, right after a `prepare_wait` that said `Blocked`.
        match unsafe { process.signals.cancel_wait() } {
            Cancel::Cancelled => {
                process.registers_not_live();
                end_unwinding(core, Why::Pending);
            }
            // A sender or the killer claimed the wake-up and queues us: block, and the
            // scheduler ends us at that turn (it checks the flag before every turn).
            Cancel::WakeClaimed => {}
        }
    } else if let Some(deadline) = deadline {
        timer = timers::set_wait_deadline(&mut core, slot, deadline, sequence);
        if timer.is_none() {
            // No memory for the deadline: a wait without one could last for ever, so the
            // process does not block but comes back and looks again (a poll, until memory or a
            // signal comes).
            // SAFETY: as above, right after a `prepare_wait` that said `Blocked`.
            if unsafe { process.signals.cancel_wait() } == Cancel::Cancelled {
                process.registers_not_live();
                return Some(core);
            }
        }
    }
    // A check build (`make test-shared-wake`) holds the process here, waiting but its
    // registers not yet saved, so that a waker on another core queues it inside that window.
    #[cfg(sched_widen_block_window)]
    {
        let until = time::count_after_us(50);
        while time::now_count() < until {
            core::hint::spin_loop();
        }
    }
    switch_out(core, Pending::Block);
    // Woken: by a signal, an exit, or the deadline (whose timer is gone then). A deadline
    // still pending is removed, so waits do not leave timers behind.
    if let Some(timer) = timer {
        timers::clear_wait_deadline(timer);
    }
    // An exit that woke it (a kill, an untrapped exit signal) ends it here, a safe point, by
    // unwinding; a second end while unwinding (a destructor that receives) goes on unwinding.
    // SAFETY: the running process on its own core; a flag is read.
    if exit_requested(slot) && unsafe { process.local().unwinding }.is_none() {
        end_unwinding(OnCore::enter(), Why::Pending);
    }
    None
}

/// Takes the oldest message that satisfies `matches`, waiting for one as long as it takes; the
/// others stay queued in their order, and a later receive sees them first. Erlang's `receive`
/// with patterns.
///
/// Each scan resumes where the last one ended, so a wait that is woken by messages that do not
/// match looks only at those. `matches` runs in the calling process, interruptible, and must
/// not receive.
pub fn receive_matching(mut matches: impl FnMut(&Message) -> bool) -> Message {
    let mut from = Mark::START;
    receive_matching_from(&mut from, &mut matches, None).expect("a wait with no deadline ends with a match")
}

/// Like [`receive_matching`], but gives up after `timeout_us` microseconds and returns `None`.
pub fn receive_matching_timeout(timeout_us: u64, mut matches: impl FnMut(&Message) -> bool) -> Option<Message> {
    let mut from = Mark::START;
    receive_matching_from(&mut from, &mut matches, Some(time::count_after_us(timeout_us)))
}

/// The next `T` in the queue (see [`Message::new`]), the rest left in order: a typed receive.
pub fn receive_value<T: 'static>() -> T {
    let message = receive_matching(|message| message.is::<T>());
    message.take::<T>().unwrap_or_else(|_| unreachable!("the match said it is a T"))
}

/// Like [`receive_value`], but gives up after `timeout_us` microseconds and returns `None`.
pub fn receive_value_timeout<T: 'static>(timeout_us: u64) -> Option<T> {
    let message = receive_matching_timeout(timeout_us, |message| message.is::<T>())?;
    Some(message.take::<T>().unwrap_or_else(|_| unreachable!("the match said it is a T")))
}

/// Blocks the calling process for `us` microseconds, leaving its messages queued (Erlang's
/// `timer:sleep`: a receive that matches nothing). An exit signal still ends it at once.
pub fn sleep(us: u64) {
    let mut from = Mark::START;
    let nothing = receive_matching_from(&mut from, &mut |_: &Message| false, Some(time::count_after_us(us)));
    debug_assert!(nothing.is_none(), "a sleep matches no message");
}

/// The selective receive: the oldest message after `from` that satisfies `matches`, waiting
/// for one until `deadline` (`None`: as long as it takes). `from` is left naming the last
/// message scanned, or the match's predecessor (exact still: a reply's `Down` flush starts
/// there).
pub(crate) fn receive_matching_from(
    from: &mut Mark,
    matches: &mut impl FnMut(&Message) -> bool,
    deadline: Option<u64>,
) -> Option<Message> {
    loop {
        if let Some(message) = wait_for_match(from, matches, deadline) {
            return Some(message);
        }
        if deadline.is_some_and(|d| time::now_count() >= d) {
            return None;
        }
    }
}

/// The selective receive's step: scans from `from` (moving it on) for a match and takes it, or
/// blocks once, for a newer signal or the deadline, and returns `None`.
fn wait_for_match(
    from: &mut Mark,
    matches: &mut impl FnMut(&Message) -> bool,
    deadline: Option<u64>,
) -> Option<Message> {
    let slot = {
        let mut core = OnCore::enter();
        let slot = core.local().current.expect("receive is called from a process");
        // ORDERING: Relaxed: a first look, as in `wait_for_message`.
        if process::slot(slot).exit_requested.load(Ordering::Relaxed) {
            end_unwinding(core, Why::Pending);
        }
        slot
    };
    let process = process::slot(slot);
    // The scan runs with IRQs open (it runs the program's closure, which may take a while):
    // the process stays its queue's consumer wherever it is moved meanwhile.
    // (The SAFETY of the scan below: the running process scans its own queue (the consumer
    // contract), from a mark made by this queue: `from` starts at START or at a reply
    // reference's mark checked to be this process's, and only this queue moves it on.)
    let mut scanned = 0u64;
    let counted = |message: &Message| {
        scanned += 1;
        matches(message)
    };
    // SAFETY: see above.
    let taken = unsafe { process.signals.take_matching_from(from, counted) };
    let mut core = OnCore::enter();
    add(&core.scheduler().stats.receive_scanned, scanned);
    if let Some(node) = taken {
        process.count_taken();
        let heap_turn = core.scheduler().heap_turn;
        return Some(core.local().node_cache.give(heap_turn, node));
    }
    if deadline.is_some_and(|d| time::now_count() >= d) {
        return None;
    }
    // Not blocked (a signal came in): the caller scans again.
    let _ = block(core, slot, process, deadline, WaitFor::More);
    None
}

/// The oldest signal in the calling process's queue, its node kept in the core's cache.
#[inline(always)]
fn take(core: &mut OnCore, process: &Process) -> Option<Message> {
    // SAFETY: the running process takes from its own queue (the consumer contract).
    let node = unsafe { process.take_signal() }?;
    let heap_turn = core.scheduler().heap_turn;
    Some(core.local().node_cache.give(heap_turn, node))
}
