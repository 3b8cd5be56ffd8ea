//! Balancing the cores: an idle core's steal round (`round.rs`), core 0's push rebalancing
//! (`rebalance.rs`), and what both see of the cores and how they move a process (`migrate.rs`).
//! The rules are pure (crates/sched-policy's `balance`); this floor applies them to the run
//! queues and the per-core state below it (`run/`), and only the loop and the report use it.

pub(super) mod migrate;
pub(super) mod rebalance;
pub(super) mod round;
