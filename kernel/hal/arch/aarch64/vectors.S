// EL1 exception vector table and the common save/restore path.
//
// Every exception saves the whole interrupted context on the EL1 stack in a `TrapFrame`
// (kernel/hal/arch/aarch64/exception.rs): x0-x30, SP_EL0, ELR, SPSR, FPCR, FPSR and q0-q31. The
// FP/SIMD registers are part of it because Rust code on this target uses them freely, and an
// interrupt must hand the interrupted code its registers back unchanged.
//
// Layout (offsets in bytes): 0 x0..x30 | 248 sp_el0 | 256 elr | 264 spsr | 272 fpcr | 280 fpsr
//                            | 288 q0..q31 | 800 end (TRAP_FRAME_BYTES)

.equ TRAP_FRAME_BYTES, 800
.equ FP_OFFSET, 288

// One vector: reserve the frame, save x0/x1, pass the vector's kind in x0.
.macro vector kind
.balign 0x80
    sub     sp, sp, #TRAP_FRAME_BYTES
    stp     x0, x1, [sp, #0]
    mov     x0, #\kind
    b       trap_common
.endm

.section .text.vectors, "ax"
.balign 0x800
.global exception_vectors
exception_vectors:
    // Current EL with SP_EL0 (kind 0..3), current EL with SP_ELx (4..7),
    // lower EL AArch64 (8..11), lower EL AArch32 (12..15); each: sync, irq, fiq, serror.
    vector 0
    vector 1
    vector 2
    vector 3
    vector 4
    vector 5
    vector 6
    vector 7
    vector 8
    vector 9
    vector 10
    vector 11
    vector 12
    vector 13
    vector 14
    vector 15

trap_common:
    stp     x2, x3, [sp, #16]
    stp     x4, x5, [sp, #32]
    stp     x6, x7, [sp, #48]
    stp     x8, x9, [sp, #64]
    stp     x10, x11, [sp, #80]
    stp     x12, x13, [sp, #96]
    stp     x14, x15, [sp, #112]
    stp     x16, x17, [sp, #128]
    stp     x18, x19, [sp, #144]
    stp     x20, x21, [sp, #160]
    stp     x22, x23, [sp, #176]
    stp     x24, x25, [sp, #192]
    stp     x26, x27, [sp, #208]
    stp     x28, x29, [sp, #224]
    mrs     x1, sp_el0
    stp     x30, x1, [sp, #240]
    mrs     x1, elr_el1
    mrs     x2, spsr_el1
    stp     x1, x2, [sp, #256]
    mrs     x1, fpcr
    mrs     x2, fpsr
    stp     x1, x2, [sp, #272]
    add     x1, sp, #FP_OFFSET
    stp     q0, q1, [x1, #0]
    stp     q2, q3, [x1, #32]
    stp     q4, q5, [x1, #64]
    stp     q6, q7, [x1, #96]
    stp     q8, q9, [x1, #128]
    stp     q10, q11, [x1, #160]
    stp     q12, q13, [x1, #192]
    stp     q14, q15, [x1, #224]
    stp     q16, q17, [x1, #256]
    stp     q18, q19, [x1, #288]
    stp     q20, q21, [x1, #320]
    stp     q22, q23, [x1, #352]
    stp     q24, q25, [x1, #384]
    stp     q26, q27, [x1, #416]
    stp     q28, q29, [x1, #448]
    stp     q30, q31, [x1, #480]
    // A frame record below the frame, [interrupted x29, ELR], and x29 at it: a walk of the
    // frame records from the handler goes on into the interrupted code's chain.
    ldr     x1, [sp, #256]
    stp     x29, x1, [sp, #-16]!
    mov     x29, sp
    add     x1, sp, #16
    bl      exception_dispatch
    add     sp, sp, #16
    // Fall through: return to the (possibly modified) frame.
.global trap_return
trap_return:
    add     x1, sp, #FP_OFFSET
    ldp     q0, q1, [x1, #0]
    ldp     q2, q3, [x1, #32]
    ldp     q4, q5, [x1, #64]
    ldp     q6, q7, [x1, #96]
    ldp     q8, q9, [x1, #128]
    ldp     q10, q11, [x1, #160]
    ldp     q12, q13, [x1, #192]
    ldp     q14, q15, [x1, #224]
    ldp     q16, q17, [x1, #256]
    ldp     q18, q19, [x1, #288]
    ldp     q20, q21, [x1, #320]
    ldp     q22, q23, [x1, #352]
    ldp     q24, q25, [x1, #384]
    ldp     q26, q27, [x1, #416]
    ldp     q28, q29, [x1, #448]
    ldp     q30, q31, [x1, #480]
    ldp     x1, x2, [sp, #272]
    msr     fpcr, x1
    msr     fpsr, x2
    ldp     x1, x2, [sp, #256]
    msr     elr_el1, x1
    msr     spsr_el1, x2
    ldp     x30, x1, [sp, #240]
    msr     sp_el0, x1
    ldp     x0, x1, [sp, #0]
    ldp     x2, x3, [sp, #16]
    ldp     x4, x5, [sp, #32]
    ldp     x6, x7, [sp, #48]
    ldp     x8, x9, [sp, #64]
    ldp     x10, x11, [sp, #80]
    ldp     x12, x13, [sp, #96]
    ldp     x14, x15, [sp, #112]
    ldp     x16, x17, [sp, #128]
    ldp     x18, x19, [sp, #144]
    ldp     x20, x21, [sp, #160]
    ldp     x22, x23, [sp, #176]
    ldp     x24, x25, [sp, #192]
    ldp     x26, x27, [sp, #208]
    ldp     x28, x29, [sp, #224]
    add     sp, sp, #TRAP_FRAME_BYTES
    eret
