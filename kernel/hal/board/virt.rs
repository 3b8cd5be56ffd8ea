//! QEMU `virt`: the device tree sits at the start of RAM when the loader passes none in x0;
//! PSCI starts the cores; QEMU's PL011 needs no set-up.

use crate::platform::{Cpu, EnableMethod, GicDescription, Platform, PsciConduit, Region, Source, Uart};

pub const NAME: &str = "qemu-virt";
/// The PL011 before discovery (and in the board defaults).
pub const DEFAULT_UART_BASE: usize = 0x0900_0000;
/// QEMU places its device tree here for an ELF `-kernel` linked above it.
const RAM_BASE: u64 = 0x4000_0000;
/// True when the UART's baud rate must be programmed (QEMU ignores it).
pub const UART_NEEDS_INIT: bool = false;

/// Where to look for the device tree: the loader's x0, else the start of RAM.
pub fn device_tree_candidates(loader_x0: u64) -> [u64; 2] {
    [loader_x0, RAM_BASE]
}

/// Where ATAGs may be when there is no device tree: never on `virt` (x0 is 0 or a tree).
pub fn atags_candidate(_loader_x0: u64) -> Option<u64> {
    None
}

/// Routes the console UART to its pins: nothing to do on `virt`.
pub fn init_uart_pins(_uart_base: usize) {}

/// MMIO windows to map beyond the UART and GIC.
pub fn extra_device_regions() -> &'static [Region] {
    &[]
}

/// The machine as QEMU's `virt` defaults make it, for a boot without a device tree. Cores
/// beyond the boot core are found by asking PSCI to start them until it says there are no more.
pub fn default_platform(boot_mpidr: u64) -> Platform {
    let mut cpus = heapless::Vec::new();
    let _ = cpus.push(Cpu { mpidr: boot_mpidr, release_address: None });
    let mut memory = heapless::Vec::new();
    let _ = memory.push(Region { base: RAM_BASE, bytes: 128 << 20 });
    let mut model = heapless::String::new();
    let _ = model.push_str("QEMU virt (defaults)");
    Platform {
        source: Source::BoardDefaults,
        model,
        cpus,
        cpus_ignored: 0,
        memory,
        uart: Uart { region: Region { base: DEFAULT_UART_BASE as u64, bytes: 0x1000 }, clock_hz: None },
        gic: GicDescription::V2 {
            distributor: Region { base: 0x0800_0000, bytes: 0x1_0000 },
            cpu_interface: Region { base: 0x0801_0000, bytes: 0x1_0000 },
        },
        enable_method: EnableMethod::Psci(PsciConduit::Hvc),
        bootargs: heapless::Vec::new(),
        bootargs_cut: crate::platform::BootargsCut::Whole,
    }
}

/// The PL011 reference clock when the tree does not say (unused on virt: no set-up needed).
pub const DEFAULT_UART_CLOCK_HZ: u32 = 24_000_000;
