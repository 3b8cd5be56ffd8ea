//! Core-to-core interrupts (SGIs): which ones the kernel uses, sending one, and counting pings.
//! Kept apart from the IRQ handler that receives them so the sending side, which any core
//! calls at any time, reads on its own.

use core::sync::atomic::Ordering;

use super::percore::{CORES, PerCore};
use super::{SmpError, gic};
use crate::arch::cpu;
use crate::layout::MAX_CORES;

/// Software-generated interrupts the kernel uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Sgi {
    /// "Look at your queues": wakes a core sleeping in WFI.
    Wake = 0,
    /// A counted core-to-core ping; the receiver records who sent it.
    Ping = 1,
    /// "Stop for good": the receiver stops scheduling and parks (end of a run without
    /// semihosting, where nothing ends the machine).
    Halt = 2,
}

/// Sends `sgi` to core `target`.
pub fn send_sgi(target: usize, sgi: Sgi) -> Result<(), SmpError> {
    if target >= MAX_CORES || !CORES[target].is_online() {
        return Err(SmpError::NoSuchCore(target));
    }
    gic().send_sgi(target, sgi as u8);
    Ok(())
}

/// Pings core `target`; it counts the ping against the calling core.
pub fn ping(target: usize) -> Result<(), SmpError> {
    if target >= MAX_CORES || !CORES[target].is_online() {
        return Err(SmpError::NoSuchCore(target));
    }
    // ORDERING: Release pairs with the receiver's Acquire swap in `on_ping` (`take_all`, on the
    // same word); the GIC driver's DSB makes the bit visible before the interrupt can be taken.
    CORES[target].pings_pending.insert(cpu::core_id(), Ordering::Release);
    send_sgi(target, Sgi::Ping)
}

pub(super) fn on_ping(me: &PerCore) {
    // ORDERING: Acquire (each word's swap) pairs with the senders' Release `insert`.
    let pending = me.pings_pending.take_all(Ordering::Acquire);
    for from in pending.iter() {
        me.pings_from[from].fetch_add(1, Ordering::Relaxed);
    }
}
