//! Scheduling traces (bootarg `trace=on`): each core records what its scheduler does, with
//! counter timestamps, in a ring buffer of its own; at the end of a run the kernel dumps every
//! buffer on the console, and `make trace` (scripts/trace.py) turns the dump into a
//! Perfetto/Chrome trace and a timeline picture.
//!
//! Recording is lock-free and cheap: each buffer is written only by its own core, with IRQs
//! masked (every recording site is scheduler code or an interrupt handler), so a record is a
//! counter read, a fence and four stores ([`beamcore_trace_ring`]: the buffer is published with
//! Release/Acquire so the dump may read it while its core still records). A full buffer keeps
//! the newest events and counts the dropped ones. With tracing off a record is one load and a
//! branch.
//!
//! Dump format (one line each, parsed by scripts/trace.py):
//! ```text
//! trace: begin cores=<n> counter_hz=<hz>
//! trace: core=<c> recorded=<m> dropped=<d>
//! trace: ev <core> <timestamp> <event> <pid_index> <pid_generation> <arg>
//! trace: end
//! ```
//!
//! Besides the process events, each core samples its run-queue length on every tick (`queue`
//! events, `arg` the length): the counter tracks of the Perfetto view and the timeline.
//! ```text
//! ```

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use beamcore_hal::arch::cpu;
use beamcore_hal::ids::{CoreId, Slot};
use beamcore_mm::layout::MAX_CORES;
use beamcore_sched_policy::balance::Refusal;
use beamcore_smp::{self as smp, println};
use beamcore_trace_ring::{Entry, Ring};

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Event {
    Run,
    Yield,
    Preempt,
    Block,
    Exit,
    Spawn,
    Wake,
    Steal,
    Migrate,
    Sleep,
    IdleEnd,
    /// A sample of the core's run-queue length (its runnable processes, all levels), taken on
    /// its tick; `arg` is the length, the process fields are 0.
    Queue,
    /// A steal attempt that took nothing because a rule refused it: `check_victim`'s
    /// refusals, and `NotAllowed` when every process the thief took had to go back. `arg` is
    /// the victim's index plus the refusal's number ([`Refusal`], in declaration
    /// order) times 65,536. An attempt that found the victim's deque empty after all, or lost
    /// a race for its top, is not one (the counters have those).
    Refused,
}

impl Event {
    fn name(self) -> &'static str {
        match self {
            Event::Run => "run",
            Event::Yield => "yield",
            Event::Preempt => "preempt",
            Event::Block => "block",
            Event::Exit => "exit",
            Event::Spawn => "spawn",
            Event::Wake => "wake",
            Event::Steal => "steal",
            Event::Migrate => "migrate",
            Event::Sleep => "sleep",
            Event::IdleEnd => "idle_end",
            Event::Queue => "queue",
            Event::Refused => "refused",
        }
    }
}

impl Event {
    const ALL: [Event; 13] = [
        Event::Run,
        Event::Yield,
        Event::Preempt,
        Event::Block,
        Event::Exit,
        Event::Spawn,
        Event::Wake,
        Event::Steal,
        Event::Migrate,
        Event::Sleep,
        Event::IdleEnd,
        Event::Queue,
        Event::Refused,
    ];
}

// `Record::decode` finds an event by its discriminant in `Event::ALL`.
const _: () = {
    let mut i = 0;
    while i < Event::ALL.len() {
        assert!(Event::ALL[i] as usize == i);
        i += 1;
    }
};

#[derive(Clone, Copy)]
struct Record {
    timestamp: u64,
    slot: Slot,
    generation: u32,
    arg: u32,
    /// The core the event is about (not always the recording core: a wake or a migration).
    core: u8,
    event: Event,
}

impl Record {
    fn encode(&self) -> Entry {
        [
            self.timestamp,
            u64::from(self.slot.get()) | u64::from(self.generation) << 32,
            u64::from(self.arg) | u64::from(self.core) << 32 | (self.event as u64) << 40,
        ]
    }

    /// The record `encode` made, or `None` for words no `encode` made (cannot happen: the
    /// ring only hands out entries its writer completed).
    fn decode(words: &Entry) -> Option<Record> {
        let event = *Event::ALL.get((words[2] >> 40) as usize)?;
        Some(Record {
            timestamp: words[0],
            slot: Slot::new(words[1] as u32),
            generation: (words[1] >> 32) as u32,
            arg: words[2] as u32,
            core: (words[2] >> 32) as u8,
            event,
        })
    }
}

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Each core's ring, made by that core in `init_core_ring` (the `Once` publishes it to the
/// dumping core with Release/Acquire inside `spin`).
static RINGS: [spin::Once<Ring>; MAX_CORES] = [const { spin::Once::new() }; MAX_CORES];

/// True while tracing.
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// With `trace=on`, the buffers of `events` (`trace_events=`) for the cores online now, made by
/// the boot core once every core is online, before the program's main starts. Making them
/// later than the cores' ticks is the point: zeroing a megabyte takes hundreds of
/// microseconds of guest time, and where each core made its own before its first tick, that
/// shifted the cores' tick phases, and with them QEMU's vCPU turns, so a traced run showed
/// other dynamics than the untraced run it was meant to explain. A core whose buffer the heap
/// cannot hold does not trace (named in the returned list).
pub(crate) fn start(on: bool, events: usize, cores: usize) -> heapless::Vec<usize, MAX_CORES> {
    let mut refused = heapless::Vec::new();
    if !on {
        return refused;
    }
    for (core, slot) in RINGS.iter().enumerate().take(cores) {
        match Ring::try_new(events) {
            Ok(ring) => {
                slot.call_once(|| ring);
            }
            // Capacity MAX_CORES: one entry per core at most.
            Err(_) => refused.push(core).expect("one entry per core"),
        }
    }
    // Relaxed: only a switch; `record` finds a core's ring through its `Once`, not through this.
    ENABLED.store(true, Ordering::Relaxed);
    refused
}

/// Records a steal attempt of `thief` that `refusal` stopped at `victim` ([`Event::Refused`]:
/// its `arg` packs both, the one place that encoding is written).
#[inline]
pub(crate) fn refused(thief: CoreId, victim: CoreId, refusal: Refusal) {
    core_event(Event::Refused, thief, victim.index() as u32 | (refusal as u32) << 16);
}

/// Records `event` about process `(slot, generation)` on core `core`, in the calling core's
/// buffer. Call with IRQs masked (scheduler code or an interrupt handler): each ring has one
/// writer, its own core, never re-entered.
#[inline]
pub(crate) fn record(event: Event, core: CoreId, slot: Slot, generation: u32, arg: u32) {
    if !enabled() {
        return;
    }
    let Some(ring) = RINGS[cpu::core_id()].get() else { return };
    let entry = Record { timestamp: cpu::counter(), slot, generation, arg, core: core.index() as u8, event };
    ring.record(entry.encode());
}

/// Records `event` about core `core` itself, no process (slot and generation 0), as [`record`]
/// does.
#[inline]
pub(crate) fn core_event(event: Event, core: CoreId, arg: u32) {
    record(event, core, Slot::new(0), 0, arg);
}

/// Records `event` about the process in `slot` (its generation read without its lock), as
/// [`record`] does.
#[inline]
pub(crate) fn process_event(event: Event, core: CoreId, slot: Slot, arg: u32) {
    if enabled() {
        // ORDERING: Relaxed: a label for the trace; the lock's copy is the truth.
        let generation = crate::proc::process::slot(slot).generation_hint.load(Ordering::Relaxed);
        record(event, core, slot, generation, arg);
    }
}

/// Prints every core's buffer, merged in time order. Meant for the end of a run, but correct
/// while other cores still record (the watchdog dumps with every core running): each ring is
/// copied with `Ring::snapshot`, which leaves out entries overwritten during the copy (they
/// count as dropped). Events recorded after a core's copy are not in the dump.
pub fn dump() {
    if !enabled() {
        return;
    }
    // Relaxed: stops further recording eventually; the dump's correctness does not rely on it.
    ENABLED.store(false, Ordering::Relaxed);
    let cores = smp::cores_online();
    println!("trace: begin cores={cores} counter_hz={}", cpu::counter_frequency());
    let mut all: Vec<Entry> = Vec::new();
    for (core, ring) in RINGS.iter().enumerate().take(cores) {
        let Some(ring) = ring.get() else {
            println!("trace: core={core} recorded=0 dropped=0");
            continue;
        };
        match ring.snapshot(&mut all) {
            Ok(snapshot) => {
                println!("trace: core={core} recorded={} dropped={}", snapshot.kept, snapshot.dropped())
            }
            Err(_) => println!("trace: out of memory merging the buffers; core {core} not dumped"),
        }
    }
    let mut records: Vec<Record> = Vec::new();
    if records.try_reserve_exact(all.len()).is_err() {
        println!("trace: out of memory merging the buffers; no events dumped");
    } else {
        records.extend(all.iter().filter_map(Record::decode));
    }
    drop(all);
    records.sort_unstable_by_key(|r| r.timestamp);
    for r in &records {
        println!("trace: ev {} {} {} {} {} {}", r.core, r.timestamp, r.event.name(), r.slot, r.generation, r.arg);
    }
    println!("trace: end");
}
