//! Deliberate bugs, built only with `--cfg sim_bug="<name>"` (never by `make sim`): the
//! calibration gate's self-test (`scripts/sim-calibrate.py --self-test`) builds the simulator
//! with each and requires the gate to fail on every one, so the gate is known to have power.
//! Without the cfg every function here is the identity.

use beamcore_sched_policy::balance::Strategy;

/// `steal_all`: a thief takes everything it sees; `steal_two`: two instead of one.
pub fn count(count: usize, stealable: usize) -> usize {
    if cfg!(sim_bug = "steal_all") {
        stealable
    } else if cfg!(sim_bug = "steal_two") {
        (count * 2).min(stealable)
    } else {
        count
    }
}

/// `random_default`: random victims whatever the strategy.
pub fn strategy(strategy: Strategy) -> Strategy {
    if cfg!(sim_bug = "random_default") { Strategy::Random } else { strategy }
}

/// `index_order`: victims in index order, ignoring the picker (as many as it picked).
pub fn victims(picked: Vec<usize>, me: usize, cores: usize) -> Vec<usize> {
    if !cfg!(sim_bug = "index_order") {
        return picked;
    }
    (0..cores).filter(|&c| c != me).take(picked.len()).collect()
}
