//! `receive_timeout`'s deadlines: each core keeps the deadlines of the waits of its own
//! processes and checks them from its scheduler loop. A wait sequence number, bumped by the
//! process at every wait, keeps a stale timeout from waking a later wait (but for a race, in
//! which the wake-up is early, never lost or doubled: see `expire_one`).

use alloc::vec::Vec;

use core::sync::atomic::Ordering;

use super::process;

/// One deadline: the process and the wait it was set for.
pub(super) struct Timeout {
    deadline: u64,
    slot: u32,
    wait_sequence: u16,
}

/// One core's pending deadlines (owner only).
pub(super) struct Timeouts {
    pending: Vec<Timeout>,
    /// The earliest deadline pending (`u64::MAX` when none), so a look at the time says
    /// whether any has passed.
    earliest: u64,
}

impl Timeouts {
    pub(super) const fn new() -> Timeouts {
        Timeouts { pending: Vec::new(), earliest: u64::MAX }
    }

    /// Registers a deadline for the wait numbered `wait_sequence` of the process in `slot`.
    pub(super) fn add(&mut self, slot: u32, deadline: u64, wait_sequence: u16) {
        // A failed reservation would mean the wait could never time out: treat as fatal.
        self.pending.push(Timeout { deadline, slot, wait_sequence });
        self.earliest = self.earliest.min(deadline);
    }

    /// The earliest deadline pending (`u64::MAX` when none).
    pub(super) fn earliest(&self) -> u64 {
        self.earliest
    }

    /// Takes one expired deadline and, if its wait is still the one the deadline was set for,
    /// makes the process `Runnable` (timed out) and returns its slot for the caller to queue.
    /// `None` once no deadline before now is left. One at a time, so the caller can queue each
    /// process (which needs the core's state) between two calls.
    pub(super) fn expire_one(&mut self, now: u64) -> Option<u32> {
        if self.earliest > now {
            return None;
        }
        while let Some(i) = self.pending.iter().position(|t| t.deadline <= now) {
            let timeout = self.pending.swap_remove(i);
            let process = process::slot(timeout.slot);
            // ORDERING: Relaxed: a hint that the wait is still the one the deadline was set for
            // (the process bumps it before each wait). Racing a new wait it may be stale, and
            // the claim then wakes that wait early, which `receive` takes as no message; the
            // claim itself, one read-modify-write of the queue's word, is what makes the
            // wake-up happen once.
            if process.wait_sequence.load(Ordering::Relaxed) == timeout.wait_sequence && process.claim_wake() {
                return Some(timeout.slot);
            }
        }
        self.earliest = self.pending.iter().map(|t| t.deadline).min().unwrap_or(u64::MAX);
        None
    }

    /// Takes every pending deadline (a leaving core hands them over).
    pub(super) fn take_all(&mut self) -> Vec<Timeout> {
        self.earliest = u64::MAX;
        core::mem::take(&mut self.pending)
    }

    /// Adds deadlines another core handed over.
    pub(super) fn adopt(&mut self, timeouts: impl IntoIterator<Item = Timeout>) {
        for timeout in timeouts {
            self.add(timeout.slot, timeout.deadline, timeout.wait_sequence);
        }
    }

    /// True when no deadline is pending.
    pub(super) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}
