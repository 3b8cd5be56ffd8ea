//! Links the repository's programs (the binaries and in-QEMU test kernels of this package) with
//! the kernel's linker script.
//!
//! The script is `beamcore.ld`, which the kernel package's build script (kernel/build.rs) writes
//! from `linker.ld` with the selected board's load address and puts on the link search path of
//! every package that depends on the kernel. So these programs link exactly as a program in a
//! project of its own does (template/.cargo/config.toml passes the same `-Tbeamcore.ld`).
//!
//! Only the bare-metal target gets the script (and only it can build the kernel).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target != "aarch64-unknown-none" {
        return;
    }
    println!("cargo:rustc-link-arg=-Tbeamcore.ld");
}
