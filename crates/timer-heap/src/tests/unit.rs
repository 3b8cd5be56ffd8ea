//! Unit tests: one promise each.

use std::rc::Rc;
use std::vec::Vec;

use super::Xorshift;
use crate::{Handle, STALE_FLOOR, TimerHeap};

/// Pops everything due by `now` as (deadline, value).
fn pop_all<T>(timers: &mut TimerHeap<T>, now: u64) -> Vec<(u64, T)> {
    core::iter::from_fn(|| timers.pop_expired(now).map(|(_, deadline, value)| (deadline, value))).collect()
}

#[test]
fn empty_table() {
    let mut timers = TimerHeap::<u32>::default();
    assert!(timers.is_empty());
    assert_eq!(timers.len(), 0);
    assert_eq!(timers.earliest(), None);
    assert!(timers.pop_expired(u64::MAX).is_none());
    assert_eq!(timers.cancel(Handle::from_parts(0, 0)), None);
    assert_eq!(timers.deadline(Handle::from_parts(0, 0)), None);
    assert!(timers.drain_all().is_empty());
}

#[test]
fn distinct_deadlines_fire_in_deadline_order() {
    let mut timers = TimerHeap::new();
    for deadline in [50, 10, 40, u64::MAX, 0, 30, 20] {
        timers.insert(deadline, deadline).unwrap();
    }
    assert_eq!(timers.earliest(), Some(0));
    assert_eq!(pop_all(&mut timers, 25), [(0, 0), (10, 10), (20, 20)]);
    assert_eq!(timers.earliest(), Some(30));
    assert!(timers.pop_expired(29).is_none(), "nothing is due before its deadline");
    assert_eq!(pop_all(&mut timers, 30), [(30, 30)], "a deadline equal to now is due");
    assert_eq!(pop_all(&mut timers, u64::MAX), [(40, 40), (50, 50), (u64::MAX, u64::MAX)]);
    assert!(timers.is_empty());
}

#[test]
fn equal_deadlines_fire_in_insertion_order() {
    let mut timers = TimerHeap::new();
    for (value, deadline) in [7, 3, 7, 3, 3, 7, 1, 7, 3].into_iter().enumerate() {
        timers.insert(deadline, value).unwrap();
    }
    let fired = pop_all(&mut timers, 10);
    assert_eq!(fired, [(1, 6), (3, 1), (3, 3), (3, 4), (3, 8), (7, 0), (7, 2), (7, 5), (7, 7)]);
}

#[test]
fn pop_returns_the_handle_insert_gave() {
    let mut timers = TimerHeap::new();
    let a = timers.insert(5, 'a').unwrap();
    let b = timers.insert(1, 'b').unwrap();
    assert_eq!(timers.pop_expired(9), Some((b, 1, 'b')));
    assert_eq!(timers.pop_expired(9), Some((a, 5, 'a')));
}

#[test]
fn cancel_returns_the_value_once() {
    let mut timers = TimerHeap::new();
    let a = timers.insert(10, "a").unwrap();
    let b = timers.insert(20, "b").unwrap();
    assert_eq!(timers.deadline(b), Some(20));
    assert_eq!(timers.cancel(b), Some((20, "b")));
    assert_eq!(timers.cancel(b), None);
    assert_eq!(timers.deadline(b), None);
    assert_eq!(timers.len(), 1);
    assert_eq!(timers.deadline(a), Some(10));
    assert_eq!(pop_all(&mut timers, u64::MAX), [(10, "a")]);
}

#[test]
fn cancel_after_fire_is_none() {
    let mut timers = TimerHeap::new();
    let a = timers.insert(10, 1).unwrap();
    assert_eq!(timers.pop_expired(10), Some((a, 10, 1)));
    assert_eq!(timers.cancel(a), None);
    assert_eq!(timers.deadline(a), None);
}

#[test]
fn stale_handle_after_slot_reuse_is_refused() {
    let mut timers = TimerHeap::new();
    let old = timers.insert(10, "old").unwrap();
    assert_eq!(timers.cancel(old), Some((10, "old")));
    let new = timers.insert(20, "new").unwrap();
    assert_eq!(new.index(), old.index(), "the freed slot is reused");
    assert_ne!(new.generation(), old.generation());
    assert_eq!(timers.cancel(old), None);
    assert_eq!(timers.deadline(old), None);
    assert_eq!(timers.len(), 1, "the stale handle cancelled nothing");
    // The same after the reused slot's timer fires, and for handles out of range.
    assert_eq!(timers.pop_expired(20), Some((new, 20, "new")));
    assert_eq!(timers.cancel(new), None);
    assert_eq!(timers.cancel(Handle::from_parts(1, 0)), None);
    assert_eq!(timers.cancel(Handle::from_parts(u32::MAX, u32::MAX)), None);
}

#[test]
fn handle_round_trips_through_its_parts() {
    let mut timers = TimerHeap::new();
    let handle = timers.insert(3, ()).unwrap();
    let rebuilt = Handle::from_parts(handle.index(), handle.generation());
    assert_eq!(rebuilt, handle);
    assert_eq!(timers.cancel(rebuilt), Some((3, ())));
}

#[test]
fn earliest_skips_cancelled_timers() {
    let mut timers = TimerHeap::new();
    let first = timers.insert(10, ()).unwrap();
    let second = timers.insert(20, ()).unwrap();
    let _third = timers.insert(30, ()).unwrap();
    timers.cancel(second).unwrap();
    assert_eq!(timers.earliest(), Some(10), "cancelling below the top leaves it");
    timers.cancel(first).unwrap();
    assert_eq!(timers.earliest(), Some(30), "the stale entry at 20 was skipped too");
    assert_eq!(timers.heap_entries(), 1, "stale entries reaching the top are dropped");
}

/// A server re-arming an idle timeout on every message, while a long timer stays pending: the
/// heap must not grow with the number of re-arms.
#[test]
fn cancel_and_rearm_keeps_the_heap_bounded() {
    let mut timers = TimerHeap::new();
    let long = timers.insert(5, u64::MAX).unwrap();
    let mut idle = timers.insert(1_000, 0).unwrap();
    for round in 1..=1_000_000u64 {
        assert!(timers.cancel(idle).is_some());
        idle = timers.insert(1_000 + round, round).unwrap();
        assert!(timers.heap_entries() <= 2 + STALE_FLOOR + 1, "{} entries", timers.heap_entries());
    }
    assert_eq!(timers.len(), 2);
    assert_eq!(timers.pop_expired(u64::MAX), Some((long, 5, u64::MAX)));
    assert_eq!(timers.pop_expired(u64::MAX), Some((idle, 1_001_000, 1_000_000)));
    assert_eq!(timers.heap_entries(), 0);
}

/// The same with many live timers: stale entries stay within max(live, floor).
#[test]
fn stale_entries_stay_within_the_live_count() {
    let mut timers = TimerHeap::new();
    let mut random = Xorshift(0x9e37_79b9_7f4a_7c15);
    let mut handles: Vec<Handle> = (0..1_000).map(|i| timers.insert(random.next() % 10_000, i).unwrap()).collect();
    for round in 0..200_000 {
        let victim = (random.next() % 1_000) as usize;
        assert!(timers.cancel(handles[victim]).is_some());
        handles[victim] = timers.insert(random.next() % 10_000, round).unwrap();
        let live = timers.len();
        assert!(timers.heap_entries() <= live + live.max(STALE_FLOOR));
    }
    // And still in order after all the rebuilds.
    let fired = pop_all(&mut timers, u64::MAX);
    assert_eq!(fired.len(), 1_000);
    assert!(fired.windows(2).all(|pair| pair[0].0 <= pair[1].0));
}

#[test]
fn drain_all_empties_earliest_first() {
    let mut timers = TimerHeap::new();
    let handles: Vec<Handle> = [30, 10, 20, 10, 40]
        .into_iter()
        .enumerate()
        .map(|(value, deadline)| timers.insert(deadline, value).unwrap())
        .collect();
    timers.cancel(handles[2]).unwrap();
    assert_eq!(timers.drain_all(), [(10, 1), (10, 3), (30, 0), (40, 4)]);
    assert!(timers.is_empty());
    assert_eq!(timers.earliest(), None);
    assert_eq!(timers.heap_entries(), 0);
    for handle in handles {
        assert_eq!(timers.cancel(handle), None, "drained timers' handles are refused");
    }
    // The table is usable afterwards.
    timers.insert(1, 9).unwrap();
    assert_eq!(pop_all(&mut timers, 1), [(1, 9)]);
}

#[test]
fn a_hundred_thousand_pending_fire_in_order_exactly_once() {
    const COUNT: usize = 100_000;
    let mut timers = TimerHeap::new();
    let mut random = Xorshift(0x2545_f491_4f6c_dd1d);
    // Deadlines drawn from a range smaller than the count, so many are equal.
    for value in 0..COUNT {
        timers.insert(random.next() % 30_000, value).unwrap();
    }
    assert_eq!(timers.len(), COUNT);
    let mut seen = std::vec![false; COUNT];
    let mut last: Option<(u64, usize)> = None;
    let mut now = 0;
    while !timers.is_empty() {
        now += 1_000;
        while let Some((_, deadline, value)) = timers.pop_expired(now) {
            assert!(deadline <= now);
            assert!(last < Some((deadline, value)), "{last:?} then {:?}", (deadline, value));
            assert!(!std::mem::replace(&mut seen[value], true));
            last = Some((deadline, value));
        }
        assert!(timers.earliest().is_none_or(|earliest| earliest > now));
    }
    assert!(seen.iter().all(|&fired| fired));
}

#[test]
fn every_value_is_dropped_exactly_once() {
    let value = Rc::new(());
    {
        let mut timers = TimerHeap::new();
        let handles: Vec<Handle> =
            (0..100).map(|deadline| timers.insert(deadline, Rc::clone(&value)).unwrap()).collect();
        for handle in handles.iter().step_by(3) {
            drop(timers.cancel(*handle));
        }
        drop(pop_all(&mut timers, 50));
        assert_eq!(Rc::strong_count(&value), 1 + timers.len());
    }
    assert_eq!(Rc::strong_count(&value), 1, "dropping the table drops what was pending");
}
