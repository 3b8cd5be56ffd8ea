//! Loom model of `kill` against a slot being reused: a kill request may only ever reach the
//! occupant its pid names.
//!
//! The kernel's `api::kill` checks the pid's generation and sets the slot's kill flag in one
//! step under the slot lock, and `finish` clears the flag under the same lock in which it ends
//! the generation. The model runs that protocol against a concurrent exit and re-spawn into the
//! same slot and asserts the new occupant is never marked. It also runs the protocol the kernel
//! used before (check under the lock, set the flag after releasing it) and asserts that loom
//! finds the execution where the new occupant is marked, so the model is known to be able to fail.
//!
//! It models the kernel's protocol on its own copy (loom needs its own lock and atomics), so it
//! lives with the repository's checks, not in the kernel. Runs only with `--cfg loom`
//! (`make test-host`'s loom step).

#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering as StdOrdering};

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

struct Header {
    generation: u32,
    live: bool,
}

struct Slot {
    header: Mutex<Header>,
    kill_requested: AtomicBool,
}

impl Slot {
    fn occupied() -> Slot {
        Slot { header: Mutex::new(Header { generation: 0, live: true }), kill_requested: AtomicBool::new(false) }
    }

    /// The kernel's protocol: check and mark under one lock.
    fn kill_locked(&self, generation: u32) -> bool {
        let header = self.header.lock().unwrap();
        if header.generation != generation || !header.live {
            return false;
        }
        self.kill_requested.store(true, Ordering::Relaxed);
        true
    }

    /// The old protocol: the lock is released between the check and the mark.
    fn kill_split(&self, generation: u32) -> bool {
        {
            let header = self.header.lock().unwrap();
            if header.generation != generation || !header.live {
                return false;
            }
        }
        self.kill_requested.store(true, Ordering::Relaxed);
        true
    }

    /// `finish`: ends the occupant, bumps the generation, clears the flag, under the lock.
    fn finish(&self) {
        let mut header = self.header.lock().unwrap();
        header.live = false;
        header.generation += 1;
        self.kill_requested.store(false, Ordering::Relaxed);
    }

    /// `spawn` into the freed slot: the new occupant has the new generation.
    fn occupy(&self) -> u32 {
        let mut header = self.header.lock().unwrap();
        header.live = true;
        header.generation
    }
}

/// One killer of generation 0 against an exit and a re-spawn; true if loom found no execution
/// in which the new occupant (generation 1) carries the kill flag.
fn model(kill: fn(&Slot, u32) -> bool) {
    let executions = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&executions);
    loom::model(move || {
        counter.fetch_add(1, StdOrdering::Relaxed);
        let slot = Arc::new(Slot::occupied());
        let killer = {
            let slot = Arc::clone(&slot);
            thread::spawn(move || kill(&slot, 0))
        };
        slot.finish();
        let new_generation = slot.occupy();
        killer.join().unwrap();
        assert_eq!(new_generation, 1);
        assert!(
            !slot.kill_requested.load(Ordering::Relaxed),
            "a kill of generation 0 marked the new occupant of the reused slot"
        );
    });
    std::println!("loom: kill_model: {} executions explored", executions.load(StdOrdering::Relaxed));
}

#[test]
fn kill_reaches_only_the_occupant_it_names() {
    model(Slot::kill_locked);
}

#[test]
fn the_old_protocol_is_caught() {
    let result = std::panic::catch_unwind(|| model(Slot::kill_split));
    assert!(result.is_err(), "loom must find the reuse race in the split check-then-mark protocol");
}
