//! Reads a [`Platform`] out of a flattened device tree with the `fdt` crate.

use fdt::Fdt;
use fdt::node::FdtNode;

use super::{Cpu, EnableMethod, GicDescription, Platform, PlatformError, PsciConduit, Region, Source, Uart};

/// First word of every flattened device tree (big-endian).
pub const FDT_MAGIC: u32 = 0xd00d_feed;

/// GICv3 redistributor frames: RD_base + SGI_base, 64 KiB each.
const GICV3_DEFAULT_STRIDE: u64 = 0x2_0000;

/// Parses the tree in `blob`, found at physical `address`.
pub fn from_device_tree(blob: &[u8], address: u64) -> Result<Platform, PlatformError> {
    let tree = Fdt::new(blob).map_err(|_| PlatformError::BadDeviceTree)?;
    let mut platform = Platform {
        source: Source::DeviceTree { address },
        model: heapless::String::new(),
        cpus: heapless::Vec::new(),
        cpus_ignored: 0,
        memory: heapless::Vec::new(),
        uart: find_uart(&tree)?,
        gic: find_gic(&tree)?,
        enable_method: EnableMethod::SpinTable,
        bootargs: heapless::String::new(),
        bootargs_truncated: false,
    };
    if let Some(model) = tree.root().property("model").and_then(|p| p.as_str()) {
        push_truncated(&mut platform.model, model);
    }
    read_cpus(&tree, &mut platform)?;
    read_memory(&tree, &mut platform)?;
    if let Some(args) = tree.chosen().bootargs() {
        platform.bootargs_truncated = !push_truncated(&mut platform.bootargs, args.trim());
    }
    Ok(platform)
}

/// Appends as much of `text` as fits; false when it was cut.
fn push_truncated<const N: usize>(out: &mut heapless::String<N>, text: &str) -> bool {
    for c in text.chars() {
        if out.push(c).is_err() {
            return false;
        }
    }
    true
}

fn first_reg(node: &FdtNode<'_, '_>, index: usize) -> Option<Region> {
    let region = node.reg()?.nth(index)?;
    Some(Region { base: region.starting_address as u64, bytes: region.size.unwrap_or(0) as u64 })
}

fn read_cpus(tree: &Fdt<'_>, platform: &mut Platform) -> Result<(), PlatformError> {
    let cpus = tree.find_node("/cpus").ok_or(PlatformError::Missing("/cpus node"))?;
    let psci = tree.find_node("/psci").and_then(|node| node.property("method")).and_then(|p| p.as_str());
    let conduit = match psci {
        Some("hvc") => Some(PsciConduit::Hvc),
        Some("smc") => Some(PsciConduit::Smc),
        _ => None,
    };
    let mut any_spin_table = false;
    for node in cpus.children() {
        let is_cpu = node.property("device_type").and_then(|p| p.as_str()) == Some("cpu");
        if !is_cpu {
            continue;
        }
        let Some(reg) = node.property("reg") else { continue };
        let mpidr = match reg.value.len() {
            4 => u64::from(u32::from_be_bytes(reg.value.try_into().unwrap_or_default())),
            8 => u64::from_be_bytes(reg.value.try_into().unwrap_or_default()),
            _ => continue,
        };
        let method = node.property("enable-method").and_then(|p| p.as_str());
        let release_address = node.property("cpu-release-addr").and_then(|p| match p.value.len() {
            4 => Some(u64::from(u32::from_be_bytes(p.value.try_into().ok()?))),
            8 => Some(u64::from_be_bytes(p.value.try_into().ok()?)),
            _ => None,
        });
        any_spin_table |= method == Some("spin-table");
        if platform.cpus.push(Cpu { mpidr, release_address }).is_err() {
            platform.cpus_ignored += 1;
        }
    }
    if platform.cpus.is_empty() {
        return Err(PlatformError::Missing("cpu node"));
    }
    platform.enable_method = match conduit {
        Some(conduit) if !any_spin_table => EnableMethod::Psci(conduit),
        _ if any_spin_table => EnableMethod::SpinTable,
        _ if platform.cpus.len() == 1 => EnableMethod::Psci(PsciConduit::Hvc),
        _ => return Err(PlatformError::Missing("/psci method or spin-table")),
    };
    Ok(())
}

fn read_memory(tree: &Fdt<'_>, platform: &mut Platform) -> Result<(), PlatformError> {
    let memory_nodes =
        tree.all_nodes().filter(|node| node.property("device_type").and_then(|p| p.as_str()) == Some("memory"));
    for node in memory_nodes {
        for region in node.reg().into_iter().flatten() {
            let region = Region { base: region.starting_address as u64, bytes: region.size.unwrap_or(0) as u64 };
            if region.bytes > 0 {
                // Beyond MAX_MEMORY_REGIONS, further regions are simply not used.
                let _ = platform.memory.push(region);
            }
        }
    }
    if platform.memory.is_empty() {
        return Err(PlatformError::Missing("memory node"));
    }
    platform.memory.sort_unstable_by_key(|r| r.base);
    Ok(())
}

fn find_uart(tree: &Fdt<'_>) -> Result<Uart, PlatformError> {
    let stdout = tree
        .chosen()
        .stdout()
        .filter(|node| node.compatible().is_some_and(|c| c.all().any(|name| name == "arm,pl011")));
    let node = stdout.or_else(|| tree.find_compatible(&["arm,pl011"])).ok_or(PlatformError::Missing("PL011 UART"))?;
    let region = first_reg(&node, 0).ok_or(PlatformError::Missing("PL011 UART reg"))?;
    let clock_hz = node
        .property("clocks")
        .and_then(|p| p.value.get(0..4))
        .and_then(|phandle| tree.find_phandle(u32::from_be_bytes(phandle.try_into().ok()?)))
        .and_then(|clock| clock.property("clock-frequency"))
        .and_then(|p| p.as_usize())
        .map(|hz| hz as u32);
    Ok(Uart { region, clock_hz })
}

fn find_gic(tree: &Fdt<'_>) -> Result<GicDescription, PlatformError> {
    if let Some(node) = tree.find_compatible(&["arm,gic-v3"]) {
        let distributor = first_reg(&node, 0).ok_or(PlatformError::Missing("GICv3 distributor reg"))?;
        let redistributors = first_reg(&node, 1).ok_or(PlatformError::Missing("GICv3 redistributor reg"))?;
        let stride =
            node.property("redistributor-stride").and_then(|p| p.as_usize()).map_or(GICV3_DEFAULT_STRIDE, |s| s as u64);
        return Ok(GicDescription::V3 { distributor, redistributors, stride });
    }
    let node = tree
        .find_compatible(&["arm,gic-400", "arm,cortex-a15-gic", "arm,cortex-a9-gic"])
        .ok_or(PlatformError::Missing("interrupt controller (GICv2 or GICv3)"))?;
    let distributor = first_reg(&node, 0).ok_or(PlatformError::Missing("GICv2 distributor reg"))?;
    let cpu_interface = first_reg(&node, 1).ok_or(PlatformError::Missing("GICv2 CPU interface reg"))?;
    Ok(GicDescription::V2 { distributor, cpu_interface })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str) -> Platform {
        let path = format!("{}/tests/data/{name}.dtb", env!("CARGO_MANIFEST_DIR"));
        let blob = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        from_device_tree(&blob, 0x4000_0000).unwrap()
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

    #[test]
    fn virt_with_el2_uses_smc_and_carries_bootargs() {
        let p = load("virt-el2-smp4");
        assert_eq!(p.enable_method, EnableMethod::Psci(PsciConduit::Smc));
        assert_eq!(p.bootargs.as_str(), "ticks=5 bogus");
        assert!(!p.bootargs_truncated);
    }

    #[test]
    fn garbage_is_rejected() {
        assert_eq!(from_device_tree(&[0u8; 64], 0), Err(PlatformError::BadDeviceTree));
    }
}
