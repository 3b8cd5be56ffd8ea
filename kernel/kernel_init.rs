//! Bring-up, in order: platform discovery, MMU, console, configuration, heap, interrupts and
//! timer, secondary cores, then the program's entry point.
//!
//! Until the MMU is on, nothing here uses a lock or an atomic read-modify-write: exclusives
//! are not reliable on the device-typed memory a core sees with its MMU off.

use aarch64_cpu::asm::barrier;

use crate::arch::{cpu, mmu, psci};
use crate::config::Config;
use crate::drivers::gic::Gic;
use crate::exit::{ExitCode, exit};
use crate::mm::layout::{self, MAX_CORES};
use crate::platform::{BootargsCut, EnableMethod, Platform, PsciConduit, Region, Source};
use crate::time::{self, Deadline};
use crate::{board, console, println, sched, smp};

static PLATFORM: spin::Once<Platform> = spin::Once::new();
static CONFIG: spin::Once<Config> = spin::Once::new();

/// How long a secondary core gets to come online.
const CORE_START_TIMEOUT_US: u64 = 2_000_000;

/// The machine, as discovered at boot.
pub fn platform() -> &'static Platform {
    PLATFORM.get().expect("platform discovered during boot")
}

/// The effective configuration (defaults overridden by bootargs).
pub fn boot_config() -> &'static Config {
    CONFIG.get().expect("configuration parsed during boot")
}

unsafe extern "Rust" {
    /// The program's entry point, defined by [`crate::entry!`].
    fn __beamcore_main() -> ExitCode;
}

/// Where the platform description came from, for the boot log.
enum Discovery {
    Found,
    NoTree,
    BadTree(crate::platform::PlatformError),
    /// No device tree, but an ATAG list (RAM, command line) at this address.
    Atags(u64),
    BadAtags(crate::platform::atags::AtagsError),
}

fn discover(loader_x0: u64) -> (Platform, Discovery) {
    let mut outcome = Discovery::NoTree;
    for candidate in board::device_tree_candidates(loader_x0) {
        // SAFETY: the candidates are the loader's x0 or board RAM addresses, readable and
        // writable with the MMU off and used by nothing else yet (one core runs, the heap does
        // not exist); `read_device_tree` checks the magic before trusting a size.
        match unsafe { board::read_device_tree(candidate) } {
            Some(Ok(platform)) => return (platform, Discovery::Found),
            Some(Err(error)) => outcome = Discovery::BadTree(error),
            None => {}
        }
    }
    let mut platform = board::default_platform(cpu::mpidr());
    if let Some(address) = board::atags_candidate(loader_x0) {
        // SAFETY: the board names x0 as a possible ATAG list in RAM (QEMU raspi4b: 0x100),
        // readable with the MMU off and not written before discovery has copied it out.
        match unsafe { board::read_atags(address) } {
            Some(Ok(tags)) => {
                platform.apply_boot_tags(&tags, address);
                outcome = Discovery::Atags(address);
            }
            Some(Err(error)) => outcome = Discovery::BadAtags(error),
            None => {}
        }
    }
    (platform, outcome)
}

/// The boot core's path from `boot_core_entry` to the program.
///
/// # Safety
/// Called once, on the boot core, from `boot_core_entry`.
pub(crate) unsafe fn boot_core(loader_x0: u64, entry_el: u8) -> ! {
    cpu::set_core_id(0);
    let (platform, discovery) = discover(loader_x0);
    let image = layout::image();
    let (heap, stack_pool) = split_free_ram(&platform, &image);
    // SAFETY: boot core, once, MMU off, no other core running.
    if let Err(error) = unsafe { mmu::build_identity_map(&platform, &image, board::extra_device_regions(), stack_pool) }
    {
        panic!("cannot build the kernel's page tables: {error}");
    }
    // SAFETY: the identity map is built and covers this code and stack (boot stack 0); no
    // other core runs yet.
    unsafe { mmu::enable_this_core(0) };
    let platform = PLATFORM.call_once(|| platform);
    let uart_clock =
        if board::UART_NEEDS_INIT { platform.uart.clock_hz.or(Some(board::DEFAULT_UART_CLOCK_HZ)) } else { None };
    board::init_uart_pins(platform.uart.region.base as usize);
    console::init(platform.uart.region.base as usize, uart_clock);

    let dropped = if entry_el == 2 { ", dropped to EL1" } else { "" };
    println!("beamcore {} on {}: entered at EL{entry_el}{dropped}", env!("CARGO_PKG_VERSION"), board::NAME);
    match discovery {
        Discovery::Found => {}
        Discovery::NoTree => println!("platform: no device tree found; using {} board defaults", board::NAME),
        Discovery::BadTree(error) => println!("platform: {error}; using {} board defaults", board::NAME),
        Discovery::Atags(address) => println!(
            "platform: no device tree; RAM and command line from ATAGs at {address:#x}, the rest from {} board defaults",
            board::NAME
        ),
        Discovery::BadAtags(error) => {
            println!("platform: no device tree and unusable ATAGs ({error}); using {} board defaults", board::NAME)
        }
    }
    println!("platform: {platform}");

    let parsed = crate::config::parse(&platform.bootargs, platform.bootargs_cut == BootargsCut::InWord);
    for rejection in &parsed.rejections {
        println!("{rejection}");
    }
    if platform.bootargs_cut != BootargsCut::Whole {
        println!("bootargs: command line ignored beyond {} bytes: too long", crate::platform::MAX_BOOTARGS_BYTES);
    }
    let config = *CONFIG.call_once(|| parsed.config);
    println!("config: {config}");

    if stack_pool.bytes == 0 || heap.bytes < MIN_HEAP_BYTES {
        panic!(
            "boot: {} KiB of RAM free after the kernel image ({} KiB): too little for a {} KiB heap and a {} KiB stack \
             pool; give the machine more RAM",
            (heap.bytes + stack_pool.bytes) / 1024,
            (image.kernel_end - image.kernel_start) / 1024,
            MIN_HEAP_BYTES / 1024,
            POOL_ALIGN / 1024
        );
    }
    let (heap_start, heap_bytes) = (heap.base as usize, heap.bytes as usize);
    // SAFETY: RAM after the image (and its boot stacks) up to the stack pool is mapped
    // read-write and used by nothing else; the device tree lies below the image or has been
    // copied out already.
    unsafe { crate::mm::heap::init(heap_start, heap_bytes) };
    // SAFETY: the stack pool region was mapped with 4 KiB pages and is used by nothing else.
    unsafe { crate::mm::stack_pool::init(stack_pool.base as usize, stack_pool.bytes as usize) };

    // SAFETY: the platform's GIC, identity-mapped as device memory; the only `Gic` made.
    let gic = unsafe { Gic::new(&platform.gic) };
    println!(
        "boot: heap {} MiB at {heap_start:#x}, stacks {} MiB at {:#x}, GICv{}, counter {} Hz, tick {} us",
        heap_bytes >> 20,
        stack_pool.bytes >> 20,
        stack_pool.base,
        gic.version(),
        cpu::counter_frequency(),
        config.slice_us
    );
    let slice_ticks = time::us_to_ticks(u64::from(config.slice_us));
    smp::init_boot(gic, slice_ticks);
    if let Err(error) = sched::init_global(
        slice_ticks,
        u64::from(config.reductions),
        config.balance.timed(config.cooldown_ns, cpu::counter_frequency()),
        config.strategy,
        config.trace,
    ) {
        panic!("scheduler: {error}");
    }
    sched::init_this_core();
    if let Err(error) = smp::init_this_core(0) {
        panic!("boot core: {error}");
    }
    cpu::irq_enable();

    let wanted = config.maxcpus.min(MAX_CORES);
    if let Some(beyond) = platform.cores_beyond_limit() {
        println!("smp: {beyond}");
    }
    start_secondaries(platform, wanted);
    println!("smp: {} cores online", smp::cores_online());

    // The program's main runs as the first process, on this core; its return ends the run.
    let main = sched::SpawnOptions::default().stack_bytes(MAIN_STACK_BYTES).on_core(0);
    match sched::spawn_with(main, run_main) {
        Ok(pid) => sched::set_program_main(pid),
        Err(error) => panic!("cannot start main: {error}"),
    }
    sched::run_loop()
}

/// Stack of the program's main process.
const MAIN_STACK_BYTES: usize = 256 * 1024;

fn run_main() {
    // SAFETY: the symbol is the program's `entry!` function, a safe Rust fn.
    let code = unsafe { __beamcore_main() };
    exit(code)
}

/// Splits the RAM after the image into the heap and the process stack pool (up to 64 MiB, or
/// half of what is free, at the top, 2 MiB aligned).
fn split_free_ram(platform: &Platform, image: &layout::ImageLayout) -> (Region, Region) {
    let ram = platform
        .memory_containing(image.kernel_start as u64)
        .expect("the kernel image lies in RAM the platform describes");
    let free_start = image.kernel_end as u64;
    let free_end = (ram.end() & !(POOL_ALIGN - 1)).max(free_start);
    let free = free_end - free_start;
    let half = (free / 2).min(MAX_STACK_POOL_BYTES) & !(POOL_ALIGN - 1);
    // With little RAM half of it may round down to nothing: then one aligned block for the
    // pool if that leaves the heap its minimum, else nothing (and the boot stops, saying why).
    let pool_bytes = if half > 0 || free < POOL_ALIGN + MIN_HEAP_BYTES { half } else { POOL_ALIGN };
    let pool = Region { base: free_end - pool_bytes, bytes: pool_bytes };
    (Region { base: free_start, bytes: pool.base - free_start }, pool)
}

/// The least heap the kernel boots with (its tables, per-core queues and buffers).
const MIN_HEAP_BYTES: u64 = 1 << 20;

const POOL_ALIGN: u64 = 2 << 20;
const MAX_STACK_POOL_BYTES: u64 = 64 << 20;

/// A secondary core's path from `secondary_core_entry` to its idle loop.
///
/// # Safety
/// Called once per secondary core, from `secondary_core_entry`, after the boot core built the
/// page tables (it starts secondaries only afterwards).
pub(crate) unsafe fn secondary_core(core_id: usize, _entry_el: u8) -> ! {
    // SAFETY: the identity map is complete (contract) and covers this core's stack and code;
    // `_secondary_start` put this core on boot stack `core_id`, which no other core writes.
    unsafe { mmu::enable_this_core(core_id) };
    cpu::set_core_id(core_id);
    sched::init_this_core();
    if let Err(error) = smp::init_this_core(core_id) {
        panic!("core {core_id}: {error}");
    }
    cpu::irq_enable();
    sched::run_loop()
}

fn start_secondaries(platform: &Platform, wanted: usize) {
    let boot_mpidr = cpu::mpidr();
    let mut next_id = 1;
    match platform.enable_method {
        EnableMethod::Psci(conduit) if !matches!(platform.source, Source::DeviceTree { .. }) => {
            // No device tree: ask PSCI for cores by Aff0 until it says there are no more.
            for aff0 in 0..MAX_CORES as u64 {
                let mpidr = (boot_mpidr & !0xff) | aff0;
                if next_id >= wanted || mpidr == boot_mpidr {
                    continue;
                }
                match start_psci(conduit, mpidr, next_id) {
                    Ok(()) => next_id += 1,
                    Err(psci::PsciError::InvalidParameters | psci::PsciError::NotPresent) => break,
                    Err(error) => println!("smp: core with mpidr {mpidr:#x}: {error}"),
                }
            }
        }
        EnableMethod::Psci(conduit) => {
            for cpu in platform.cpus.iter().filter(|c| c.mpidr != boot_mpidr) {
                if next_id >= wanted {
                    break;
                }
                match start_psci(conduit, cpu.mpidr, next_id) {
                    Ok(()) => next_id += 1,
                    Err(error) => println!("smp: core with mpidr {:#x} not started: {error}", cpu.mpidr),
                }
            }
        }
        EnableMethod::SpinTable => {
            for cpu in platform.cpus.iter().filter(|c| c.mpidr != boot_mpidr) {
                let id = (cpu.mpidr & 0xff) as usize;
                if id >= wanted || id >= MAX_CORES {
                    continue;
                }
                match cpu.release_address {
                    Some(release) => start_spin_table(release, id),
                    None => println!("smp: core {id} has no spin-table release address"),
                }
            }
        }
    }
}

fn start_psci(conduit: PsciConduit, mpidr: u64, id: usize) -> Result<(), psci::PsciError> {
    let entry = crate::boot::_secondary_start as *const () as u64;
    psci::cpu_on(conduit, mpidr, entry, id as u64)?;
    wait_online(id);
    Ok(())
}

fn start_spin_table(release_address: u64, id: usize) {
    let entry = crate::boot::_spin_table_start as *const () as u64;
    let slot = release_address as *mut u64;
    // SAFETY: the platform names this word as the core's spin-table release address; the core
    // polls it with its caches off, so the write is cleaned to the point of coherency before
    // the event that wakes it.
    unsafe {
        slot.write_volatile(entry);
        core::arch::asm!("dc civac, {}", in(reg) release_address, options(nostack, preserves_flags));
    }
    // ORDERING: DSB SY: the clean to the point of coherency must complete before the SEV, or
    // the core woken by it (polling with its caches off, so reading RAM) may still read the
    // old word. DMB does not order SEV, which is not a memory access.
    barrier::dsb(barrier::SY);
    cpu::send_event();
    wait_online(id);
}

fn wait_online(id: usize) {
    let deadline = Deadline::after_us(CORE_START_TIMEOUT_US);
    while !smp::core(id).is_online() {
        if deadline.expired() {
            println!("smp: core {id} did not come online within {} ms", CORE_START_TIMEOUT_US / 1000);
            return;
        }
        core::hint::spin_loop();
    }
}
