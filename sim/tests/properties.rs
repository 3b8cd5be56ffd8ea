//! Properties of the simulator over random workloads and policies: every process runs exactly
//! once, the policy's limits hold (max_migrations, cooldowns, bound processes), and no run
//! beats the work and span laws (speedup at most the core count and at most T1 / critical
//! path), whose work W does not depend on the schedule, and whose efficiency against Brent's
//! bound min(N, W / S) is at most T1 / W. And: the kernel's policy drives the simulation, and a
//! seed fixes a run.

use beamcore_sched_policy::balance::{BalanceConfig, StealAmount, Strategy as Victims};
use beamcore_sim::engine::COUNTER_HZ;
use beamcore_sim::{CostModel, Outcome, Policy, SimConfig, Workload, simulate};
use proptest::prelude::*;

fn workloads() -> impl Strategy<Value = Workload> {
    prop_oneof![
        (2u32..10).prop_map(|n| Workload::Fib { n }),
        (1u32..40, 1u32..12).prop_map(|(workers, units)| Workload::Imbalanced { workers, units }),
        (4u32..8, 2u32..5).prop_map(|(n, split)| Workload::Nqueens { n, split: split.min(n) }),
        // Fewer than one child per node on average (children x percent < 80%), so the tree stays
        // small: the kernel's own uts has 0.8.
        (1u32..25, 2u32..5, 0u32..80).prop_map(|(roots, children, p)| Workload::Uts {
            roots,
            children,
            percent: p / children
        }),
        (1u32..30, 1u32..8).prop_map(|(workers, units)| Workload::Mixed { workers, units }),
        (1u32..8, 1u32..40).prop_map(|(senders, messages)| Workload::Bang { senders, messages }),
        (1_000u64..300_000, 1u64..40)
            .prop_map(|(grain_ns, tasks)| Workload::Grain { grain_ns, total_ns: grain_ns * tasks }),
    ]
}

fn policies() -> impl Strategy<Value = Policy> {
    (
        0usize..Victims::ALL.len(),
        1usize..4,
        0u64..6,
        1u32..5,
        prop_oneof![Just(0u64), 1u64..50_000],
        0u32..4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(s, min_steal, imbalance, retries, cooldown_ns, max_migrations, half, protect_max, rebalance)| {
                let config = BalanceConfig {
                    min_steal,
                    imbalance,
                    retries,
                    max_migrations,
                    amount: if half { StealAmount::Half } else { StealAmount::One },
                    protect_max,
                    rebalance,
                    ..BalanceConfig::default().timed(cooldown_ns, COUNTER_HZ)
                };
                Policy { name: "random".into(), config, strategy: Victims::ALL[s] }
            },
        )
}

fn cores() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..9, Just(16usize), Just(64usize), Just(96usize)]
}

/// The one-core time the speedup is measured against: the one-core run's makespan; for `grain`,
/// whose spawner polls (its yields at one core are not work the tasks need), the tasks' work
/// itself, as the kernel's granularity figures do.
/// Also the one-core run's work W.
fn t1(workload: Workload, policy: &Policy, seed: u64, costs: &CostModel) -> (u64, u64) {
    let one = simulate(workload, policy, SimConfig::new(1, seed), costs);
    match workload {
        Workload::Grain { .. } => (workload.units(), one.work),
        _ => (one.makespan, one.work),
    }
}

fn check_run(workload: Workload, policy: &Policy, outcome: &Outcome, t1: (u64, u64)) -> Result<(), TestCaseError> {
    let (t1, one_core_work) = t1;
    prop_assert!(!outcome.timed_out, "did not finish");
    // Exactly once: main and every process the workload spawns ended once, and all the work
    // was done.
    let processes = workload.processes() as usize + 1;
    prop_assert_eq!(outcome.exits.len(), processes);
    prop_assert!(outcome.exits.iter().all(|&e| e == 1), "a process ended {:?} times", outcome.exits.iter().max());
    prop_assert_eq!(outcome.spawned, processes as u64);
    prop_assert_eq!(outcome.completed, processes as u64);
    let work: u64 = outcome.per_core.iter().map(|c| c.work).sum();
    prop_assert_eq!(work, workload.units());
    // The policy's limits.
    let limit = policy.config.max_migrations;
    prop_assert!(outcome.migrations.iter().all(|&m| m <= limit), "a process moved beyond {}", limit);
    prop_assert!(outcome.max_migrations_seen <= limit);
    prop_assert_eq!(outcome.cooldown_violations, 0);
    for core in &outcome.per_core {
        if core.min_steal_gap != u64::MAX {
            prop_assert!(core.min_steal_gap >= policy.config.cooldown_counts);
        }
    }
    prop_assert_eq!(outcome.bound_violations, 0);
    if policy.config.amount == StealAmount::One {
        prop_assert!(outcome.per_core.iter().all(|c| c.stolen == c.steals));
    }
    // The work and span laws.
    let speedup = t1 as f64 / outcome.makespan as f64;
    prop_assert!(outcome.makespan >= outcome.critical_path, "{} < span {}", outcome.makespan, outcome.critical_path);
    // The work law: N cores take at least W / N (scheduling only adds to it). Not speedup <= N:
    // a run on more cores may need fewer of the one-core run's switches and wake-ups, never
    // less of the work, so the speedup over the one-core makespan may pass N by up to T1 / W.
    prop_assert!(
        outcome.makespan as u128 * outcome.cores as u128 >= u128::from(outcome.work),
        "makespan {} on {} cores below the work {} over the cores",
        outcome.makespan,
        outcome.cores,
        outcome.work
    );
    prop_assert!(
        speedup <= outcome.cores as f64 * t1 as f64 / outcome.work as f64 + 1e-9,
        "speedup {speedup} on {} cores (T1 {t1}, Tp {}, W {})",
        outcome.cores,
        outcome.makespan,
        outcome.work
    );
    prop_assert!(speedup <= t1 as f64 / outcome.critical_path as f64 + 1e-9);
    // W is the same whatever the schedule, at least the span, and the efficiency against
    // min(N, W / S) passes 1 by no more than the one-core run's scheduling costs (T1 / W).
    prop_assert_eq!(outcome.work, one_core_work, "the work depends on the schedule");
    prop_assert!(outcome.work >= outcome.critical_path);
    let efficiency = beamcore_sim::report::efficiency(outcome, t1);
    if !matches!(workload, Workload::Grain { .. }) {
        prop_assert!(t1 >= outcome.work, "T1 {} below W {}", t1, outcome.work);
        prop_assert!(efficiency <= t1 as f64 / outcome.work as f64 + 1e-9, "efficiency {}", efficiency);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn conserves_processes_and_honours_the_policy(
        workload in workloads(), policy in policies(), cores in cores(), seed in any::<u64>(),
    ) {
        let costs = CostModel::fallback();
        // SIM_TRACE_CASES=1 prints each case, so one that hangs or exhausts memory names itself.
        if std::env::var_os("SIM_TRACE_CASES").is_some() {
            eprintln!("case: {workload:?} {policy:?} {cores} {seed}");
        }
        let outcome = simulate(workload, &policy, SimConfig::new(cores, seed), &costs);
        check_run(workload, &policy, &outcome, t1(workload, &policy, seed, &costs))?;
    }
}

/// The kernel's workloads at their own sizes, every policy `make sim` runs, at 8 and 128 cores.
#[test]
fn kernel_workloads_under_every_policy() {
    let costs = CostModel::fallback();
    for name in Workload::NAMES {
        let workload = Workload::kernel(name).unwrap();
        for policy in Policy::all() {
            let t1 = t1(workload, &policy, 7, &costs);
            for cores in [8, 128] {
                let outcome = simulate(workload, &policy, SimConfig::new(cores, 7), &costs);
                if let Err(e) = check_run(workload, &policy, &outcome, t1) {
                    panic!("{name} {} {cores} cores: {e}", policy.name);
                }
            }
        }
    }
}

/// The same seed gives the same run; the seed matters.
#[test]
fn a_seed_fixes_the_run() {
    let costs = CostModel::fallback();
    let workload = Workload::kernel("uts").unwrap();
    let policy = Policy::by_name("p2c").unwrap();
    let run = |seed| simulate(workload, &policy, SimConfig::new(16, seed), &costs);
    let (a, b, c) = (run(5), run(5), run(6));
    let works = |o: &Outcome| o.per_core.iter().map(|c| c.work).collect::<Vec<_>>();
    assert_eq!((a.makespan, a.steals(), works(&a)), (b.makespan, b.steals(), works(&b)));
    assert_ne!((a.makespan, works(&a)), (c.makespan, works(&c)));
}

/// The kernel's policy decides: its settings reach every decision the simulation makes.
#[test]
fn the_policy_drives_the_simulation() {
    let costs = CostModel::fallback();
    let workload = Workload::kernel("imbalanced").unwrap();
    let run = |policy: &Policy| simulate(workload, policy, SimConfig::new(8, 3), &costs);
    let default = Policy::default_policy();
    let base = run(&default);
    assert!(base.steals() > 0 && base.migrations_total() > 0);
    // No process may move: nothing is stolen, all the work stays on core 0.
    let pinned = Policy { config: BalanceConfig { max_migrations: 0, ..default.config }, ..default.clone() };
    let o = run(&pinned);
    assert_eq!(o.migrations_total(), 0);
    assert_eq!(o.per_core[0].work, workload.units());
    // A threshold no core reaches: no steals (push rebalancing still moves some).
    let never =
        Policy { config: BalanceConfig { min_steal: 100_000, rebalance: false, ..default.config }, ..default.clone() };
    assert_eq!(run(&never).steals(), 0);
    // steal=half takes more than one process per steal.
    let half = Policy { config: BalanceConfig { amount: StealAmount::Half, ..default.config }, ..default.clone() };
    let o = run(&half);
    let stolen: u64 = o.per_core.iter().map(|c| c.stolen).sum();
    assert!(stolen > o.steals(), "half: {} steals took {stolen}", o.steals());
    // Each strategy makes its own choices.
    let makespans: Vec<u64> = Policy::all().iter().map(|p| run(p).makespan).collect();
    let distinct: std::collections::BTreeSet<u64> = makespans.iter().copied().collect();
    assert!(distinct.len() >= 4, "{makespans:?}");
}

/// QEMU's machine (`SimConfig::shares`): a core that gets more turns does more of the work, in
/// proportion when every core is busy; and a sleeping core's turns go to the cores awake.
#[test]
fn shares_set_each_cores_speed() {
    let costs = CostModel::fallback();
    let policy = Policy::default_policy();
    let workload = Workload::kernel("imbalanced").unwrap();
    let shared = |shares: Vec<f64>| {
        let mut config = SimConfig::new(shares.len(), 3);
        config.shares = Some(shares);
        simulate(workload, &policy, config, &costs)
    };
    let o = shared(vec![0.1, 0.2, 0.3, 0.4]);
    let works: Vec<f64> = o.per_core.iter().map(|c| c.work as f64 / workload.units() as f64).collect();
    for (core, (&work, share)) in works.iter().zip([0.1, 0.2, 0.3, 0.4]).enumerate() {
        assert!(
            (work - share).abs() < 0.03,
            "core {core} did {work:.3} of the work with a share of {share}: {works:?}"
        );
    }
    // Nothing may move, so core 1 has nothing to do and sleeps (searching for a moment after
    // each tick): core 0 gets nearly every turn and runs at nearly full speed, not at half.
    let pinned = Policy { config: BalanceConfig { max_migrations: 0, ..policy.config }, ..policy.clone() };
    let mut config = SimConfig::new(2, 3);
    config.shares = Some(vec![0.5, 0.5]);
    let halves = simulate(workload, &pinned, config, &costs).makespan;
    let equal = simulate(workload, &pinned, SimConfig::new(2, 3), &costs).makespan;
    assert!(halves < equal + equal / 10, "core 0 alone at half speed: {halves} ns against {equal} ns");
}
