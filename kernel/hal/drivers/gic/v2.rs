//! GICv2 (Arm IHI 0048B): memory-mapped distributor and CPU interface.

use core::sync::atomic::{AtomicU8, Ordering};

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::register_structs;
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};

use super::{DEFAULT_PRIORITY, GicError, PRIORITY_MASK};

/// A GICv2 addresses at most 8 CPU interfaces.
const MAX_INTERFACES: usize = 8;

register_structs! {
    DistributorRegisters {
        /// Distributor control (IHI 0048B 4.3.1).
        (0x000 => ctlr: ReadWrite<u32>),
        /// Interrupt controller type (4.3.2): ITLinesNumber in bits 4:0.
        (0x004 => typer: ReadOnly<u32>),
        (0x008 => _reserved0),
        /// Interrupt set-enable (4.3.5).
        (0x100 => isenabler: [ReadWrite<u32>; 32]),
        /// Interrupt clear-enable (4.3.6).
        (0x180 => icenabler: [ReadWrite<u32>; 32]),
        (0x200 => _reserved1),
        /// Interrupt priority, one byte per interrupt (4.3.11).
        (0x400 => ipriorityr: [ReadWrite<u32>; 255]),
        (0x7fc => _reserved2),
        /// Processor targets, one byte per interrupt (4.3.12); word 0 reads this core's mask.
        (0x800 => itargetsr: [ReadWrite<u32>; 255]),
        (0xbfc => _reserved3),
        /// Software generated interrupt (4.3.15).
        (0xf00 => sgir: WriteOnly<u32>),
        (0xf04 => @END),
    }
}

register_structs! {
    CpuInterfaceRegisters {
        /// CPU interface control (4.4.1).
        (0x00 => ctlr: ReadWrite<u32>),
        /// Priority mask (4.4.2).
        (0x04 => pmr: ReadWrite<u32>),
        /// Binary point (4.4.3).
        (0x08 => bpr: ReadWrite<u32>),
        /// Interrupt acknowledge (4.4.4).
        (0x0c => iar: ReadOnly<u32>),
        /// End of interrupt (4.4.5).
        (0x10 => eoir: WriteOnly<u32>),
        (0x14 => @END),
    }
}

pub struct GicV2 {
    distributor: &'static DistributorRegisters,
    cpu: &'static CpuInterfaceRegisters,
    /// Each logical core's CPU interface bit, as its own ITARGETSR0 reports it.
    target_mask: [AtomicU8; MAX_INTERFACES],
}

// SAFETY: the registers are MMIO shared by design: the distributor is configured by the boot
// core before other cores use it, later writes are single-register (SGI generation, banked
// per-core enables) and the per-core interface is only touched by its own core.
unsafe impl Send for GicV2 {}
// SAFETY: as for `Send`.
unsafe impl Sync for GicV2 {}

impl GicV2 {
    /// # Safety
    /// The addresses are a GICv2's distributor and CPU interface, mapped as device memory.
    pub unsafe fn new(distributor: usize, cpu_interface: usize) -> GicV2 {
        GicV2 {
            // SAFETY: per the contract the register blocks live at these addresses for 'static.
            distributor: unsafe { &*(distributor as *const DistributorRegisters) },
            // SAFETY: as above.
            cpu: unsafe { &*(cpu_interface as *const CpuInterfaceRegisters) },
            target_mask: [const { AtomicU8::new(0) }; MAX_INTERFACES],
        }
    }

    pub(super) fn init_distributor(&self) {
        let d = self.distributor;
        d.ctlr.set(0);
        let lines = ((d.typer.get() & 0x1f) as usize + 1) * 32;
        // Shared peripheral interrupts: all disabled, default priority, to core 0's interface.
        for word in 1..lines / 32 {
            d.icenabler[word].set(u32::MAX);
        }
        let priority = u32::from_ne_bytes([DEFAULT_PRIORITY; 4]);
        for word in 8..lines / 4 {
            d.ipriorityr[word].set(priority);
        }
        d.ctlr.set(1);
    }

    pub(super) fn init_core_interface(&self, core: usize) -> Result<(), GicError> {
        if core >= MAX_INTERFACES {
            return Err(GicError::TooManyCoresForGicV2 { core });
        }
        let d = self.distributor;
        let own_mask = (d.itargetsr[0].get() & 0xff) as u8;
        // A uniprocessor GIC may read zero here; then the only interface is number 0.
        self.target_mask[core].store(if own_mask == 0 { 1 } else { own_mask }, Ordering::Relaxed);
        // Banked per core: PPIs off, SGIs on, all at the default priority.
        d.icenabler[0].set(0xffff_0000);
        d.isenabler[0].set(0x0000_ffff);
        let priority = u32::from_ne_bytes([DEFAULT_PRIORITY; 4]);
        for word in 0..8 {
            d.ipriorityr[word].set(priority);
        }
        self.cpu.pmr.set(u32::from(PRIORITY_MASK));
        self.cpu.bpr.set(0);
        self.cpu.ctlr.set(1);
        Ok(())
    }

    pub(super) fn disable_this_core(&self) {
        // The CPU interface is banked per core: this core's only.
        self.cpu.ctlr.set(0);
    }

    pub(super) fn enable_private(&self, intid: u32) {
        self.distributor.isenabler[0].set(1 << intid);
    }

    pub(super) fn acknowledge_raw(&self) -> u32 {
        let raw = self.cpu.iar.get();
        // ORDERING: DMB ISHLD after the GICC_IAR read, pairing with the DSB ISHST before the
        // GICD_SGIR write in `send_sgi`. A Device-memory read is not ordered before later
        // Normal-memory loads without a barrier: the handler's loads of what the sender wrote
        // (a ping bit, a queued job) could be satisfied before the acknowledge and see the old
        // values. (Linux's gic_handle_irq does the same with smp_rmb.)
        aarch64_cpu::asm::barrier::dmb(aarch64_cpu::asm::barrier::ISHLD);
        raw
    }

    pub(super) fn end_of_interrupt_raw(&self, raw: u32) {
        self.cpu.eoir.set(raw);
    }

    pub(super) fn send_sgi(&self, target: usize, sgi: u8) {
        let mask = self.target_mask[target].load(Ordering::Relaxed);
        // ORDERING: the sender's earlier writes (the message the SGI announces) must be visible
        // before the interrupt can be taken: DSB orders them before the MMIO write.
        aarch64_cpu::asm::barrier::dsb(aarch64_cpu::asm::barrier::ISHST);
        self.distributor.sgir.set((u32::from(mask) << 16) | u32::from(sgi));
    }
}
