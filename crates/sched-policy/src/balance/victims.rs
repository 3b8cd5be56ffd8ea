//! Victim strategies: which cores an idle thief tries, in what order.
//!
//! Where a strategy walks several victims it starts at a random core and steps by a random
//! stride coprime to the core count (as Go's runtime does), so one round visits every other
//! core exactly once and thieves do not all start at the same victim.

use core::fmt;

use super::policy::CoreView;
use super::rng::Rng;

/// Most cores a picker handles: the kernel's `MAX_CORES`.
pub const MAX_VICTIMS: usize = beamcore_limits::MAX_CORES;

/// How a thief chooses victims (bootarg `strategy=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Every other core once, in a random coprime walk.
    Random,
    /// The busiest first (by load), then the next busiest.
    #[default]
    Load,
    /// Cores of the thief's cluster (MPIDR Aff1) first, then the rest; random walk within each.
    Locality,
    /// Power of two choices: for each attempt, sample two cores and take the more loaded.
    P2c,
    /// Every 100 attempts: busiest-first below a 30% success rate, p2c above it.
    Adaptive,
}

impl Strategy {
    pub const ALL: [Strategy; 5] =
        [Strategy::Random, Strategy::Load, Strategy::Locality, Strategy::P2c, Strategy::Adaptive];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Random => "random",
            Strategy::Load => "load",
            Strategy::Locality => "locality",
            Strategy::P2c => "p2c",
            Strategy::Adaptive => "adaptive",
        }
    }

    pub fn from_name(name: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The adaptive strategy's memory: success rate over windows of 100 attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdaptiveState {
    attempts: u32,
    successes: u32,
    aggressive: bool,
    /// Times the strategy switched (for the report).
    pub switches: u32,
}

impl AdaptiveState {
    pub const fn new() -> AdaptiveState {
        AdaptiveState { attempts: 0, successes: 0, aggressive: false, switches: 0 }
    }

    pub const WINDOW: u32 = 100;
    /// Below this success rate (percent) the thief turns to busiest-first.
    pub const AGGRESSIVE_BELOW_PERCENT: u32 = 30;

    pub fn record(&mut self, success: bool) {
        self.attempts += 1;
        self.successes += u32::from(success);
        if self.attempts == Self::WINDOW {
            let aggressive = self.successes * 100 < Self::AGGRESSIVE_BELOW_PERCENT * Self::WINDOW;
            self.switches += u32::from(aggressive != self.aggressive);
            self.aggressive = aggressive;
            self.attempts = 0;
            self.successes = 0;
        }
    }

    /// The strategy in force now.
    pub fn current(&self) -> Strategy {
        if self.aggressive { Strategy::Load } else { Strategy::P2c }
    }
}

impl Strategy {
    /// The strategy a round uses: this one, or for `Adaptive` the one its memory chose.
    pub fn effective(self, adaptive: &AdaptiveState) -> Strategy {
        if self == Strategy::Adaptive { adaptive.current() } else { self }
    }
}

/// Chooses victims for one idle round.
pub struct VictimPicker;

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Every core but `thief`, in a random coprime walk.
fn coprime_walk(thief: usize, cores: usize, rng: &mut Rng) -> heapless::Vec<usize, MAX_VICTIMS> {
    let mut order = heapless::Vec::new();
    if cores < 2 {
        return order;
    }
    let start = rng.below(cores as u64) as usize;
    let mut stride = 1 + rng.below(cores as u64 - 1) as usize;
    while gcd(stride, cores) != 1 {
        stride = stride % (cores - 1) + 1;
    }
    let mut position = start;
    for _ in 0..cores {
        if position != thief {
            let _ = order.push(position);
        }
        position = (position + stride) % cores;
    }
    order
}

impl VictimPicker {
    /// Up to `attempts` victims for `thief` among `views` (indexed by core id), in the order
    /// to try them. Never the thief; nothing with one core. `strategy` must not be `Adaptive`
    /// (pass `AdaptiveState::current()` instead).
    pub fn pick(
        strategy: Strategy,
        thief: usize,
        views: &[CoreView],
        rng: &mut Rng,
        attempts: usize,
    ) -> heapless::Vec<usize, MAX_VICTIMS> {
        let cores = views.len().min(MAX_VICTIMS);
        let mut walk = coprime_walk(thief, cores, rng);
        match strategy {
            Strategy::Random | Strategy::Adaptive => {}
            Strategy::Load => walk.sort_by(|&a, &b| views[b].load.cmp(&views[a].load)),
            Strategy::Locality => {
                let home = views[thief].cluster;
                walk.sort_by_key(|&c| views[c].cluster != home);
            }
            Strategy::P2c => {
                let mut chosen = heapless::Vec::new();
                for _ in 0..attempts.min(MAX_VICTIMS) {
                    let Some(&first) = walk.get(rng.below(walk.len().max(1) as u64) as usize) else { break };
                    let second = if walk.len() > 1 {
                        let mut other = walk[rng.below(walk.len() as u64 - 1) as usize];
                        if other == first {
                            other = walk[walk.len() - 1];
                        }
                        other
                    } else {
                        first
                    };
                    let pick = if views[second].load > views[first].load { second } else { first };
                    let _ = chosen.push(pick);
                }
                return chosen;
            }
        }
        walk.truncate(attempts);
        walk
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{any, prop_assert, prop_assert_eq, proptest};

    #[test]
    fn only_adaptive_defers_to_its_memory() {
        let fresh = AdaptiveState::new();
        let mut failing = AdaptiveState::new();
        for _ in 0..AdaptiveState::WINDOW {
            failing.record(false);
        }
        for strategy in [Strategy::Random, Strategy::Load, Strategy::Locality, Strategy::P2c] {
            assert_eq!(strategy.effective(&fresh), strategy);
            assert_eq!(strategy.effective(&failing), strategy);
        }
        assert_eq!(Strategy::Adaptive.effective(&fresh), Strategy::P2c, "p2c until a window fails");
        assert_eq!(Strategy::Adaptive.effective(&failing), Strategy::Load, "busiest-first after one");
    }

    fn views(loads: &[u64]) -> Vec<CoreView> {
        loads
            .iter()
            .enumerate()
            .map(|(i, &load)| CoreView { load, stealable: 3, runnable: 3, cluster: (i / 4) as u64 })
            .collect()
    }

    /// `strategy=` names: each one's name leads back to it, and nothing else is a strategy.
    #[test]
    fn strategies_round_trip_through_their_names() {
        for s in Strategy::ALL {
            assert_eq!(Strategy::from_name(s.name()), Some(s));
            assert_eq!(s.to_string(), s.name());
        }
        let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["random", "load", "locality", "p2c", "adaptive"]);
        assert_eq!(Strategy::from_name("busiest"), None);
    }

    #[test]
    fn gcd_is_the_greatest_common_divisor() {
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(gcd(18, 12), 6);
        assert_eq!(gcd(7, 5), 1);
        assert_eq!(gcd(8, 8), 8);
        assert_eq!(gcd(0, 4), 4);
    }

    /// The walk's stride is random among those coprime to the core count: with 5 cores every
    /// stride 1..=4 turns up, with 8 cores exactly the odd ones. A walk that always stepped by
    /// one would still visit every core, but thieves starting next to each other would then
    /// try the same victims in the same order.
    #[test]
    fn walks_use_every_coprime_stride() {
        for (cores, expected) in [(5, vec![1, 2, 3, 4]), (8, vec![1, 3, 5, 7])] {
            let mut rng = Rng::new(11);
            let mut strides = std::collections::BTreeSet::new();
            for _ in 0..400 {
                // A thief outside the range skips nobody, so consecutive entries are one stride apart.
                let walk = coprime_walk(usize::MAX, cores, &mut rng);
                assert_eq!(walk.len(), cores);
                strides.insert((walk[1] + cores - walk[0]) % cores);
            }
            assert_eq!(strides.into_iter().collect::<Vec<_>>(), expected, "{cores} cores");
        }
    }

    #[test]
    fn one_core_has_no_victims() {
        let mut rng = Rng::new(1);
        for s in [Strategy::Random, Strategy::Load, Strategy::Locality, Strategy::P2c] {
            assert!(VictimPicker::pick(s, 0, &views(&[5]), &mut rng, 3).is_empty());
        }
    }

    #[test]
    fn load_picks_the_busiest_first() {
        let mut rng = Rng::new(3);
        let picked = VictimPicker::pick(Strategy::Load, 1, &views(&[2, 0, 9, 4]), &mut rng, 3);
        assert_eq!(picked.as_slice(), &[2, 3, 0]);
    }

    /// `load` orders victims by weighted load, not by how many processes they hold: two max
    /// processes (load 8) come before three low ones (load 3), which come before one normal
    /// (load 2).
    #[test]
    fn load_ranks_victims_by_priority_weighted_load() {
        let counts = [[0, 0, 0, 0], [0, 0, 0, 3], [2, 0, 0, 0], [0, 0, 1, 0]];
        let views: Vec<CoreView> = counts
            .iter()
            .map(|&by_priority| CoreView {
                load: CoreView::load_of(by_priority),
                stealable: by_priority.iter().sum(),
                runnable: by_priority.iter().sum(),
                cluster: 0,
            })
            .collect();
        for seed in 1..20 {
            let picked = VictimPicker::pick(Strategy::Load, 0, &views, &mut Rng::new(seed), 3);
            assert_eq!(picked.as_slice(), &[2, 1, 3], "seed {seed}");
        }
    }

    #[test]
    fn locality_prefers_the_same_cluster() {
        let mut rng = Rng::new(5);
        let picked = VictimPicker::pick(Strategy::Locality, 5, &views(&[9; 8]), &mut rng, 7);
        assert!(picked[..3].iter().all(|&c| c / 4 == 1), "{picked:?}");
        assert!(picked[3..].iter().all(|&c| c / 4 == 0), "{picked:?}");
    }

    #[test]
    fn p2c_takes_the_more_loaded_of_two() {
        let mut rng = Rng::new(9);
        // With loads 0 and 10 among the two others, the more loaded must win whenever both are
        // sampled; with only two candidates both are always sampled.
        for _ in 0..50 {
            let picked = VictimPicker::pick(Strategy::P2c, 0, &views(&[1, 0, 10]), &mut rng, 1);
            assert_eq!(picked.as_slice(), &[2]);
        }
    }

    #[test]
    fn adaptive_switches_on_success_rate() {
        let mut state = AdaptiveState::default();
        assert_eq!(state.current(), Strategy::P2c);
        for i in 0..100 {
            state.record(i % 10 == 0); // 10% success
        }
        assert_eq!(state.current(), Strategy::Load);
        for i in 0..100 {
            state.record(i % 2 == 0); // 50% success
        }
        assert_eq!(state.current(), Strategy::P2c);
        assert_eq!(state.switches, 2);
    }

    /// "Below 30%" is strict: 30 successes in a window of 100 keep p2c, 29 switch to load.
    #[test]
    fn adaptive_threshold_is_strictly_below_thirty_percent() {
        let mut state = AdaptiveState::new();
        for i in 0..AdaptiveState::WINDOW {
            state.record(i < 30);
        }
        assert_eq!(state.current(), Strategy::P2c);
        for i in 0..AdaptiveState::WINDOW {
            state.record(i < 29);
        }
        assert_eq!(state.current(), Strategy::Load);
        assert_eq!(state.switches, 1);
    }

    proptest! {
        #[test]
        fn walks_visit_every_other_core_exactly_once(cores in 1usize..=MAX_VICTIMS, thief_seed in any::<u64>(), seed in any::<u64>()) {
            let thief = (thief_seed % cores as u64) as usize;
            let mut rng = Rng::new(seed);
            let loads: Vec<u64> = (0..cores as u64).map(|c| c * 7 % 5).collect();
            for strategy in [Strategy::Random, Strategy::Load, Strategy::Locality] {
                let picked = VictimPicker::pick(strategy, thief, &views(&loads), &mut rng, cores);
                let mut sorted: Vec<usize> = picked.to_vec();
                sorted.sort();
                let expected: Vec<usize> = (0..cores).filter(|&c| c != thief).collect();
                prop_assert_eq!(sorted, expected);
            }
            let picked = VictimPicker::pick(Strategy::P2c, thief, &views(&loads), &mut rng, 3);
            prop_assert!(picked.iter().all(|&c| c != thief && c < cores));
        }
    }
}
