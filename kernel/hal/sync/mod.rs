//! Locks for kernel data shared between cores and interrupt handlers.

mod irq_lock;

pub use irq_lock::{IrqSpinLock, IrqSpinLockGuard};
