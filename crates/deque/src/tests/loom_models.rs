//! Loom model checks: every interleaving (and every stale read loom permits) of small scenarios.
//!
//! Each model asserts the deque's contract on every execution: no item is taken twice, none is
//! lost (whatever is not taken concurrently is still there afterwards), and thieves never see
//! an item that was not pushed. Run with
//! `RUSTFLAGS="--cfg loom" cargo test --release` in crates/deque/.

use core::cell::Cell;
use std::println;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::vec::Vec;

use loom::thread;

use crate::{CasFailure, DequeAtomics, Pop, Portable, Steal, Stealer, WorkQueue, Worker};

/// Runs `model` under loom with at most `preemption_bound` preemptions per execution (`None`:
/// exhaustive; the `LOOM_MAX_PREEMPTIONS` environment variable overrides either), and prints
/// how many executions were explored.
fn check(name: &str, preemption_bound: Option<usize>, model: impl Fn() + Sync + Send + 'static) {
    check_counting(name, preemption_bound, move || {
        model();
        Injected::default()
    });
}

/// What store-exclusive fault injection did in one execution of a model.
#[derive(Clone, Copy, Debug, Default)]
struct Injected {
    /// Compare-and-swaps failed on purpose with [`CasFailure::StoreExclusiveFailed`].
    failures: usize,
    /// `Pop::Retry` results the owner saw (its CAS on the last item failed that way).
    pop_retries: usize,
}

/// As [`check`], for a model built on [`Flaky`]: sums what injection did over all executions,
/// prints it, and asserts that failures were injected and that the owner saw `Pop::Retry` in
/// some execution (a model whose plan never reaches a CAS would otherwise pass vacuously).
fn check_injected(name: &str, preemption_bound: Option<usize>, model: impl Fn() -> Injected + Sync + Send + 'static) {
    let totals = check_counting(name, preemption_bound, model);
    println!(
        "loom: {name}: {} store-exclusive failures injected, {} Pop::Retry seen (summed over executions)",
        totals.failures, totals.pop_retries
    );
    assert!(totals.failures > 0, "{name}: no store-exclusive failure was injected");
    assert!(totals.pop_retries > 0, "{name}: the owner never saw Pop::Retry");
}

fn check_counting(
    name: &str,
    preemption_bound: Option<usize>,
    model: impl Fn() -> Injected + Sync + Send + 'static,
) -> Injected {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = preemption_bound;
    }
    // One counter per check (not a shared static): the test harness runs models on several
    // threads at once, and a shared counter would add the others' executions to this count.
    let executions = Arc::new(AtomicUsize::new(0));
    /// Prints the count when the check ends, also when it ends by a failing execution's panic.
    struct Report<'a> {
        name: &'a str,
        bound: Option<usize>,
        executions: Arc<AtomicUsize>,
    }
    impl Drop for Report<'_> {
        fn drop(&mut self) {
            let explored = self.executions.load(Ordering::Relaxed);
            let outcome = if std::thread::panicking() { "FAILED after" } else { "passed," };
            println!(
                "loom: {}: {outcome} {explored} executions explored (preemption bound {:?})",
                self.name, self.bound
            );
        }
    }
    let _report = Report { name, bound: builder.preemption_bound, executions: Arc::clone(&executions) };
    let failures = Arc::new(AtomicUsize::new(0));
    let pop_retries = Arc::new(AtomicUsize::new(0));
    let (failures_seen, pop_retries_seen) = (Arc::clone(&failures), Arc::clone(&pop_retries));
    builder.check(move || {
        executions.fetch_add(1, Ordering::Relaxed);
        let injected = model();
        failures_seen.fetch_add(injected.failures, Ordering::Relaxed);
        pop_retries_seen.fetch_add(injected.pop_retries, Ordering::Relaxed);
    });
    Injected { failures: failures.load(Ordering::Relaxed), pop_retries: pop_retries.load(Ordering::Relaxed) }
}

loom::thread_local! {
    /// This model thread's injection plan for [`Flaky`]: bit `i` set means its `i`-th
    /// compare-and-swap on `top` whose value still matches fails with `StoreExclusiveFailed`.
    /// Loom keeps thread-locals per execution, so every execution starts from the plan its
    /// threads set.
    static PLAN: Cell<u32> = Cell::new(0);
    /// This thread's compare-and-swaps so far, and how many of them injection failed.
    static CALLS: Cell<u32> = Cell::new(0);
    static FAILED: Cell<usize> = Cell::new(0);
}

/// Sets the calling model thread's injection plan (see [`PLAN`]).
fn plan_failures(mask: u32) {
    PLAN.with(|plan| plan.set(mask));
}

/// Store-exclusive failures injected on the calling model thread so far.
fn injected_here() -> usize {
    FAILED.with(Cell::get)
}

/// [`Portable`] whose compare-and-swap on `top` can fail like a lost reservation of an
/// LDXR/STXR implementation (`Aarch64Asm` after its attempts): at the points the thread's plan
/// names, when `top` still holds `expected`, nothing is written and
/// [`CasFailure::StoreExclusiveFailed`] is reported, as the trait contract allows. Everything
/// else is `Portable`'s, so loom checks the same orderings.
#[derive(Debug)]
enum Flaky {}

impl DequeAtomics for Flaky {
    type Index = <Portable as DequeAtomics>::Index;

    fn new_index(initial: u64) -> Self::Index {
        Portable::new_index(initial)
    }

    fn load_relaxed(index: &Self::Index) -> u64 {
        Portable::load_relaxed(index)
    }

    fn load_acquire(index: &Self::Index) -> u64 {
        Portable::load_acquire(index)
    }

    fn store_relaxed(index: &Self::Index, value: u64) {
        Portable::store_relaxed(index, value);
    }

    fn fence_release() {
        Portable::fence_release();
    }

    fn fence_full() {
        Portable::fence_full();
    }

    fn compare_exchange_top(top: &Self::Index, expected: u64, new: u64) -> Result<(), CasFailure> {
        let call = CALLS.with(|calls| {
            let call = calls.get();
            calls.set(call + 1);
            call
        });
        if call < 32 && PLAN.with(Cell::get) & (1 << call) != 0 {
            // The load-exclusive half: reads `top` (Relaxed: a failed CAS needs no ordering, and
            // LDAXR's acquire would only add ordering). Coherence keeps it at or after the value
            // this thread last read, so it is `expected` or newer. Only a matching value can
            // lose its store this way; a changed one fails as the real CAS would.
            let observed = Portable::load_relaxed(top);
            if observed != expected {
                return Err(CasFailure::ValueChanged { observed });
            }
            FAILED.with(|failed| failed.set(failed.get() + 1));
            return Err(CasFailure::StoreExclusiveFailed);
        }
        Portable::compare_exchange_top(top, expected, new)
    }
}

/// Asserts that `taken` plus `left` is exactly `pushed`, each once.
fn assert_exactly_once(pushed: &[u64], mut taken: Vec<u64>, left: Vec<u64>) {
    taken.extend(left);
    taken.sort_unstable();
    let mut expected = pushed.to_vec();
    expected.sort_unstable();
    assert_eq!(taken, expected, "every item taken or left exactly once");
}

/// Steals once, retrying a lost race a bounded number of times (each retry can succeed).
fn steal_once<A: DequeAtomics>(stealer: &Stealer<A>, attempts: u32) -> Option<u64> {
    for _ in 0..attempts {
        match stealer.steal() {
            Steal::Success(item) => return Some(item),
            Steal::Empty => return None,
            Steal::Retry => {}
        }
    }
    None
}

/// Pops once, popping again after `Pop::Retry` (the item is still there) up to `attempts` times
/// in all; counts the retries. Returns the last outcome.
fn pop_retrying<A: DequeAtomics>(worker: &Worker<A>, attempts: u32, pop_retries: &mut usize) -> Pop {
    let mut outcome = worker.pop();
    for _ in 1..attempts {
        if outcome != Pop::Retry {
            break;
        }
        *pop_retries += 1;
        outcome = worker.pop();
    }
    if outcome == Pop::Retry {
        *pop_retries += 1;
    }
    outcome
}

/// Drains what is left after all threads joined (single-threaded again). `Pop::Retry` leaves the
/// item in place, so it pops again (injection plans are finite: a retry ends).
fn drain<A: DequeAtomics>(worker: &Worker<A>) -> Vec<u64> {
    let mut left = Vec::new();
    loop {
        match worker.pop() {
            Pop::Item(item) => left.push(item),
            Pop::Retry => {}
            Pop::Empty | Pop::LostRace => return left,
        }
    }
}

/// The owner pops both of two items while two thieves each steal once: covers the owner/thief
/// race for the last item (pop's CAS against steal's CAS), the two-thief race on one index, and
/// the fence pairing between `pop` and `steal` (thief A takes index 0 and thief B reads A's
/// `top` while the owner pops index 1). `plans` are the owner's and the thieves' injection
/// plans (only [`Flaky`] reads them); a `Pop::Retry` is popped again, a `Steal::Retry` stolen
/// again, up to `attempts` times.
fn owner_pops_while_two_thieves_steal<A: DequeAtomics>(plans: [u32; 3], attempts: u32) -> Injected {
    let worker = Worker::<A>::new(2).expect("capacity");
    worker.push(1).expect("room");
    worker.push(2).expect("room");
    let thieves: Vec<_> = plans[1..]
        .iter()
        .map(|&plan| {
            let stealer = worker.stealer();
            thread::spawn(move || {
                plan_failures(plan);
                (steal_once(&stealer, attempts), injected_here())
            })
        })
        .collect();
    plan_failures(plans[0]);
    let mut taken = Vec::new();
    let mut lost_races = 0;
    let mut pop_retries = 0;
    for _ in 0..2 {
        match pop_retrying(&worker, attempts, &mut pop_retries) {
            Pop::Item(item) => taken.push(item),
            Pop::LostRace => lost_races += 1,
            // Still there after `attempts` pops: `drain` below takes it.
            Pop::Empty | Pop::Retry => {}
        }
    }
    assert!(lost_races <= 1, "the last item is lost at most once");
    let mut failures = injected_here();
    for thief in thieves {
        let (stolen, injected) = thief.join().expect("thief");
        taken.extend(stolen);
        failures += injected;
    }
    assert_exactly_once(&[1, 2], taken, drain(&worker));
    Injected { failures, pop_retries }
}

#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_owner_pops_while_two_thieves_steal_the_last_items() {
    check("owner pops while two thieves steal", Some(6), || {
        let injected = owner_pops_while_two_thieves_steal::<Portable>([0; 3], 1);
        assert_eq!(injected.pop_retries, 0, "Portable's CAS never fails spuriously");
    });
}

/// The same race with store-exclusive failures injected: the owner's first CAS (on the last
/// item) and each thief's first CAS fail with `StoreExclusiveFailed`; the owner pops again and
/// the thieves steal again. The item must stay in the deque through the failure: taken exactly
/// once, by a retry, a thief, or the final drain.
#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_owner_and_thieves_retry_after_store_exclusive_failures() {
    check_injected("owner pops while two thieves steal, injected failures", Some(4), || {
        owner_pops_while_two_thieves_steal::<Flaky>([0b1, 0b1, 0b1], 2)
    });
}

/// Only the owner's CAS fails (thieves never do): the owner retries its last-item CAS against
/// thieves that succeed, with a larger preemption bound than the all-fail plan.
#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_owner_retries_the_last_item_after_a_store_exclusive_failure() {
    check_injected("owner's last-item CAS fails once", Some(4), || {
        owner_pops_while_two_thieves_steal::<Flaky>([0b1, 0, 0], 2)
    });
}

/// Wraparound under one thief, explored exhaustively: on a capacity-2 deque the owner pushes
/// three items (popping when full), so index 2 reuses slot 0 while the thief, stealing twice,
/// may still be reading it for index 0.
#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_wraparound_reuses_slots_under_a_thief() {
    check("wraparound under a thief", None, || {
        let worker = Worker::<Portable>::new(2).expect("capacity");
        let stealer = worker.stealer();
        let thief = thread::spawn(move || {
            let mut stolen = Vec::new();
            for _ in 0..2 {
                if let Some(item) = steal_once(&stealer, 2) {
                    stolen.push(item);
                }
            }
            stolen
        });
        let pushed = [10, 11, 12];
        let mut taken = Vec::new();
        for item in pushed {
            while worker.push(item).is_err() {
                if let Pop::Item(popped) = worker.pop() {
                    taken.push(popped);
                }
            }
        }
        taken.extend(thief.join().expect("thief"));
        assert_exactly_once(&pushed, taken, drain(&worker));
    });
}

/// Wraparound under two thieves: on a capacity-2 deque the owner pushes four items (popping
/// when full), so indices 2 and 3 reuse the slots of indices 0 and 1 while a thief may still be
/// reading them. A thief must never return the new item in place of the old one, and no item
/// may be taken twice or lost.
#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_wraparound_reuses_slots_under_two_thieves() {
    check("wraparound under two thieves", Some(3), || {
        let worker = Worker::<Portable>::new(2).expect("capacity");
        let thieves: Vec<_> = (0..2)
            .map(|_| {
                let stealer = worker.stealer();
                thread::spawn(move || steal_once(&stealer, 2))
            })
            .collect();
        let pushed = [10, 11, 12, 13];
        let mut taken = Vec::new();
        for item in pushed {
            while worker.push(item).is_err() {
                if let Pop::Item(popped) = worker.pop() {
                    taken.push(popped);
                }
            }
        }
        taken.extend(thieves.into_iter().filter_map(|thief| thief.join().expect("thief")));
        assert_exactly_once(&pushed, taken, drain(&worker));
    });
}

/// The owner's cached push limit under a thief. A capacity-2 deque starts full (10, 11: the
/// first push read `top` = 0, limit 2); the thief steals twice while the owner pushes 12 and 13
/// (popping when full) and then pops once more. Depending on the interleaving:
///
/// - the thief has taken both items before the push of 12: that push finds the cache saying
///   full, re-reads `top` = 2 and caches limit 4, and the push of 13 reuses slot 1 (item 11's)
///   *without reading `top`*, relying on the acquire of the earlier re-read;
/// - the re-read still finds the deque full: the owner pops (the newest item, or the last one by
///   CAS, racing the thief) and retries;
/// - the last pop takes the last item by its CAS, which sets the limit itself.
///
/// After the thief is joined the owner pushes until the deque refuses, on whatever limit it
/// cached: exactly `capacity - len` pushes must be accepted (a limit too high would overwrite
/// an item, too low would refuse with room left). In every execution each item is taken or
/// left exactly once.
#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_cached_push_limit_wraparound_under_a_thief() {
    check("cached push limit, wraparound under a thief", None, || {
        cached_push_limit_under_a_thief::<Portable>([0, 0]);
    });
}

/// The cached push limit with the owner's first two CASes failing (`Pop::Retry`: the limit must
/// not be raised, since `top` did not move) and the thief's first: the pushes after the thief
/// left must still be accepted exactly up to the room there is.
#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_cached_push_limit_after_store_exclusive_failures() {
    check_injected("cached push limit, injected failures", Some(3), || {
        cached_push_limit_under_a_thief::<Flaky>([0b11, 0b1])
    });
}

fn cached_push_limit_under_a_thief<A: DequeAtomics>(plans: [u32; 2]) -> Injected {
    let worker = Worker::<A>::new(2).expect("capacity");
    worker.push(10).expect("room");
    worker.push(11).expect("room");
    let stealer = worker.stealer();
    let thief_plan = plans[1];
    let thief = thread::spawn(move || {
        plan_failures(thief_plan);
        let mut stolen = Vec::new();
        for _ in 0..2 {
            if let Some(item) = steal_once(&stealer, 2) {
                stolen.push(item);
            }
        }
        (stolen, injected_here())
    });
    plan_failures(plans[0]);
    let mut pop_retries = 0;
    let mut taken = Vec::new();
    for item in [12, 13] {
        while worker.push(item).is_err() {
            match worker.pop() {
                Pop::Item(popped) => taken.push(popped),
                Pop::Retry => pop_retries += 1,
                Pop::Empty | Pop::LostRace => {}
            }
        }
    }
    match worker.pop() {
        Pop::Item(popped) => taken.push(popped),
        Pop::Retry => pop_retries += 1,
        Pop::Empty | Pop::LostRace => {}
    }
    let (stolen, thief_failures) = thief.join().expect("thief");
    taken.extend(stolen);
    // Alone again: the deque must take exactly as many items as it has room for.
    let mut pushed = std::vec![10, 11, 12, 13];
    let room = worker.capacity() - worker.len();
    for item in 14..17 {
        if worker.push(item).is_ok() {
            pushed.push(item);
        }
    }
    assert_eq!(pushed.len(), 4 + room, "pushes accepted after the thief left");
    let failures = injected_here() + thief_failures;
    assert_exactly_once(&pushed, taken, drain(&worker));
    Injected { failures, pop_retries }
}

/// The work queue with a capacity-1 deque: the second and third pushes spill; a thief steals
/// (from the deque, or from the overflow when the deque is empty) while the owner pops and
/// takes the oldest, refilling the deque from the overflow. Nothing is lost or duplicated.
#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_work_queue_spill_refill_and_steal() {
    check("work queue spill, refill and steal", None, || {
        work_queue_spill_refill_and_steal::<Portable>([0, 0]);
    });
}

/// The work queue with store-exclusive failures injected, one exhaustive check per plan: the
/// owner's first CAS (its `pop` of the last item), its second (`take_oldest`, or a retried
/// pop), the thief's first, and the owner's and thief's together. `Pop::Retry` / `Steal::Retry`
/// leave the item queued, and nothing is lost or duplicated.
#[test]
#[cfg_attr(deque_omit_pop_barrier, ignore = "pop barrier omitted; see docs/deque.md")]
fn loom_work_queue_after_store_exclusive_failures() {
    for plans in [[0b1, 0], [0b10, 0], [0, 0b1], [0b11, 0b1]] {
        let name = std::format!("work queue, injected failures, plans {plans:?}");
        let check_plans = move || work_queue_spill_refill_and_steal::<Flaky>(plans);
        if plans[0] == 0 {
            // Only the thief fails: the owner sees no Pop::Retry, so count failures alone.
            let totals = check_counting(&name, None, check_plans);
            println!("loom: {name}: {} store-exclusive failures injected", totals.failures);
            assert!(totals.failures > 0, "{name}: no store-exclusive failure was injected");
        } else {
            check_injected(&name, None, check_plans);
        }
    }
}

fn work_queue_spill_refill_and_steal<A: DequeAtomics>(plans: [u32; 2]) -> Injected {
    let queue = WorkQueue::<A>::new(1).expect("capacity");
    let stealer = queue.stealer();
    let pushed = [1, 2, 3];
    for item in pushed {
        let _ = queue.push(item);
    }
    let thief_plan = plans[1];
    let thief = thread::spawn(move || {
        plan_failures(thief_plan);
        let mut stolen = Vec::new();
        for _ in 0..2 {
            if let Steal::Success(item) = stealer.steal() {
                stolen.push(item);
            }
        }
        (stolen, injected_here())
    });
    plan_failures(plans[0]);
    // The owner takes from both ends: LIFO `pop`, then FIFO `take_oldest` (each refills the
    // deque from the overflow when it finds the deque empty). A Retry leaves the item queued.
    let mut pop_retries = 0;
    let mut taken = Vec::new();
    match queue.pop() {
        Pop::Item(item) => taken.push(item),
        Pop::Retry => pop_retries += 1,
        Pop::Empty | Pop::LostRace => {}
    }
    taken.extend(queue.take_oldest().success());
    let (stolen, thief_failures) = thief.join().expect("thief");
    taken.extend(stolen);
    let mut left = Vec::new();
    loop {
        match queue.pop() {
            Pop::Item(item) => left.push(item),
            Pop::Retry => {}
            Pop::Empty | Pop::LostRace => break,
        }
    }
    assert_exactly_once(&pushed, taken, left);
    Injected { failures: injected_here() + thief_failures, pop_retries }
}

/// With `cfg(deque_omit_pop_barrier)` the owner's store of `bottom` and load of `top` in `pop`
/// may be reordered. Loom finds an execution where an item is taken twice (thief A steals
/// index 0, the owner reads the old `top` and pops index 1 without a CAS, thief B reads A's
/// `top` and the old `bottom` and steals index 1 too), and the model's assertion panics.
#[cfg(deque_omit_pop_barrier)]
#[test]
#[should_panic(expected = "every item taken or left exactly once")]
fn loom_finds_the_double_take_without_the_pop_barrier() {
    check("pop barrier omitted", Some(3), || {
        let worker = Worker::<Portable>::new(2).expect("capacity");
        worker.push(1).expect("room");
        worker.push(2).expect("room");
        let thieves: Vec<_> = (0..2)
            .map(|_| {
                let stealer = worker.stealer();
                thread::spawn(move || steal_once(&stealer, 1))
            })
            .collect();
        let mut taken: Vec<u64> = worker.pop().item().into_iter().collect();
        taken.extend(thieves.into_iter().filter_map(|thief| thief.join().expect("thief")));
        assert_exactly_once(&[1, 2], taken, drain(&worker));
    });
}
