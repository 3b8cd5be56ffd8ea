//! A spin lock that masks IRQs on the holding core.
//!
//! Masking makes it safe to take the same lock in thread code and in an interrupt handler on
//! one core (the handler cannot interrupt the holder and spin forever). The holder's core id is
//! recorded so a panic on that core can break the lock instead of deadlocking on its own
//! console, for example.

use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arch::cpu::{self, IrqState};

const NO_OWNER: usize = usize::MAX;

/// How a waiter spins: the `yield` hint. On hardware it is a cheap hint; under QEMU's
/// single-threaded TCG (used with `-icount`) it ends the vCPU's turn, so the lock holder runs
/// instead of the waiter burning its whole time slice (lock-holder preemption).
pub struct YieldRelax;

impl spin::RelaxStrategy for YieldRelax {
    fn relax() {
        cpu::relax();
    }
}

pub struct IrqSpinLock<T> {
    inner: spin::mutex::SpinMutex<T, YieldRelax>,
    owner: AtomicUsize,
}

pub struct IrqSpinLockGuard<'a, T> {
    guard: Option<spin::mutex::SpinMutexGuard<'a, T>>,
    owner: &'a AtomicUsize,
    /// The mask state to restore; `None` when the locker had IRQs masked already
    /// ([`IrqSpinLock::lock_irqs_masked`]) and keeps them masked after.
    irq: Option<IrqState>,
}

impl<T> IrqSpinLock<T> {
    pub const fn new(value: T) -> Self {
        IrqSpinLock { inner: spin::mutex::SpinMutex::new(value), owner: AtomicUsize::new(NO_OWNER) }
    }

    /// Masks IRQs, then spins until the lock is free.
    pub fn lock(&self) -> IrqSpinLockGuard<'_, T> {
        let irq = cpu::irq_save();
        let mut guard = self.lock_irqs_masked();
        guard.irq = Some(irq);
        guard
    }

    /// Like [`lock`](Self::lock), for a caller that has masked IRQs already and keeps them
    /// masked until the guard is gone (the scheduler's `OnCore`): the lock then saves and
    /// restores no mask, three instructions fewer on the paths that take a process's lock on
    /// every message.
    #[inline]
    pub fn lock_irqs_masked(&self) -> IrqSpinLockGuard<'_, T> {
        debug_assert!(cpu::irqs_masked(), "lock_irqs_masked with IRQs unmasked");
        let guard = self.inner.lock();
        self.owner.store(cpu::core_id(), Ordering::Relaxed);
        IrqSpinLockGuard { guard: Some(guard), owner: &self.owner, irq: None }
    }

    /// Like [`lock`](Self::lock), and says whether the lock was held by someone else at the first
    /// try (the caller then waited): how contended a lock is, for whoever counts it.
    pub fn lock_noting_contention(&self) -> (IrqSpinLockGuard<'_, T>, bool) {
        let irq = cpu::irq_save();
        let (guard, contended) = match self.inner.try_lock() {
            Some(guard) => (guard, false),
            None => (self.inner.lock(), true),
        };
        self.owner.store(cpu::core_id(), Ordering::Relaxed);
        (IrqSpinLockGuard { guard: Some(guard), owner: &self.owner, irq: Some(irq) }, contended)
    }

    /// Like [`lock`](Self::lock), but gives up after `attempts` failed tries.
    pub fn try_lock_for(&self, attempts: usize) -> Option<IrqSpinLockGuard<'_, T>> {
        let irq = cpu::irq_save();
        for _ in 0..attempts {
            if let Some(guard) = self.inner.try_lock() {
                self.owner.store(cpu::core_id(), Ordering::Relaxed);
                return Some(IrqSpinLockGuard { guard: Some(guard), owner: &self.owner, irq: Some(irq) });
            }
            cpu::relax();
        }
        cpu::irq_restore(irq);
        None
    }

    /// True when the calling core holds the lock.
    pub fn held_by_this_core(&self) -> bool {
        self.inner.is_locked() && self.owner.load(Ordering::Relaxed) == cpu::core_id()
    }

    /// Releases a lock that the calling core holds but can no longer release normally.
    ///
    /// # Safety
    /// Only on the way down (panic, fatal exception) on the core that holds the lock: the
    /// guard it still owns must never be used again.
    pub unsafe fn force_unlock(&self) {
        self.owner.store(NO_OWNER, Ordering::Relaxed);
        // SAFETY: forwarded contract: the holder abandons its guard.
        unsafe { self.inner.force_unlock() };
    }
}

impl<T> Deref for IrqSpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard.as_ref().expect("guard present until drop")
    }
}

impl<T> DerefMut for IrqSpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard.as_mut().expect("guard present until drop")
    }
}

impl<T> Drop for IrqSpinLockGuard<'_, T> {
    fn drop(&mut self) {
        self.owner.store(NO_OWNER, Ordering::Relaxed);
        drop(self.guard.take());
        if let Some(irq) = self.irq {
            cpu::irq_restore(irq);
        }
    }
}
