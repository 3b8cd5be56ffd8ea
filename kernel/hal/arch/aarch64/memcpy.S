// memcpy for the kernel and its processes, in place of compiler_builtins' portable one, which
// moves eight bytes per four instructions. Large copies are common here: the unwinder moves its
// register-rule rows (kilobytes each) by value dozens of times per unwind, and messages and
// stacks are copied whole. This loop moves 64 bytes per 10 instructions, and what is left
// under 64 bytes takes one step per bit of its length (a 40-byte message: 23 instructions in
// all, where a word loop takes 36).
//
// It only ever makes aligned accesses (8-byte words from 8-aligned addresses, bytes otherwise),
// because Rust code runs before the MMU is on, when all memory is Device memory and an
// unaligned access faults. So when source and destination differ in their low three address
// bits no word copy is possible and it copies bytes; Rust's own values never hit that case.
//
// Registers: x0 destination (returned unchanged), x1 source, x2 length; x3 destination cursor;
// x4-x11 data. All are caller-saved temporaries of the AAPCS64; x18 (the platform register)
// is not touched.

    .section .text.memcpy, "ax", %progbits
    .global memcpy
    .type   memcpy, %function
    .p2align 6
memcpy:
    mov     x3, x0
    // Both 8-aligned, the common case (Rust's values): straight to the words.
    orr     x4, x0, x1
    tst     x4, #7
    b.eq    .Lmemcpy_aligned
    cmp     x2, #16
    b.lo    .Lmemcpy_bytes
    eor     x4, x0, x1
    tst     x4, #7
    b.ne    .Lmemcpy_bytes
    // Bytes until both cursors are 8-aligned (at most seven; at least nine remain after).
.Lmemcpy_head:
    tst     x3, #7
    b.eq    .Lmemcpy_aligned
    ldrb    w4, [x1], #1
    strb    w4, [x3], #1
    sub     x2, x2, #1
    b       .Lmemcpy_head
.Lmemcpy_aligned:
    subs    x2, x2, #64
    b.lo    .Lmemcpy_tail
.Lmemcpy_block:
    ldp     x6, x7, [x1, #16]
    ldp     x8, x9, [x1, #32]
    ldp     x10, x11, [x1, #48]
    ldp     x4, x5, [x1], #64
    subs    x2, x2, #64
    stp     x6, x7, [x3, #16]
    stp     x8, x9, [x3, #32]
    stp     x10, x11, [x3, #48]
    stp     x4, x5, [x3], #64
    b.hs    .Lmemcpy_block
.Lmemcpy_tail:
    // x2 is the length left minus 64, so its low six bits are the length left (under 64):
    // one step per bit, largest first, every access aligned (the cursors are 8-aligned and
    // each step keeps them aligned for the smaller ones after it).
    tbz     x2, #5, 1f
    ldp     x4, x5, [x1], #16
    ldp     x6, x7, [x1], #16
    stp     x4, x5, [x3], #16
    stp     x6, x7, [x3], #16
1:  tbz     x2, #4, 2f
    ldp     x4, x5, [x1], #16
    stp     x4, x5, [x3], #16
2:  tbz     x2, #3, 3f
    ldr     x4, [x1], #8
    str     x4, [x3], #8
3:  tbz     x2, #2, 4f
    ldr     w4, [x1], #4
    str     w4, [x3], #4
4:  tbz     x2, #1, 5f
    ldrh    w4, [x1], #2
    strh    w4, [x3], #2
5:  tbz     x2, #0, .Lmemcpy_done
    ldrb    w4, [x1]
    strb    w4, [x3]
    ret
.Lmemcpy_bytes:
    cbz     x2, .Lmemcpy_done
.Lmemcpy_byte:
    ldrb    w4, [x1], #1
    strb    w4, [x3], #1
    subs    x2, x2, #1
    b.ne    .Lmemcpy_byte
.Lmemcpy_done:
    ret
    .size   memcpy, . - memcpy
