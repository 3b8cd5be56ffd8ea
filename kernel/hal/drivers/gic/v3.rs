//! GICv3 (Arm IHI 0069): memory-mapped distributor and redistributors, system-register CPU
//! interface, affinity routing.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::register_structs;
use tock_registers::registers::{ReadOnly, ReadWrite};

use super::{DEFAULT_PRIORITY, GicError, PRIORITY_MASK};
use crate::layout::MAX_CORES;

register_structs! {
    DistributorRegisters {
        /// Distributor control (IHI 0069 12.9.4).
        (0x0000 => ctlr: ReadWrite<u32>),
        /// Interrupt controller type (12.9.38).
        (0x0004 => typer: ReadOnly<u32>),
        (0x0008 => _reserved0),
        /// Interrupt group (12.9.15).
        (0x0080 => igroupr: [ReadWrite<u32>; 32]),
        /// Interrupt clear-enable (12.9.7).
        (0x0100 => _isenabler: [ReadWrite<u32>; 32]),
        (0x0180 => icenabler: [ReadWrite<u32>; 32]),
        (0x0200 => _reserved1),
        /// Interrupt priority (12.9.21).
        (0x0400 => ipriorityr: [ReadWrite<u32>; 255]),
        (0x07fc => @END),
    }
}

register_structs! {
    RedistributorRegisters {
        /// Redistributor control (12.11.2).
        (0x0000 => _ctlr: ReadWrite<u32>),
        (0x0004 => _iidr: ReadOnly<u32>),
        /// Redistributor type (12.11.38): affinity in bits 63:32, Last in bit 4.
        (0x0008 => typer: ReadOnly<u64>),
        (0x0010 => _reserved0),
        /// Power management (12.11.42): ProcessorSleep bit 1, ChildrenAsleep bit 2.
        (0x0014 => waker: ReadWrite<u32>),
        (0x0018 => _reserved1),
        (0x10080 => igroupr0: ReadWrite<u32>),
        (0x10084 => _reserved2),
        /// SGI/PPI set-enable and clear-enable (12.11.31, 12.11.9), in the SGI_base frame.
        (0x10100 => isenabler0: ReadWrite<u32>),
        (0x10104 => _reserved3),
        (0x10180 => icenabler0: ReadWrite<u32>),
        (0x10184 => _reserved4),
        /// SGI/PPI priorities (12.11.25).
        (0x10400 => ipriorityr: [ReadWrite<u32>; 8]),
        (0x10420 => @END),
    }
}

const CTLR_RWP: u32 = 1 << 31;
const CTLR_ENABLE_GRP1: u32 = 1 << 1;
const CTLR_ARE: u32 = 1 << 4;
const TYPER_LAST: u64 = 1 << 4;
const WAKER_PROCESSOR_SLEEP: u32 = 1 << 1;
const WAKER_CHILDREN_ASLEEP: u32 = 1 << 2;

pub struct GicV3 {
    distributor: &'static DistributorRegisters,
    redistributors_base: usize,
    redistributors_bytes: usize,
    stride: usize,
    /// Each logical core's MPIDR affinity, recorded when it initialises (for SGI routing).
    affinity: [AtomicU64; MAX_CORES],
    /// Each logical core's redistributor address.
    redistributor: [AtomicUsize; MAX_CORES],
}

// SAFETY: the registers are MMIO shared by design: the distributor is configured by the boot
// core before other cores use it, later writes are single-register (SGI generation, banked
// per-core enables) and the per-core interface is only touched by its own core.
unsafe impl Send for GicV3 {}
// SAFETY: as for `Send`.
unsafe impl Sync for GicV3 {}

impl GicV3 {
    /// # Safety
    /// The addresses are a GICv3's distributor and redistributor region, mapped as device
    /// memory.
    pub unsafe fn new(
        distributor: usize,
        redistributors_base: usize,
        redistributors_bytes: usize,
        stride: usize,
    ) -> GicV3 {
        GicV3 {
            // SAFETY: per the contract the register block lives there for 'static.
            distributor: unsafe { &*(distributor as *const DistributorRegisters) },
            redistributors_base,
            redistributors_bytes,
            stride,
            affinity: [const { AtomicU64::new(0) }; MAX_CORES],
            redistributor: [const { AtomicUsize::new(0) }; MAX_CORES],
        }
    }

    fn wait_for_distributor_writes(&self) {
        while self.distributor.ctlr.get() & CTLR_RWP != 0 {
            core::hint::spin_loop();
        }
    }

    pub(super) fn init_distributor(&self) {
        let d = self.distributor;
        d.ctlr.set(0);
        self.wait_for_distributor_writes();
        let lines = ((d.typer.get() & 0x1f) as usize + 1) * 32;
        let priority = u32::from_ne_bytes([DEFAULT_PRIORITY; 4]);
        for word in 1..lines / 32 {
            d.icenabler[word].set(u32::MAX);
            d.igroupr[word].set(u32::MAX);
        }
        for word in 8..lines / 4 {
            d.ipriorityr[word].set(priority);
        }
        self.wait_for_distributor_writes();
        d.ctlr.set(CTLR_ARE | CTLR_ENABLE_GRP1);
        self.wait_for_distributor_writes();
    }

    /// The redistributor whose affinity is `mpidr`'s. Only the first redistributor region is
    /// searched: QEMU virt's holds 123 redistributors (cores beyond that are in a second region
    /// high in the address space), more than `MAX_CORES`.
    fn find_redistributor(&self, mpidr: u64) -> Option<&'static RedistributorRegisters> {
        let wanted = ((mpidr >> 8) & 0xff00_0000) | (mpidr & 0x00ff_ffff);
        let mut offset = 0;
        while offset + self.stride <= self.redistributors_bytes {
            // SAFETY: the redistributor region is mapped as device memory (constructor contract)
            // and `offset` stays inside it.
            let frame = unsafe { &*((self.redistributors_base + offset) as *const RedistributorRegisters) };
            let typer = frame.typer.get();
            if typer >> 32 == wanted {
                return Some(frame);
            }
            if typer & TYPER_LAST != 0 {
                break;
            }
            offset += self.stride;
        }
        None
    }

    fn this_core(&self) -> &'static RedistributorRegisters {
        let address = self.redistributor[crate::arch::cpu::core_id()].load(Ordering::Relaxed);
        // SAFETY: set by `init_core_interface` on this core to a redistributor frame found inside the
        // mapped region.
        unsafe { &*(address as *const RedistributorRegisters) }
    }

    pub(super) fn init_core_interface(&self, core: usize, mpidr: u64) -> Result<(), GicError> {
        let r = self.find_redistributor(mpidr).ok_or(GicError::NoRedistributor { mpidr })?;
        self.redistributor[core].store(r as *const _ as usize, Ordering::Relaxed);
        self.affinity[core].store(mpidr, Ordering::Relaxed);
        // Wake the redistributor and wait until its interfaces are awake.
        r.waker.set(r.waker.get() & !WAKER_PROCESSOR_SLEEP);
        while r.waker.get() & WAKER_CHILDREN_ASLEEP != 0 {
            core::hint::spin_loop();
        }
        r.igroupr0.set(u32::MAX);
        r.icenabler0.set(0xffff_0000);
        r.isenabler0.set(0x0000_ffff);
        let priority = u32::from_ne_bytes([DEFAULT_PRIORITY; 4]);
        for word in &r.ipriorityr {
            word.set(priority);
        }
        // SAFETY: the CPU interface's own registers; EL2 (if any) enabled EL1 access in boot.S.
        unsafe {
            core::arch::asm!(
                "mrs {t}, icc_sre_el1",
                "orr {t}, {t}, #1",
                "msr icc_sre_el1, {t}",
                // ORDERING: ISB: the ICC_SRE_EL1.SRE write must be synchronised before the
                // other ICC_* system registers are accessed (GICv3: SRE changes take effect
                // only after a context synchronisation event).
                "isb",
                "msr icc_pmr_el1, {pmr}",
                "msr icc_bpr1_el1, xzr",
                "mov {t}, #1",
                "msr icc_igrpen1_el1, {t}",
                // ORDERING: ISB: the group-1 enable (and PMR, BPR) take effect before this
                // core goes on to unmask IRQs (system-register writes need a context
                // synchronisation event to be guaranteed visible to later instructions).
                "isb",
                t = out(reg) _,
                pmr = in(reg) u64::from(PRIORITY_MASK),
                options(nostack, preserves_flags),
            );
        }
        Ok(())
    }

    pub(super) fn disable_this_core(&self) {
        // ORDERING: ISB: the disable must take effect before the caller's WFI loop, or a
        // pending interrupt could still be signalled and end every WFI at once.
        // SAFETY: clearing this core's group-1 enable only stops interrupts reaching this core.
        unsafe { core::arch::asm!("msr icc_igrpen1_el1, xzr", "isb", options(nostack, preserves_flags)) };
    }

    pub(super) fn enable_private(&self, intid: u32) {
        self.this_core().isenabler0.set(1 << intid);
    }

    pub(super) fn acknowledge_raw(&self) -> u32 {
        let iar: u64;
        // ORDERING: DSB SY after the ICC_IAR1_EL1 read, pairing with the DSB ISHST before the
        // ICC_SGI1R_EL1 write in `send_sgi`. A system-register read is not a memory access, so
        // no DMB orders it: only a DSB makes the acknowledge complete before the handler's
        // loads of what the sender wrote. (Linux's gic_read_iar does the same.)
        // SAFETY: reading ICC_IAR1_EL1 acknowledges this core's highest pending group-1
        // interrupt; the caller ends it with `end_of_interrupt_raw`.
        unsafe { core::arch::asm!("mrs {}, icc_iar1_el1", "dsb sy", out(reg) iar, options(nostack, preserves_flags)) };
        iar as u32
    }

    pub(super) fn end_of_interrupt_raw(&self, raw: u32) {
        // ORDERING: ISB: the EOI (a system-register write) must take effect before the next
        // ICC_IAR1_EL1 read of the handler's loop and before IRQs are unmasked, or the running
        // priority still blocks, or re-signals, the interrupt just ended.
        // SAFETY: ends an interrupt this core acknowledged.
        unsafe {
            core::arch::asm!("msr icc_eoir1_el1, {}", "isb", in(reg) u64::from(raw), options(nostack, preserves_flags))
        };
    }

    /// Sends SGI `sgi` to logical core `target`: ICC_SGI1R_EL1 names one cluster (Aff3.Aff2.Aff1)
    /// and a 16-bit target list of Aff0 values, so any core is reachable alone. QEMU virt with
    /// GICv3 puts 16 cores per cluster (Aff0 0-15, Aff1 = core / 16: 64 cores are clusters 0-3),
    /// so RS stays 0; an Aff0 of 16 or more (other machines) needs RS, which the GIC honours
    /// only with ICC_CTLR_EL1.RSS set. tests/03 sends every ordered pair on 64 cores.
    pub(super) fn send_sgi(&self, target: usize, sgi: u8) {
        let mpidr = self.affinity[target].load(Ordering::Relaxed);
        let aff0 = mpidr & 0xff;
        let value = ((mpidr >> 32) & 0xff) << 48     // Aff3
            | ((mpidr >> 16) & 0xff) << 32           // Aff2
            | (aff0 / 16) << 44                      // RS: which group of 16 Aff0 values
            | u64::from(sgi) << 24
            | ((mpidr >> 8) & 0xff) << 16            // Aff1
            | 1 << (aff0 % 16); // target list
        // SAFETY: generating an SGI has no memory effects of its own.
        unsafe {
            core::arch::asm!(
                // ORDERING: the message the SGI announces must be visible to the target before
                // it can take the interrupt; the system-register write is not ordered by DMB.
                "dsb ishst",
                "msr icc_sgi1r_el1, {}",
                // ORDERING: ISB: the SGI1R write is executed (the SGI generated) before this
                // core goes on, e.g. to wait for the target's answer.
                "isb",
                in(reg) value,
                options(nostack, preserves_flags)
            )
        };
    }
}
