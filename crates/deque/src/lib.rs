//! The per-core lock-free work-stealing deque (Chase-Lev), pure and host-testable.
//!
//! Each core owns one deque: it pushes and pops at the *bottom* (newest first, for locality);
//! other cores steal at the *top* (oldest first). Orderings follow Lê, Pop, Cohen and Zappa
//! Nardelli, "Correct and Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013); each
//! fence and each non-Relaxed access in [`chase_lev`] says what it pairs with and which race it
//! closes, and `docs/deque.md` maps them to ARMv8 instructions.
//!
//! ```text
//!            Worker (owner core, !Sync)                 Stealer (any core, Clone + Sync)
//!   push ─> [ bottom ... ... ... top ] ─> steal          WorkQueue = Worker + overflow queue
//!   pop  <─                                              WorkQueueStealer = Stealer + overflow
//! ```
//!
//! - [`Worker`]/[`Stealer`]: the raw deque of `u64` items with a fixed power-of-two capacity;
//!   results that tell causes apart ([`Steal`], [`Pop`], [`Full`]).
//! - [`WorkQueue`]/[`WorkQueueStealer`]: the deque plus a locked overflow, so nothing is lost
//!   when the deque is full.
//! - [`DequeAtomics`]: the seam to the hardware, picked by type parameter: [`Portable`]
//!   (`core::sync::atomic`, or loom's under `cfg(loom)`) or `Aarch64Asm` (hand-written
//!   LDXR/STXR and DMB, `target_arch = "aarch64"` only). [`NativeAtomics`] names the one the
//!   kernel uses.
//!
//! `cfg(deque_omit_pop_barrier)` deliberately breaks the deque by removing the full barrier in
//! `pop`; it exists only so tests can show that the barrier is needed (loom finds the double
//! take, see `docs/deque.md`). Never build a kernel with it.
//!
//! `cfg(deque_inject_stxr_failure)` makes `Aarch64Asm`'s store-exclusive fail on purpose (every
//! `INJECT_EVERY`th compare-and-swap on a core), so the failure path that real hardware takes
//! only on a rare lost reservation runs under test (`make test-deque-stxr-failure`); without the
//! cfg the primitive holds no trace of it. `store_exclusive_injection` reports its counts.

//! `unsafe` is denied here and allowed, by name, in the three modules that need it, each block
//! with its `// SAFETY:` argument: [`aarch64`](Aarch64Asm) (the inline LDXR/STXR and DMB
//! assembly), `shared` (the one raw-pointer read of a ring slot, so `chase_lev.rs` stays safe)
//! and the test-only `boxed` (turning a `u64` item back into the `Box` it came from). Every
//! other module is `#![forbid(unsafe_code)]`. The AArch64 primitive stays in this crate rather than in the
//! kernel because it is half of the deque's [`DequeAtomics`] seam and the in-QEMU stress test
//! (tests/29) checks it against the very algorithm here.

#![cfg_attr(not(any(test, loom)), no_std)]
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

extern crate alloc;

// Test-only: `Box<T>` items through the deque, for the unit and stress tests (nothing outside
// the crate's tests used it, so it is not part of the deque's interface).
#[cfg(all(test, not(loom)))]
#[allow(unsafe_code)]
mod boxed;
mod chase_lev;
mod outcome;
mod overflow;
mod portable;
mod primitives;
#[allow(unsafe_code)]
mod shared;
mod shim;

#[cfg(target_arch = "aarch64")]
#[allow(unsafe_code)]
mod aarch64;

#[cfg(test)]
mod tests;

#[cfg(all(test, not(loom)))]
use boxed::{BoxStealer, BoxWorker};
pub use chase_lev::{Stealer, Worker};
pub use outcome::{CapacityError, Full, Pop, Steal};
pub use overflow::{PushedTo, WorkQueue, WorkQueueStealer};
pub use portable::Portable;
pub use primitives::{CasFailure, DequeAtomics};

#[cfg(target_arch = "aarch64")]
pub use aarch64::{Aarch64Asm, INJECT_EVERY, InjectionCounts, STORE_EXCLUSIVE_ATTEMPTS, store_exclusive_injection};

/// The atomic primitive the kernel's deques use on this architecture: the hand-written
/// LDXR/STXR version on AArch64, [`Portable`] elsewhere and whenever loom is checking.
#[cfg(all(target_arch = "aarch64", not(loom)))]
pub type NativeAtomics = Aarch64Asm;
/// The atomic primitive the kernel's deques use on this architecture: the hand-written
/// LDXR/STXR version on AArch64, [`Portable`] elsewhere and whenever loom is checking.
#[cfg(not(all(target_arch = "aarch64", not(loom))))]
pub type NativeAtomics = Portable;
