//! The queue's host tests: unit, property (proptest), stress (std threads), loom models.
//!
//! Outside loom: `cargo test` in crates/signal-queue/. Loom: `RUSTFLAGS="--cfg loom" cargo test
//! --release` there (loom's atomics only work inside `loom::model`, so the other tests are off
//! then).

#[cfg(loom)]
mod loom_models;
#[cfg(not(loom))]
mod model;
#[cfg(not(loom))]
mod stress;
#[cfg(not(loom))]
mod unit;

use core::cell::Cell;
use core::marker::PhantomData;
use std::boxed::Box;

use crate::{Cancel, HeadAtomics, Mark, Node, NodeList, SignalQueue, Wait};

/// The consumer methods without `unsafe` at every call: made once, by the one thread that
/// consumes for the handle's lifetime. `!Sync` (and not `Clone`), so it cannot be shared; it
/// may be sent to the consumer thread.
pub(crate) struct Consumer<'q, T, A: HeadAtomics> {
    pub(crate) queue: &'q SignalQueue<T, A>,
    _not_sync: PhantomData<Cell<()>>,
}

impl<'q, T, A: HeadAtomics> Consumer<'q, T, A> {
    /// # Safety
    ///
    /// For the handle's lifetime, nothing calls `queue`'s consumer methods except through this
    /// handle.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn new(queue: &'q SignalQueue<T, A>) -> Self {
        Consumer { queue, _not_sync: PhantomData }
    }

    /// The handle of a queue the caller holds exclusively (`&mut`: nothing else can consume).
    #[cfg(not(loom))]
    pub(crate) fn of(queue: &'q mut SignalQueue<T, A>) -> Self {
        Consumer { queue, _not_sync: PhantomData }
    }
}

/// Each method: the handle is the only consumer (its constructor's contract), and `!Sync`, so
/// its calls are on one thread in program order.
#[allow(unsafe_code, clippy::undocumented_unsafe_blocks)]
#[cfg_attr(loom, allow(dead_code, reason = "the loom models use part of the handle"))]
impl<T, A: HeadAtomics> Consumer<'_, T, A> {
    pub(crate) fn pop(&self) -> Option<Box<Node<T>>> {
        unsafe { self.queue.pop() }
    }
    pub(crate) fn len(&self) -> usize {
        unsafe { self.queue.len() }
    }
    pub(crate) fn is_empty(&self) -> bool {
        unsafe { self.queue.is_empty() }
    }
    pub(crate) fn prepare_wait(&self) -> Wait {
        unsafe { self.queue.prepare_wait() }
    }
    pub(crate) fn prepare_wait_for_more(&self) -> Wait {
        unsafe { self.queue.prepare_wait_for_more() }
    }
    pub(crate) fn cancel_wait(&self) -> Cancel {
        unsafe { self.queue.cancel_wait() }
    }
    pub(crate) fn mark(&self) -> Mark {
        unsafe { self.queue.mark() }
    }
    pub(crate) fn take_first_matching(
        &self,
        from: Mark,
        matches: impl FnMut(&T) -> bool,
    ) -> Result<Box<Node<T>>, Mark> {
        unsafe { self.queue.take_first_matching(from, matches) }
    }
    pub(crate) fn take_matching_from(&self, mark: &mut Mark, matches: impl FnMut(&T) -> bool) -> Option<Box<Node<T>>> {
        unsafe { self.queue.take_matching_from(mark, matches) }
    }
    pub(crate) fn remove_first(&self, matches: impl FnMut(&T) -> bool) -> Option<Box<Node<T>>> {
        unsafe { self.queue.remove_first(matches) }
    }
    pub(crate) fn reopen(&self) {
        unsafe { self.queue.reopen() }
    }
    pub(crate) fn close(&self) -> NodeList<T> {
        unsafe { self.queue.close() }
    }
}
