//! The calls a program makes: spawn, identity, yield, send, exit and kill (`calls.rs`), taking
//! messages, links, monitors, calls and replies, and what a program may learn about a process.
//! Above `turn/`, since blocking and exiting switch the caller out; `sched/lib.rs` re-exports
//! what is public.

pub(super) mod calls;
pub(super) mod info;
pub(super) mod links;
pub(super) mod monitors;
pub(super) mod receive;
pub(super) mod reply;
