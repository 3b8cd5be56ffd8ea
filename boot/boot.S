// beamcore entry: the first instructions every core executes.
//
// The boot core enters at `_start` (QEMU virt: EL1, or EL2 with virtualization=on; Pi 4: EL2),
// with x0 = device tree address or 0. Entry at EL3 is refused (see `el3_refuse`): beamcore has
// no secure-world set-up (SCR_EL3, GIC security groups, PSCI) to drop from EL3 with, and a loader
// that enters at EL3 (QEMU virt,secure=on without firmware) starts every core at `_start` at once. Secondary cores enter at `_secondary_start`, either from
// PSCI CPU_ON (x0 = the context we passed: their logical core id) or from the Pi's spin table
// (x0 = 0; `_spin_table_start` derives the id from MPIDR.Aff0).
//
// Everything here runs with the MMU and caches off and without a stack until `sp` is set;
// Rust is reached as soon as there is a stack, FP/SIMD access and exception vectors.
//
// Caches. With the data cache off, stores go straight to RAM and loads read RAM, but the
// caches may still hold lines for the same addresses: dirty ones a loader left (which could be
// written back over what we write), and, once another core runs with its caches on, clean
// copies it fetched speculatively (which would hide what we wrote once our caches are on).
// Like Linux's head.S we invalidate to the point of coherency what is written with caches off,
// before the writes (dirty leftovers) and again before the caches go on (stale copies):
//   - `_start`, before anything is written: .bss and every core's boot stack
//     [__bss_start, __boot_stacks_end), below;
//   - `mmu::enable_this_core`, just before SCTLR_EL1.C is set, in the same asm block: on the
//     boot core [__data_start, top of its boot stack) (.data, .bss with the page tables built
//     there, its stack); on a secondary its own boot stack, the only memory it writes with its
//     caches off.
//
// Constants arrive from Rust as assembler symbols (see boot/lib.rs):
//   BOOT_STACK_STRIDE  bytes per core in the boot stack area (stack + guard page)
//   MAX_CORES          how many stacks the area holds

.section .text.boot, "ax"

// Drop from EL2 to EL1 if entered at EL2; leaves the entry EL in \el_reg. Clobbers x9.
// Entered at EL3, branches to \el3_target instead (and never drops).
.macro drop_to_el1 el_reg, el3_target
    mrs     \el_reg, CurrentEL
    lsr     \el_reg, \el_reg, #2
    cmp     \el_reg, #3
    b.eq    \el3_target
    cmp     \el_reg, #2
    b.ne    1f
    // EL1 runs AArch64; nothing else of EL2 (no traps, no stage-2).
    mov     x9, #(1 << 31)
    msr     hcr_el2, x9
    // EL1 may read the physical counter and program the physical timer; no virtual offset.
    mrs     x9, cnthctl_el2
    orr     x9, x9, #3
    msr     cnthctl_el2, x9
    msr     cntvoff_el2, xzr
    // EL1 reads of MIDR/MPIDR return these: make them the real values.
    mrs     x9, midr_el1
    msr     vpidr_el2, x9
    mrs     x9, mpidr_el1
    msr     vmpidr_el2, x9
    // Do not trap FP/SIMD to EL2 (CPTR_EL2.TFP = 0; RES1 bits set).
    mov     x9, #0x33ff
    msr     cptr_el2, x9
    // GICv3 CPU interface: let EL1 use the system registers (ICC_SRE_EL2.SRE|Enable), only if
    // the core has the system-register interface (ID_AA64PFR0_EL1.GIC != 0).
    mrs     x9, id_aa64pfr0_el1
    ubfx    x9, x9, #24, #4
    cbz     x9, 2f
    mrs     x9, S3_4_C12_C9_5
    mov     x10, #0x9
    orr     x9, x9, x10
    msr     S3_4_C12_C9_5, x9
    // ORDERING: ISB: the ICC_SRE_EL2 write must take effect before EL1 accesses its GIC
    // system registers (GICv3: SRE changes need a context synchronisation event).
    isb
2:
    // SCTLR_EL1 to its architectural RES1 bits: MMU and caches off until Rust turns them on.
    ldr     x9, =0x30d00800
    msr     sctlr_el1, x9
    // Return to EL1h with D, A, I, F masked.
    mov     x9, #0x3c5
    msr     spsr_el2, x9
    adr     x9, 1f
    msr     elr_el2, x9
    eret
1:
.endm

// FP/SIMD on at EL1 (CPACR_EL1.FPEN = 0b11): Rust code on this target uses NEON registers.
.macro enable_fp
    mov     x9, #(3 << 20)
    msr     cpacr_el1, x9
    // ORDERING: ISB: CPACR_EL1.FPEN must take effect before the first FP/SIMD instruction
    // (Rust code uses NEON registers), or it traps.
    isb
.endm

// Invalidates the data cache lines covering [\start, \end) (symbols) to the point of coherency,
// line by line at the smallest data cache line size (4 << CTR_EL0.DminLine bytes), then waits
// for the invalidation to complete. Clobbers x1-x4.
.macro dcache_invalidate_range start, end
    adrp    x1, \start
    add     x1, x1, :lo12:\start
    adrp    x2, \end
    add     x2, x2, :lo12:\end
    mrs     x3, ctr_el0
    ubfx    x3, x3, #16, #4
    mov     x4, #4
    lsl     x3, x4, x3
    sub     x4, x3, #1
    bic     x1, x1, x4
5:  dc      ivac, x1
    add     x1, x1, x3
    cmp     x1, x2
    b.lo    5b
    // ORDERING: DSB SY: the invalidation must complete before the stores that follow (the
    // .bss zeroing), or a dirty line a loader left could still be written back over them.
    dsb     sy
.endm

// sp = top of the boot stack of core \id_reg. Clobbers x9, x10, x11.
.macro set_boot_stack id_reg
    adrp    x9, __boot_stacks_start
    add     x9, x9, :lo12:__boot_stacks_start
    add     x10, \id_reg, #1
    ldr     x11, =BOOT_STACK_STRIDE
    madd    x9, x10, x11, x9
    mov     sp, x9
.endm

.macro set_vectors
    adrp    x9, exception_vectors
    add     x9, x9, :lo12:exception_vectors
    msr     vbar_el1, x9
    // ORDERING: ISB: VBAR_EL1 must take effect before an exception can be taken in Rust code,
    // or it vectors to the old (unset) base.
    isb
.endm

.global _start
_start:
    // The outermost frame of the boot core: its unwind info says there is no caller (x30
    // undefined), so a debugger's backtrace ends here; x29 = 0 ends the kernel's own.
    .cfi_startproc
    .cfi_undefined x30
    mov     x19, x0                 // device tree address (or 0 / ATAGs)
    drop_to_el1 x20, el3_refuse     // x20 = entry EL
    enable_fp
    mov     x21, #0
    set_boot_stack x21
    // No dirty lines a loader left may be written back over .bss or the boot stacks once we
    // write them (see "Caches" above).
    dcache_invalidate_range __bss_start, __boot_stacks_end
    // Zero .bss once, on the boot core, before any Rust code runs.
    adrp    x1, __bss_start
    add     x1, x1, :lo12:__bss_start
    adrp    x2, __bss_end
    add     x2, x2, :lo12:__bss_end
3:  cmp     x1, x2
    b.hs    4f
    stp     xzr, xzr, [x1], #16
    b       3b
4:  set_vectors
    mov     x0, x19
    mov     x1, x20
    mov     x29, #0                 // the outermost frame: backtraces end here
    bl      boot_core_entry
    b       park
    .cfi_endproc

// PSCI CPU_ON entry: x0 = logical core id (the context argument).
.global _secondary_start
_secondary_start:
    .cfi_startproc
    .cfi_undefined x30
    mov     x19, x0
    drop_to_el1 x20, park           // at EL3 only `_start`'s reporting core says why
    enable_fp
    ldr     x9, =MAX_CORES
    cmp     x19, x9
    b.hs    park
    set_boot_stack x19
    set_vectors
    mov     x0, x19
    mov     x1, x20
    mov     x29, #0
    bl      secondary_core_entry
    b       park
    .cfi_endproc

// Spin-table entry (Pi 4): logical core id = MPIDR_EL1.Aff0.
.global _spin_table_start
_spin_table_start:
    mrs     x0, mpidr_el1
    and     x0, x0, #0xff
    b       _secondary_start

// Entered at EL3: every core may be here at once (QEMU virt,secure=on starts them all at
// `_start`), .bss is not zeroed and no lock works with the MMU off. So exactly one core reports,
// chosen without any shared memory: the one whose MPIDR affinity (Aff3.Aff2.Aff1.Aff0) is
// 0.0.0.0. Every other core parks. The reporting core gets core 0's boot stack (no other core
// uses it: they park before touching memory) and FP/SIMD untrapped at EL3 (CPTR_EL3 = 0; Rust
// code may use NEON registers), then `el3_entry_refused` prints why and ends the run.
el3_refuse:
    mrs     x9, mpidr_el1
    ubfx    x10, x9, #0, #24        // Aff2.Aff1.Aff0
    ubfx    x11, x9, #32, #8        // Aff3
    orr     x10, x10, x11
    cbnz    x10, park
    msr     cptr_el3, xzr
    // ORDERING: ISB: the write to CPTR_EL3 must take effect before the first FP/SIMD
    // instruction of the Rust code below, or it would still trap.
    isb
    mov     x21, #0
    set_boot_stack x21
    bl      el3_entry_refused
    b       park

park:
    wfe
    b       park

.ltorg
