//! Stops a build for any target but `aarch64-unknown-none` with one message saying so.
//!
//! The check lives in the lowest crate of the kernel's stack, which every other kernel crate
//! depends on: cargo runs this script before compiling anything that names an AArch64 register,
//! so the message comes first and alone. In the top crate (where it was before the stack was
//! split) it raced the lower crates' compilation, and hundreds of asm errors could end the
//! build before the script ran.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if arch == "aarch64" && os == "none" {
        return;
    }
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    // kernel/hal/ -> the checkout.
    let checkout = manifest_dir.ancestors().nth(2).unwrap_or(&manifest_dir).display().to_string();
    let target = std::env::var("TARGET").unwrap_or_default();
    eprintln!(
        "\nbeamcore: the kernel builds for aarch64-unknown-none only, and this build is for {target}.\n\
         \n\
         A beamcore program sets `target = \"aarch64-unknown-none\"` under [build] in its\n\
         .cargo/config.toml, with the linker, runner and rustflags of\n\
         {checkout}/template/.cargo/config.toml\n\
         (or pass `--target aarch64-unknown-none`). `make new NAME=<name>` in {checkout}\n\
         makes a project with all of it set up.\n"
    );
    std::process::exit(1);
}
