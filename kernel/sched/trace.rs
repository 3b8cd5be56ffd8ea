//! Scheduling traces (bootarg `trace=on`): each core records what its scheduler does, with
//! counter timestamps, in a ring buffer of its own; at the end of a run the kernel dumps every
//! buffer on the console, and `make trace` (scripts/trace.py) turns the dump into a
//! Perfetto/Chrome trace and an SVG timeline.
//!
//! Recording is lock-free and cheap: each buffer is written only by its own core, with IRQs
//! masked (every recording site is scheduler code or an interrupt handler), so a record is a
//! counter read and five stores. A full buffer keeps the newest events and counts the dropped
//! ones. With tracing off a record is one load and a branch.
//!
//! Dump format (one line each, parsed by scripts/trace.py):
//! ```text
//! trace: begin cores=<n> counter_hz=<hz>
//! trace: core=<c> recorded=<m> dropped=<d>
//! trace: ev <core> <timestamp> <event> <pid_index> <pid_generation> <arg>
//! trace: end
//! ```

use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::arch::cpu;
use crate::mm::layout::MAX_CORES;
use crate::{println, smp};

/// Events each core keeps.
pub const EVENTS_PER_CORE: usize = 4096;

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
        }
    }
}

#[derive(Clone, Copy)]
struct Record {
    timestamp: u64,
    slot: u32,
    generation: u32,
    arg: u32,
    /// The core the event is about (not always the recording core: a wake or a migration).
    core: u8,
    event: Event,
}

struct Ring {
    records: Vec<Record>,
    /// Total events recorded; the newest is at `(written - 1) % capacity`.
    written: u64,
}

#[repr(align(64))]
struct CoreTrace(UnsafeCell<Ring>);

// SAFETY: each ring is written only by its own core with IRQs masked, and read by `dump` after
// every core has stopped recording (the run is over).
unsafe impl Sync for CoreTrace {}

static ENABLED: AtomicBool = AtomicBool::new(false);
static RINGS: [CoreTrace; MAX_CORES] =
    [const { CoreTrace(UnsafeCell::new(Ring { records: Vec::new(), written: 0 })) }; MAX_CORES];

/// True while tracing.
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Each core, at start-up when `trace=on`: its buffer. Fails (tracing stays off for this
/// core) if the heap cannot hold it.
pub(crate) fn init_this_core(on: bool) -> Result<(), crate::mm::heap::OutOfMemory> {
    if !on {
        return Ok(());
    }
    // SAFETY: this core's own ring, before it records anything.
    let ring = unsafe { &mut *RINGS[cpu::core_id()].0.get() };
    ring.records
        .try_reserve_exact(EVENTS_PER_CORE)
        .map_err(|_| crate::mm::heap::OutOfMemory { requested_bytes: EVENTS_PER_CORE * 24 })?;
    ENABLED.store(true, Ordering::Relaxed);
    Ok(())
}

/// Records `event` about process `(slot, generation)` on core `core`, in the calling core's
/// buffer. Call with IRQs masked (scheduler code or an interrupt handler).
#[inline]
pub(crate) fn record(event: Event, core: usize, slot: u32, generation: u32, arg: u32) {
    if !enabled() {
        return;
    }
    // SAFETY: the calling core's own ring, IRQs masked (contract): no other writer.
    let ring = unsafe { &mut *RINGS[cpu::core_id()].0.get() };
    if ring.records.capacity() == 0 {
        return;
    }
    let entry = Record { timestamp: cpu::counter(), slot, generation, arg, core: core as u8, event };
    let index = (ring.written % EVENTS_PER_CORE as u64) as usize;
    if index < ring.records.len() {
        ring.records[index] = entry;
    } else {
        ring.records.push(entry);
    }
    ring.written += 1;
}

/// Prints every core's buffer, merged in time order. Call once, at the end of a run, when no
/// core records any more.
pub fn dump() {
    if !enabled() {
        return;
    }
    ENABLED.store(false, Ordering::Relaxed);
    let cores = smp::cores_online();
    println!("trace: begin cores={cores} counter_hz={}", cpu::counter_frequency());
    let mut all: Vec<Record> = Vec::new();
    for (core, trace) in RINGS.iter().enumerate().take(cores) {
        // SAFETY: tracing is off and the run is over: nobody writes the rings any more.
        let ring = unsafe { &*trace.0.get() };
        let dropped = ring.written.saturating_sub(ring.records.len() as u64);
        println!("trace: core={core} recorded={} dropped={dropped}", ring.records.len());
        if all.try_reserve(ring.records.len()).is_err() {
            println!("trace: out of memory merging the buffers; core {core} not dumped");
            continue;
        }
        all.extend_from_slice(&ring.records);
    }
    all.sort_unstable_by_key(|r| r.timestamp);
    for r in &all {
        println!("trace: ev {} {} {} {} {} {}", r.core, r.timestamp, r.event.name(), r.slot, r.generation, r.arg);
    }
    println!("trace: end");
}
