//! The running core: its identity, interrupt mask, sleep instructions and counter.

use aarch64_cpu::asm;
use aarch64_cpu::registers::{
    CNTFRQ_EL0, CNTPCT_EL0, CurrentEL, DAIF, MPIDR_EL1, Readable, SCTLR_EL1, TPIDR_EL1, TPIDRRO_EL0, Writeable,
};

/// The affinity fields of MPIDR_EL1 (Aff3 in bits 39:32, Aff2..Aff0 in bits 23:0).
pub const MPIDR_AFFINITY_MASK: u64 = 0xff_00ff_ffff;

/// Logical id of the running core (0 = boot core), kept in TPIDRRO_EL0: the kernel runs
/// nothing at EL0, so the register is free, and TPIDR_EL1 is left for [`per_core`].
#[inline(always)]
pub fn core_id() -> usize {
    TPIDRRO_EL0.get() as usize
}

/// Records the running core's logical id; done once per core during bring-up.
pub fn set_core_id(id: usize) {
    TPIDRRO_EL0.set(id as u64);
}

/// The running core's own data (the scheduler's, set by [`set_per_core`]), kept in TPIDR_EL1:
/// one register read instead of the core id, a bounds check and an index.
#[inline(always)]
pub fn per_core() -> usize {
    TPIDR_EL1.get() as usize
}

/// Records the address of the running core's own data; once per core, before [`per_core`].
pub fn set_per_core(address: usize) {
    TPIDR_EL1.set(address as u64);
}

/// This core's MPIDR affinity value.
pub fn mpidr() -> u64 {
    MPIDR_EL1.get() & MPIDR_AFFINITY_MASK
}

/// The exception level the kernel runs at.
pub fn current_el() -> u8 {
    CurrentEL.read(CurrentEL::EL) as u8
}

/// True when the MMU, data cache and instruction cache are all on for this core.
pub fn mmu_and_caches_on() -> bool {
    let sctlr = SCTLR_EL1.get();
    sctlr & 0b101 == 0b101 && sctlr & (1 << 12) != 0
}

/// Interrupt mask state saved by [`irq_save`].
#[derive(Clone, Copy)]
pub struct IrqState(u64);

impl IrqState {
    /// Whether IRQs were unmasked when it was saved: code that may be a process's own.
    pub fn was_unmasked(self) -> bool {
        self.0 & (1 << 7) == 0
    }
}

/// Masks IRQs on this core and returns the previous mask state.
///
/// Masking is where kernel work begins: what runs with IRQs masked may hold a lock or this
/// core's scheduler state, and must not fault. So when IRQs were unmasked (code that may be a
/// process's own), the stack [`KERNEL_STACK_ROOM_BYTES`] below the stack pointer is touched
/// first, before the mask: on a process's stack that maps the room (the stack grows on the
/// fault), or, if the stack has no such room left, ends the process with a stack overflow right
/// here, where it holds nothing. Kernel work on a process's stack then never meets the stack's
/// edge (docs/memory.md, "the stack's edge"). A nested mask touches nothing: the outer one has
/// made the room.
///
/// Masking and unmasking are compiler memory barriers (no `nomem`): the accesses they protect
/// must not be moved across them. (An interrupt handler touches the same per-core data; with
/// `nomem` the compiler was free to hoist a store above the mask, where the timer could see a
/// half-made decision — the cause of a lost process, found by the watchdog.)
#[inline(always)]
pub fn irq_save() -> IrqState {
    let daif: u64;
    // SAFETY: reads DAIF; if PSTATE.I was clear, loads (and discards) one word
    // KERNEL_STACK_ROOM_BYTES below SP, which lies in this stack's mapped part, the part it may
    // grow into, or its guard (every guard is at least a page, and the room is less: checked
    // below), so the load either succeeds or takes the stack-growth or stack-overflow fault the
    // process fault handler resolves; then sets PSTATE.I: only masks interrupts on this core.
    unsafe {
        core::arch::asm!(
            "mrs {daif}, daif",
            "tbnz {daif}, #7, 2f",
            "sub {probe}, sp, #{room}",
            "ldr {probe}, [{probe}]",
            "2:",
            "msr daifset, #2",
            daif = out(reg) daif,
            probe = out(reg) _,
            room = const KERNEL_STACK_ROOM_BYTES,
            options(nostack, preserves_flags),
        )
    };
    IrqState(daif)
}

/// Bytes of stack every stretch of kernel work with IRQs masked may use below the stack pointer
/// it started at ([`irq_save`] makes sure they are there). The stack-edge test (tests/91) makes
/// kernel calls (spawn, monitor, send, receive with a timeout, yield, exit, a panic's report)
/// at every margin from 4 KiB to 0 left: it passes with this room cut to 384 bytes and fails
/// with 16 (the kernel's fault, reported with its `PANIC` line), so that work needs under 384;
/// 1 KiB leaves room for paths the test does not take. The last kilobyte of every stack is
/// thereby the kernel's: a kernel call made with less left ends the process with a stack
/// overflow.
pub const KERNEL_STACK_ROOM_BYTES: usize = 1024;
const _: () = assert!(
    KERNEL_STACK_ROOM_BYTES < beamcore_mem_layout::GUARD_BYTES,
    "the probe must land in a stack's guard, never beyond it"
);

/// Restores the mask state returned by [`irq_save`] (a compiler memory barrier, as there).
#[inline(always)]
pub fn irq_restore(state: IrqState) {
    // SAFETY: writes back a DAIF value read by `irq_save` on this core.
    unsafe { core::arch::asm!("msr daif, {}", in(reg) state.0, options(nostack, preserves_flags)) };
}

/// Unmasks IRQs on this core (a compiler memory barrier, as [`irq_save`]).
#[inline(always)]
pub fn irq_enable() {
    // SAFETY: clearing PSTATE.I lets this core take interrupts; handlers are installed before
    // any core calls this.
    unsafe { core::arch::asm!("msr daifclr, #2", options(nostack, preserves_flags)) };
}

/// True when IRQs are masked on this core.
pub fn irqs_masked() -> bool {
    DAIF.get() & (1 << 7) != 0
}

/// Sleeps until an interrupt is pending (even a masked one), so no wake-up between a check
/// made with IRQs masked and this call is lost.
#[inline(always)]
pub fn wait_for_interrupt() {
    // SAFETY: waits for an interrupt; a compiler memory barrier so the checks made before the
    // sleep and the reads after it are not moved across it.
    unsafe { core::arch::asm!("wfi", options(nostack, preserves_flags)) };
}

/// Sleeps until an event (`sev`, an exclusive monitor cleared, an interrupt).
#[inline(always)]
pub fn wait_for_event() {
    asm::wfe();
}

/// A spin-wait hint (`yield`): lets an SMT sibling or, under QEMU's single-threaded TCG,
/// another vCPU run. (`core::hint::spin_loop` emits `isb` on AArch64, which QEMU does not
/// treat as a hint to switch vCPUs.)
#[inline(always)]
pub fn relax() {
    // SAFETY: a hint instruction with no architectural effect.
    unsafe { core::arch::asm!("yield", options(nomem, nostack, preserves_flags)) };
}

/// Wakes every core waiting in `wfe`.
#[inline(always)]
pub fn send_event() {
    asm::sev();
}

/// The system counter (CNTPCT_EL0), ordered after earlier instructions.
#[inline(always)]
pub fn counter() -> u64 {
    // ORDERING: ISB: reads of CNTPCT_EL0 may be performed speculatively and out of order with
    // respect to other instructions (Arm ARM, Generic Timer); the ISB makes the read happen
    // after everything before it, so timestamps and deadlines are not taken early.
    asm::barrier::isb(asm::barrier::SY);
    CNTPCT_EL0.get()
}

/// Ticks per second of the system counter.
pub fn counter_frequency() -> u64 {
    CNTFRQ_EL0.get()
}
