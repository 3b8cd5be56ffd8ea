//! What a process is: the types programs see, the control block, the slots of the process table,
//! the closure a new process runs and each core's cache of free signal nodes. The ground floor of
//! the scheduler: nothing here names another part of `sched`, so every other part may use it.

mod chunks;
pub(super) mod entry;
pub(super) mod node_cache;
pub(super) mod process;
pub(super) mod process_types;
pub(super) mod table;
