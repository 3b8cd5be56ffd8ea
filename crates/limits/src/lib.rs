//! The kernel's compile-time limits, in a crate of their own because both the kernel and its
//! pure crates (the core set, the balancer, platform discovery, the bootargs parser) size arrays
//! and check ranges by them, and the pure crates must not depend on the kernel.

#![no_std]
#![forbid(unsafe_code)]

/// Most cores the kernel brings up; per-core arrays are sized by it (and `linker.ld`'s
/// `__max_cores`, which a host test of crates/mem-layout keeps equal). Cores a machine has beyond it
/// stay off (`smp:` says so at boot). What each core costs in the image: a boot stack and its
/// guard page (68 KiB, `.boot_stacks`, not loaded) and about 2 KiB of scheduler and shared state
/// in `.data`, 12 bytes of it per other core (`last_steal`, `pings_from`). At 64: 4.25 MiB of
/// boot stacks, 128 KiB of per-core state (README.md, "Cores and memory").
pub const MAX_CORES: usize = 64;

/// Most processes alive at once: the number of process slots. The kernel's memory layout
/// (`crates/mem-layout`) gives each slot a control block and a stack window in the process
/// region, and checks at compile time that they fit.
pub const MAX_PROCESSES: usize = 1 << 21;
