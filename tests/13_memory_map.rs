//! The kernel's identity map gives each range the attributes it needs: code executable and
//! read-only, rodata read-only, data/heap read-write, MMIO device memory, guard pages absent.
//! qemu-test: configs=a72-smp4,gicv3-smp16,gicv3-smp64
//! qemu-test: forbid=PANIC

#![no_std]
#![no_main]

extern crate alloc;

use beamcore::arch::mmu::translate;
use beamcore::mm::layout;
use beamcore::mm::paging::MemoryKind;
use beamcore::platform::GicDescription;
use beamcore::{ExitCode, println};
use beamcore_apps::ensure;

static DATA: u64 = 7;
static mut BSS: u64 = 0;

fn kind(address: usize) -> Option<MemoryKind> {
    let translation = translate(address as u64)?;
    (translation.physical == address as u64).then_some(translation.kind)
}

fn main() -> ExitCode {
    let image = layout::image();
    let platform = beamcore::platform();
    let heap = alloc::boxed::Box::new(DATA);
    let gic = match platform.gic {
        GicDescription::V2 { distributor, .. } | GicDescription::V3 { distributor, .. } => distributor.base as usize,
    };
    let checks: [(&str, usize, Option<MemoryKind>); 8] = [
        ("code", main as *const () as usize, Some(MemoryKind::Code)),
        ("rodata", &DATA as *const u64 as usize, Some(MemoryKind::ReadOnly)),
        ("bss", &raw const BSS as usize, Some(MemoryKind::ReadWrite)),
        ("heap", &*heap as *const u64 as usize, Some(MemoryKind::ReadWrite)),
        ("uart", platform.uart.region.base as usize, Some(MemoryKind::Device)),
        ("gic", gic, Some(MemoryKind::Device)),
        ("guard page of core 0", image.boot_stack(0).0, None),
        ("unmapped hole", 0x1_0000_0000, None),
    ];
    for (what, address, expected) in checks {
        let got = kind(address);
        ensure!(got == expected, "{what} at {address:#x}: {got:?}, expected {expected:?}");
    }
    println!("test: code, rodata, bss, heap, uart, gic, guard page and a hole all mapped as intended");
    ExitCode::Success
}

beamcore::entry!(main);
