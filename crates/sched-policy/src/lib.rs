//! beamcore's scheduling policy: the order a core runs its processes in ([`priority`], and the
//! turns of the "run next" slot: [`run_next`]), the load balancer's decisions ([`balance`]: when
//! a core may steal, from whom, how much; where a process may run and where a new one starts),
//! and the arithmetic of the queue-wait histogram ([`queue_wait`]).
//!
//! Pure: the kernel's scheduler feeds it snapshots and counter readings and does what it
//! answers, and the host simulator (`sim/`) drives the very same code; here it is unit- and
//! property-tested on the host (`cargo test` in this directory).

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

// The victim picker's stable sorts (`slice::sort_by`) live in `alloc`.
extern crate alloc;

pub mod balance;
pub mod placement;
pub mod priority;
pub mod queue_wait;
pub mod run_next;

pub use priority::Priority;
