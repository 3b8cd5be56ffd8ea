//! The synchronisation types the deque is built from, swapped for loom's models under `cfg(loom)`.
//!
//! Everything that two threads touch goes through these names, so loom sees (and can reorder)
//! every shared access when the crate is built with `--cfg loom`. Outside loom they are the
//! ordinary `core`/`alloc` atomics and `Arc`, and a `spin` mutex for the overflow queue.

#![forbid(unsafe_code)]

#[cfg(not(loom))]
pub(super) use alloc::sync::Arc;
#[cfg(not(loom))]
pub(super) use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};

#[cfg(loom)]
pub(super) use loom::sync::Arc;
#[cfg(loom)]
pub(super) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};

use core::ops::DerefMut;

/// The lock around a work queue's overflow: a `spin` mutex in the kernel, loom's mutex in model
/// checks (loom cannot preempt a thread spinning on a plain atomic, so a spin lock would hang
/// the model).
pub(super) struct Mutex<T> {
    #[cfg(not(loom))]
    inner: spin::Mutex<T>,
    #[cfg(loom)]
    inner: loom::sync::Mutex<T>,
}

impl<T> Mutex<T> {
    pub(super) fn new(value: T) -> Self {
        Mutex {
            #[cfg(not(loom))]
            inner: spin::Mutex::new(value),
            #[cfg(loom)]
            inner: loom::sync::Mutex::new(value),
        }
    }

    /// Takes the lock, spinning (or, under loom, yielding to the model) until it is free.
    pub(super) fn lock(&self) -> impl DerefMut<Target = T> + '_ {
        #[cfg(not(loom))]
        {
            self.inner.lock()
        }
        #[cfg(loom)]
        {
            // A panic while holding the lock already fails the model; keep the data.
            self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }
}
