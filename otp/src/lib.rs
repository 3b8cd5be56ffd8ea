//! OTP's two shapes for beamcore processes: the generic server ([`server`], Erlang's
//! `gen_server`) and the supervisor ([`supervisor`]).
//!
//! Why a library and not the kernel's: the kernel gives the primitives (links, monitors, trapped
//! exits, selective receive, calls with reply references, timers) and stays small; the shapes
//! built from them are policy, which programs may want to vary, so they live on the programs'
//! side and use nothing but the public process API (`beamcore::sched`).
//!
//! Both shapes start their process synchronously ([`start`], Erlang's `proc_lib`): the caller
//! gets the pid only once the process has initialised (a server's `init`, a supervisor's
//! children), so a supervisor starts its children one after another, in order, as OTP's does.

#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

pub mod server;
pub mod start;
pub mod supervisor;
