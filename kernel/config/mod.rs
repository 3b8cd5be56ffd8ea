//! The kernel's runtime configuration: typed settings parsed from the kernel command line.

#![forbid(unsafe_code)]

pub use beamcore_bootargs as bootargs;

pub use bootargs::{Config, RejectReason, Rejection, Workload, parse};
