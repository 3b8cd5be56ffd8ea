// Context switches between a core's scheduler and its processes.
//
// The scheduler runs on the core's boot stack with SPSel = 1 (SP_EL1); processes run at EL1
// with SPSel = 0, on their own stacks (SP_EL0). Exceptions always switch to SP_EL1, so a
// process that overflows into its guard page faults onto the scheduler's stack, which is
// intact, and a trap frame for a preempted process lands below the scheduler's suspended frame.
//
// A voluntary switch saves only what AAPCS64 says a callee must preserve: x19-x28, fp, lr, sp
// and d8-d15 (the low halves of v8-v15). Layout of `Context` (kernel/arch/aarch64/context.rs):
//   0 x19 x20 | 16 x21 x22 | 32 x23 x24 | 48 x25 x26 | 64 x27 x28 | 80 x29 x30 | 96 sp
//   104 d8 d9 | 120 d10 d11 | 136 d12 d13 | 152 d14 d15 | 168 end

.macro save_callee_saved ctx
    stp     x19, x20, [\ctx, #0]
    stp     x21, x22, [\ctx, #16]
    stp     x23, x24, [\ctx, #32]
    stp     x25, x26, [\ctx, #48]
    stp     x27, x28, [\ctx, #64]
    stp     x29, x30, [\ctx, #80]
    mov     x9, sp
    str     x9, [\ctx, #96]
    stp     d8, d9, [\ctx, #104]
    stp     d10, d11, [\ctx, #120]
    stp     d12, d13, [\ctx, #136]
    stp     d14, d15, [\ctx, #152]
.endm

.macro load_callee_saved_except_sp ctx
    ldp     x19, x20, [\ctx, #0]
    ldp     x21, x22, [\ctx, #16]
    ldp     x23, x24, [\ctx, #32]
    ldp     x25, x26, [\ctx, #48]
    ldp     x27, x28, [\ctx, #64]
    ldp     x29, x30, [\ctx, #80]
    ldp     d8, d9, [\ctx, #104]
    ldp     d10, d11, [\ctx, #120]
    ldp     d12, d13, [\ctx, #136]
    ldp     d14, d15, [\ctx, #152]
.endm

.section .text.context, "ax"

// switch_to_process(scheduler: *mut Context, process: *const Context)
// Scheduler side, SPSel = 1, IRQs masked. Returns when the process switches back.
.global context_switch_to_process
context_switch_to_process:
    save_callee_saved x0
    load_callee_saved_except_sp x1
    ldr     x9, [x1, #96]
    msr     spsel, #0
    mov     sp, x9
    ret

// switch_to_scheduler(process: *mut Context, scheduler: *const Context)
// Process side, SPSel = 0, IRQs masked. Returns when the scheduler runs this process again.
.global context_switch_to_scheduler
context_switch_to_scheduler:
    save_callee_saved x0
    msr     spsel, #1
    load_callee_saved_except_sp x1
    ldr     x9, [x1, #96]
    mov     sp, x9
    ret

// switch_from_process(process: *mut Context, scheduler: *const Context)
// Process side, SPSel = 0, IRQs masked. Saves the process, moves onto the scheduler's stack
// below the loop's suspended frame (its registers are in its Context, so that stack is free
// there) and asks `next_turn_from_process` (Rust) what runs next: x0 = 0, the scheduler loop
// (resumed as if its switch to a process had returned); 1, the process whose saved Context is
// at x1; 2, the preempted process whose trap frame is at x1 (copied onto this stack, then the
// exception return). Returns when something resumes this process.
.global context_switch_from_process
context_switch_from_process:
    save_callee_saved x0
    msr     spsel, #1
    ldr     x9, [x1, #96]
    mov     sp, x9
    mov     x19, x1
    // No caller's frame record on this stack: backtraces from the call below end here.
    mov     x29, #0
    bl      next_turn_from_process
    cbz     x0, 2f
    cmp     x0, #1
    b.ne    3f
    load_callee_saved_except_sp x1
    ldr     x9, [x1, #96]
    msr     spsel, #0
    mov     sp, x9
    ret
2:  mov     x9, x19
    load_callee_saved_except_sp x9
    ldr     x10, [x9, #96]
    mov     sp, x10
    ret
3:  sub     sp, sp, #800
    mov     x2, sp
    mov     x3, #50
4:  ldp     x4, x5, [x1], #16
    stp     x4, x5, [x2], #16
    subs    x3, x3, #1
    b.ne    4b
    b       trap_return

// resume_preempted(scheduler: *mut Context, frame: *const TrapFrame)
// Scheduler side: saves the scheduler like a switch, copies the preempted process's trap frame
// onto this stack and leaves through the exception return path, which restores every register
// of the process (SPSR says EL1t: SP_EL0 comes back from the frame).
.global context_resume_preempted
context_resume_preempted:
    save_callee_saved x0
    sub     sp, sp, #800
    mov     x2, sp
    mov     x3, #50
1:  ldp     x4, x5, [x1], #16
    stp     x4, x5, [x2], #16
    subs    x3, x3, #1
    b.ne    1b
    b       trap_return

// Where an exception "returns" when it ends the running process's turn (preemption or a
// fatal fault): x0 = the scheduler's Context; continue in the scheduler as if its
// context_switch_to_process had returned.
.global context_return_to_scheduler
context_return_to_scheduler:
    load_callee_saved_except_sp x0
    ldr     x9, [x0, #96]
    mov     sp, x9
    ret

// call_on_kernel_stack(function: extern "C" fn(*mut u8), argument: *mut u8)
// Process side (SPSel = 0), IRQs masked: runs function(argument) on this core's SP_EL1, below
// the suspended scheduler's frames (SP_EL1 still holds the scheduler's stack pointer from its
// switch to this process; everything below it is free), then returns on the process stack.
// With IRQs masked nothing else can use SP_EL1 meanwhile: an interrupt would, and a fault in
// `function` is the kernel's own (taken on SP_EL1 below this frame). `msr spsel` writes
// PSTATE.SP, which takes effect from the next instruction: no barrier (as in the switches above).
.global context_call_on_kernel_stack
context_call_on_kernel_stack:
    stp     x29, x30, [sp, #-16]!
    mov     x29, sp
    msr     spsel, #1
    mov     x9, x0
    mov     x0, x1
    blr     x9
    msr     spsel, #0
    ldp     x29, x30, [sp], #16
    ret

// First entry of a new process (the lr of its initial Context): x19 holds its slot index.
// The outermost frame of every process: x29 = 0 ends the kernel's backtraces here, and the
// unwind info says there is no caller (x30 undefined), which ends gdb's.
.global context_process_start
context_process_start:
    .cfi_startproc
    .cfi_undefined x30
    mov     x0, x19
    mov     x29, #0
    bl      process_entry
1:  wfe
    b       1b
    .cfi_endproc
