//! The load balancer's policy: when a core may steal, from whom, how much, and when it must
//! leave a victim alone. Pure: the scheduler feeds it snapshots of the cores and counter
//! readings, and it answers; it is unit- and property-tested on the host.
//!
//! ```text
//!  idle thief ─▶ VictimPicker (strategy) ─▶ victim ─▶ check_victim (cooldown, empty,
//!       ▲                                               threshold, migration limit) ─▶ steal
//!       └──── backoff_counts (exponential, jittered, bounded) between the `retries` attempts
//! ```

#![forbid(unsafe_code)]

mod allowed;
mod idle;
mod policy;
mod rng;
mod victims;

pub use allowed::{PlaceError, may_run_on, pinned, place};
pub use idle::{
    REBALANCE_BATCH, REBALANCE_PERIOD_NS, RebalancePlan, SEARCH_BUDGET_NS, SEARCH_PAUSE_MAX_NS, SEARCH_PAUSE_MIN_NS,
    SearchTiming, idle_with_work, max_searchers, plan_rebalance, rebalance_due, rebalance_period_ticks,
    search_pause_counts, search_spent, should_wake_a_thief, worth_a_thief,
};
pub use policy::{
    BACKOFF_BASE_NS, BACKOFF_MAX_NS, BalanceConfig, CoreView, DEFAULT_COOLDOWN_NS, NEVER, Refusal, StealAmount,
    backoff_counts, check_victim, cooldown_active, cooldown_ends_at, may_migrate, ns_to_counts, steal_count,
};
pub use rng::{Rng, mix};
pub use victims::{AdaptiveState, Strategy, VictimPicker};
