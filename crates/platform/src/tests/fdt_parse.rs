//! The device-tree reader's host tests, against the trees in tests/data/ (QEMU's virt and raspi4b
//! trees, and one laid out as the Pi 4's firmware does). A child module of `fdt_parse` (by
//! `#[path]`), so they see its private helpers as they did inline; a file of their own so the
//! reader's file holds only the reader.

use super::*;
use beamcore_limits::MAX_CORES;

fn blob(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/data/{name}.dtb", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// As the kernel reads a tree: NOPs removed in place, then parsed.
fn load(name: &str) -> Platform {
    let mut blob = blob(name);
    remove_nops(&mut blob).unwrap();
    from_device_tree(&blob, 0x4000_0000).unwrap()
}

/// The structure block's tokens, walked as `remove_nops` does.
fn tokens(blob: &[u8]) -> Vec<u32> {
    let word = |at: usize| u32::from_be_bytes(blob[at..at + 4].try_into().unwrap()) as usize;
    let (mut at, end) = (word(8), word(8) + word(36));
    let mut tokens = Vec::new();
    while at < end {
        let token = word(at) as u32;
        tokens.push(token);
        at += match token {
            FDT_BEGIN_NODE => 4 + (blob[at + 4..].iter().position(|&b| b == 0).unwrap() + 1).next_multiple_of(4),
            FDT_PROP => 12 + word(at + 4).next_multiple_of(4),
            FDT_END => break,
            _ => 4,
        };
    }
    tokens
}

#[test]
fn nops_are_removed_and_nothing_else_changes() {
    let mut raw = blob("raspi4b-qemu");
    let before = tokens(&raw);
    assert!(before.contains(&FDT_NOP), "QEMU's raspi4b tree is expected to carry NOPs");
    remove_nops(&mut raw).unwrap();
    let after = tokens(&raw);
    assert_eq!(after, before.iter().copied().filter(|&t| t != FDT_NOP).collect::<Vec<_>>());
    assert_eq!(after.last(), Some(&FDT_END));
    let once = raw.clone();
    remove_nops(&mut raw).unwrap();
    assert_eq!(raw, once, "removing NOPs twice changes nothing more");
    // Trees without NOPs are left byte for byte as they were.
    let mut virt = blob("virt-a72-smp4");
    let original = virt.clone();
    remove_nops(&mut virt).unwrap();
    assert_eq!(virt, original);
}

#[test]
fn remove_nops_rejects_damaged_trees() {
    assert_eq!(remove_nops(&mut [0u8; 64]), Err(PlatformError::BadDeviceTree));
    let mut cut = blob("raspi4b-qemu");
    let header_end = 40;
    cut.truncate(header_end + 100);
    assert_eq!(remove_nops(&mut cut), Err(PlatformError::BadDeviceTree));
    let mut bad_token = blob("virt-a72-smp4");
    let start = u32::from_be_bytes(bad_token[8..12].try_into().unwrap()) as usize;
    bad_token[start..start + 4].copy_from_slice(&7u32.to_be_bytes());
    assert_eq!(remove_nops(&mut bad_token), Err(PlatformError::BadDeviceTree));
}

#[test]
fn virt_gicv2_four_cores() {
    let p = load("virt-a72-smp4");
    assert_eq!(p.cpus.iter().map(|c| c.mpidr).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    assert_eq!(p.memory.as_slice(), &[Region { base: 0x4000_0000, bytes: 128 << 20 }]);
    assert_eq!(p.uart.region.base, 0x0900_0000);
    assert_eq!(p.uart.clock_hz, Some(24_000_000));
    assert_eq!(
        p.gic,
        GicDescription::V2 {
            distributor: Region { base: 0x0800_0000, bytes: 0x1_0000 },
            cpu_interface: Region { base: 0x0801_0000, bytes: 0x1_0000 },
        }
    );
    assert_eq!(p.enable_method, EnableMethod::Psci(PsciConduit::Hvc));
    assert!(p.bootargs.is_empty());
}

#[test]
fn virt_gicv3_sixteen_cores() {
    let p = load("virt-gicv3-smp16");
    assert_eq!(p.cpus.len(), 16);
    assert!(matches!(
        p.gic,
        GicDescription::V3 { redistributors: Region { base: 0x080a_0000, .. }, stride: 0x2_0000, .. }
    ));
    assert_eq!(p.enable_method, EnableMethod::Psci(PsciConduit::Hvc));
}

/// QEMU virt with 128 cores (GICv3 clusters of 16: MPIDR Aff1 = core / 16, Aff0 = core % 16):
/// the kernel keeps the first `MAX_CORES`, in tree order (the boot core, 0, first), counts
/// the rest, and says so in one `smp:` line.
#[test]
fn virt_gicv3_more_cores_than_the_kernel_brings_up() {
    let p = load("virt-gicv3-smp128");
    assert_eq!(p.cpus.len(), MAX_CORES);
    assert_eq!(p.cpus_ignored, 128 - MAX_CORES);
    let expected: Vec<u64> = (0..MAX_CORES as u64).map(|core| ((core / 16) << 8) | (core % 16)).collect();
    assert_eq!(p.cpus.iter().map(|c| c.mpidr).collect::<Vec<_>>(), expected);
    let notice = p.cores_beyond_limit().expect("more cores than MAX_CORES");
    assert_eq!(
        std::format!("{notice}"),
        std::format!("128 cores in the device tree; beamcore brings up {MAX_CORES} (MAX_CORES)")
    );
    assert_eq!(load("virt-gicv3-smp16").cores_beyond_limit(), None);
}

#[test]
fn virt_with_el2_uses_smc_and_carries_bootargs() {
    let p = load("virt-el2-smp4");
    assert_eq!(p.enable_method, EnableMethod::Psci(PsciConduit::Smc));
    assert_eq!(p.bootargs.as_slice(), b"ticks=5 bogus");
    assert_eq!(p.bootargs_cut, BootargsCut::Whole);
}

#[test]
fn bootargs_that_are_not_utf8_are_kept_as_bytes() {
    // The same tree with one byte of "bogus" made invalid UTF-8: the line is still read
    // (before, `as_str` failed and the whole command line vanished without a word).
    let mut raw = blob("virt-el2-smp4");
    let at = raw.windows(13).position(|w| w == b"ticks=5 bogus").expect("bootargs in the tree");
    raw[at + 8] = 0xff;
    remove_nops(&mut raw).unwrap();
    let p = from_device_tree(&raw, 0x4000_0000).unwrap();
    assert_eq!(p.bootargs.as_slice(), b"ticks=5 \xffogus");
    assert_eq!(p.bootargs_cut, BootargsCut::Whole);
    // What the parser makes of these very bytes: beamcore-bootargs's
    // `bootargs_from_a_tree_that_are_not_utf8_keep_their_valid_words`.
}

#[test]
fn raspi4b_tree_translates_soc_addresses() {
    let p = load("raspi4b-qemu");
    assert_eq!(
        p.cpus.iter().map(|c| (c.mpidr, c.release_address)).collect::<Vec<_>>(),
        vec![(0, Some(0xd8)), (1, Some(0xe0)), (2, Some(0xe8)), (3, Some(0xf0))]
    );
    assert_eq!(p.enable_method, EnableMethod::SpinTable);
    assert_eq!(p.memory.as_slice(), &[Region { base: 0, bytes: 960 << 20 }]);
    assert_eq!(p.uart, Uart { region: Region { base: 0xfe20_1000, bytes: 0x200 }, clock_hz: Some(48_000_000) });
    assert_eq!(
        p.gic,
        GicDescription::V2 {
            distributor: Region { base: 0xff84_1000, bytes: 0x1000 },
            cpu_interface: Region { base: 0xff84_2000, bytes: 0x2000 },
        }
    );
    assert_eq!(p.bootargs.as_slice(), b"ticks=5");
}

#[test]
fn pi4_firmware_tree() {
    let p = load("rpi4-firmware-like");
    assert_eq!(p.cpus.len(), 4);
    assert_eq!(p.cpus[3].release_address, Some(0xf0));
    assert_eq!(p.enable_method, EnableMethod::SpinTable);
    assert_eq!(
        p.memory.as_slice(),
        &[
            Region { base: 0, bytes: 0x3b40_0000 },
            Region { base: 0x4000_0000, bytes: 0xbc00_0000 },
            Region { base: 0x1_0000_0000, bytes: 0x8000_0000 },
            Region { base: 0x1_8000_0000, bytes: 0x8000_0000 },
        ]
    );
    // stdout is the mini UART: the enabled PL011 (UART0) is used, at its CPU address; the
    // clock manager gives no frequency, so the board default applies.
    assert_eq!(p.uart, Uart { region: Region { base: 0xfe20_1000, bytes: 0x200 }, clock_hz: None });
    assert_eq!(
        p.gic,
        GicDescription::V2 {
            distributor: Region { base: 0xff84_1000, bytes: 0x1000 },
            cpu_interface: Region { base: 0xff84_2000, bytes: 0x2000 },
        }
    );
    assert!(p.bootargs.ends_with(b"workload=fib strategy=p2c"));
}

#[test]
fn stdout_path_alias_with_options_picks_that_uart() {
    // raspi4b-qemu's stdout-path is "serial0:115200n8" -> /soc/serial@7e201000.
    let mut raw = blob("raspi4b-qemu");
    remove_nops(&mut raw).unwrap();
    let tree = Fdt::new(&raw).unwrap();
    assert_eq!(stdout_path(&tree), Some("/soc/serial@7e201000"));
    let located = Located::at_path(&tree, "/soc/serial@7e201000").unwrap();
    assert_eq!(located.ancestors.len(), 2);
    assert_eq!(located.reg(0), Some(Region { base: 0xfe20_1000, bytes: 0x200 }));
    assert!(Located::at_path(&tree, "/soc/serial@7e999999").is_none());
}

#[test]
fn addresses_outside_every_range_do_not_translate() {
    let mut raw = blob("raspi4b-qemu");
    remove_nops(&mut raw).unwrap();
    let tree = Fdt::new(&raw).unwrap();
    let located = Located::at_path(&tree, "/soc/serial@7e201000").unwrap();
    assert_eq!(located.translate(0x7e00_0000), Some(0xfe00_0000));
    assert_eq!(located.translate(0x7f80_0000), None, "just past the first window");
    assert_eq!(located.translate(0x407f_ffff), Some(0xffff_ffff));
    assert_eq!(located.translate(0x1000), None);
}

#[test]
fn garbage_is_rejected() {
    assert_eq!(from_device_tree(&[0u8; 64], 0), Err(PlatformError::BadDeviceTree));
}
