//! Bring-up, in order: platform discovery, MMU, console, configuration, heap, interrupts and
//! timer, secondary cores, then the program's entry point.
//!
//! Until the MMU is on, nothing here uses a lock or an atomic read-modify-write: exclusives
//! are not reliable on the device-typed memory a core sees with its MMU off.

use aarch64_cpu::asm::barrier;

use crate::arch::{cpu, exception, mmu, psci};
use crate::config::Config;
use crate::drivers::gic::Gic;
use crate::exit::{ExitCode, exit};
use crate::mm::frames;
use crate::mm::layout::{self, MAX_CORES};
use crate::platform::{BootargsCut, EnableMethod, Platform, PsciConduit, Region, Source};
use crate::time::Deadline;
use crate::{board, console, println, sched, smp};

static CONFIG: spin::Once<Config> = spin::Once::new();

/// How long a secondary core gets to come online.
const CORE_START_TIMEOUT_US: u64 = 2_000_000;

/// The effective configuration (defaults overridden by bootargs).
pub fn boot_config() -> &'static Config {
    CONFIG.get().expect("configuration parsed during boot")
}

unsafe extern "Rust" {
    /// The program's entry point, defined by [`crate::entry!`].
    fn __beamcore_main() -> ExitCode;
    /// The program's settings, defined by `entry!` beside `__beamcore_main`.
    static BEAMCORE_ENTRY__ONE_PER_PROGRAM__NOT_IN_A_LIBRARY: &'static dyn crate::config::ProgramSettings;
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

/// The boot core's path from `boot.S` (crates boot/) to the program: the Rust entry of the boot
/// core, with the loader's x0 and the exception level it was entered at.
///
/// # Safety
/// Called exactly once, by `_start`, on the boot core, with `.bss` zeroed and a valid stack.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn boot_core_entry(loader_x0: u64, entry_el: u64) -> ! {
    let entry_el = entry_el as u8;
    // First, before anything can fault: a kernel fault goes down through the panic path.
    exception::set_fatal(crate::panic::fatal);
    cpu::set_core_id(0);
    let (platform, discovery) = discover(loader_x0);
    let image = layout::image();
    let (free, other_banks) = free_ram(&platform, &image);
    // SAFETY: boot core, once, MMU off, no other core running.
    if let Err(error) = unsafe { mmu::build_identity_map(&platform, &image, board::extra_device_regions()) } {
        panic!("cannot build the kernel's page tables: {error}");
    }
    // SAFETY: the identity map is built and covers this code and stack (boot stack 0); no
    // other core runs yet.
    unsafe { mmu::enable_this_core(0) };
    let platform = board::set_platform(platform);
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

    // SAFETY: `entry!`, the only way a program names its main, defines the symbol with this
    // type, as an immutable static.
    let program = unsafe { BEAMCORE_ENTRY__ONE_PER_PROGRAM__NOT_IN_A_LIBRARY };
    let parsed = program.parse(&platform.bootargs, platform.bootargs_cut == BootargsCut::InWord);
    for rejection in &parsed.rejections {
        println!("{rejection}");
    }
    if parsed.rejections_not_kept > 0 {
        println!("bootargs: {} more words ignored, not shown", parsed.rejections_not_kept);
    }
    if platform.bootargs_cut != BootargsCut::Whole {
        println!("bootargs: command line ignored beyond {} bytes: too long", crate::platform::MAX_BOOTARGS_BYTES);
    }
    let config = *CONFIG.call_once(|| parsed.config);
    println!("config: {}", crate::config::InForce { kernel: &config, program });

    let heap_bytes = initial_heap_bytes(free.bytes);
    if free.bytes < heap_bytes + frames::heap_gap_for(free.bytes as usize) as u64 + MIN_FRAME_BYTES {
        panic!(
            "boot: {} KiB of RAM free after the kernel image ({} KiB): too little for a heap and process memory; give \
             the machine more RAM",
            free.bytes / 1024,
            (image.kernel_end - image.kernel_start) / 1024,
        );
    }
    let heap_start = free.base as usize;
    // SAFETY: the RAM after the image (and its boot stacks) and the other banks are mapped
    // read-write, page-aligned and used by nothing else; the device tree lies below the image
    // or has been copied out already.
    unsafe { frames::init(free, heap_bytes as usize, &other_banks) };
    // SAFETY: the heap's first stretch, the bottom of what `frames::init` was just given as the
    // heap's bank.
    unsafe { crate::mm::heap::init(heap_start, heap_bytes as usize) };
    // SAFETY: the platform's GIC, identity-mapped as device memory; the only `Gic` made.
    let gic = unsafe { Gic::new(&platform.gic) };
    println!(
        "boot: {} MiB of RAM for the heap (starting with {} MiB at {heap_start:#x}) and processes, GICv{}, counter {} \
         Hz, tick {} us",
        frames::total_bytes() >> 20,
        heap_bytes >> 20,
        gic.version(),
        cpu::counter_frequency(),
        config.slice_us
    );
    // Every setting the scheduler uses, converted once (durations to counts, rounded up).
    let sched_config = sched::SchedConfig::from_boot(&config, cpu::counter_frequency());
    // What the exception vectors and the tick call: the SMP layer's IRQ handler and the
    // scheduler's hooks (the lower layers name neither).
    exception::set_handlers(exception::Handlers { irq: smp::handle_irq, process_fault: sched::on_process_fault });
    crate::debug::backtrace::set_process_stack_lookup(sched::current_stack);
    smp::set_handlers(smp::Handlers {
        tick: sched::on_tick,
        timers: sched::on_timers,
        earliest_deadline: sched::earliest_deadline_here,
        job_queued: sched::job_queued,
        dump: sched::debug_dump,
        hold_current: sched::hold_current_on_core,
    });
    smp::init_boot(gic, sched_config.slice_counts);
    if let Err(error) = sched::init_global(sched_config) {
        panic!("scheduler: {error}");
    }
    sched::init_core_scheduler();
    if let Err(error) = smp::bring_core_online(0) {
        panic!("boot core: {error}");
    }
    cpu::irq_enable();

    let wanted = config.maxcpus.min(MAX_CORES);
    if let Some(beyond) = platform.cores_beyond_limit() {
        println!("smp: {beyond}");
    }
    boot_jitter(config.boot_jitter);
    start_secondaries(platform, wanted);
    println!("smp: {} cores online", smp::cores_online());
    // After every core's first tick: tracing must not move the ticks' phases.
    sched::start_tracing();

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

/// The RAM the kernel has for its heap and processes: after the image in the bank that holds
/// it, and every other bank whole; all of it below the process region (page-aligned).
fn free_ram(platform: &Platform, image: &layout::ImageLayout) -> (Region, heapless::Vec<Region, 8>) {
    let below_region = |r: Region| {
        let start = r.base.next_multiple_of(PAGE);
        let end = (r.end() & !(PAGE - 1)).min(layout::PROCESS_REGION_START as u64);
        Region { base: start, bytes: end.saturating_sub(start) }
    };
    let ram = platform
        .memory_containing(image.kernel_start as u64)
        .expect("the kernel image lies in RAM the platform describes");
    let free = below_region(Region { base: image.kernel_end as u64, bytes: ram.end() - image.kernel_end as u64 });
    let others = platform
        .memory
        .iter()
        .filter(|r| !(r.base..r.end()).contains(&(image.kernel_start as u64)))
        .map(|&r| below_region(r))
        .filter(|r| r.bytes > 0)
        .take(7)
        .collect();
    (free, others)
}

/// The heap's first stretch: 1/16 of the free RAM, 2 to 16 MiB; it grows from there.
fn initial_heap_bytes(free: u64) -> u64 {
    (free / 16).clamp(2 << 20, 16 << 20) & !(PAGE - 1)
}

const PAGE: u64 = layout::PAGE_BYTES as u64;
/// The least RAM for processes the kernel boots with (beyond the heap and its gap).
const MIN_FRAME_BYTES: u64 = 1 << 20;

/// A secondary core's path from `boot.S`'s `_secondary_start` to its idle loop, with its
/// logical core id.
///
/// # Safety
/// Called once per secondary core, by `_secondary_start`, with that core's own boot stack and
/// `core_id` < `MAX_CORES`, after the boot core has built the page tables (it starts
/// secondaries only afterwards).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn secondary_core_entry(core_id: u64, _entry_el: u64) -> ! {
    let core_id = core_id as usize;
    // SAFETY: the identity map is complete (contract) and covers this core's stack and code;
    // `_secondary_start` put this core on boot stack `core_id`, which no other core writes.
    unsafe { mmu::enable_this_core(core_id) };
    cpu::set_core_id(core_id);
    if smp::core(core_id).was_online_before() {
        // Back from offline through PSCI `CPU_ON` (`sched::bring_online`): the core lost its
        // registers, so it came through the whole start again, up to here; its scheduler's
        // queues and counters are kept, so it only rejoins (docs/cores.md).
        if let Err(error) = smp::rejoin_this_core(core_id) {
            panic!("core {core_id}: cannot rejoin: {error}");
        }
        sched::rejoin_scheduling();
        cpu::irq_enable();
        sched::run_loop()
    }
    sched::init_core_scheduler();
    if let Err(error) = smp::bring_core_online(core_id) {
        panic!("core {core_id}: {error}");
    }
    cpu::irq_enable();
    sched::run_loop()
}

/// `boot_jitter=`: that many instructions more before the other cores start (see `Config`).
#[inline(never)]
fn boot_jitter(instructions: u32) {
    for _ in 0..instructions {
        // SAFETY: a `nop`: no effect but the instruction executed.
        unsafe { core::arch::asm!("nop", options(nomem, nostack, preserves_flags)) };
    }
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

/// Waits until core `id` is online and counted in `smp::cores_online` (its last step at boot).
fn wait_online(id: usize) {
    let deadline = Deadline::after_us(CORE_START_TIMEOUT_US);
    while !smp::core(id).was_online_before() {
        if deadline.expired() {
            println!("smp: core {id} did not come online within {} ms", CORE_START_TIMEOUT_US / 1000);
            return;
        }
        core::hint::spin_loop();
    }
}
