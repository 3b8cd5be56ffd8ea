//! The wait hand-shake: the consumer about to block, a wait given up, a wake-up claimed by
//! someone who is not a producer. All of it is read-modify-writes of the head word, the same
//! word the push uses, which is why no wake-up is lost; this file is that argument.

use super::SignalQueue;
use crate::primitives::{CLOSED, EMPTY, HeadAtomics, WAITING};
use crate::shim::Ordering;

/// What [`SignalQueue::prepare_wait`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Wait {
    /// The word now says WAITING: the consumer may block; the next push will claim the wake.
    Blocked,
    /// A signal is queued: do not block, receive it.
    NotEmpty,
    /// The queue is closed: nothing will ever arrive.
    Closed,
}

/// What [`SignalQueue::cancel_wait`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Cancel {
    /// No wake-up is on its way (the word said WAITING and is EMPTY again).
    Cancelled,
    /// A producer already pushed onto WAITING and got [`Pushed::Wake`] (its signal is queued),
    /// or a waker claimed the wait with [`SignalQueue::claim_wake`]: a wake-up is on its way
    /// (or done). The kernel must absorb that wake-up.
    ///
    /// [`Pushed::Wake`]: super::Pushed::Wake
    WakeClaimed,
}

impl<T, A: HeadAtomics> SignalQueue<T, A> {
    /// Before blocking on an empty queue: sets the word to WAITING unless something is queued
    /// or the queue is closed. After [`Wait::Blocked`] the consumer may sleep: the first push
    /// from now on returns [`Pushed::Wake`] to exactly one producer. A producer racing this
    /// call either lands before it (then `NotEmpty`) or after it (then it claims the wake):
    /// both are read-modify-writes of one word, so there is no gap in which a push goes
    /// unseen.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    ///
    /// [`Pushed::Wake`]: super::Pushed::Wake
    pub unsafe fn prepare_wait(&self) -> Wait {
        // SAFETY: the consumer contract is ours to pass on.
        if !unsafe { self.inner() }.list.first.is_null() {
            return Wait::NotEmpty;
        }
        match A::compare_exchange(&self.head, EMPTY, WAITING) {
            // Already WAITING: a repeated call; still no wake claimed.
            Ok(()) | Err(WAITING) => Wait::Blocked,
            Err(CLOSED) => Wait::Closed,
            Err(_) => Wait::NotEmpty,
        }
    }

    /// Before blocking for a signal newer than every one queued now (a selective receive that
    /// found no match, or a sleep): as [`prepare_wait`](Self::prepare_wait), but signals in the
    /// consumer's list do not count, only the producers' word, because the consumer has looked
    /// at all of them already. `NotEmpty`: a signal came in that it has not looked at.
    ///
    /// # Safety
    ///
    /// The consumer contract.
    pub unsafe fn prepare_wait_for_more(&self) -> Wait {
        match A::compare_exchange(&self.head, EMPTY, WAITING) {
            Ok(()) | Err(WAITING) => Wait::Blocked,
            Err(CLOSED) => Wait::Closed,
            Err(_) => Wait::NotEmpty,
        }
    }

    /// Gives up a wait (a timeout, or any reason to run without a signal): WAITING back to
    /// EMPTY. If a producer or a [`claim_wake`](Self::claim_wake) got there first, the wake-up
    /// is already claimed and cannot be taken back: [`Cancel::WakeClaimed`] tells the kernel to
    /// expect it (a producer's signal is queued: a `pop` finds it).
    ///
    /// # Safety
    ///
    /// The consumer contract, and the consumer's last call on the word was a
    /// [`prepare_wait`](Self::prepare_wait) that returned [`Wait::Blocked`]: only then does
    /// EMPTY mean that a claim took the wait (rather than that there was none).
    pub unsafe fn cancel_wait(&self) -> Cancel {
        match A::compare_exchange(&self.head, WAITING, EMPTY) {
            Ok(()) => Cancel::Cancelled,
            // CLOSED: nothing will ever wake it (only the consumer closes, so not while it
            // waits; kept for robustness).
            Err(CLOSED) => Cancel::Cancelled,
            // A node: a push claimed it. EMPTY: a `claim_wake` did (after `prepare_wait` only a
            // claim writes EMPTY; the consumer's own `take` is not running).
            Err(_) => Cancel::WakeClaimed,
        }
    }

    /// Claims a wake-up for someone who is not a producer (a timeout, a kill, an exit signal):
    /// WAITING back to EMPTY, as [`cancel_wait`](Self::cancel_wait) does, but callable by
    /// anyone, since it touches only the head word. True: the word said WAITING and this call,
    /// and no push or other claim, took the consumer's wake-up; the caller must wake it (a
    /// `cancel_wait` after it says [`Cancel::WakeClaimed`]). False: the consumer was not
    /// blocked, or a push (or another claim, or the consumer's own `cancel_wait`) got there
    /// first. Every wake-up is claimed by exactly one read-modify-write
    /// of the word: a push that reads WAITING, this, or `cancel_wait`.
    ///
    /// No ordering of its own (what the claimer must see of the consumer is the kernel's to
    /// order, as for [`Pushed::Wake`]).
    ///
    /// [`Pushed::Wake`]: super::Pushed::Wake
    pub fn claim_wake(&self) -> bool {
        A::compare_exchange(&self.head, WAITING, EMPTY).is_ok()
    }

    /// Whether the consumer is blocked and nobody has claimed its wake-up yet (a Relaxed look:
    /// a report, not a guarantee).
    pub fn is_waiting(&self) -> bool {
        self.head.load(Ordering::Relaxed) == WAITING
    }
}
