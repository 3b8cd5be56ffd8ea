//! Saved execution contexts and the switches between a core's scheduler and its processes
//! (context.S).

use super::exception::TrapFrame;
use crate::ids::Slot;

// The trap frame's size reaches the copy loops in context.S from the type itself, so the copy
// can never disagree with what vectors.S saves (its size is asserted against TrapFrame there).
core::arch::global_asm!(
    include_str!("context.S"),
    TRAP_FRAME_BYTES = const core::mem::size_of::<TrapFrame>(),
    TRAP_FRAME_PAIRS = const core::mem::size_of::<TrapFrame>() / 16,
);
const _: () =
    assert!(core::mem::size_of::<TrapFrame>().is_multiple_of(16), "context.S copies the frame in 16-byte pairs");

/// Where a switched-out context is: its stack pointer, below which the switch pushed the
/// AAPCS64 callee-saved registers (x19-x28, fp, lr, d8-d15: [`SAVED_FRAME_BYTES`], see
/// context.S). One word, so a process control block carries 8 bytes of context, not 168.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Context {
    sp: u64,
}

/// Bytes a voluntary switch pushes on the stack it leaves (`SAVED_FRAME_BYTES` in context.S).
pub const SAVED_FRAME_BYTES: usize = 160;
/// Where x19, x29 and x30 are in that frame (context.S's layout).
const SAVED_X19: usize = 0;
const SAVED_X29: usize = 80;
const SAVED_X30: usize = 88;

unsafe extern "C" {
    fn context_switch_to_process(scheduler: *mut Context, process: *const Context);
    fn context_switch_from_process(process: *mut Context, scheduler: *const Context);
    fn context_leave_process(unused: usize, scheduler: *const Context) -> !;
    fn context_resume_preempted(scheduler: *mut Context, frame: *const TrapFrame);
    fn context_return_to_scheduler();
    fn context_process_start();
    fn context_call_on_kernel_stack(function: extern "C" fn(*mut u8), argument: *mut u8);
}

/// SPSR.M for EL1 with SP_EL0 ("EL1t"): how a trap frame shows that a process was running.
pub const SPSR_EL1T: u64 = 0b0100;
/// SPSR for resuming the scheduler from an exception: EL1h, D, A, I, F masked.
const SPSR_EL1H_MASKED: u64 = 0x3c5;

impl Context {
    /// No context yet, for statics.
    pub const ZERO: Context = Context { sp: 0 };

    /// Makes this the context of a process that has not run yet: it starts in
    /// `process_entry(slot)` on the stack whose top is `stack_top`. Writes only what the first
    /// switch's pop hands on that the start reads: x19 (the slot), fp (0, the end of
    /// backtraces) and lr (`context_process_start`), in a frame just below `stack_top`; the
    /// other registers it pops are never read by the new process.
    ///
    /// # Safety
    /// `[stack_top - SAVED_FRAME_BYTES, stack_top)` is mapped, writable, 16-byte aligned at
    /// `stack_top`, and the new process's own (nothing else uses it until the process runs).
    pub unsafe fn init_process(&mut self, stack_top: usize, slot: Slot) {
        let frame = stack_top - SAVED_FRAME_BYTES;
        // SAFETY: inside the frame, which the caller vouches for; aligned words.
        unsafe {
            ((frame + SAVED_X19) as *mut u64).write(u64::from(slot.get()));
            ((frame + SAVED_X29) as *mut u64).write(0);
            ((frame + SAVED_X30) as *mut u64).write(context_process_start as *const () as u64);
        }
        self.sp = frame as u64;
    }
}

/// Runs the process whose context is `process` until the core comes back to the scheduler.
///
/// # Safety
/// On the scheduler side (SPSel = 1) with IRQs masked; `process` is a context saved by
/// [`switch_from_process`] or made by [`Context::init_process`], whose stack is still allocated.
pub unsafe fn switch_to_process(scheduler: &mut Context, process: &Context) {
    // SAFETY: forwarded contract; the assembly saves exactly the callee-saved state.
    unsafe { context_switch_to_process(scheduler, process) }
}

/// What runs on a core once its process has given it up, as `next_turn_from_process` (the
/// scheduler's, called by [`switch_from_process`] on the scheduler's stack) answers: returned in
/// x0 and x1.
#[repr(C)]
pub struct Next {
    what: u64,
    at: u64,
}

impl Next {
    /// The scheduler loop, resumed as if its `switch_to_process` had returned.
    pub const LOOP: Next = Next { what: 0, at: 0 };

    /// The process whose context is `context` (saved by a switch, or made at spawn).
    pub fn saved(context: &Context) -> Next {
        Next { what: 1, at: context.sp }
    }

    /// The preempted process whose trap frame is at `frame` (on its own stack).
    pub fn preempted(frame: *const TrapFrame) -> Next {
        Next { what: 2, at: frame as u64 }
    }

    /// The preempted frame, if this resumes one (for a caller that switches itself).
    pub fn preempted_frame(&self) -> Option<*const TrapFrame> {
        (self.what == 2).then_some(self.at as *const TrapFrame)
    }

    /// The saved context, if this resumes one.
    pub fn saved_context(&self) -> Option<Context> {
        (self.what == 1).then_some(Context { sp: self.at })
    }
}

/// Gives the core up from a process and goes where `next_turn_from_process` says, without
/// passing through the scheduler loop when it names another process; returns when something
/// resumes this process.
///
/// # Safety
/// On a process (SPSel = 0) with IRQs masked; `scheduler` is this core's scheduler context,
/// saved by `switch_to_process` (the loop is suspended in it); `next_turn_from_process` returns
/// a [`Next`] whose context or frame belongs to a process this core may resume.
pub unsafe fn switch_from_process(process: *mut Context, scheduler: *const Context) {
    // SAFETY: forwarded contract.
    unsafe { context_switch_from_process(process, scheduler) }
}

/// Gives the core up for good from a process that exits, as [`switch_from_process`] does but
/// saving none of its registers: nothing resumes it.
///
/// # Safety
/// As [`switch_from_process`]; the process never runs again (its turn ends in an exit).
pub unsafe fn leave_process(scheduler: *const Context) -> ! {
    // SAFETY: forwarded contract; the first argument is not read.
    unsafe { context_leave_process(0, scheduler) }
}

/// Resumes a preempted process from its saved trap frame; returns when it switches back.
///
/// # Safety
/// As [`switch_to_process`]; `frame` is a frame saved by [`end_turn_from_exception`] that
/// lies on the process's own stack (it is copied before use).
pub unsafe fn resume_preempted(scheduler: &mut Context, frame: *const TrapFrame) {
    // SAFETY: forwarded contract.
    unsafe { context_resume_preempted(scheduler, frame) }
}

/// True when the running code uses SP_EL0, which only processes do (the kernel, its scheduler
/// loops and exception handlers run on SP_EL1): tells a panic in a process from the kernel's.
pub fn running_on_process_stack() -> bool {
    use aarch64_cpu::registers::Readable;
    aarch64_cpu::registers::SPSel.get() == 0
}

/// Runs `f` with IRQs masked on this core's kernel stack (SP_EL1), also when called from a
/// process, and returns what it returns.
///
/// What touches the frame pool, the process region's tables or the free process slots runs
/// here. A process's stack grows by faulting, and the fault's handler takes frames: were that
/// code on the process stack, a fault in the middle of it (holding the pool's lock, say) would
/// deadlock or find the pool half-changed. On the kernel stack it cannot fault that way, and
/// with IRQs masked nothing else on this core interleaves with it.
pub fn on_kernel_stack<F: FnOnce() -> R, R>(f: F) -> R {
    let irq = super::cpu::irq_save();
    let result = if running_on_process_stack() {
        let mut call: (Option<F>, Option<R>) = (Some(f), None);
        extern "C" fn trampoline<F: FnOnce() -> R, R>(argument: *mut u8) {
            // SAFETY: `argument` is the `call` tuple below, alive and not otherwise borrowed
            // until `context_call_on_kernel_stack` returns.
            let (f, result) = unsafe { &mut *(argument as *mut (Option<F>, Option<R>)) };
            *result = f.take().map(|f| f());
        }
        // SAFETY: on a process (SPSel 0) with IRQs masked, as the routine requires; it calls
        // `trampoline` once with the pointer to `call` and returns.
        unsafe { context_call_on_kernel_stack(trampoline::<F, R>, (&raw mut call).cast()) };
        call.1.expect("the kernel-stack call ran")
    } else {
        f()
    };
    super::cpu::irq_restore(irq);
    result
}

/// True when the trap frame interrupted a process (EL1 with SP_EL0).
pub fn interrupted_process(frame: &TrapFrame) -> bool {
    frame.spsr & 0xf == SPSR_EL1T
}

/// Makes the current exception return into the scheduler instead of the interrupted process:
/// the scheduler continues as if its `switch_to_process` had returned.
///
/// # Safety
/// `frame` is the current exception's frame, taken while a process ran on this core, and
/// `scheduler` is this core's scheduler context saved by `switch_to_process`.
pub unsafe fn end_turn_from_exception(frame: &mut TrapFrame, scheduler: *const Context) {
    frame.elr = context_return_to_scheduler as *const () as u64;
    frame.spsr = SPSR_EL1H_MASKED;
    frame.x[0] = scheduler as u64;
}
