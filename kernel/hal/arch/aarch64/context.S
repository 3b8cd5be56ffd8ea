// Context switches between a core's scheduler and its processes.
//
// The scheduler runs on the core's boot stack with SPSel = 1 (SP_EL1); processes run at EL1
// with SPSel = 0, on their own stacks (SP_EL0). Exceptions always switch to SP_EL1, so a
// process that overflows into its guard page faults onto the scheduler's stack, which is
// intact, and a trap frame for a preempted process lands below the scheduler's suspended frame.
//
// A voluntary switch saves only what AAPCS64 says a callee must preserve: x19-x28, fp, lr and
// d8-d15 (the low halves of v8-v15), pushed on the stack being left, and that stack's pointer
// in its `Context` (kernel/hal/arch/aarch64/context.rs: one word, so a process control block holds
// 8 bytes of context, not 168). The frame, from the saved stack pointer up:
//   0 x19 x20 | 16 x21 x22 | 32 x23 x24 | 48 x25 x26 | 64 x27 x28 | 80 x29 x30
//   96 d8 d9 | 112 d10 d11 | 128 d12 d13 | 144 d14 d15 | 160 end (SAVED_FRAME_BYTES)
// A process's push may fault (its stack grows on demand): SPSel is still 0 then, so the fault
// is its own, handled as any fault below its mapped stack (context.rs: `switch_from_process`).

.equ SAVED_FRAME_BYTES, 160

.macro push_callee_saved
    sub     sp, sp, #SAVED_FRAME_BYTES
    stp     x19, x20, [sp, #0]
    stp     x21, x22, [sp, #16]
    stp     x23, x24, [sp, #32]
    stp     x25, x26, [sp, #48]
    stp     x27, x28, [sp, #64]
    stp     x29, x30, [sp, #80]
    stp     d8, d9, [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
.endm

.macro pop_callee_saved
    ldp     x19, x20, [sp, #0]
    ldp     x21, x22, [sp, #16]
    ldp     x23, x24, [sp, #32]
    ldp     x25, x26, [sp, #48]
    ldp     x27, x28, [sp, #64]
    ldp     x29, x30, [sp, #80]
    ldp     d8, d9, [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    add     sp, sp, #SAVED_FRAME_BYTES
.endm

.section .text.context, "ax"

// switch_to_process(scheduler: *mut Context, process: *const Context)
// Scheduler side, SPSel = 1, IRQs masked. Returns when the core comes back to the scheduler.
// SP_EL1 stays at the scheduler's saved frame while processes run: exceptions and kernel-stack
// calls use the stack below it.
.global context_switch_to_process
context_switch_to_process:
    push_callee_saved
    mov     x9, sp
    str     x9, [x0]
    ldr     x9, [x1]
    msr     spsel, #0
    mov     sp, x9
    pop_callee_saved
    ret

// hand_off: on the process's stack with SPSel = 0 and its registers saved (or not needed), x1
// the scheduler's Context: moves onto the scheduler's stack below its saved frame (everything
// below it is free), and asks `rust_function` (Rust) what runs next: x0 = 0, the scheduler loop
// (resumed as if its switch to a process had returned); 1, the process whose saved stack pointer
// is x1; 2, the preempted process whose trap frame is at x1 (copied onto this stack, then the
// exception return).
.macro hand_off rust_function
    msr     spsel, #1
    ldr     x9, [x1]
    mov     sp, x9
    mov     x19, x1
    // No caller's frame record on this stack: backtraces from the call below end here.
    mov     x29, #0
    bl      \rust_function
    cbz     x0, 2f
    cmp     x0, #1
    b.ne    3f
    msr     spsel, #0
    mov     sp, x1
    pop_callee_saved
    ret
2:  ldr     x9, [x19]
    mov     sp, x9
    pop_callee_saved
    ret
3:  sub     sp, sp, #{TRAP_FRAME_BYTES}
    mov     x2, sp
    mov     x3, #{TRAP_FRAME_PAIRS}
4:  ldp     x4, x5, [x1], #16
    stp     x4, x5, [x2], #16
    subs    x3, x3, #1
    b.ne    4b
    b       trap_return
.endm

// switch_from_process(process: *mut Context, scheduler: *const Context)
// Process side, SPSel = 0, IRQs masked. Saves the process and hands the core off (above) with
// `next_turn_from_process`. Returns when something resumes this process.
.global context_switch_from_process
context_switch_from_process:
    push_callee_saved
    mov     x9, sp
    str     x9, [x0]
    hand_off next_turn_from_process

// leave_process(_, scheduler: *const Context)
// The same without saving anything, for a process that exits, whose registers nobody reads
// again (its stack is freed once it is off it): hands off with `next_turn_after_exit`, which
// need not ask how the turn ended. x1 as above; never returns.
.global context_leave_process
context_leave_process:
    hand_off next_turn_after_exit

// resume_preempted(scheduler: *mut Context, frame: *const TrapFrame)
// Scheduler side: saves the scheduler like a switch, copies the preempted process's trap frame
// onto this stack and leaves through the exception return path, which restores every register
// of the process (SPSR says EL1t: SP_EL0 comes back from the frame) and SP_EL1 to the
// scheduler's saved frame.
.global context_resume_preempted
context_resume_preempted:
    push_callee_saved
    mov     x9, sp
    str     x9, [x0]
    sub     sp, sp, #{TRAP_FRAME_BYTES}
    mov     x2, sp
    mov     x3, #{TRAP_FRAME_PAIRS}
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
    ldr     x9, [x0]
    mov     sp, x9
    pop_callee_saved
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

// First entry of a new process (the x30 of the frame `Context::init_process` wrote): x19 holds
// its slot index.
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
