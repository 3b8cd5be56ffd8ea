//! The atomics the queue is built from, swapped for loom's models under `cfg(loom)`.
//!
//! Both the head word and each node's `next` link go through these names, so loom sees (and
//! can serve stale values of) every shared access when the crate is built with `--cfg loom`.
//! The links matter to loom: a push that publishes its node without release lets the consumer
//! read the link's initial value, and that lost node is how the model catches the weakening.

#![forbid(unsafe_code)]

#[cfg(not(loom))]
pub(super) use core::sync::atomic::{AtomicUsize, Ordering};

#[cfg(loom)]
pub(super) use loom::sync::atomic::{AtomicUsize, Ordering};
