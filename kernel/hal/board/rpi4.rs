//! Raspberry Pi 4 (BCM2711, four Cortex-A72 cores, GIC-400), also QEMU's `raspi4b` machine.
//!
//! The firmware loads `kernel8.img` at 0x80000 and enters it at EL2 with x0 = the address of
//! the device tree it built from `bcm2711-rpi-4-b.dtb`, `config.txt` and `cmdline.txt`. The
//! other three cores wait in the firmware's spin table (the armstub at address 0) for an entry
//! address at 0xe0/0xe8/0xf0. QEMU `raspi4b` does the same with `-dtb`; without it x0 points at
//! ATAGs (0x100) carrying the `-append` command line and the RAM size.
//!
//! Addresses are the SoC's "low peripheral" map (the default; `arm_peri_high=1` moves them):
//!
//! ```text
//!  0x0000_0000 .. 0x3b40_0000  RAM the ARM owns with the firmware's default gpu_mem=76 (below
//!                              it: the spin table at 0xd8..0xf8; 0x80000: this kernel)
//!  0xfc00_0000 .. 0xff80_0000  main peripherals (0xfe00_0000 = bus address 0x7e00_0000):
//!                              GPIO 0xfe20_0000, PL011 UART0 0xfe20_1000
//!  0xff80_0000 .. 0x1_0000_0000  ARM local peripherals: GIC-400 distributor 0xff84_1000,
//!                              CPU interface 0xff84_2000
//! ```

use crate::platform::{Cpu, EnableMethod, GicDescription, Platform, Region, Source, Uart};

pub const NAME: &str = "raspberry-pi-4";
/// PL011 UART0 (BCM2711 ARM Peripherals 11.5: bus address 0x7e20_1000), on GPIO14/15 (ALT0).
pub const DEFAULT_UART_BASE: usize = 0xfe20_1000;
/// The firmware leaves the PL011's divisors as its own boot messages needed them (or unset):
/// the kernel programs 115200 8N1 itself.
pub const UART_NEEDS_INIT: bool = true;
/// The PL011 reference clock. The Pi 4 firmware sets it to 48 MHz (its default, and what
/// `config.txt`'s `init_uart_clock=48000000` asks for explicitly); the firmware's device tree
/// names the clock manager rather than a frequency, so this is what the kernel uses there.
pub const DEFAULT_UART_CLOCK_HZ: u32 = 48_000_000;
/// The GPIO block, whose function selects route UART0 to GPIO14/15.
pub const GPIO_BASE: usize = 0xfe20_0000;

/// Spin-table release addresses of cores 0..3 (the firmware's armstub8, and QEMU's).
const RELEASE_ADDRESSES: [u64; 4] = [0xd8, 0xe0, 0xe8, 0xf0];

/// RAM assumed when nothing says otherwise: the part of the first GiB the ARM owns on every
/// Pi 4 model when the firmware keeps its default `gpu_mem=76` (1 GiB - 76 MiB; the VideoCore
/// takes the top of the first GiB). Memory above 1 GiB exists only on the 2/4/8 GiB models and
/// is left out, and the peripheral windows lie far above anyway. QEMU's raspi4b gives 960 MiB in
/// `/memory` (its ATAGs say the same); beamcore's tree for it adds the second GiB.
const DEFAULT_RAM_BYTES: u64 = 0x3b40_0000;

/// Where to look for the device tree: the loader's x0 only (the firmware always passes it;
/// QEMU passes ATAGs instead when started without `-dtb`).
pub fn device_tree_candidates(loader_x0: u64) -> [u64; 1] {
    [loader_x0]
}

/// Where ATAGs may be when there is no device tree: x0 (QEMU `raspi4b` without `-dtb`: 0x100).
pub fn atags_candidate(loader_x0: u64) -> Option<u64> {
    (loader_x0 != 0).then_some(loader_x0)
}

/// The BCM2711 peripheral windows, mapped as Device memory: the main peripherals (GPIO, UARTs,
/// mailboxes, ...) and the ARM local block with the GIC-400, 0xfc00_0000 up to 4 GiB.
pub fn extra_device_regions() -> &'static [Region] {
    &[Region { base: 0xfc00_0000, bytes: 0x400_0000 }]
}

/// The Pi 4 as its firmware sets it up by default, for a boot without a device tree: four
/// cores released through the spin table, the GIC-400 and UART0 of the low-peripheral map, and
/// [`DEFAULT_RAM_BYTES`] of RAM from address 0 (which also maps the spin table's page).
pub fn default_platform(boot_mpidr: u64) -> Platform {
    let mut cpus = heapless::Vec::new();
    for (aff0, &release) in RELEASE_ADDRESSES.iter().enumerate() {
        let mpidr = (boot_mpidr & !0xff) | aff0 as u64;
        let _ = cpus.push(Cpu { mpidr, release_address: Some(release) });
    }
    let mut memory = heapless::Vec::new();
    let _ = memory.push(Region { base: 0, bytes: DEFAULT_RAM_BYTES });
    let mut model = heapless::String::new();
    let _ = model.push_str("Raspberry Pi 4 (defaults)");
    Platform {
        source: Source::BoardDefaults,
        model,
        cpus,
        cpus_ignored: 0,
        memory,
        uart: Uart { region: Region { base: DEFAULT_UART_BASE as u64, bytes: 0x200 }, clock_hz: None },
        gic: GicDescription::V2 {
            distributor: Region { base: 0xff84_1000, bytes: 0x1000 },
            cpu_interface: Region { base: 0xff84_2000, bytes: 0x2000 },
        },
        enable_method: EnableMethod::SpinTable,
        bootargs: heapless::Vec::new(),
        bootargs_cut: crate::platform::BootargsCut::Whole,
    }
}

/// Routes the console UART to its pins before it is used: UART0's TXD0/RXD0 are GPIO14/15 in
/// function ALT0 (header pins 8 and 10), with pull-ups as the firmware leaves them for a UART.
/// The firmware normally does this already for the primary UART; doing it again is harmless
/// and covers a `config.txt` that did not make UART0 primary. Only for UART0 at the address
/// this board maps; another UART (high-peripheral map) keeps the firmware's pin set-up.
pub fn init_uart_pins(uart_base: usize) {
    if uart_base != DEFAULT_UART_BASE {
        return;
    }
    // SAFETY: the GPIO block of the low-peripheral map, mapped as device memory by
    // `extra_device_regions`; only the boot core touches it, once, during bring-up.
    let gpio = unsafe { crate::drivers::bcm2711_gpio::Gpio::new(GPIO_BASE) };
    gpio.route_uart0_to_pins_14_15();
}
