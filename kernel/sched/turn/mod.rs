//! A process's turn on a core and how a process ends: the switch in and out and what is done
//! after it (dispatch), unwinding a process that panics, is killed or exits (unwind, with the
//! walk that tells whether unwinding would run any code), and the end itself (its name, links
//! and monitors told, its slot freed). The end tells `msg/`, so this floor stands above it.

pub(super) mod cleanup_walk;
pub(super) mod dispatch;
pub(super) mod ending;
pub(super) mod unwind;
