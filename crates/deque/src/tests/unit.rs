//! Single-threaded behaviour of the deque, the work queue and the boxed wrapper.

use std::boxed::Box;
use std::collections::HashSet;
use std::string::ToString;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::vec::Vec;

use crate::{
    BoxWorker, CapacityError, CasFailure, Full, Pop, Portable, PushedTo, Steal, Stealer, WorkQueue, WorkQueueStealer,
    Worker,
};

fn deque(capacity: usize) -> Worker {
    Worker::new(capacity).expect("power-of-two capacity")
}

#[test]
fn capacity_must_be_a_power_of_two() {
    for bad in [0, 3, 6, 100] {
        let error = Worker::<Portable>::new(bad).expect_err("not a power of two");
        assert_eq!(error, CapacityError::NotPowerOfTwo { requested: bad });
        assert_eq!(error.to_string(), std::format!("deque capacity {bad} is not a power of two"));
    }
    for good in [1, 2, 64, 1024] {
        assert_eq!(deque(good).capacity(), good);
    }
    assert!(WorkQueue::<Portable>::new(12).is_err());
}

#[test]
fn pop_is_lifo() {
    let worker = deque(8);
    for item in 1..=5 {
        worker.push(item).expect("room");
    }
    let popped: Vec<u64> = (0..5).map(|_| worker.pop().item().expect("item")).collect();
    assert_eq!(popped, [5, 4, 3, 2, 1]);
    assert_eq!(worker.pop(), Pop::Empty);
}

#[test]
fn steal_is_fifo() {
    let worker = deque(8);
    let stealer = worker.stealer();
    for item in 10..15 {
        worker.push(item).expect("room");
    }
    let stolen: Vec<u64> = (0..5).map(|_| stealer.steal().success().expect("item")).collect();
    assert_eq!(stolen, [10, 11, 12, 13, 14]);
    assert_eq!(stealer.steal(), Steal::Empty);
}

#[test]
fn owner_and_thief_take_from_opposite_ends() {
    let worker = deque(4);
    let stealer = worker.stealer();
    for item in [1, 2, 3] {
        worker.push(item).expect("room");
    }
    assert_eq!(stealer.steal(), Steal::Success(1));
    assert_eq!(worker.pop(), Pop::Item(3));
    assert_eq!(stealer.steal(), Steal::Success(2));
    assert_eq!(worker.pop(), Pop::Empty);
    assert_eq!(stealer.steal(), Steal::Empty);
}

#[test]
fn empty_deque_pops_and_steals_empty_and_stays_usable() {
    let worker = deque(2);
    let stealer = worker.stealer();
    assert!(worker.is_empty() && stealer.is_empty());
    for _ in 0..3 {
        assert_eq!(worker.pop(), Pop::Empty);
        assert_eq!(stealer.steal(), Steal::Empty);
    }
    // The pops on an empty deque must leave `bottom` where it was: the deque still works.
    worker.push(7).expect("room");
    assert_eq!(worker.len(), 1);
    assert_eq!(stealer.steal(), Steal::Success(7));
    worker.push(8).expect("room");
    assert_eq!(worker.pop(), Pop::Item(8));
    assert_eq!(worker.pop(), Pop::Empty);
}

#[test]
fn full_deque_hands_the_item_back() {
    let worker = deque(4);
    let stealer = worker.stealer();
    for item in 0..4 {
        worker.push(item).expect("room");
    }
    assert_eq!(worker.push(99), Err(Full(99)));
    assert_eq!(Full(99u64).to_string(), "deque is full; the item was handed back");
    // Nothing was overwritten: all four come back, and the refused item is not among them.
    assert_eq!(stealer.steal(), Steal::Success(0));
    worker.push(4).expect("a steal made room");
    assert_eq!(worker.push(100).map_err(Full::into_item), Err(100));
    let rest: Vec<u64> = (0..4).map(|_| worker.pop().item().expect("item")).collect();
    assert_eq!(rest, [4, 3, 2, 1]);
}

/// `push` trusts its cached limit (`top + capacity` as last read) until the deque looks full,
/// then re-reads `top`. Each way the cache can go stale must still give the right answer: the
/// thieves emptied a full deque (one re-read frees the whole ring, and the pushes after it use
/// the cache), the deque is really full (the re-read confirms it), and the owner took the last
/// item by its own CAS (which refreshes the cache).
#[test]
fn push_refreshes_its_cached_limit_only_when_the_deque_looks_full() {
    let worker = deque(4);
    let stealer = worker.stealer();
    for item in 0..4 {
        worker.push(item).expect("room");
    }
    assert_eq!(worker.push(90), Err(Full(90)), "a re-read confirms the deque is full");
    for item in 0..4 {
        assert_eq!(stealer.steal(), Steal::Success(item));
    }
    // The cache still says full; the first push re-reads `top` and gets four free slots.
    for item in 4..8 {
        worker.push(item).expect("the thieves emptied the ring");
    }
    assert_eq!(worker.push(91), Err(Full(91)));
    // The owner pops down to the last item, which it takes by CAS, refreshing the cache.
    for item in (4..8).rev() {
        assert_eq!(worker.pop(), Pop::Item(item));
    }
    assert_eq!(worker.pop(), Pop::Empty);
    for item in 8..12 {
        worker.push(item).expect("room");
    }
    assert_eq!(worker.push(92), Err(Full(92)));
    let rest: Vec<u64> = (0..4).map(|_| stealer.steal().success().expect("item")).collect();
    assert_eq!(rest, [8, 9, 10, 11], "nothing overwritten across the refreshes");
}

#[test]
fn capacity_one_deque_holds_one_item() {
    let worker = deque(1);
    let stealer = worker.stealer();
    worker.push(1).expect("room");
    assert_eq!(worker.push(2), Err(Full(2)));
    assert_eq!(stealer.steal(), Steal::Success(1));
    worker.push(3).expect("room");
    assert_eq!(worker.pop(), Pop::Item(3));
}

#[test]
fn wraparound_keeps_items_and_order_over_many_cycles() {
    // Capacity 4 and 100,000 cycles: the indices run 50,000 times around the ring (2,000
    // cycles under Miri, which interprets every access).
    let cycles: u64 = if cfg!(miri) { 2_000 } else { 100_000 };
    let worker = deque(4);
    let stealer = worker.stealer();
    let mut next = 0u64;
    let mut expected_oldest = 0u64;
    for cycle in 0..cycles {
        worker.push(next).expect("room");
        worker.push(next + 1).expect("room");
        next += 2;
        assert_eq!(worker.pop(), Pop::Item(next - 1), "cycle {cycle}: LIFO end");
        // One item stays behind each cycle until the thief catches up.
        if cycle % 2 == 1 {
            assert_eq!(stealer.steal(), Steal::Success(expected_oldest), "cycle {cycle}");
            assert_eq!(stealer.steal(), Steal::Success(next - 2), "cycle {cycle}");
            expected_oldest = next;
            assert!(worker.is_empty());
        } else {
            expected_oldest = next - 2;
            assert_eq!(worker.len(), 1);
        }
    }
}

#[test]
fn len_follows_pushes_pops_and_steals() {
    let worker = deque(8);
    let stealer = worker.stealer();
    for item in 0..6 {
        worker.push(item).expect("room");
        assert_eq!(worker.len(), item as usize + 1);
    }
    let _ = worker.pop();
    let _ = stealer.steal();
    assert_eq!(worker.len(), 4);
    assert_eq!(stealer.len(), 4);
    assert_eq!(std::format!("{stealer:?}"), "Stealer { capacity: 8, len: 4 }");
}

#[test]
fn stealer_clones_share_one_deque() {
    let worker = deque(8);
    let first: Stealer = worker.stealer();
    let second = first.clone();
    worker.push(1).expect("room");
    worker.push(2).expect("room");
    assert_eq!(second.steal(), Steal::Success(1));
    assert_eq!(first.steal(), Steal::Success(2));
    assert_eq!(first.steal(), Steal::Empty);
}

#[test]
fn result_helpers_keep_the_cause() {
    assert_eq!(Steal::Success(3).map(|item| item * 2), Steal::Success(6));
    assert_eq!(Steal::<u64>::Retry.map(|item| item * 2), Steal::Retry);
    assert!(Steal::<u64>::Retry.is_retry());
    assert!(!Steal::<u64>::Empty.is_retry() && !Steal::Success(1).is_retry(), "only a lost race is worth a retry");
    assert_eq!(Steal::<u64>::Empty.success(), None);
    assert_eq!(Pop::Item(3).map(|item| item + 1), Pop::Item(4));
    assert_eq!(Pop::<u64>::LostRace.map(|item| item + 1), Pop::LostRace);
    assert_eq!(Pop::<u64>::Retry.item(), None);
    assert_eq!(CasFailure::ValueChanged { observed: 5 }.to_string(), "top changed under the CAS (now 5)");
}

/// `Worker` must be `Send` (handed to its core) and not `Sync` (one owner); `Stealer` both.
#[test]
fn handles_carry_ownership_in_their_types() {
    fn assert_send<T: Send>() {}
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send::<Worker>();
    assert_send_sync::<Stealer>();
    assert_send::<WorkQueue>();
    assert_send_sync::<WorkQueueStealer>();
    assert_send::<BoxWorker<u8>>();
    assert_send_sync::<crate::BoxStealer<std::cell::Cell<u8>>>();

    // Compile-time "not Sync": the call below is ambiguous (and fails to build) if `Worker`
    // implements `Sync`, because then both impls apply.
    trait AmbiguousIfSync<Marker> {
        fn check() {}
    }
    impl<T: ?Sized> AmbiguousIfSync<()> for T {}
    struct IsSync;
    impl<T: ?Sized + Sync> AmbiguousIfSync<IsSync> for T {}
    <Worker as AmbiguousIfSync<_>>::check();
    <WorkQueue as AmbiguousIfSync<_>>::check();
}

#[test]
fn work_queue_spills_past_capacity_and_returns_everything_once() {
    let queue = WorkQueue::<Portable>::new(8).expect("capacity");
    assert_eq!(queue.deque_capacity(), 8);
    let total = 1_000u64;
    let mut spilled = 0;
    for item in 0..total {
        if queue.push(item) == PushedTo::Overflow {
            spilled += 1;
        }
    }
    assert_eq!(spilled, total - 8, "everything past the deque's 8 slots spills");
    assert_eq!(queue.len(), total as usize);
    assert!(!queue.is_empty());
    assert_eq!(queue.overflow_len(), (total - 8) as usize);

    let mut seen = HashSet::new();
    while let Pop::Item(item) = queue.pop() {
        assert!(seen.insert(item), "item {item} came back twice");
    }
    assert_eq!(seen.len(), total as usize, "every item came back");
    assert!(queue.is_empty());
    assert_eq!(queue.pop(), Pop::Empty);
}

#[test]
fn work_queue_keeps_spill_order_and_refills_the_deque() {
    let queue = WorkQueue::<Portable>::new(4).expect("capacity");
    let thief = queue.stealer();
    for item in 0..10 {
        let _ = queue.push(item);
    }
    // Deque holds 0..4, overflow 4..10. The owner pops the deque newest-first...
    let first: Vec<u64> = (0..4).map(|_| queue.pop().item().expect("item")).collect();
    assert_eq!(first, [3, 2, 1, 0]);
    // ...then the deque is refilled with the oldest spilled items, 4..8, popped newest-first.
    assert_eq!(queue.pop(), Pop::Item(7));
    assert_eq!(queue.overflow_len(), 2, "8 and 9 still spilled");
    // A push while items are spilled queues behind them, not in the deque.
    assert_eq!(queue.push(100), PushedTo::Overflow);
    // Refilled items are stealable lock-free, oldest first.
    assert_eq!(thief.steal(), Steal::Success(4));
    let rest: Vec<u64> = std::iter::from_fn(|| queue.pop().item()).collect();
    assert_eq!(rest, [6, 5, 100, 9, 8]);
    // Once the overflow is empty, pushes go back to the deque.
    assert_eq!(queue.push(200), PushedTo::Deque);
}

#[test]
fn work_queue_take_oldest_is_fifo_across_spill_and_refill() {
    let queue = WorkQueue::<Portable>::new(2).expect("capacity");
    let thief = queue.stealer();
    for item in 0..7 {
        let _ = queue.push(item);
    }
    // Deque 0..2, overflow 2..7: the owner takes 0 and 1 from the deque's top, then the deque
    // is refilled with 2 and 3, and so on; a thief in between takes the next oldest.
    assert_eq!(queue.take_oldest(), Steal::Success(0));
    assert_eq!(queue.take_oldest(), Steal::Success(1));
    assert_eq!(queue.take_oldest(), Steal::Success(2));
    assert_eq!(queue.overflow_len(), 3, "2 and 3 were moved back into the deque");
    assert_eq!(thief.steal(), Steal::Success(3));
    let rest: Vec<u64> = std::iter::from_fn(|| queue.take_oldest().success()).collect();
    assert_eq!(rest, [4, 5, 6]);
    assert_eq!(queue.take_oldest(), Steal::Empty);
}

#[test]
fn work_queue_try_push_and_take_in_deque_stay_out_of_the_overflow() {
    let queue = WorkQueue::<Portable>::new(2).expect("capacity");
    assert_eq!(queue.try_push(0), Ok(()));
    assert_eq!(queue.try_push(1), Ok(()));
    // Full: handed back, nothing queued (the plain push would spill it).
    assert_eq!(queue.try_push(2), Err(2));
    assert_eq!((queue.len(), queue.overflow_len()), (2, 0));
    assert_eq!(queue.push(2), PushedTo::Overflow);
    assert_eq!(queue.take_oldest_in_deque(), Steal::Success(0));
    // Room in the deque again, but an item is spilled: a push there would jump ahead of it.
    assert_eq!(queue.try_push(3), Err(3));
    assert_eq!(queue.take_oldest_in_deque(), Steal::Success(1));
    // The deque is empty with an item spilled: only `take_oldest` refills.
    assert_eq!(queue.take_oldest_in_deque(), Steal::Empty);
    assert_eq!(queue.take_oldest(), Steal::Success(2));
    assert_eq!(queue.try_push(3), Ok(()));
    assert_eq!(queue.take_oldest_in_deque(), Steal::Success(3));
    assert_eq!(queue.take_oldest(), Steal::Empty);
}

#[test]
fn work_queue_thieves_steal_from_the_overflow_when_the_deque_is_empty() {
    let queue = WorkQueue::<Portable>::new(2).expect("capacity");
    let thief = queue.stealer();
    let other_thief = thief.clone();
    for item in 0..5 {
        let _ = queue.push(item);
    }
    // What the balancer reads as a victim's stealable count: deque and overflow together.
    assert_eq!((thief.len(), queue.overflow_len()), (5, 3));
    assert!(!thief.is_empty());
    let stolen: Vec<u64> = (0..5)
        .map(|turn| {
            let thief = if turn % 2 == 0 { &thief } else { &other_thief };
            thief.steal().success().expect("item")
        })
        .collect();
    assert_eq!(stolen, [0, 1, 2, 3, 4], "deque first, then the overflow, oldest first");
    assert_eq!(thief.steal(), Steal::Empty);
    assert!(thief.is_empty());
    assert_eq!(queue.pop(), Pop::Empty);
}

#[test]
fn boxed_items_round_trip_and_full_hands_the_box_back() {
    let worker = BoxWorker::<&'static str>::new(2).expect("capacity");
    let stealer = worker.stealer();
    worker.push(Box::new("first")).expect("room");
    worker.push(Box::new("second")).expect("room");
    let refused = worker.push(Box::new("third")).expect_err("full");
    assert_eq!(*refused.into_item(), "third");
    assert_eq!(stealer.steal().map(|item| *item), Steal::Success("first"));
    assert_eq!(worker.pop().map(|item| *item), Pop::Item("second"));
    assert_eq!(worker.pop().map(|item| *item), Pop::Empty);
    assert!(worker.is_empty());
}

/// The boxed face reports the raw deque's size: the scheduler reads a victim's `len` to judge
/// whether it is worth stealing from.
#[test]
fn boxed_len_and_capacity_follow_pushes_and_takes() {
    let worker = BoxWorker::<u32>::new(4).expect("capacity");
    let stealer = worker.stealer();
    assert_eq!(worker.capacity(), 4);
    assert!(worker.is_empty() && stealer.is_empty());
    for i in 0..3 {
        worker.push(Box::new(i)).expect("room");
    }
    assert_eq!((worker.len(), stealer.len()), (3, 3));
    assert!(!worker.is_empty() && !stealer.is_empty());
    assert_eq!(stealer.steal().map(|item| *item), Steal::Success(0));
    assert_eq!(worker.pop().map(|item| *item), Pop::Item(2));
    assert_eq!((worker.len(), stealer.len()), (1, 1));
}

/// Counts its drops, to show the boxed deque neither leaks nor drops twice.
#[derive(Debug)]
struct DropCounter(Arc<AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn dropping_a_box_worker_drops_every_item_left_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let worker = BoxWorker::<DropCounter>::new(8).expect("capacity");
    let stealer = worker.stealer();
    for _ in 0..6 {
        worker.push(Box::new(DropCounter(Arc::clone(&drops)))).expect("room");
    }
    drop(stealer.steal().success().expect("item"));
    drop(worker.pop().item().expect("item"));
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    drop(worker);
    assert_eq!(drops.load(Ordering::Relaxed), 6, "the four left were dropped with the worker");
    // The stealer outlives the worker and finds nothing.
    assert!(stealer.steal().success().is_none());
    assert_eq!(drops.load(Ordering::Relaxed), 6);
}
