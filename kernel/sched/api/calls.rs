//! The process API: spawn, identity, yielding, reductions, messages, exit, monitors.
//!
//! Every call that blocks or yields must come from a process (the program's `main` runs as
//! one). Calls that only send or spawn work from anywhere.

use alloc::boxed::Box;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::msg::mailbox;
use crate::msg::signals;
use crate::proc::process::{
    self, Affinity, Entry, ExitReason, Message, Pid, Ref, Relations, SendError, SpawnError, SpawnOptions, State, lookup,
};
use crate::proc::table;
use crate::record::stats::{self, CoreStats};
use crate::run::active;
use crate::run::current::current_slot;
use crate::run::percore::{OnCore, Pending, scheduler};
use crate::run::runqueue::movable;
use crate::run::wake::{admit, make_runnable};
use crate::settings::spawn_placement;
use crate::turn::dispatch::{end_unwinding, exit_out, switch_out};
use crate::turn::unwind::{self, Why, exit_requested};
use beamcore_hal::arch::context;
use beamcore_hal::arch::cpu;
use beamcore_hal::ids::{CoreId, Slot};
use beamcore_mm::heap;
use beamcore_sched_policy::balance::place;
use beamcore_sched_policy::placement::SpawnPlacement;
use beamcore_smp as smp;

/// Spawns a normal-priority process running `function` on the calling core.
pub fn spawn<F: FnOnce() + Send + 'static>(function: F) -> Result<Pid, SpawnError> {
    spawn_with(SpawnOptions::default(), function)
}

/// Spawns a process with `options`.
pub fn spawn_with<F: FnOnce() + Send + 'static>(options: SpawnOptions, function: F) -> Result<Pid, SpawnError> {
    spawn_related(options, function, Relation::None)
}

/// A relation a new process starts with, set in the same step as the spawn (before it can run,
/// so it cannot end unobserved): Erlang's `spawn_link` and `spawn_monitor`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    None,
    /// Linked to the spawner (this pid).
    Link(Pid),
    /// Monitored by the spawner (this pid) under this reference.
    Monitor(Pid, Ref),
}

/// `spawn_with`, and the relation to the spawner the process starts with.
pub(crate) fn spawn_related<F: FnOnce() + Send + 'static>(
    options: SpawnOptions,
    function: F,
    relation: Relation,
) -> Result<Pid, SpawnError> {
    // Where the process starts: the core named, else the `placement=` choice, if its allowed
    // cores include it and it schedules (`balance::place`). Best effort against a core leaving:
    // one that leaves after this check is caught by its closed inbox, and the process starts on
    // the next active core instead (`wake::deliver`, docs/cores.md).
    let preferred = match options.core {
        Some(core) => core,
        None => start_core(),
    };
    let core = place(&options.allowed, &active::active_set(), smp::cores_online(), options.core, preferred)?;
    // A closure too big to keep in the control block is boxed first (which may fail).
    let boxed = if Entry::fits::<F>() { Ok(function) } else { Err(heap::try_box(function)) };
    let boxed = match boxed {
        Ok(function) => Ok(function),
        Err(Ok(on_heap)) => Err(on_heap),
        Err(Err(error)) => return Err(SpawnError::OutOfMemory(error)),
    };
    // What the relation needs is allocated before anything is made, so nothing after can fail.
    let child_relations = match relation {
        Relation::None => None,
        Relation::Link(parent) | Relation::Monitor(parent, _) => Some(prepare_relation(relation, parent)?),
    };
    // The frame pool and the free slots are only touched on the kernel stack: see there.
    let slot = context::on_kernel_stack(|| table::allocate(options.stack_bytes))?;
    let process = process::slot(slot);
    // ORDERING: Relaxed for the placement fields: nobody else reaches the slot until its state
    // (under its lock) says it exists, and whoever runs it later gets it through a queue.
    process.priority.store(options.priority as u8, Ordering::Relaxed);
    process.allowed.store(options.allowed);
    process.core.store(CoreId::new(core), Ordering::Relaxed);
    process.migrations.store(0, Ordering::Relaxed);
    process.movable.store(movable(process), Ordering::Relaxed);
    // `exit_requested` is false already: `finish` clears it under the lock that frees the slot,
    // and nothing sets it on a free slot (every setter goes through `signals::lock_live`).
    // SAFETY: the slot was free: no core owns the process yet, nobody else can reach it until
    // `state` below says it exists (lookups check it under the same lock).
    let local = unsafe { process.local() };
    let top = local.stack.as_ref().expect("allocate gave it a stack").top();
    // SAFETY: `allocate` maps the top page of the stack it gives, which is this process's alone
    // and unused until it first runs.
    unsafe { local.context.init_process(top, slot) };
    local.preempted_frame = None;
    match boxed {
        Ok(function) => local.entry.put(function),
        Err(on_heap) => local.entry.put(on_heap),
    }
    local.low_passes = 0;
    local.unwinding = None;
    local.ended_at_base = false;
    local.exit_grace_turns = 0;
    // IRQs stay masked from `Runnable` until the process is queued: see `send`.
    let mut on_core = OnCore::enter();
    // SAFETY: the slot was free: its queue was closed (and emptied) by `finish`, or never
    // used; nobody else is its consumer.
    unsafe { process.signals.reopen() };
    let pid = {
        let mut shared = process.shared.lock_irqs_masked();
        shared.state = State::Runnable;
        // Empty already: `finish` takes the relations out of the slot when its process ends (and
        // closes its queue), and nobody adds to a `Free` process's (send and monitor check the
        // state under this lock), so no clearing here.
        debug_assert!(shared.pushed == 0 && shared.relations.is_none(), "a free slot holds signals");
        shared.relations = child_relations;
        Pid { index: slot, generation: shared.generation }
    };
    if let Relation::Link(parent) | Relation::Monitor(parent, _) = relation {
        // The spawner's end of the relation, before the child can run (room reserved in
        // `prepare_relation`; a concurrent link to the spawner may have taken it, and the push
        // then grows the list from the kernel's reserve).
        let mut shared = process::slot(parent.index).shared.lock_irqs_masked();
        let relations = shared.relations.as_mut().expect("made by prepare_relation");
        match relation {
            Relation::Link(_) => relations.links.push(pid),
            Relation::Monitor(_, reference) => relations.watching.push((reference, pid)),
            Relation::None => {}
        }
    }
    // ORDERING: Relaxed: a label for traces; whoever runs the process gets it through the
    // queue that hands it over.
    process.generation_hint.store(pid.generation, Ordering::Relaxed);
    admit(&mut on_core, CoreId::new(core), slot);
    Ok(pid)
}

/// The new process's `Relations` for `relation` to `parent` (the caller), and room for the
/// other end in the caller's.
fn prepare_relation(relation: Relation, parent: Pid) -> Result<Box<Relations>, SpawnError> {
    let mut child = heap::try_box_with(Relations::default).map_err(SpawnError::OutOfMemory)?;
    let _core = OnCore::enter();
    let mut shared = process::slot(parent.index).shared.lock_irqs_masked();
    let own = signals::relations(&mut shared).map_err(SpawnError::OutOfMemory)?;
    match relation {
        Relation::Link(_) => {
            signals::reserve_link(&mut own.links).map_err(SpawnError::OutOfMemory)?;
            signals::reserve_link(&mut child.links).map_err(SpawnError::OutOfMemory)?;
            child.links.push(parent);
        }
        Relation::Monitor(_, reference) => {
            signals::reserve(&mut own.watching).map_err(SpawnError::OutOfMemory)?;
            signals::reserve(&mut child.watchers).map_err(SpawnError::OutOfMemory)?;
            child.watchers.push((reference, parent));
        }
        Relation::None => {}
    }
    Ok(child)
}

/// Spawns counted machine-wide, for `placement=round_robin`.
static SPAWN_TICKETS: AtomicUsize = AtomicUsize::new(0);

/// The core a new free process starts on when its spawner names none (`placement=`).
#[inline]
fn start_core() -> usize {
    let placement = spawn_placement();
    if placement == SpawnPlacement::Local {
        return cpu::core_id();
    }
    // ORDERING: Relaxed: only the count matters; each spawn gets its own ticket.
    let ticket = SPAWN_TICKETS.fetch_add(1, Ordering::Relaxed);
    placement.start_core(cpu::core_id(), ticket, smp::cores_online())
}

/// First Rust code of every process, called from `context_process_start` on its own stack.
#[unsafe(no_mangle)]
extern "C" fn process_entry(slot: Slot) -> ! {
    let process = process::slot(slot);
    // SAFETY: the process runs on its own core; its entry is taken once (`run` empties it
    // before calling), and nothing else touches it while the process runs.
    let entry: *mut process::Entry = unsafe { &mut process.local().entry };
    cpu::irq_enable();
    // SAFETY: as above; the control block outlives the process.
    // An unwind of the process's stack ends at this base, and never comes back here
    // (`unwind::begin`).
    unwind::run_at_base(entry);
    // SAFETY: the process runs here, on its own core; a flag is set, no reference kept.
    unsafe { process.local().ended_at_base = true };
    exit_out(OnCore::enter(), ExitReason::Normal)
}

/// The pid of the calling process, or `None` outside a process.
pub fn self_pid() -> Option<Pid> {
    let slot = current_slot()?;
    let generation = process::slot(slot).shared.lock().generation;
    Some(Pid { index: slot, generation })
}

/// Where the calling process runs and the core it is bound to (`None`: free, or limited to
/// several cores), read together with IRQs masked, so no preemption (and no move or rebinding,
/// which happen only while a process is queued) falls between the two. `None` outside a
/// process.
pub fn self_placement() -> Option<(usize, Option<usize>)> {
    let mut core = OnCore::enter();
    let slot = core.local().current?;
    let bound = match process::slot(slot).affinity() {
        Affinity::Bound(home) => Some(home),
        Affinity::Free | Affinity::Within(_) => None,
    };
    Some((core.id().index(), bound))
}

/// Ends the calling process's turn; it goes to the back of its run queue.
pub fn yield_now() {
    let mut core = OnCore::enter();
    if let Some(slot) = core.local().current {
        switch_out(core, Pending::Requeue);
        resumed(slot);
    }
}

/// Back in the calling process after a switch: an exit that came while it was away (a kill, an
/// untrapped exit signal) ran it once more just to end here, at a safe point, by unwinding
/// (`unwind::ends_unrun`).
#[inline(always)]
fn resumed(slot: Slot) {
    if exit_requested(slot) {
        exit_if_requested(OnCore::enter());
    }
}

/// Charges `reductions` units of work to the calling process; when its budget for the slice
/// (bootarg `reductions=`, default 4000) is spent, it yields.
pub fn bump_reductions(reductions: u32) {
    let mut core = OnCore::enter();
    let Some(slot) = core.local().current else { return };
    // SAFETY: the running process on its own core, IRQs masked.
    let local = unsafe { process::slot(slot).local() };
    local.reductions -= i64::from(reductions);
    let total = process::slot(slot).reductions.load(Ordering::Relaxed) + u64::from(reductions);
    // ORDERING: Relaxed: a count only this process writes (for `process_info`).
    process::slot(slot).reductions.store(total, Ordering::Relaxed);
    if local.reductions <= 0 {
        switch_out(core, Pending::Requeue);
        resumed(slot);
    } else if exit_requested(slot) {
        // A safe point: a process that loops calling it is ended here by a kill, unwinding.
        exit_if_requested(core);
    }
}

/// Delivers `message` to `pid`'s signal queue and wakes it if it waits. Never blocks. The wake
/// is one step: see `mailbox::send`. Inlined, so that the message is built straight into the
/// node the queue links (no copy of it on the way).
#[inline]
pub fn send(pid: Pid, message: Message) -> Result<(), SendError> {
    let mut core = OnCore::enter();
    let node = mailbox::new_node(&mut core, message).ok_or(SendError::OutOfMemory(pid))?;
    mailbox::send(&mut core, pid, node)
}

/// Sends `value` to `pid` as a typed message (`Message::new`: a `u64` as a word, a small value
/// with no destructor inline, anything else boxed); the receiver takes it with
/// `receive_value::<T>()` or `Message::take`.
#[inline]
pub fn send_value<T: Send + 'static>(pid: Pid, value: T) -> Result<(), SendError> {
    send(pid, Message::new(value))
}

/// Ends the calling process with `reason`; its links and monitors are told. Its stack is
/// unwound first, as a panic's is: what it owns is dropped.
pub fn exit(reason: ExitReason) -> ! {
    // `end_unwinding`, written out: one frame fewer between the end and the base, which the
    // quick end walks (`unwind::begin`).
    let (core, reason) = unwind::begin(OnCore::enter(), Why::Given(reason), exit_out);
    exit_out(core, reason)
}

/// Ends `pid` with reason `Killed`, which it cannot trap (Erlang's `exit(Pid, kill)`; its links
/// receive `Killed`): the next time its core would run it, at once if it waits, or when it next
/// calls `receive` if it is running now. A process that kills itself ends in this call.
///
/// The generation check and the kill flag are one step under the slot's lock, the lock under
/// which `finish` ends the occupant and bumps the generation: were the flag set after the lock
/// was released, the target could exit and a new process be spawned into the reused slot in
/// between, and the new process would be killed. `kill_model` (loom) checks both protocols.
pub fn kill(pid: Pid) -> Result<(), SendError> {
    // IRQs stay masked from `Runnable` until the process is queued: see `send`.
    let mut core = OnCore::enter();
    let wake = {
        let (process, mut shared) = signals::lock_live(pid).ok_or(SendError::NoProc(pid))?;
        signals::request_kill(process, &mut shared)
    };
    if wake {
        make_runnable(&mut core, pid.index);
    }
    // A kernel call is a safe point: a process that killed itself ends here.
    exit_if_requested(core);
    Ok(())
}

/// A safe point: if an exit is pending for the calling process (a kill, an exit signal it does
/// not trap), it ends here, with the pending reason. Nothing outside a process.
pub(crate) fn exit_if_requested(mut core: OnCore) {
    let Some(slot) = core.local().current else { return };
    // Already unwinding (a destructor's kernel call): the unwind goes on to the base, which ends
    // the process.
    // SAFETY: the running process on its own core, IRQs masked; a flag is read.
    if exit_requested(slot) && unsafe { process::slot(slot).local().unwinding }.is_none() {
        end_unwinding(core, Why::Pending)
    }
}

/// True while `pid` names a live process.
pub fn is_alive(pid: Pid) -> bool {
    lookup(pid).is_some()
}

/// Processes alive now, on all cores.
pub fn process_count() -> usize {
    table::live_count()
}

/// Bytes of RAM in use: frames handed out (stacks, control blocks, the process region's
/// translation tables) less the stack pages free slots keep for their next process, plus the
/// heap in use. The difference across spawning N processes, over N, is what one costs.
pub fn memory_in_use() -> usize {
    beamcore_mm::frames::in_use_bytes().saturating_sub(table::cached_stack_bytes()) + heap::usage().0
}

/// Scheduler counters of `core`.
pub fn core_stats(core: usize) -> &'static CoreStats {
    stats::of(CoreId::new(core))
}

/// Where a live process is, where it may go, and how often it has moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub core: usize,
    pub affinity: Affinity,
    pub migrations: u32,
}

/// The placement of a live process.
pub fn placement(pid: Pid) -> Option<Placement> {
    let process = lookup(pid)?;
    Some(Placement {
        core: process.core.load(Ordering::Relaxed).index(),
        affinity: process.affinity(),
        migrations: process.migrations.load(Ordering::Relaxed),
    })
}

/// The load of `core`: 4 x max + 3 x high + 2 x normal + 1 x low runnable processes queued
/// there (kept with per-priority atomic counters, readable from any core without locks).
pub fn core_load(core: usize) -> u64 {
    let scheduler = scheduler(CoreId::new(core));
    beamcore_sched_policy::priority::Priority::ALL.iter().map(|&p| p.load_weight() * scheduler.runnable(p) as u64).sum()
}
