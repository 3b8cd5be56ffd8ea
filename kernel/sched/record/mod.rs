//! What the schedulers record as they run: each core's counters and the event trace. Written on
//! the fast paths of every other part, so it uses only `settings.rs` (is the figure collected?)
//! and `proc/` (a slot's generation for a trace event), never the parts that write to it.

pub(super) mod stats;
pub mod trace;
