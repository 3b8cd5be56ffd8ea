//! Links the kernel with `linker.ld` at the selected board's load address.
//!
//! Only the bare-metal target gets the script: host builds of the pure modules (unit tests,
//! model checks) link as ordinary host programs.

fn main() {
    println!("cargo:rerun-if-changed=linker.ld");
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target != "aarch64-unknown-none" {
        return;
    }
    let rpi4 = std::env::var_os("CARGO_FEATURE_BOARD_RPI4").is_some();
    // virt: RAM starts at 0x4000_0000 and QEMU places its 1 MiB device tree there only if that
    // whole MiB lies below the image, so the kernel starts 2 MiB in (a 2 MiB block boundary).
    // rpi4: the firmware loads kernel8.img at 0x80000.
    let load = if rpi4 { "0x80000" } else { "0x40200000" };
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    println!("cargo:rustc-link-arg=--defsym=__kernel_load_address={load}");
    println!("cargo:rustc-link-arg=-T{dir}/linker.ld");
}
