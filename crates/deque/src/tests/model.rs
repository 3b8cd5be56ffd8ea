//! Property tests: random sequential operation sequences against a `VecDeque` model.

use std::collections::{BTreeSet, VecDeque};
use std::vec::Vec;

use proptest::prelude::*;

use crate::{Full, Pop, Portable, PushedTo, Steal, WorkQueue, Worker};

#[derive(Clone, Copy, Debug)]
enum Operation {
    Push,
    Pop,
    Steal,
    /// `WorkQueue::take_oldest` (the owner's FIFO take); a `Steal` on the raw deque.
    TakeOldest,
}

fn operations() -> impl Strategy<Value = Vec<Operation>> {
    prop::collection::vec(
        prop_oneof![
            3 => Just(Operation::Push),
            2 => Just(Operation::Pop),
            2 => Just(Operation::Steal),
            1 => Just(Operation::TakeOldest),
        ],
        0..400,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The deque behaves exactly like a bounded double-ended queue: push and pop at the back,
    /// steal at the front, `Full` at capacity. Sequences of up to 400 operations on capacities
    /// 1 to 16 wrap the ring many times.
    #[test]
    fn deque_matches_a_vecdeque_model(capacity_log2 in 0u32..5, script in operations()) {
        let capacity = 1usize << capacity_log2;
        let worker = Worker::<Portable>::new(capacity).expect("capacity");
        let stealer = worker.stealer();
        let mut model = VecDeque::new();
        let mut next_item = 1000u64;
        for (step, operation) in script.into_iter().enumerate() {
            match operation {
                Operation::Push => {
                    let result = worker.push(next_item);
                    if model.len() == capacity {
                        prop_assert_eq!(result, Err(Full(next_item)), "step {}", step);
                    } else {
                        prop_assert_eq!(result, Ok(()), "step {}", step);
                        model.push_back(next_item);
                    }
                    next_item += 1;
                }
                Operation::Pop => {
                    let expected = model.pop_back().map_or(Pop::Empty, Pop::Item);
                    prop_assert_eq!(worker.pop(), expected, "step {}", step);
                }
                Operation::Steal | Operation::TakeOldest => {
                    let expected = model.pop_front().map_or(Steal::Empty, Steal::Success);
                    prop_assert_eq!(stealer.steal(), expected, "step {}", step);
                }
            }
            prop_assert_eq!(worker.len(), model.len());
            prop_assert_eq!(stealer.len(), model.len());
        }
    }

    /// The work queue never refuses, loses or duplicates an item, and never reports empty while
    /// it holds one, whatever the mix of pushes, pops and steals (deque capacities 1 to 8).
    #[test]
    fn work_queue_conserves_items(capacity_log2 in 0u32..4, script in operations()) {
        let capacity = 1usize << capacity_log2;
        let queue = WorkQueue::<Portable>::new(capacity).expect("capacity");
        let thief = queue.stealer();
        // The items inside the queue, by the model.
        let mut inside = BTreeSet::new();
        let mut next_item = 0u64;
        for (step, operation) in script.into_iter().enumerate() {
            let taken = match operation {
                Operation::Push => {
                    // The deque takes it while nothing is spilled and it has room.
                    let expected = if queue.overflow_len() == 0 && inside.len() < capacity {
                        PushedTo::Deque
                    } else {
                        PushedTo::Overflow
                    };
                    prop_assert_eq!(queue.push(next_item), expected, "step {}", step);
                    inside.insert(next_item);
                    next_item += 1;
                    None
                }
                Operation::Pop => match queue.pop() {
                    Pop::Item(item) => Some(item),
                    other => {
                        prop_assert!(inside.is_empty(), "step {}: {:?} while holding items", step, other);
                        None
                    }
                },
                Operation::Steal | Operation::TakeOldest => {
                    let taken = if matches!(operation, Operation::Steal) {
                        thief.steal()
                    } else {
                        queue.take_oldest()
                    };
                    match taken {
                        Steal::Success(item) => Some(item),
                        other => {
                            prop_assert!(inside.is_empty(), "step {}: {:?} while holding items", step, other);
                            None
                        }
                    }
                }
            };
            if let Some(item) = taken {
                prop_assert!(inside.remove(&item), "step {}: {} not inside", step, item);
            }
            prop_assert_eq!(queue.len(), inside.len(), "step {}", step);
        }
    }

    /// Without `pop`, the work queue is strictly FIFO: pushes at the back, `take_oldest` and
    /// `steal` at the front, across spills and refills (deque capacities 1 to 8).
    #[test]
    fn work_queue_without_pop_is_fifo(capacity_log2 in 0u32..4, script in operations()) {
        let capacity = 1usize << capacity_log2;
        let queue = WorkQueue::<Portable>::new(capacity).expect("capacity");
        let thief = queue.stealer();
        let mut model = VecDeque::new();
        let mut next_item = 0u64;
        for (step, operation) in script.into_iter().enumerate() {
            match operation {
                Operation::Push => {
                    let _ = queue.push(next_item);
                    model.push_back(next_item);
                    next_item += 1;
                }
                Operation::Pop | Operation::TakeOldest => {
                    let expected = model.pop_front().map_or(Steal::Empty, Steal::Success);
                    prop_assert_eq!(queue.take_oldest(), expected, "step {}", step);
                }
                Operation::Steal => {
                    let expected = model.pop_front().map_or(Steal::Empty, Steal::Success);
                    prop_assert_eq!(thief.steal(), expected, "step {}", step);
                }
            }
            prop_assert_eq!(queue.len(), model.len(), "step {}", step);
        }
    }
}
