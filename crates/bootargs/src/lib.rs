//! Parses the kernel command line (`key=value` words separated by spaces) into a typed
//! [`Config`].
//!
//! The command line comes from QEMU's `-append`, the device tree's `/chosen/bootargs` or, on the
//! Pi, `cmdline.txt`, as raw bytes: nothing guarantees UTF-8. Parsing never fails as a whole: the
//! line is split into words at ASCII whitespace, and a word that is not understood (not UTF-8,
//! cut off at the command-line limit, unknown, out of range, ...) is reported as a [`Rejection`]
//! (printed as `bootargs: <what> ignored: <why>`, with control characters and bytes that are
//! not UTF-8 escaped) and the setting keeps its default, so a typo costs a warning, not a boot.
//! Words that name another program's setting (`console=…`, `module.param=…`, which the Pi's
//! firmware adds) are recognised and skipped.
//!
//! Pure code: tested on the host.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

mod config;
mod parse;
mod reject;
mod table;
mod telemetry;

#[cfg(test)]
mod tests;

pub use config::{Config, DEFAULT_TRACE_EVENTS, MAX_BOOT_JITTER, MAX_TICKS, MAX_TRACE_EVENTS, ON_OFF};
pub use parse::{MAX_REJECTIONS, Parsed, parse};
pub use reject::{Escaped, RejectReason, Rejection};
pub use table::{NoProgramWords, ProgramWords, Setting, Table, TableWords, Value, choice, number};
pub use telemetry::{NotCollected, Telemetry};
