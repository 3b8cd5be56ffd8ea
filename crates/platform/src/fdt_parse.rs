//! Reads a [`Platform`] out of a flattened device tree with the `fdt` crate.

use fdt::Fdt;
use fdt::node::FdtNode;

use super::{
    BootargsCut, Cpu, EnableMethod, GicDescription, Platform, PlatformError, PsciConduit, Region, Source, Uart,
    copy_command_line,
};

/// First word of every flattened device tree (big-endian).
pub const FDT_MAGIC: u32 = 0xd00d_feed;

/// GICv3 redistributor frames: RD_base + SGI_base, 64 KiB each.
const GICV3_DEFAULT_STRIDE: u64 = 0x2_0000;

/// Structure-block tokens (Devicetree Specification 5.4.1).
const FDT_BEGIN_NODE: u32 = 1;
const FDT_END_NODE: u32 = 2;
const FDT_PROP: u32 = 3;
const FDT_NOP: u32 = 4;
const FDT_END: u32 = 9;

/// Removes the `FDT_NOP` tokens from the tree's structure block, in place, and shrinks the
/// header's `size_dt_struct` to match.
///
/// Loaders that edit a tree with libfdt leave NOPs where they deleted or moved something
/// (QEMU `raspi4b` after rewriting /memory, the Pi firmware after applying overlays), and the
/// `fdt` crate stops looking for siblings at a NOP between nodes (and may panic at one inside
/// a node). Without NOPs the tree means the same and the crate reads it whole.
pub fn remove_nops(blob: &mut [u8]) -> Result<(), PlatformError> {
    let bad = PlatformError::BadDeviceTree;
    let header = |blob: &[u8], field: usize| -> Result<usize, PlatformError> {
        let bytes = blob.get(field * 4..field * 4 + 4).ok_or(bad)?;
        Ok(u32::from_be_bytes(bytes.try_into().map_err(|_| bad)?) as usize)
    };
    if header(blob, 0)? as u32 != FDT_MAGIC || header(blob, 5)? < 17 {
        return Err(bad);
    }
    let (start, size) = (header(blob, 2)?, header(blob, 9)?);
    let end = start.checked_add(size).filter(|&end| end <= blob.len()).ok_or(bad)?;
    let token = |blob: &[u8], at: usize| -> Result<u32, PlatformError> {
        let bytes = blob.get(at..at + 4).filter(|_| at + 4 <= end).ok_or(bad)?;
        Ok(u32::from_be_bytes(bytes.try_into().map_err(|_| bad)?))
    };
    let align4 = |n: usize| (n + 3) & !3;
    let (mut read, mut write) = (start, start);
    loop {
        let kind = token(blob, read)?;
        let length = match kind {
            FDT_BEGIN_NODE => {
                let name = blob.get(read + 4..end).ok_or(bad)?;
                let nul = name.iter().position(|&b| b == 0).ok_or(bad)?;
                4 + align4(nul + 1)
            }
            FDT_END_NODE | FDT_NOP | FDT_END => 4,
            FDT_PROP => 12 + align4(token(blob, read + 4)? as usize),
            _ => return Err(bad),
        };
        if read + length > end {
            return Err(bad);
        }
        if kind != FDT_NOP {
            blob.copy_within(read..read + length, write);
            write += length;
        }
        read += length;
        if kind == FDT_END {
            break;
        }
    }
    blob[36..40].copy_from_slice(&((write - start) as u32).to_be_bytes());
    Ok(())
}

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
        bootargs: heapless::Vec::new(),
        bootargs_cut: BootargsCut::Whole,
    };
    if let Some(model) = tree.root().property("model").and_then(|p| p.as_str()) {
        push_truncated(&mut platform.model, model);
    }
    read_cpus(&tree, &mut platform)?;
    read_memory(&tree, &mut platform)?;
    // (Not `tree.chosen()`: it panics on a tree without /chosen. Not `as_str`: one byte that is
    // not UTF-8 would drop the whole line; the bootargs parser sorts the words out.)
    let bootargs = tree.find_node("/chosen").and_then(|chosen| chosen.property("bootargs")).map(|p| p.value);
    if let Some(args) = bootargs {
        let line = args.split(|&b| b == 0).next().unwrap_or_default();
        platform.bootargs_cut = copy_command_line(&mut platform.bootargs, line);
    }
    Ok(platform)
}

/// Appends as much of `text` as fits.
fn push_truncated<const N: usize>(out: &mut heapless::String<N>, text: &str) {
    for c in text.chars() {
        if out.push(c).is_err() {
            return;
        }
    }
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
    let is_pl011 = |node: &FdtNode<'_, '_>| node.compatible().is_some_and(|c| c.all().any(|name| name == "arm,pl011"));
    // The console named by /chosen/stdout-path ("serial0:115200n8": an alias, then options),
    // else the first enabled PL011, else the first PL011 at all.
    let stdout = stdout_path(tree).and_then(|path| Located::at_path(tree, path)).filter(|found| is_pl011(&found.node));
    let located = stdout
        .or_else(|| Located::first(tree, &|node| is_pl011(node) && is_enabled(node)))
        .or_else(|| Located::first(tree, &is_pl011))
        .ok_or(PlatformError::Missing("PL011 UART"))?;
    let region = located.reg(0).ok_or(PlatformError::Missing("PL011 UART reg"))?;
    let clock_hz = located
        .node
        .property("clocks")
        .and_then(|p| p.value.get(0..4))
        .and_then(|phandle| tree.find_phandle(u32::from_be_bytes(phandle.try_into().ok()?)))
        .and_then(|clock| clock.property("clock-frequency"))
        .and_then(|p| p.as_usize())
        .map(|hz| hz as u32);
    Ok(Uart { region, clock_hz })
}

/// The node path /chosen/stdout-path names, aliases resolved and `:options` cut off.
fn stdout_path<'a>(tree: &Fdt<'a>) -> Option<&'a str> {
    let value = tree.find_node("/chosen")?.property("stdout-path")?.as_str()?;
    let name = value.split(':').next()?;
    if name.starts_with('/') { Some(name) } else { tree.aliases()?.resolve(name) }
}

/// False for a node whose `status` says it is not in use ("disabled", "fail", ...).
fn is_enabled(node: &FdtNode<'_, '_>) -> bool {
    node.property("status").and_then(|p| p.as_str()).is_none_or(|status| status == "okay" || status == "ok")
}

fn find_gic(tree: &Fdt<'_>) -> Result<GicDescription, PlatformError> {
    let compatible_with = |names: &'static [&'static str]| {
        move |node: &FdtNode<'_, '_>| node.compatible().is_some_and(|c| c.all().any(|name| names.contains(&name)))
    };
    if let Some(located) = Located::first(tree, &compatible_with(&["arm,gic-v3"])) {
        let distributor = located.reg(0).ok_or(PlatformError::Missing("GICv3 distributor reg"))?;
        let redistributors = located.reg(1).ok_or(PlatformError::Missing("GICv3 redistributor reg"))?;
        let stride = located
            .node
            .property("redistributor-stride")
            .and_then(|p| p.as_usize())
            .map_or(GICV3_DEFAULT_STRIDE, |s| s as u64);
        return Ok(GicDescription::V3 { distributor, redistributors, stride });
    }
    let located = Located::first(tree, &compatible_with(&["arm,gic-400", "arm,cortex-a15-gic", "arm,cortex-a9-gic"]))
        .ok_or(PlatformError::Missing("interrupt controller (GICv2 or GICv3)"))?;
    let distributor = located.reg(0).ok_or(PlatformError::Missing("GICv2 distributor reg"))?;
    let cpu_interface = located.reg(1).ok_or(PlatformError::Missing("GICv2 CPU interface reg"))?;
    Ok(GicDescription::V2 { distributor, cpu_interface })
}

/// Deepest node nesting followed when searching the tree.
const MAX_DEPTH: usize = 8;

/// A node with the chain of its ancestors (root first), so its `reg` addresses can be
/// translated through every enclosing bus's `ranges` into CPU physical addresses.
///
/// The Pi 4's tree needs this: its devices sit under `/soc`, whose `ranges` map bus addresses
/// (PL011 at 0x7e20_1000, GIC-400 at 0x4004_1000) to the CPU's (0xfe20_1000, 0xff84_1000).
struct Located<'b, 'a> {
    node: FdtNode<'b, 'a>,
    ancestors: heapless::Vec<FdtNode<'b, 'a>, MAX_DEPTH>,
}

impl<'b, 'a> Located<'b, 'a> {
    /// The first node, depth first in tree order, for which `wanted` holds.
    fn first(tree: &'b Fdt<'a>, wanted: &dyn Fn(&FdtNode<'b, 'a>) -> bool) -> Option<Self> {
        fn search<'b, 'a>(
            node: FdtNode<'b, 'a>,
            ancestors: &mut heapless::Vec<FdtNode<'b, 'a>, MAX_DEPTH>,
            wanted: &dyn Fn(&FdtNode<'b, 'a>) -> bool,
        ) -> Option<Located<'b, 'a>> {
            if wanted(&node) {
                return Some(Located { node, ancestors: ancestors.clone() });
            }
            ancestors.push(node).ok()?;
            let found = node.children().find_map(|child| search(child, ancestors, wanted));
            ancestors.pop();
            found
        }
        search(tree.find_node("/")?, &mut heapless::Vec::new(), wanted)
    }

    /// The node at an absolute `path` ("/soc/serial@7e201000"; a component without a unit
    /// address matches the first child of that name).
    fn at_path(tree: &'b Fdt<'a>, path: &str) -> Option<Self> {
        let mut node = tree.find_node("/")?;
        let mut ancestors = heapless::Vec::new();
        for component in path.split('/').filter(|c| !c.is_empty()) {
            let child = node.children().find(|child| {
                child.name == component || (!component.contains('@') && child.name.split('@').next() == Some(component))
            })?;
            ancestors.push(node).ok()?;
            node = child;
        }
        Some(Located { node, ancestors })
    }

    /// Entry `index` of the node's `reg`, translated to a CPU physical address.
    fn reg(&self, index: usize) -> Option<Region> {
        let parent = self.ancestors.last()?;
        let (address_cells, size_cells) = (address_cells(parent), size_cells(parent));
        let entry_bytes = (address_cells + size_cells) * 4;
        let reg = self.node.property("reg")?.value;
        let entry = reg.get(index * entry_bytes..(index + 1) * entry_bytes)?;
        let address = read_cells(&entry[..address_cells * 4])?;
        let bytes = read_cells(&entry[address_cells * 4..])?;
        Some(Region { base: self.translate(address)?, bytes })
    }

    /// Translates a bus address of this node's parent bus up through every enclosing `ranges`.
    /// A bus without `ranges` is taken as identity-mapped (simple trees leave it out); an
    /// address outside every window of a non-empty `ranges` has no CPU address.
    fn translate(&self, mut address: u64) -> Option<u64> {
        for level in (1..self.ancestors.len()).rev() {
            let (bus, outer) = (&self.ancestors[level], &self.ancestors[level - 1]);
            let Some(ranges) = bus.property("ranges") else { continue };
            if ranges.value.is_empty() {
                continue;
            }
            let (child_cells, parent_cells, length_cells) = (address_cells(bus), address_cells(outer), size_cells(bus));
            let entry_bytes = (child_cells + parent_cells + length_cells) * 4;
            if entry_bytes == 0 {
                return None;
            }
            address = ranges.value.chunks_exact(entry_bytes).find_map(|entry| {
                let (child, rest) = entry.split_at(child_cells * 4);
                let (parent, length) = rest.split_at(parent_cells * 4);
                let (child, parent, length) = (read_cells(child)?, read_cells(parent)?, read_cells(length)?);
                let offset = address.checked_sub(child).filter(|&offset| offset < length)?;
                parent.checked_add(offset)
            })?;
        }
        Some(address)
    }
}

/// `#address-cells` of a node (for its children); 2 when absent, as the specification says.
fn address_cells(node: &FdtNode<'_, '_>) -> usize {
    cell_count(node, "#address-cells").unwrap_or(2)
}

/// `#size-cells` of a node (for its children); 1 when absent.
fn size_cells(node: &FdtNode<'_, '_>) -> usize {
    cell_count(node, "#size-cells").unwrap_or(1)
}

fn cell_count(node: &FdtNode<'_, '_>, name: &str) -> Option<usize> {
    let value = node.property(name)?.value;
    Some(u32::from_be_bytes(value.try_into().ok()?) as usize)
}

/// A big-endian number of 0, 1 or 2 cells (more do not fit a CPU address: `None`).
fn read_cells(bytes: &[u8]) -> Option<u64> {
    match bytes.len() {
        0 => Some(0),
        4 => Some(u64::from(u32::from_be_bytes(bytes.try_into().ok()?))),
        8 => Some(u64::from_be_bytes(bytes.try_into().ok()?)),
        _ => None,
    }
}

#[cfg(test)]
#[path = "tests/fdt_parse.rs"]
mod tests;
