//! Every core's shared state, bringing secondary cores up, core-to-core interrupts (SGIs), the
//! per-core timer tick, and running work on a chosen core.
//!
//! ```text
//!  boot core: start_secondaries ──PSCI CPU_ON / spin table──▶ core n: _secondary_start
//!                    ◀────────────── CORES[n].online ─────────  bring_core_online, idle_loop
//!  any core:  run_on(n, job) ─push─▶ CORES[n].jobs ─SGI Wake─▶ core n wakes from WFI, runs job
//! ```
//!
//! Jobs are small pieces of kernel work run by a core's scheduler loop between processes (tests
//! and bring-up use them); an SGI or the tick wakes a sleeping core to run them.
//!
//! This layer sits below the scheduler and names none of it: what a tick does beyond counting
//! and re-arming (end a slice), who is told that a job was queued, and what the deadline
//! watchdog prints are handlers the boot code registers ([`set_handlers`]).
//!
//! One file per concern: `percore` (the shared record and the table of it), `online` (a core
//! coming up, returning, going offline), `sgi` (core-to-core interrupts), `irq` (the IRQ
//! handler's dispatch), `tick` (the per-core tick and arming the timer), `jobs` (work queued
//! for a core), `wait` (sleeping until a condition holds), `halt` (parking every core at the
//! end), `watchdog` (the run's deadline), `handlers` (the scheduler's registered seam) and
//! `error`. This file only re-exports: callers name `smp::x`, never a file.
//!
//! It is the cores layer of the kernel's stack of crates (docs/layout.md), on the hardware layer
//! and the boot code. Two neighbours live here because of what they need from it: the console
//! (`console`), whose lock must give way to the end of a run (`halting`, `halt_this_core`), and
//! powering a core down and up (`core_power`), which restarts it at the boot code's entry.

#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

extern crate alloc;

use beamcore_boot as boot;
use beamcore_core_set as core_set;
use beamcore_hal::{arch, board, drivers, layout, platform, sync, time};

pub mod console;
pub mod core_power;

mod error;
mod halt;
mod handlers;
mod irq;
mod jobs;
mod online;
mod percore;
mod sgi;
mod tick;
mod wait;
mod watchdog;

pub use error::SmpError;
pub use halt::{halt_other_cores, halt_this_core, halting};
pub use handlers::{Handlers, set_handlers};
pub use irq::handle_irq;
pub use jobs::{Job, run_on, run_on_all_and_wait};
// For the scheduler above and the kernel's bring-up: how a core's scheduler loop takes its jobs
// and how a core comes online, returns and goes offline. Not for programs.
#[doc(hidden)]
pub use jobs::{close_jobs, has_jobs, take_job};
pub use online::gic;
#[doc(hidden)]
pub use online::{bring_core_online, init_boot, note_offline, rejoin_this_core, stop_this_core_for_offline};
pub use percore::{PerCore, core, cores_online};
pub use sgi::{Sgi, ping, send_sgi};
pub use tick::deadline_added;
pub use wait::wait_until;
pub use watchdog::arm_watchdog;
