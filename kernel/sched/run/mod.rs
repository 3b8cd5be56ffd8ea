//! Where runnable processes wait and how a core reaches them: each core's run queues and the
//! `queues=shared` baseline's queue, the per-core state behind the `OnCore` guard, the running
//! process, the attention word, the idle cores, the active set, and making a process runnable.
//! Uses `proc/`, `record/` and `settings.rs` only: what a turn does, what a message is, and how
//! cores balance are the parts above.

pub(super) mod active;
pub(super) mod attention;
pub(super) mod current;
pub(super) mod idle;
pub(super) mod percore;
pub(super) mod runqueue;
pub(super) mod shared_queue;
pub(super) mod wake;
