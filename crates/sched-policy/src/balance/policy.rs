//! Thresholds, cooldowns, migration limits, backoff and how much to take.

use core::fmt;

use crate::priority::Priority;

/// How many processes a successful steal takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StealAmount {
    /// One process (as ERTS).
    One,
    /// Half of the victim's stealable processes, rounded up (so at least one when there is any;
    /// as Go and Tokio).
    Half,
}

/// The balancer's settings (bootargs; the defaults are those documented in `docs/balancer.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BalanceConfig {
    /// A victim must hold at least this many stealable processes.
    pub min_steal: usize,
    /// The victim's load must exceed the thief's by more than this.
    pub imbalance: u64,
    /// Steal attempts per idle round.
    pub retries: u32,
    /// No steal from the same victim within this many counts of the last success (the
    /// bootarg `cooldown` is in nanoseconds; the kernel converts it with [`ns_to_counts`]).
    pub cooldown_counts: u64,
    /// A process that has migrated this many times stays where it is.
    pub max_migrations: u32,
    pub amount: StealAmount,
    /// Max-priority processes are never stolen.
    pub protect_max: bool,
    /// Periodic push rebalancing from the busiest to the idlest core.
    pub rebalance: bool,
    /// Push rebalancing acts when the busiest core's load exceeds `ratio` times the idlest's.
    pub rebalance_ratio: u64,
    /// First backoff between attempts, and the cap, in counts (from [`BACKOFF_BASE_NS`]
    /// and [`BACKOFF_MAX_NS`]).
    pub backoff_base_counts: u64,
    pub backoff_max_counts: u64,
}

/// The default steal cooldown: the design's "10,000 cycles", read as nanoseconds (10 us, a few
/// microseconds of CPU time as the design meant), so it lasts as long on every board whatever
/// its counter's frequency (62.5 MHz on QEMU virt, 54 MHz on a Pi 4, 1 GHz under `-cpu max`).
pub const DEFAULT_COOLDOWN_NS: u64 = 10_000;
/// Backoff between steal attempts of one round: from 1 us, doubling, at most 32 us.
pub const BACKOFF_BASE_NS: u64 = 1_000;
pub const BACKOFF_MAX_NS: u64 = 32_000;

/// `ns` nanoseconds in counts of a counter running at `counter_hz`, rounded up, so a non-zero
/// duration never becomes zero counts (and zero stays zero): the one conversion every layer
/// uses (crates/counter-time).
pub use beamcore_counter_time::ns_to_counts;

impl BalanceConfig {
    /// This configuration with its durations set for a counter running at `counter_hz`: the
    /// cooldown from `cooldown_ns`, the backoff from its defaults in nanoseconds.
    pub fn timed(self, cooldown_ns: u64, counter_hz: u64) -> BalanceConfig {
        BalanceConfig {
            cooldown_counts: ns_to_counts(cooldown_ns, counter_hz),
            backoff_base_counts: ns_to_counts(BACKOFF_BASE_NS, counter_hz),
            backoff_max_counts: ns_to_counts(BACKOFF_MAX_NS, counter_hz),
            ..self
        }
    }
}

impl Default for BalanceConfig {
    fn default() -> Self {
        BalanceConfig {
            min_steal: 2,
            imbalance: 2,
            retries: 3,
            // The defaults in counts of QEMU virt's 62.5 MHz counter; the kernel recomputes them
            // for the real counter with `timed`.
            cooldown_counts: 625,
            max_migrations: 100,
            amount: StealAmount::One,
            protect_max: false,
            rebalance: true,
            rebalance_ratio: 4,
            backoff_base_counts: 63,
            backoff_max_counts: 2000,
        }
    }
}

/// What a thief sees of a core when it considers stealing from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreView {
    /// 4 x max + 3 x high + 2 x normal + 1 x low runnable processes.
    pub load: u64,
    /// Runnable processes in its stealable queues.
    pub stealable: usize,
    /// Runnable processes in all its queues (stealable or not).
    pub runnable: usize,
    /// MPIDR affinity level 1 (the cluster).
    pub cluster: u64,
}

impl CoreView {
    /// The load formula from per-priority counts (max, high, normal, low, the order of
    /// [`Priority::ALL`]). The weights are [`Priority::load_weight`]'s, so the balancer and
    /// `core_load` (the kernel's report) can never disagree about what a process weighs.
    pub fn load_of(runnable_by_priority: [usize; 4]) -> u64 {
        Priority::ALL.iter().zip(runnable_by_priority).map(|(priority, n)| priority.load_weight() * n as u64).sum()
    }
}

/// Why a victim was not stolen from (each is counted separately in the telemetry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Nothing runnable there.
    Empty,
    /// Too few stealable processes, or not enough busier than the thief.
    BelowThreshold,
    /// Stolen from too recently.
    Cooldown,
    /// It has runnable processes, but a limit on migration holds every one where it is: bound to
    /// its core, at its `max_migrations`, or a protected max-priority process.
    MigrationLimit,
    /// The process taken may not run on the core it was to go to (its allowed cores leave that
    /// core out): handed back to the core it came from. Found only once the process is taken
    /// (a thief cannot see past the top of a victim's deque), so [`check_victim`] never
    /// answers it; the thief and push rebalancing count it.
    NotAllowed,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::Empty => "empty",
            Refusal::BelowThreshold => "below_threshold",
            Refusal::Cooldown => "cooldown",
            Refusal::MigrationLimit => "migration_limit",
            Refusal::NotAllowed => "not_allowed",
        })
    }
}

/// "Never stole from it": the cooldown stamp before the first success.
pub const NEVER: u64 = u64::MAX;

/// True while a victim last stolen from at `last_success` (a counter reading, or [`NEVER`]) is
/// still cooling down at `now`. Wrap-safe: differences are taken modulo 2^64.
pub fn cooldown_active(now: u64, last_success: u64, cooldown_counts: u64) -> bool {
    last_success != NEVER && now.wrapping_sub(last_success) < cooldown_counts
}

/// When a victim refused for its cooldown becomes available again; a round notes the earliest
/// of these (`earliest`), so a thief whose only refusals were cooldowns about to end comes
/// round again then instead of sleeping through them.
pub fn cooldown_ends_at(config: &BalanceConfig, last_success: u64, earliest: Option<u64>) -> Option<u64> {
    let at = last_success.wrapping_add(config.cooldown_counts);
    Some(earliest.map_or(at, |t| t.min(at)))
}

/// May the thief (with load `thief_load`) steal from `victim` now?
pub fn check_victim(
    config: &BalanceConfig,
    thief_load: u64,
    victim: &CoreView,
    now: u64,
    last_success: u64,
) -> Result<(), Refusal> {
    if cooldown_active(now, last_success, config.cooldown_counts) {
        return Err(Refusal::Cooldown);
    }
    if victim.runnable == 0 {
        return Err(Refusal::Empty);
    }
    if victim.stealable == 0 {
        return Err(Refusal::MigrationLimit);
    }
    if victim.stealable < config.min_steal || victim.load <= thief_load.saturating_add(config.imbalance) {
        return Err(Refusal::BelowThreshold);
    }
    Ok(())
}

/// May a process move to another core? Not when it is bound, not once it has migrated
/// `max_migrations` times (it stays where it is for good), and not a max-priority one under
/// `protect_max`.
pub fn may_migrate(config: &BalanceConfig, bound: bool, migrations: u32, max_priority: bool) -> bool {
    !bound && migrations < config.max_migrations && !(config.protect_max && max_priority)
}

/// How many processes to take from a victim with `stealable` stealable processes.
pub fn steal_count(amount: StealAmount, stealable: usize) -> usize {
    match amount {
        StealAmount::One => 1.min(stealable),
        StealAmount::Half => stealable.div_ceil(2).min(stealable),
    }
}

/// The pause before attempt `attempt` (0-based; none before the first): exponential from the
/// base, capped, with up to half of it replaced by jitter so thieves do not retry in step.
pub fn backoff_counts(config: &BalanceConfig, attempt: u32, jitter: u64) -> u64 {
    if attempt == 0 {
        return 0;
    }
    let exponential = config.backoff_base_counts.saturating_mul(1u64 << (attempt - 1).min(32));
    let capped = exponential.min(config.backoff_max_counts);
    let half = capped / 2;
    half + if half == 0 { 0 } else { jitter % (half + 1) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest};

    #[test]
    fn a_round_notes_the_earliest_cooldown_end() {
        let config = BalanceConfig { cooldown_counts: 100, ..BalanceConfig::default() };
        assert_eq!(cooldown_ends_at(&config, 1_000, None), Some(1_100), "the first refusal");
        assert_eq!(cooldown_ends_at(&config, 1_000, Some(1_050)), Some(1_050), "an earlier one stays");
        assert_eq!(cooldown_ends_at(&config, 1_000, Some(2_000)), Some(1_100), "a later one gives way");
    }

    #[test]
    fn durations_mean_the_same_on_every_board() {
        // 10 us on QEMU virt (62.5 MHz), a Pi 4 (54 MHz) and -cpu max (1 GHz).
        assert_eq!(ns_to_counts(DEFAULT_COOLDOWN_NS, 62_500_000), 625);
        assert_eq!(ns_to_counts(DEFAULT_COOLDOWN_NS, 54_000_000), 540);
        assert_eq!(ns_to_counts(DEFAULT_COOLDOWN_NS, 1_000_000_000), 10_000);
        assert_eq!(ns_to_counts(0, 62_500_000), 0);
        assert_eq!(ns_to_counts(1, 62_500_000), 1, "a non-zero duration never rounds to zero");
        assert_eq!(ns_to_counts(u64::MAX, u64::MAX), u64::MAX, "saturates");
        let timed = BalanceConfig::default().timed(DEFAULT_COOLDOWN_NS, 62_500_000);
        assert_eq!(timed, BalanceConfig::default(), "the defaults are the 62.5 MHz values");
        let pi = BalanceConfig::default().timed(20_000, 54_000_000);
        assert_eq!((pi.cooldown_counts, pi.backoff_base_counts, pi.backoff_max_counts), (1080, 54, 1728));
    }

    fn view(load: u64, stealable: usize, runnable: usize) -> CoreView {
        CoreView { load, stealable, runnable, cluster: 0 }
    }

    #[test]
    fn load_formula() {
        assert_eq!(CoreView::load_of([1, 1, 1, 1]), 10);
        assert_eq!(CoreView::load_of([0, 0, 3, 0]), 6);
        for (i, priority) in Priority::ALL.into_iter().enumerate() {
            let mut counts = [0; 4];
            counts[i] = 5;
            assert_eq!(CoreView::load_of(counts), 5 * priority.load_weight(), "{priority}");
        }
    }

    /// The weights reach the steal decision: against a thief running two normal processes
    /// (load 4), a core with two max processes (load 8) is busy enough to steal from and one
    /// with three low processes (load 3) is not, though it holds more processes. With equal
    /// weights it would be the other way round.
    #[test]
    fn check_victim_weighs_processes_by_priority() {
        let c = BalanceConfig::default();
        let thief = CoreView::load_of([0, 0, 2, 0]);
        let two_max = view(CoreView::load_of([2, 0, 0, 0]), 2, 2);
        let three_low = view(CoreView::load_of([0, 0, 0, 3]), 3, 3);
        assert_eq!(check_victim(&c, thief, &two_max, 0, NEVER), Ok(()));
        assert_eq!(check_victim(&c, thief, &three_low, 0, NEVER), Err(Refusal::BelowThreshold));
    }

    #[test]
    fn thresholds_with_the_defaults() {
        let c = BalanceConfig::default();
        assert_eq!(check_victim(&c, 0, &view(0, 0, 0), 0, NEVER), Err(Refusal::Empty));
        assert_eq!(check_victim(&c, 0, &view(10, 0, 5), 0, NEVER), Err(Refusal::MigrationLimit));
        assert_eq!(check_victim(&c, 0, &view(10, 1, 5), 0, NEVER), Err(Refusal::BelowThreshold), "min_steal 2");
        assert_eq!(check_victim(&c, 2, &view(4, 2, 2), 0, NEVER), Err(Refusal::BelowThreshold), "4 - 2 is not > 2");
        assert_eq!(check_victim(&c, 1, &view(4, 2, 2), 0, NEVER), Ok(()), "4 - 1 > 2");
    }

    #[test]
    fn cooldown_is_honoured_and_wraps() {
        let c = BalanceConfig { cooldown_counts: 10_000, ..BalanceConfig::default() };
        let v = view(100, 10, 10);
        assert_eq!(check_victim(&c, 0, &v, 5_000, 0), Err(Refusal::Cooldown));
        assert_eq!(check_victim(&c, 0, &v, 10_000, 0), Ok(()));
        // A stamp just before the counter wraps, checked just after it.
        let last = u64::MAX - 100;
        assert!(cooldown_active(50, last, 10_000));
        assert!(!cooldown_active(20_000, last, 10_000));
        assert!(!cooldown_active(0, NEVER, 10_000));
    }

    #[test]
    fn migration_limit_binding_and_protection() {
        let mut c = BalanceConfig::default();
        assert!(may_migrate(&c, false, 0, true));
        assert!(may_migrate(&c, false, 99, false));
        assert!(!may_migrate(&c, false, 100, false), "at the limit it stays");
        assert!(!may_migrate(&c, true, 0, false), "bound never moves");
        c.protect_max = true;
        assert!(!may_migrate(&c, false, 0, true));
        assert!(may_migrate(&c, false, 0, false));
        c.max_migrations = 0;
        assert!(!may_migrate(&c, false, 0, false));
    }

    #[test]
    fn steal_amounts() {
        assert_eq!(steal_count(StealAmount::One, 7), 1);
        assert_eq!(steal_count(StealAmount::Half, 7), 4);
        assert_eq!(steal_count(StealAmount::Half, 1), 1);
        assert_eq!(steal_count(StealAmount::Half, 0), 0);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let c = BalanceConfig { backoff_base_counts: 64, backoff_max_counts: 2048, ..BalanceConfig::default() };
        assert_eq!(backoff_counts(&c, 0, 12345), 0);
        assert_eq!(backoff_counts(&c, 1, 0), 32);
        assert_eq!(backoff_counts(&c, 2, 0), 64);
        assert_eq!(backoff_counts(&c, 40, 0), 1024);
    }

    /// The telemetry's counter names (`fail_<name>` in the report and in bench/results.json).
    #[test]
    fn refusals_print_their_counter_names() {
        let shown: Vec<String> =
            [Refusal::Empty, Refusal::BelowThreshold, Refusal::Cooldown, Refusal::MigrationLimit, Refusal::NotAllowed]
                .iter()
                .map(|r| r.to_string())
                .collect();
        assert_eq!(shown, ["empty", "below_threshold", "cooldown", "migration_limit", "not_allowed"]);
    }

    /// The jitter spreads the pause over the upper half of the step, its whole width: with the
    /// first step (64 counts) any value from 32 to 64 can come out, and jitter beyond that
    /// wraps round instead of being clamped.
    #[test]
    fn backoff_jitter_covers_the_upper_half() {
        let c = BalanceConfig { backoff_base_counts: 64, backoff_max_counts: 2048, ..BalanceConfig::default() };
        assert_eq!(backoff_counts(&c, 1, 10), 42);
        assert_eq!(backoff_counts(&c, 1, 32), 64);
        assert_eq!(backoff_counts(&c, 1, 33), 32);
        assert_eq!(backoff_counts(&c, 40, 1024), 2048);
    }

    proptest! {
        #[test]
        fn a_steal_is_allowed_exactly_when_every_rule_allows_it(
            thief in 0u64..50, load in 0u64..60, stealable in 0usize..8, extra in 0usize..8,
            now in any::<u64>(), since in 0u64..30_000, cooled in any::<bool>(),
        ) {
            let c = BalanceConfig::default();
            let v = view(load, stealable, stealable + extra);
            let last = if cooled { NEVER } else { now.wrapping_sub(since) };
            let allowed = check_victim(&c, thief, &v, now, last).is_ok();
            let expected = (cooled || since >= c.cooldown_counts)
                && stealable >= c.min_steal
                && load > thief + c.imbalance;
            prop_assert_eq!(allowed, expected);
        }

        #[test]
        fn backoff_is_bounded(attempt in 0u32..100, jitter in any::<u64>()) {
            let c = BalanceConfig::default();
            let b = backoff_counts(&c, attempt, jitter);
            prop_assert!(b <= c.backoff_max_counts);
            if attempt > 0 {
                prop_assert!(b >= c.backoff_base_counts / 2);
            }
        }

        /// `steal=half` takes half, rounded up: the thief ends up with as many as the victim
        /// keeps, or one more. Pinned exactly, so that "take one" (or "take all") fails here
        /// and not only on the in-QEMU balance figures.
        #[test]
        fn half_takes_half_rounded_up(n in 0usize..1000) {
            let taken = steal_count(StealAmount::Half, n);
            let kept = n - taken;
            prop_assert!(taken == kept || taken == kept + 1, "n={} took {}", n, taken);
            prop_assert!(n == 0 || taken >= 1);
        }
    }
}
