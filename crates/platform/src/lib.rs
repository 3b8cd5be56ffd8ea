//! What the machine is: cores, memory, console UART, interrupt controller, PSCI conduit and the
//! kernel command line, discovered from the flattened device tree or taken from board defaults
//! (with RAM and command line from ATAGs where a loader passes those instead: QEMU `raspi4b`
//! without `-dtb`).
//!
//! Parsing is pure (it reads a byte slice) and is tested on the host against device trees
//! dumped from QEMU (`tests/data/*.dtb`). The kernel copies everything it needs out of the
//! tree at boot, so the tree's memory may be reused afterwards.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

pub mod atags;
mod fdt_parse;

use core::fmt;

pub use fdt_parse::{FDT_MAGIC, from_device_tree, remove_nops};

use beamcore_limits::MAX_CORES;

/// Longest kernel command line kept; longer ones are cut (and said so, and a word cut in two is
/// not applied: see [`BootargsCut`]).
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

/// Whether the command line fit in [`MAX_BOOTARGS_BYTES`], and if not, where it was cut.
///
/// The parser must know: the beginning of a cut word is often a valid word with another value
/// (`slice_us=1000000` cut to `slice_us=100`), so it is reported and not applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootargsCut {
    /// The whole command line was kept.
    Whole,
    /// Longer than the limit, cut between two words: every word kept is whole.
    BetweenWords,
    /// Longer than the limit, cut inside a word: the last word kept is only its beginning.
    InWord,
}

/// Copies `line` (raw bytes, ASCII whitespace trimmed at both ends) into `out` as far as it
/// fits, and says where it was cut. The bytes need not be UTF-8: the bootargs parser applies
/// the valid words and reports the others.
pub fn copy_command_line<const N: usize>(out: &mut heapless::Vec<u8, N>, line: &[u8]) -> BootargsCut {
    out.clear();
    let line = line.trim_ascii();
    let kept = line.len().min(N);
    // Cannot fail: `kept` <= N.
    let _ = out.extend_from_slice(&line[..kept]);
    match line.get(kept) {
        None => BootargsCut::Whole,
        Some(next) if kept == 0 || next.is_ascii_whitespace() || line[kept - 1].is_ascii_whitespace() => {
            BootargsCut::BetweenWords
        }
        Some(_) => BootargsCut::InWord,
    }
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
    /// The kernel command line as the loader gave it (raw bytes, not necessarily UTF-8), at most
    /// [`MAX_BOOTARGS_BYTES`] of it.
    pub bootargs: heapless::Vec<u8, MAX_BOOTARGS_BYTES>,
    /// Whether [`Self::bootargs`] is the whole command line.
    pub bootargs_cut: BootargsCut,
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
            self.bootargs_cut = copy_command_line(&mut self.bootargs, cmdline);
        }
    }

    /// Total RAM in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memory.iter().map(|r| r.bytes).sum()
    }

    /// When the machine lists more cores than the kernel brings up ([`MAX_CORES`]): how many.
    pub fn cores_beyond_limit(&self) -> Option<CoresBeyondLimit> {
        (self.cpus_ignored > 0).then_some(CoresBeyondLimit { listed: self.cpus.len() + self.cpus_ignored })
    }
}

/// A machine with more cores than [`MAX_CORES`]; displays as the boot console's `smp:` notice
/// (after `smp: `): "128 cores in the device tree; beamcore brings up 64 (MAX_CORES)".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoresBeyondLimit {
    /// Cores the device tree lists.
    pub listed: usize,
}

impl fmt::Display for CoresBeyondLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cores in the device tree; beamcore brings up {MAX_CORES} (MAX_CORES)", self.listed)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn copy<const N: usize>(line: &[u8]) -> (Vec<u8>, BootargsCut) {
        let mut out = heapless::Vec::<u8, N>::new();
        let cut = copy_command_line(&mut out, line);
        (out.to_vec(), cut)
    }

    #[test]
    fn command_line_that_fits_is_whole_and_trimmed() {
        assert_eq!(copy::<8>(b" a=1 b \n"), (b"a=1 b".to_vec(), BootargsCut::Whole));
        assert_eq!(copy::<8>(b"12345678"), (b"12345678".to_vec(), BootargsCut::Whole));
        assert_eq!(copy::<8>(b""), (Vec::new(), BootargsCut::Whole));
    }

    #[test]
    fn command_line_cut_says_whether_a_word_was_cut() {
        assert_eq!(copy::<8>(b"abc=1234567"), (b"abc=1234".to_vec(), BootargsCut::InWord));
        // The next byte is a space: the last word kept is whole.
        assert_eq!(copy::<8>(b"abc=1234 x=1"), (b"abc=1234".to_vec(), BootargsCut::BetweenWords));
        // The kept part ends in a space: the word cut away is lost whole.
        assert_eq!(copy::<8>(b"a=1 b=2 ccc"), (b"a=1 b=2 ".to_vec(), BootargsCut::BetweenWords));
    }

    #[test]
    fn command_line_bytes_need_not_be_utf8() {
        assert_eq!(copy::<8>(b"a=\xff b"), (b"a=\xff b".to_vec(), BootargsCut::Whole));
    }
}
