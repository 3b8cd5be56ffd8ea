use crate::*;
use proptest::prelude::{Just, Strategy, prop_assert_eq, prop_oneof, proptest};
use std::collections::BTreeSet;
use std::vec::Vec;

#[test]
fn the_kernel_set_holds_every_core_id() {
    let set = CoreSet::new();
    set.insert(MAX_CORES - 1, Ordering::Relaxed);
    assert_eq!(set.load().iter().collect::<Vec<_>>(), [MAX_CORES - 1]);
}

#[test]
fn ids_across_word_boundaries() {
    let set = AtomicCoreSet::<3>::new();
    assert!(set.is_empty());
    for core in [0, 63, 64, 127, 128, 191] {
        set.insert(core, Ordering::Relaxed);
    }
    assert_eq!(set.load().iter().collect::<Vec<_>>(), [0, 63, 64, 127, 128, 191]);
    assert_eq!(set.load().first_other_than(0), Some(63));
    set.remove(63, Ordering::Relaxed);
    assert_eq!(set.load().first_other_than(0), Some(64));
    assert!(!set.contains(63) && set.contains(64) && !set.contains(500));
    let taken = set.take_all(Ordering::Relaxed);
    assert_eq!(taken.len(), 5);
    assert!(set.is_empty() && set.load() == CoreBits::EMPTY);
}

#[test]
fn only_me_is_no_other() {
    let set = AtomicCoreSet::<2>::new();
    set.insert(70, Ordering::Relaxed);
    assert_eq!(set.load().first_other_than(70), None);
    assert!(!set.is_empty());
}

#[test]
fn masks_are_made_from_lists_ranges_and_words() {
    let mask = CoreMask::of(&[1, 3, 6]);
    assert_eq!(mask.iter().collect::<Vec<_>>(), [1, 3, 6]);
    assert_eq!(mask.len(), 3);
    assert_eq!(mask.first(), Some(1));
    assert_eq!(mask, CoreMask::from_low_word(0b100_1010));
    assert_eq!(mask.intersection(CoreMask::first_cores(4)), CoreMask::of(&[1, 3]));
    assert_eq!(CoreMask::single(5), CoreMask::of(&[5]));
    assert_eq!(CoreMask::first_cores(0), CoreMask::EMPTY);
    assert_eq!(CoreMask::first_cores(MAX_CORES), CoreMask::first_cores(usize::MAX));
    assert_eq!(CoreMask::first_cores(MAX_CORES).len(), MAX_CORES);
    assert_eq!(CoreBits::<2>::first_cores(70).iter().last(), Some(69));
    assert_eq!(CoreBits::<2>::first_cores(64).len(), 64);
    assert_eq!(CoreMask::EMPTY.first(), None);
    let cell = CoreMaskCell::all();
    assert!(cell.contains(0) && cell.contains(MAX_CORES - 1) && !cell.contains(MAX_CORES + 64));
    cell.store(mask);
    assert_eq!(cell.load(), mask);
    assert!(cell.contains(6) && !cell.contains(2));
}

#[test]
#[should_panic]
fn a_mask_id_beyond_the_capacity_panics() {
    let _ = CoreBits::<1>::single(64);
}

#[test]
#[should_panic]
fn an_id_beyond_the_capacity_panics() {
    AtomicCoreSet::<1>::new().insert(64, Ordering::Relaxed);
}

/// Threads adding and removing their own ids at once never lose another thread's id.
#[test]
fn concurrent_inserts_and_removes_keep_every_other_bit() {
    const THREADS: usize = 8;
    let set = AtomicCoreSet::<2>::new();
    // Ids on both words: thread t owns ids t*16 .. t*16 + 16 (0..128).
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let set = &set;
            scope.spawn(move || {
                for round in 0..2_000 {
                    let core = thread * 16 + round % 16;
                    set.insert(core, Ordering::Relaxed);
                    assert!(set.contains(core));
                    if round % 16 != 15 {
                        set.remove(core, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let kept: Vec<usize> = set.load().iter().collect();
    assert_eq!(kept, (0..THREADS).map(|t| t * 16 + 15).collect::<Vec<_>>());
}

#[derive(Clone, Debug)]
enum Op {
    Insert(usize),
    Remove(usize),
    TakeAll,
    FirstOtherThan(usize),
}

fn ops(capacity: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0..capacity).prop_map(Op::Insert),
        3 => (0..capacity).prop_map(Op::Remove),
        1 => Just(Op::TakeAll),
        2 => (0..capacity).prop_map(Op::FirstOtherThan),
    ];
    proptest::collection::vec(op, 0..200)
}

/// Runs `ops` on a set and on a `BTreeSet` model, comparing every answer and the contents
/// after each step.
fn agrees_with_model<const WORDS: usize>(ops: &[Op]) -> Result<(), proptest::test_runner::TestCaseError> {
    let set = AtomicCoreSet::<WORDS>::new();
    let mut model = BTreeSet::new();
    for op in ops {
        match *op {
            Op::Insert(core) => {
                set.insert(core, Ordering::Relaxed);
                model.insert(core);
            }
            Op::Remove(core) => {
                set.remove(core, Ordering::Relaxed);
                model.remove(&core);
            }
            Op::TakeAll => {
                let taken: Vec<usize> = set.take_all(Ordering::Relaxed).iter().collect();
                prop_assert_eq!(taken, model.iter().copied().collect::<Vec<_>>());
                model.clear();
            }
            Op::FirstOtherThan(me) => {
                prop_assert_eq!(set.load().first_other_than(me), model.iter().copied().find(|&c| c != me));
            }
        }
        let bits = set.load();
        prop_assert_eq!(bits.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
        prop_assert_eq!(bits.len(), model.len());
        prop_assert_eq!(set.is_empty(), model.is_empty());
        for core in 0..WORDS * WORD_BITS {
            prop_assert_eq!(set.contains(core), model.contains(&core));
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn one_word_matches_a_model(ops in ops(64)) {
        agrees_with_model::<1>(&ops)?;
    }

    #[test]
    fn kernel_sized_set_matches_a_model(ops in ops(CoreSet::CAPACITY)) {
        agrees_with_model::<CORE_SET_WORDS>(&ops)?;
    }

    #[test]
    fn three_words_match_a_model(ops in ops(192)) {
        agrees_with_model::<3>(&ops)?;
    }
}
