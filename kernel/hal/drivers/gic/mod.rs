//! The Arm Generic Interrupt Controller, version 2 (up to 8 cores; the Pi 4's GIC-400) or 3
//! (QEMU `virt` beyond 8 cores), behind one interface.
//!
//! Interrupts used: SGIs 0-15 (software-generated, core to core), PPIs (the per-core timer).
//! Every core initialises its own CPU interface / redistributor; the boot core also the
//! distributor. All interrupts are routed as IRQ (group 1 on GICv3, group 0 on a GICv2 without
//! security extensions), never FIQ.

mod v2;
mod v3;

pub use v2::GicV2;
pub use v3::GicV3;

use crate::platform::GicDescription;

/// Priority given to every interrupt the kernel enables (lower value = more urgent).
const DEFAULT_PRIORITY: u8 = 0xa0;
/// Priority mask: interrupts with a priority value below this are signalled.
const PRIORITY_MASK: u8 = 0xf0;
/// INTIDs 1020-1023 are special ("no pending interrupt" and friends).
const FIRST_SPECIAL_INTID: u32 = 1020;

/// An acknowledged interrupt; hand it back to [`Gic::end_of_interrupt`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acknowledged {
    /// The interrupt id: 0-15 SGI, 16-31 PPI, 32+ SPI.
    pub intid: u32,
    raw: u32,
}

/// Why the controller could not be set up for this core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GicError {
    /// No GICv3 redistributor has this core's affinity.
    NoRedistributor { mpidr: u64 },
    /// A GICv2 serves at most 8 cores.
    TooManyCoresForGicV2 { core: usize },
}

impl core::fmt::Display for GicError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            GicError::NoRedistributor { mpidr } => write!(f, "GICv3: no redistributor for mpidr {mpidr:#x}"),
            GicError::TooManyCoresForGicV2 { core } => write!(f, "GICv2: core {core} beyond the 8 it can serve"),
        }
    }
}

/// The machine's interrupt controller.
// There is exactly one, in a static: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Gic {
    V2(GicV2),
    V3(GicV3),
}

impl Gic {
    /// # Safety
    /// `description` names the machine's real GIC, identity-mapped as device memory, and this
    /// is the only `Gic` made for it.
    pub unsafe fn new(description: &GicDescription) -> Gic {
        match *description {
            GicDescription::V2 { distributor, cpu_interface } => {
                // SAFETY: forwarded contract.
                let gic = unsafe { GicV2::new(distributor.base as usize, cpu_interface.base as usize) };
                Gic::V2(gic)
            }
            GicDescription::V3 { distributor, redistributors, stride } => {
                let (base, bytes) = (redistributors.base as usize, redistributors.bytes as usize);
                // SAFETY: forwarded contract.
                let gic = unsafe { GicV3::new(distributor.base as usize, base, bytes, stride as usize) };
                Gic::V3(gic)
            }
        }
    }

    pub fn version(&self) -> u8 {
        match self {
            Gic::V2(_) => 2,
            Gic::V3(_) => 3,
        }
    }

    /// Boot core, once, before any core initialises its own interface.
    pub fn init_distributor(&self) {
        match self {
            Gic::V2(gic) => gic.init_distributor(),
            Gic::V3(gic) => gic.init_distributor(),
        }
    }

    /// Each core, once: its CPU interface (and redistributor), with SGIs enabled.
    pub fn init_core_interface(&self, core: usize, mpidr: u64) -> Result<(), GicError> {
        match self {
            Gic::V2(gic) => gic.init_core_interface(core),
            Gic::V3(gic) => gic.init_core_interface(core, mpidr),
        }
    }

    /// Stops the calling core's CPU interface from signalling any interrupt, for a core that is
    /// parking for good: a pending interrupt would otherwise end every WFI at once.
    pub fn disable_this_core(&self) {
        match self {
            Gic::V2(gic) => gic.disable_this_core(),
            Gic::V3(gic) => gic.disable_this_core(),
        }
    }

    /// Enables a private interrupt (SGI or PPI, INTID < 32) on the calling core.
    pub fn enable_private(&self, intid: u32) {
        debug_assert!(intid < 32);
        match self {
            Gic::V2(gic) => gic.enable_private(intid),
            Gic::V3(gic) => gic.enable_private(intid),
        }
    }

    /// The highest-priority pending interrupt, now active; `None` if there was none.
    pub fn acknowledge(&self) -> Option<Acknowledged> {
        let raw = match self {
            Gic::V2(gic) => gic.acknowledge_raw(),
            Gic::V3(gic) => gic.acknowledge_raw(),
        };
        let intid = raw & 0xff_ffff & if self.version() == 2 { 0x3ff } else { 0xff_ffff };
        (!(FIRST_SPECIAL_INTID..1024).contains(&intid)).then_some(Acknowledged { intid, raw })
    }

    /// Ends the handling of an interrupt returned by [`Gic::acknowledge`].
    pub fn end_of_interrupt(&self, interrupt: Acknowledged) {
        match self {
            Gic::V2(gic) => gic.end_of_interrupt_raw(interrupt.raw),
            Gic::V3(gic) => gic.end_of_interrupt_raw(interrupt.raw),
        }
    }

    /// Raises SGI `sgi` (0-15) on the core with logical id `target`, which must have run
    /// [`Gic::init_core_interface`].
    pub fn send_sgi(&self, target: usize, sgi: u8) {
        debug_assert!(sgi < 16);
        match self {
            Gic::V2(gic) => gic.send_sgi(target, sgi),
            Gic::V3(gic) => gic.send_sgi(target, sgi),
        }
    }
}
