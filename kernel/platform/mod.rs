//! What the machine is: cores, memory, console UART, interrupt controller, PSCI conduit and the
//! kernel command line, discovered from the flattened device tree or taken from board defaults
//! (with RAM and command line from ATAGs where a loader passes those instead: QEMU `raspi4b`
//! without `-dtb`).
//!
//! Parsing is pure (it reads a byte slice) and is tested on the host against device trees
//! dumped from QEMU (`tests/data/*.dtb`). The kernel copies everything it needs out of the
//! tree at boot, so the tree's memory may be reused afterwards.

#![forbid(unsafe_code)]

pub mod atags;
mod fdt_parse;

use core::fmt;

pub use fdt_parse::{FDT_MAGIC, from_device_tree, remove_nops};

use crate::mm::layout::MAX_CORES;

/// Longest kernel command line kept; longer ones are cut (and said so).
pub const MAX_BOOTARGS_BYTES: usize = 512;
/// Most RAM regions kept.
pub const MAX_MEMORY_REGIONS: usize = 4;

/// A physical address range `[base, base + bytes)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub base: u64,
    pub bytes: u64,
}

impl Region {
    pub fn end(&self) -> u64 {
        self.base + self.bytes
    }
}

/// The interrupt controller and where its parts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GicDescription {
    /// GICv2 (GIC-400 on the Pi 4): distributor and CPU interface, up to 8 cores.
    V2 { distributor: Region, cpu_interface: Region },
    /// GICv3: distributor and a region of per-core redistributors, `stride` bytes apart.
    V3 { distributor: Region, redistributors: Region, stride: u64 },
}

/// How PSCI calls reach the firmware.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsciConduit {
    Hvc,
    Smc,
}

/// How secondary cores are started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnableMethod {
    Psci(PsciConduit),
    /// Write the entry address to each core's release address and `sev` (Pi 4).
    SpinTable,
}

/// Where the description came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    DeviceTree {
        address: u64,
    },
    /// RAM and command line from an ATAG list at `address`, the rest from board defaults.
    Atags {
        address: u64,
    },
    BoardDefaults,
}

/// The UART the console writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uart {
    pub region: Region,
    /// The UART's reference clock, when the tree says (needed to set the baud rate).
    pub clock_hz: Option<u32>,
}

/// One core as the firmware describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpu {
    /// MPIDR_EL1 affinity fields (Aff3..Aff0) of the core.
    pub mpidr: u64,
    /// Spin-table release address, when the core is started that way.
    pub release_address: Option<u64>,
}

/// Everything the kernel needs to know about the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Platform {
    pub source: Source,
    pub model: heapless::String<64>,
    pub cpus: heapless::Vec<Cpu, MAX_CORES>,
    /// Cores the tree lists beyond `MAX_CORES`, not used.
    pub cpus_ignored: usize,
    pub memory: heapless::Vec<Region, MAX_MEMORY_REGIONS>,
    pub uart: Uart,
    pub gic: GicDescription,
    pub enable_method: EnableMethod,
    pub bootargs: heapless::String<MAX_BOOTARGS_BYTES>,
    /// The command line was longer than [`MAX_BOOTARGS_BYTES`] and was cut.
    pub bootargs_truncated: bool,
}

impl Platform {
    /// The RAM region that holds `address`.
    pub fn memory_containing(&self, address: u64) -> Option<Region> {
        self.memory.iter().copied().find(|r| (r.base..r.end()).contains(&address))
    }

    /// Takes the RAM banks (when the list has any) and the command line from an ATAG list
    /// found at `address`; everything else stays as it is (the board defaults).
    pub fn apply_boot_tags(&mut self, tags: &atags::BootTags<'_>, address: u64) {
        self.source = Source::Atags { address };
        if !tags.memory.is_empty() {
            self.memory = tags.memory.clone();
            self.memory.sort_unstable_by_key(|r| r.base);
        }
        if let Some(cmdline) = tags.cmdline {
            self.bootargs.clear();
            self.bootargs_truncated = !fdt_parse::push_truncated(&mut self.bootargs, cmdline.trim());
        }
    }

    /// Total RAM in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory.iter().map(|r| r.bytes).sum()
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.source {
            Source::DeviceTree { address } => write!(f, "device tree at {address:#x}")?,
            Source::Atags { address } => write!(f, "ATAGs at {address:#x} (RAM, command line) and board defaults")?,
            Source::BoardDefaults => write!(f, "board defaults")?,
        }
        write!(f, ", model \"{}\", {} cores", self.model, self.cpus.len())?;
        if self.cpus_ignored > 0 {
            write!(f, " ({} more ignored)", self.cpus_ignored)?;
        }
        write!(f, ", RAM")?;
        for r in &self.memory {
            write!(f, " {:#x}+{}MiB", r.base, r.bytes >> 20)?;
        }
        match self.gic {
            GicDescription::V2 { distributor, cpu_interface } => {
                write!(f, ", GICv2 dist={:#x} cpu={:#x}", distributor.base, cpu_interface.base)?
            }
            GicDescription::V3 { distributor, redistributors, .. } => {
                write!(f, ", GICv3 dist={:#x} redist={:#x}", distributor.base, redistributors.base)?
            }
        }
        match self.enable_method {
            EnableMethod::Psci(PsciConduit::Hvc) => write!(f, ", PSCI via hvc")?,
            EnableMethod::Psci(PsciConduit::Smc) => write!(f, ", PSCI via smc")?,
            EnableMethod::SpinTable => write!(f, ", spin-table")?,
        }
        write!(f, ", uart={:#x}", self.uart.region.base)
    }
}

/// Why a device tree could not be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlatformError {
    /// Not a flattened device tree, or a damaged one.
    BadDeviceTree,
    /// A node the kernel cannot run without is missing or unusable.
    Missing(&'static str),
}

impl fmt::Display for PlatformError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlatformError::BadDeviceTree => write!(f, "not a valid flattened device tree"),
            PlatformError::Missing(what) => write!(f, "device tree has no usable {what}"),
        }
    }
}
