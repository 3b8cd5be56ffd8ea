//! A process's signal queue: its mailbox, through which messages, exit signals and monitor
//! Downs travel. Pure and host-testable; `docs/signal-queue.md` gives the full argument.
//!
//! Many producers (any core sending to the process), one consumer (whichever core runs the
//! process). The design, and why:
//!
//! - **One atomic word, `head`, for everything shared.** Producers push with one
//!   read-modify-write (a Treiber-style LIFO: the new node links to the old head). The
//!   consumer never competes with them node by node: when its private FIFO runs dry it takes
//!   the whole producers' list with one swap and reverses it onto the FIFO. A push is a few
//!   instructions and cannot be starved by the consumer, and the consumer's removals (`pop`,
//!   selective receive) touch no shared memory at all.
//! - **Order.** A sender's pushes are ordered in the word's modification order (coherence), a
//!   taken list is the pushes since the last take in reverse modification order, and reversal
//!   makes it FIFO: per-sender order holds, and every node is delivered exactly once (a push
//!   lands in exactly one taken list, or is refused by `close`).
//! - **The wake hand-shake in the same word.** The tags `EMPTY` (0), `WAITING` (1) and
//!   `CLOSED` (2) can never be node addresses. A consumer about to block CASes EMPTY to
//!   WAITING ([`SignalQueue::prepare_wait`]); the push that reads WAITING links nothing, and
//!   learns it must wake the consumer ([`Pushed::Wake`]). Because blocking and pushing are
//!   read-modify-writes of one word, there is no window for a lost wake-up and exactly one
//!   producer claims each wake, with no lock and no separate state field to keep consistent.
//!   [`SignalQueue::cancel_wait`] takes a wait back unless a producer already claimed it.
//! - **Close.** [`SignalQueue::close`] swaps in CLOSED and returns what was queued; a later
//!   push is refused and gets its node back, so nothing is leaked or delivered to the dead.
//! - **Caller-allocated nodes** ([`Node`] in a `Box`): a push never allocates, so it cannot
//!   fail for memory inside the queue, and the kernel picks the allocator.
//! - **Consumer methods are `unsafe fn(&self)`** with one contract (one consumer at a time,
//!   ordered by the scheduler's hand-over) rather than a separate handle: the queue is a field
//!   of the process control block, and the consumer is not a fixed thread but whichever core
//!   runs the process, so a handle would have to be stored beside it and lent out anyway.
//! - **Marks** for selective receive ([`Mark`]): the last node scanned plus a removal count,
//!   falling back to the start after any removal (always sound for a receive).
//!
//! [`HeadAtomics`] is the seam to the hardware, as the deque's `DequeAtomics`: [`Portable`]
//! (`core::sync::atomic`, loom's under `cfg(loom)`) or `Aarch64Asm` (hand-written LDXR/STXR,
//! `target_arch = "aarch64"` only). [`NativeAtomics`] names the one the kernel uses.
//!
//! Uncontended, a whole `push` onto an idle queue called out of line is 9 instructions with
//! `Aarch64Asm` (`LDXR`, `CBNZ`, `STLXR`, `CBNZ`, then 5 to return the replaced value and test
//! it) and 4 with `Portable`, whose loop LLVM sees through; onto a backlog, 17 and 16, not
//! counting `RET` and the stores of the result (`docs/signal-queue.md`, "Cost").
//!
//! `cfg(signal_queue_inject_stxr_failure)` makes every first store-exclusive of an
//! `Aarch64Asm` operation fail on purpose, so the retry paths run (test builds only).
//!
//! `unsafe` is denied here and allowed, by name, in the two modules that need it: `queue` (the
//! nodes behind raw pointers and the consumer's unshared list) and `aarch64` (the inline
//! assembly); each block has its `// SAFETY:` argument.

#![cfg_attr(not(any(test, loom)), no_std)]
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

extern crate alloc;

mod portable;
mod primitives;
#[allow(unsafe_code)]
mod queue;
mod shim;

#[cfg(all(target_arch = "aarch64", not(loom)))]
#[allow(unsafe_code)]
mod aarch64;

#[cfg(test)]
mod tests;

pub use portable::Portable;
pub use primitives::{CLOSED, EMPTY, HeadAtomics, WAITING};
pub use queue::{Cancel, Mark, Node, NodeList, Pushed, SignalQueue, Wait};

#[cfg(all(target_arch = "aarch64", not(loom)))]
pub use aarch64::Aarch64Asm;

/// The head-word operations the kernel's queues use: the hand-written LDXR/STXR version on
/// AArch64, [`Portable`] elsewhere and whenever loom is checking.
#[cfg(all(target_arch = "aarch64", not(loom)))]
pub type NativeAtomics = Aarch64Asm;
/// The head-word operations the kernel's queues use: the hand-written LDXR/STXR version on
/// AArch64, [`Portable`] elsewhere and whenever loom is checking.
#[cfg(not(all(target_arch = "aarch64", not(loom))))]
pub type NativeAtomics = Portable;
