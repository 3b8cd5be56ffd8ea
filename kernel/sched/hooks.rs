//! What the kernel's handlers ask of the scheduler: the timer tick (which may end the running
//! process's slice), a synchronous exception in a process (which ends that process only), and
//! a Rust panic in a process's own code (likewise). `kernel_init` registers the first two with
//! the interrupt and exception code; the panic handler calls the third.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::proc::process::{self, ExitReason, Pid, Unwinding};
use crate::record::stats::bump;
use crate::record::trace::{self, Event};
use crate::run::percore::{OnCore, Pending, scheduler};
use crate::run::runqueue::movable;
use crate::settings::slice_counts;
use crate::turn::dispatch::end_unwinding;
use crate::turn::ending::is_program_main;
use crate::turn::unwind::Why;
use beamcore_hal::arch::context;
use beamcore_hal::arch::cpu;
use beamcore_hal::arch::exception::{Syndrome, TrapFrame};
use beamcore_hal::debug::backtrace::Backtrace;
use beamcore_hal::ids::CoreId;
use beamcore_mm::stacks::GrowError;
use beamcore_smp::console::LineBuffer;

/// Holds the process running on this core on it (`hold`), or lets it move again. While held,
/// a preemption queues it in its core's private queue, where no thief or push rebalancing takes
/// it. Registered with `smp`, whose `run_on_all_and_wait` runs the caller's own share inline on
/// the core it read: were the caller stolen meanwhile, that share would run on another core
/// (which runs its own share too). Outside a process (a kernel job) there is nothing to hold.
pub fn hold_current_on_core(hold: bool) {
    let mut core = OnCore::enter();
    let Some(slot) = core.local().current else { return };
    let process = process::slot(slot);
    let may_move = !hold && movable(process);
    // ORDERING: Relaxed: the process runs here, so this core owns it; the flag is read when the
    // process is queued, by the core that queues it, which is this one (it is not in any queue).
    process.movable.store(may_move, Ordering::Relaxed);
}

/// Records this core's run-queue length in the trace (the periodic sample behind the trace's
/// per-core counter tracks). The tick is each core's own, every `slice_us`, asleep or not.
#[cold]
fn sample_queue_length() {
    let id = CoreId::this();
    let runnable: usize = scheduler(id).queues.runnable_by_priority().iter().sum();
    trace::core_event(Event::Queue, id, runnable.min(u32::MAX as usize) as u32);
}

/// Timer interrupt (IRQ context): fires the timers due on this core. Whatever ran with IRQs
/// open held no `OnCore` (a process, a job, an idle wait), so the scheduler's is free to lend.
pub fn on_timers() {
    // No timer pending here (the common tick): no need to reach the core's scheduler, which a
    // core still starting may not have yet.
    if crate::msg::timers::earliest_here() > cpu::counter() {
        return;
    }
    let mut core = OnCore::enter();
    crate::msg::timers::expire_due(&mut core);
}

/// Timer tick (IRQ context): ends the running process's slice when it has had its time (and,
/// while tracing, samples the run-queue length first).
pub fn on_tick(frame: &mut TrapFrame) {
    crate::report::watchdog::on_tick();
    if trace::enabled() {
        sample_queue_length();
    }
    if !context::interrupted_process(frame) {
        return;
    }
    // The interrupted process ran with IRQs unmasked, so it held no `OnCore`; the scheduler's
    // is lent to it.
    let mut core = OnCore::enter();
    let me = core.scheduler();
    let local = core.local();
    let Some(slot) = local.current else { return };
    if cpu::counter().wrapping_sub(local.slice_started) < slice_counts() {
        return;
    }
    let process = process::slot(slot);
    // SAFETY: the interrupted process runs on this core, which owns its `ProcessLocal`; it is not
    // running while its handler runs.
    let process_local = unsafe { process.local() };
    let stack = process_local.stack.as_mut().expect("a running process has a stack");
    let frame_bytes = core::mem::size_of::<TrapFrame>();
    let save_at = (frame.sp_el0 as usize).saturating_sub(frame_bytes) & !15;
    // The frame goes below the stack pointer, maybe below the stack's mapped part: map it first
    // (a fault here, on the kernel stack, would be the kernel's own).
    // The process was running its own code (IRQs unmasked): it may not take the last pages.
    if let Err(error) = stack.grow_to(save_at, false) {
        // No room to save its registers: it has as good as overflowed, or no page was free.
        let reason = if error == GrowError::OutOfMemory { ExitReason::OutOfMemory } else { ExitReason::StackOverflow };
        // ORDERING: Relaxed: the running process's own generation, set before it ran.
        let pid = Pid { index: slot, generation: process.generation_hint.load(Ordering::Relaxed) };
        // SAFETY: as above; a copy is read.
        let unwinding = unsafe { process.local().unwinding };
        if let Some(cause) = unwinding {
            // Preempted while its unwind ran low on stack.
            let why = format_args!("preempted with under {frame_bytes} bytes of stack left to save its registers");
            end_stopped_unwind(&mut core, frame, pid, cause, reason, why);
            return;
        }
        beamcore_smp::println!(
            "process {pid} on core {} ended: {reason} (preempted with under {frame_bytes} bytes of stack left to \
             save its registers)",
            core.id()
        );
        end_with(&mut core, frame, reason);
        return;
    }
    process.note_stack_mapped(stack.mapped_bytes());
    // SAFETY: `save_at..save_at + frame_bytes` lies in the process's own stack below its stack
    // pointer (unused by it), and the process cannot run until this frame is consumed.
    unsafe { core::ptr::copy_nonoverlapping(frame as *const TrapFrame, save_at as *mut TrapFrame, 1) };
    process_local.preempted_frame = NonNull::new(save_at as *mut TrapFrame);
    local.pending = Pending::Preempted;
    bump(&me.stats.preemptions);
    // SAFETY: `frame` is this exception's frame, taken while the process ran; the scheduler
    // context was saved when it started the process.
    unsafe { context::end_turn_from_exception(frame, &local.context) };
}

/// Whether a process's crash (a panic, a fault) prints its report and backtrace.
static CRASH_REPORTS: AtomicBool = AtomicBool::new(true);

/// Turns the console reports of processes' crashes (a panic, a fault: the `ended:` line and its
/// backtrace) on or off, for all processes, and returns the previous setting; on at boot. As
/// Erlang's logger level for crash reports: a supervisor that restarts workers by the thousand
/// turns them off. The crash itself is the same (the reason reaches links and monitors; the
/// `faults` counter counts it), and the kernel's own panics always print.
pub fn set_crash_reports(on: bool) -> bool {
    // ORDERING: Relaxed: a setting read on its own.
    CRASH_REPORTS.swap(on, Ordering::Relaxed)
}

fn crash_reports() -> bool {
    // ORDERING: Relaxed, as in `set_crash_reports`.
    CRASH_REPORTS.load(Ordering::Relaxed)
}

/// The reason a process ends with when a second end (`reason`: a fault, no room to be preempted)
/// stops its unwind short: the one it was unwinding for. Its own `exit(reason)`'s is lost with
/// the unwind's payload, so that one ends with the second end's.
fn unwinding_reason(process: &process::Process, cause: Unwinding, reason: ExitReason) -> ExitReason {
    match cause {
        Unwinding::Panic => ExitReason::Panic,
        Unwinding::Requested => process.shared.lock_irqs_masked().exit_reason(),
        Unwinding::Own => reason,
    }
}

/// Ends the running process, whose unwind for `cause` a second end (`reason`, `why`: a fault,
/// no room to be preempted) stopped short. Its end was reported when the unwind began (a
/// panic's line, say) and it ends with that reason; the line printed here is not a second
/// `ended:` but says why the unwind stopped, and that what it still held is counted.
fn end_stopped_unwind(
    core: &mut OnCore,
    frame: &mut TrapFrame,
    pid: Pid,
    cause: Unwinding,
    reason: ExitReason,
    why: core::fmt::Arguments<'_>,
) {
    let ending = unwinding_reason(process::slot(pid.index), cause, reason);
    if crash_reports() {
        beamcore_smp::println!(
            "process {pid} on core {}: {reason} while unwinding ({why}); what it still held is not reclaimed",
            core.id()
        );
    }
    end_with(core, frame, ending);
}

/// Ends the running process's turn from an exception, with `reason`.
fn end_with(core: &mut OnCore, frame: &mut TrapFrame, reason: ExitReason) {
    bump(&core.scheduler().stats.faults);
    let local = core.local();
    local.pending = Pending::Exit(reason);
    // SAFETY: as in `on_tick`: this exception interrupted the running process.
    unsafe { context::end_turn_from_exception(frame, &local.context) };
}

/// A synchronous exception in a process (exception context). A translation fault just below
/// the mapped part of its stack grows the stack, and the process goes on; any other ends it
/// with the reason the fault implies. Returns true either way; false if no process was running,
/// or if the fault came from kernel work on the process's behalf (IRQs masked) that growing
/// does not resolve: both are the kernel's faults, which the caller reports as fatal.
pub fn on_process_fault(frame: &mut TrapFrame, syndrome: &Syndrome) -> bool {
    if !context::interrupted_process(frame) {
        return false;
    }
    let mut core = OnCore::enter_from_fault();
    // Read without borrowing `CoreLocal`: the process may have faulted in kernel code that holds
    // its core's `CoreLocal` borrowed (see `OnCore::enter_from_fault`), and after a stack growth it
    // goes on using it.
    let Some(slot) = core.scheduler().current_unborrowed() else { return false };
    let process = process::slot(slot);
    let far = syndrome.far as usize;
    // SAFETY: the interrupted process runs on this core, which owns its `ProcessLocal`; its stack is
    // not in use while its fault is handled.
    let stack = unsafe { process.local().stack.as_mut() };
    let mut out_of_memory = false;
    // With IRQs masked it was in kernel code (SPSR.I, bit 7: IRQs masked where it faulted),
    // perhaps holding a lock or this core's scheduler state.
    let kernel_code = frame.spsr & (1 << 7) != 0;
    if let Some(stack) =
        stack.filter(|s| syndrome.is_data_abort_here() && syndrome.is_translation_fault() && s.can_grow_to(far))
    {
        // Just below the mapped part of its stack: map it, and the access is retried on return.
        // Kernel code may take the last pages rather than be ended there.
        match stack.grow_to(far, kernel_code) {
            Ok(()) => {
                process.note_stack_mapped(stack.mapped_bytes());
                return true;
            }
            Err(_) => out_of_memory = true,
        }
    }
    if kernel_code {
        // Kernel work on the process's stack faulted and no growth resolves it. It may hold a
        // lock (the heap's, a process's, the console's) that every core would then wait for
        // forever if the process were ended here, so this is the kernel's own fault: reported
        // as one, with the `PANIC` line, by a path that takes no lock this core may hold. (Kernel
        // work starts with room made below it, `cpu::irq_save`, so only a kernel defect that
        // uses more than `KERNEL_STACK_ROOM_BYTES` gets here.)
        return false;
    }
    // SAFETY: as above; a copy of its stack's guard range is taken.
    let guard = unsafe { process.local().stack.as_ref() }.map(|s| s.guard());
    let in_guard = guard.is_some_and(|g| g.contains(&far));
    let reason = if out_of_memory {
        ExitReason::OutOfMemory
    } else if syndrome.is_data_abort_here() && in_guard {
        ExitReason::StackOverflow
    } else {
        ExitReason::Fault { class: syndrome.class_bits(), address: syndrome.fault_address(frame) }
    };
    let pid = Pid { index: slot, generation: process.shared.lock().generation };
    let backtrace = Backtrace::of_exception(frame);
    // SAFETY: as above; a copy is read.
    let unwinding = unsafe { process.local().unwinding };
    if let Some(cause) = unwinding {
        let elr = frame.elr;
        end_stopped_unwind(&mut core, frame, pid, cause, reason, format_args!("ELR={elr:#x}"));
        return true;
    }
    if !crash_reports() {
    } else {
        beamcore_smp::println!(
            "process {pid} on core {} ended: {reason} (ELR={:#x})\n{backtrace}",
            core.id(),
            frame.elr
        );
    }
    end_with(&mut core, frame, reason);
    true
}

/// A Rust panic (panic handler context). If it happened in a process's own code (on its stack,
/// IRQs unmasked, so no kernel lock or per-core state is held), reports it and ends that process
/// with `ExitReason::Panic`, unwinding its stack first (`turn/unwind.rs`), and never returns. Returns
/// only when the panic is the kernel's own (or the program's main process's), which the caller
/// treats as fatal: the kernel never unwinds.
///
/// The message is the program's: its `Display` may itself panic or run out of stack. It is
/// formatted here first, on the process's stack with IRQs unmasked and no lock held, so either
/// is a new panic or a stack overflow of this same process, which ends it with its own line,
/// never a fault under a kernel lock.
pub fn on_panic(message: core::fmt::Arguments<'_>, backtrace: &Backtrace) {
    if cpu::irqs_masked() || !context::running_on_process_stack() {
        return;
    }
    let message = LineBuffer::format(message);
    // From here to the exit IRQs stay masked: no preemption can end the process in between
    // (with a second `ended:` line), and the room the kernel needs was made by the mask.
    let mut core = OnCore::enter();
    let id = core.id();
    let local = core.local();
    let Some(slot) = local.current else { return };
    let process = process::slot(slot);
    // ORDERING: Relaxed: the running process's own generation, set before it ran.
    let pid = Pid { index: slot, generation: process.generation_hint.load(Ordering::Relaxed) };
    if is_program_main(pid) {
        // The program itself failed: that ends the run, as a kernel panic does.
        return;
    }
    // SAFETY: this process runs here and nothing else holds its `ProcessLocal`; a copy is read.
    let unwinding = unsafe { process.local().unwinding };
    // A destructor panicked during the unwind: no second unwind, what is left is counted, and
    // the process ends with the reason it was unwinding for (a kill stays a kill).
    let ending = unwinding.map_or(ExitReason::Panic, |cause| unwinding_reason(process, cause, ExitReason::Panic));
    // Every argument is the kernel's now: the report is formatted on the kernel stack.
    if !crash_reports() {
    } else if unwinding == Some(Unwinding::Panic) {
        // Its `ended: panic` line was printed when the unwind began: one end, one such line.
        beamcore_smp::console::write_kernel_line(format_args!(
            "process {pid} on core {id}: panic while unwinding: {}; what it still held is not reclaimed\n{backtrace}",
            message.as_str()
        ));
    } else if unwinding.is_some() {
        beamcore_smp::console::write_kernel_line(format_args!(
            "process {pid} on core {id} ended: {ending} (panic while unwinding: {}; what it still held is not \
             reclaimed)\n{backtrace}",
            message.as_str()
        ));
    } else {
        beamcore_smp::console::write_kernel_line(format_args!(
            "process {pid} on core {id} ended: panic: {}\n{backtrace}",
            message.as_str()
        ));
    }
    drop(message);
    bump(&core.scheduler().stats.faults);
    end_unwinding(core, Why::Given(ending))
}
