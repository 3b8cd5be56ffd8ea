//! Loom models of the kernel's link/exit and monitor/demonitor protocols (kernel/sched/msg/signals.rs):
//! every live link carries exactly one exit signal, every monitor exactly one `Down`, and none
//! arrives after `demonitor` has said the monitor was active.
//!
//! The rule modelled: a link or monitor is set under both processes' slot locks (in index
//! order) after checking the target is alive; a process's end takes its relations out under
//! its lock in the same step as it ends; a signal is delivered only if the receiver still holds
//! its entry for it, which it consumes under the receiver's lock. Each model also runs a
//! weakened protocol (the check and the update split into two critical sections, or a `Down`
//! delivered without consulting the watcher's entry) and asserts that loom finds the lost or
//! extra signal, so the models are known to be able to fail.
//!
//! Like `kill_model`, a copy of the protocol with loom's locks. Runs only with `--cfg loom`
//! (`make test-host`'s loom step).

#![cfg(loom)]

use std::sync::atomic::{AtomicUsize, Ordering as StdOrdering};
use std::vec::Vec;

use loom::sync::{Arc, Mutex};
use loom::thread;

/// One process's slot: what the kernel keeps under the slot lock.
#[derive(Default)]
struct Slot {
    live: bool,
    links: Vec<usize>,
    /// Monitors it holds: (reference, target).
    watching: Vec<(u32, usize)>,
    /// Monitors on it: (reference, watcher).
    watchers: Vec<(u32, usize)>,
    /// Exit signals it received (from whom), and `Down`s (which reference).
    exits: Vec<usize>,
    downs: Vec<u32>,
}

struct Machine {
    slots: [Mutex<Slot>; 2],
}

impl Machine {
    fn new() -> Arc<Machine> {
        let live = || Mutex::new(Slot { live: true, ..Slot::default() });
        Arc::new(Machine { slots: [live(), live()] })
    }

    /// `signals::exit_signal` through a link: delivered only if `to` is alive and still lists
    /// `from` among its links (which it consumes).
    fn exit_signal(&self, to: usize, from: usize) {
        let mut slot = self.slots[to].lock().unwrap();
        if !slot.live {
            return;
        }
        if let Some(i) = slot.links.iter().position(|&p| p == from) {
            slot.links.swap_remove(i);
            slot.exits.push(from);
        }
    }

    /// `signals::deliver_down`, as the kernel does it (`checked`) or weakened.
    fn deliver_down(&self, watcher: usize, reference: u32, checked: bool) {
        let mut slot = self.slots[watcher].lock().unwrap();
        if !slot.live {
            return;
        }
        if checked {
            let Some(i) = slot.watching.iter().position(|&(r, _)| r == reference) else { return };
            slot.watching.swap_remove(i);
        }
        slot.downs.push(reference);
    }

    /// `finish` then `signals::on_end`: relations out in the step that ends the process.
    fn end(&self, who: usize, checked_downs: bool) {
        let (links, watchers) = {
            let mut slot = self.slots[who].lock().unwrap();
            slot.live = false;
            (std::mem::take(&mut slot.links), std::mem::take(&mut slot.watchers))
        };
        for to in links {
            self.exit_signal(to, who);
        }
        for (reference, watcher) in watchers {
            self.deliver_down(watcher, reference, checked_downs);
        }
    }

    /// Both slots locked in index order: `lock_pair`.
    fn lock_pair(&self) -> (loom::sync::MutexGuard<'_, Slot>, loom::sync::MutexGuard<'_, Slot>) {
        let first = self.slots[0].lock().unwrap();
        let second = self.slots[1].lock().unwrap();
        (first, second)
    }

    /// `link` by 0 to 1, as the kernel does it: check and update in one critical section.
    /// False: 1 had ended (the caller then receives `noproc` instead).
    fn link_locked(&self) -> bool {
        let (mut mine, mut theirs) = self.lock_pair();
        if !theirs.live {
            return false;
        }
        mine.links.push(1);
        theirs.links.push(0);
        true
    }

    /// The weakened link: the target's liveness checked, the lock released, then the update.
    fn link_split(&self) -> bool {
        {
            let (_mine, theirs) = self.lock_pair();
            if !theirs.live {
                return false;
            }
        }
        let (mut mine, mut theirs) = self.lock_pair();
        mine.links.push(1);
        theirs.links.push(0);
        true
    }

    /// `monitor` by 0 of 1 with reference 7. False: 1 had ended (`noproc` at once).
    fn monitor(&self) -> bool {
        let (mut mine, mut theirs) = self.lock_pair();
        if !theirs.live {
            return false;
        }
        mine.watching.push((7, 1));
        theirs.watchers.push((7, 0));
        true
    }

    /// `demonitor(7)` by 0: true if the monitor was still held.
    fn demonitor(&self) -> bool {
        let target = {
            let mut mine = self.slots[0].lock().unwrap();
            let Some(i) = mine.watching.iter().position(|&(r, _)| r == 7) else { return false };
            mine.watching.swap_remove(i).1
        };
        let mut theirs = self.slots[target].lock().unwrap();
        if let Some(i) = theirs.watchers.iter().position(|&(r, _)| r == 7) {
            theirs.watchers.swap_remove(i);
        }
        true
    }
}

fn explore(name: &str, body: impl Fn() + Sync + Send + 'static) {
    let executions = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&executions);
    loom::model(move || {
        counter.fetch_add(1, StdOrdering::Relaxed);
        body();
    });
    std::println!("loom: {name}: {} executions explored", executions.load(StdOrdering::Relaxed));
}

/// Process 0 links to process 1 while 1 ends: 0 must learn of 1's end exactly once, either as
/// `noproc` from the link or as the exit signal.
fn link_against_end(link: fn(&Machine) -> bool) {
    explore("link_exit_model", move || {
        let machine = Machine::new();
        let ender = {
            let machine = Arc::clone(&machine);
            thread::spawn(move || machine.end(1, true))
        };
        let linked = link(&machine);
        ender.join().unwrap();
        let slot = machine.slots[0].lock().unwrap();
        let told = slot.exits.len() + usize::from(!linked);
        assert_eq!(told, 1, "process 0 learnt of the end {told} times (linked: {linked})");
        assert!(slot.links.is_empty(), "a link to an ended process was left behind");
    });
}

/// Process 0 links to 1, and both end: at most one exit signal passes between them, and no
/// link is left behind.
fn both_end() {
    explore("link_exit_model (both end)", || {
        let machine = Machine::new();
        let other = {
            let machine = Arc::clone(&machine);
            thread::spawn(move || machine.end(1, true))
        };
        machine.link_locked();
        machine.end(0, true);
        other.join().unwrap();
        let mut signals = 0;
        for slot in &machine.slots {
            let slot = slot.lock().unwrap();
            assert!(slot.links.is_empty(), "a link was left behind at an ended process");
            signals += slot.exits.len();
        }
        // The first to end signals the other if that one still lives; the other, ending, finds
        // the link consumed: never two.
        assert!(signals <= 1, "{signals} exit signals between two processes with one link");
    });
}

/// Process 0 monitors 1, then demonitors while 1 ends: a `Down` arrives exactly when the
/// demonitor found the monitor gone (never after a demonitor that said it was active).
fn demonitor_against_end(checked_downs: bool) {
    explore("monitor_model", move || {
        let machine = Machine::new();
        assert!(machine.monitor());
        let ender = {
            let machine = Arc::clone(&machine);
            thread::spawn(move || machine.end(1, checked_downs))
        };
        let was_active = machine.demonitor();
        ender.join().unwrap();
        let downs = machine.slots[0].lock().unwrap().downs.len();
        assert_eq!(downs, usize::from(!was_active), "{downs} Downs after a demonitor that said {was_active}");
    });
}

#[test]
fn every_link_gets_exactly_one_exit_signal() {
    link_against_end(Machine::link_locked);
    both_end();
}

#[test]
fn no_down_after_demonitor() {
    demonitor_against_end(true);
    // A monitor set against an end: exactly one Down or a `noproc`.
    explore("monitor_model (set against end)", || {
        let machine = Machine::new();
        let ender = {
            let machine = Arc::clone(&machine);
            thread::spawn(move || machine.end(1, true))
        };
        let set = machine.monitor();
        ender.join().unwrap();
        let downs = machine.slots[0].lock().unwrap().downs.len();
        assert_eq!(downs + usize::from(!set), 1, "{downs} Downs (monitor set: {set})");
    });
}

#[test]
fn the_split_link_is_caught() {
    let result = std::panic::catch_unwind(|| link_against_end(Machine::link_split));
    assert!(result.is_err(), "loom must find the lost exit signal of a link checked and made in two steps");
}

#[test]
fn an_unchecked_down_is_caught() {
    let result = std::panic::catch_unwind(|| demonitor_against_end(false));
    assert!(result.is_err(), "loom must find the Down delivered after demonitor");
}
