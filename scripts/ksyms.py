#!/usr/bin/env python3
"""The kernel's built-in symbol table (like Linux's kallsyms): made from a linked kernel ELF,
read by the kernel itself (crates/kallsyms) to name the functions of a backtrace on its
own console, with no debugger and no host tools, as on a board's UART.

    ksyms.py table ELF          lists the (address, name) pairs the table of ELF would hold
    ksyms.py check ELF          checks that ELF's .kallsyms section holds exactly the table of
                                its own code (what scripts/link-kallsyms.py builds it to)

The table (little-endian; crates/kallsyms reads it, and must agree):

    0   magic  b"BCKSYMS1"
    8   count  u32: number of symbols
    12  names  u32: bytes of the name area
    16  text_end u64: one past the last byte of code; an address at or beyond it has no name
    24  addresses [u64; count], ascending, one symbol per address
        name_offsets [u32; count + 1] into the name area (name i = names[off[i]..off[i+1]])
        the name area: the names as the ELF spells them (mangled; the kernel demangles)
    then, 8-aligned, the inline part (absent in an image without debug information):
    0   magic  b"BCKINLN1"
    8   base   u64: the address segment starts count from (the start of code)
    16  segments u32, nodes u32, names u32, name bytes u32
    32  starts [u32; segments]: ascending offsets from base where a segment begins (it ends
            where the next begins; the last ends at text_end)
        innermost [u32; segments]: the node inlined at the segment's code (NONE: no inline)
        nodes [(name u32, parent u32); nodes]: a function inlined there, and the node it was
            inlined into (NONE: the symbol's own function); equal chains share nodes
        name_offsets [u32; names + 1] and the name area, as above (legacy names without their
            hash, which the kernel would drop anyway)

The inline part is what `llvm-addr2line -i` would say for each address, read from the image's
DWARF by scripts/dwarf_inline.py, with the std library's own inlines (core, alloc) counted as
part of the function they were inlined into.

Only the standard library: ELF64 little-endian is parsed by hand (struct), so the linker step
needs no tool beyond the linker itself.
"""

import re
import struct
import sys
from pathlib import Path

import dwarf_inline

MAGIC = b"BCKSYMS1"
HEADER = struct.Struct("<8sIIQ")
SECTION = ".kallsyms"
INLINE_MAGIC = b"BCKINLN1"
INLINE_HEADER = struct.Struct("<8sQIIII")
NONE = 0xFFFFFFFF
LEGACY_HASH = re.compile(r"17h[0-9a-f]{16}E$")

SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHT_SYMTAB = 2
STT_NOTYPE = 0
STT_FUNC = 2
STB_GLOBAL = 1


class Elf:
    """The sections and symbols of an ELF64 little-endian file."""

    def __init__(self, data: bytes):
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            raise ValueError("not an ELF64 little-endian file")
        self.data = data
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        self.sections = []
        for i in range(shnum):
            name, kind, flags, addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", data, shoff + i * shentsize)
            self.sections.append({"name_offset": name, "type": kind, "flags": flags, "addr": addr,
                                  "offset": offset, "size": size, "link": link, "entsize": entsize})
        names = self.sections[shstrndx]
        for section in self.sections:
            section["name"] = self._string(names, section["name_offset"])

    def _string(self, strtab, offset):
        start = strtab["offset"] + offset
        return self.data[start:self.data.index(b"\0", start)].decode("utf-8", "replace")

    def section(self, name):
        return next((s for s in self.sections if s["name"] == name), None)

    def section_bytes(self, name):
        s = self.section(name)
        return None if s is None else self.data[s["offset"]:s["offset"] + s["size"]]

    def symbols(self):
        """(name, value, type, binding, section index) of every symbol in .symtab."""
        symtab = next((s for s in self.sections if s["type"] == SHT_SYMTAB), None)
        if symtab is None:
            return
        strtab = self.sections[symtab["link"]]
        for offset in range(symtab["offset"], symtab["offset"] + symtab["size"], symtab["entsize"]):
            name, info, _other, shndx, value, _size = struct.unpack_from("<IBBHQQ", self.data, offset)
            yield self._string(strtab, name), value, info & 0xF, info >> 4, shndx


def code_symbols(elf: Elf):
    """([(address, name)] sorted, one per address; text_start, text_end) of the code.

    Functions (STT_FUNC) and the labels of hand-written assembly (STT_NOTYPE in code, such as
    `trap_common`); not the linker's `$x`/`$d` mapping symbols. Where several share an address
    the function wins over a label and a name without a leading `__` (the linker script's
    markers, such as `__kernel_start`) over one with it."""
    code = [i for i, s in enumerate(elf.sections) if s["flags"] & SHF_ALLOC and s["flags"] & SHF_EXECINSTR]
    if not code:
        raise ValueError("the ELF has no code section")
    text_start = min(elf.sections[i]["addr"] for i in code)
    text_end = max(elf.sections[i]["addr"] + elf.sections[i]["size"] for i in code)
    best = {}
    for name, value, kind, binding, shndx in elf.symbols():
        if shndx not in code or not name or name.startswith("$") or kind not in (STT_FUNC, STT_NOTYPE):
            continue
        if not text_start <= value < text_end:
            continue
        rank = (kind != STT_FUNC, name.startswith("__"), binding != STB_GLOBAL, name)
        if value not in best or rank < best[value][0]:
            best[value] = (rank, name)
    return sorted((address, name) for address, (_, name) in best.items()), text_start, text_end


def encode(symbols, text_end: int) -> bytes:
    """The table's bytes for [(address, name)] sorted by address, one per address."""
    names = bytearray()
    offsets = []
    for _, name in symbols:
        offsets.append(len(names))
        names += name.encode("utf-8")
    offsets.append(len(names))
    addresses = [address for address, _ in symbols]
    if addresses != sorted(set(addresses)):
        raise ValueError("addresses must be ascending and distinct")
    return (HEADER.pack(MAGIC, len(symbols), len(names), text_end)
            + struct.pack(f"<{len(addresses)}Q", *addresses)
            + struct.pack(f"<{len(offsets)}I", *offsets)
            + bytes(names))


def encode_inline(base: int, segments, nodes) -> bytes:
    """The inline part for `dwarf_inline.inline_segments`'s ([(start, node)], [(name, parent)])."""
    names, name_index = [], {}
    packed_nodes = []
    for name, parent in nodes:
        name = LEGACY_HASH.sub("E", name)
        if name not in name_index:
            name_index[name] = len(names)
            names.append(name)
        packed_nodes += [name_index[name], NONE if parent is None else parent]
    area, offsets = bytearray(), []
    for name in names:
        offsets.append(len(area))
        area += name.encode("utf-8")
    offsets.append(len(area))
    starts = [start - base for start, _ in segments]
    if starts != sorted(set(starts)) or (starts and not 0 <= starts[0] <= starts[-1] < 1 << 32):
        raise ValueError("segment starts must be ascending, distinct and within 4 GiB of the base")
    innermost = [NONE if node is None else node for _, node in segments]
    return (INLINE_HEADER.pack(INLINE_MAGIC, base, len(starts), len(nodes), len(names), len(area))
            + struct.pack(f"<{len(starts)}I", *starts) + struct.pack(f"<{len(starts)}I", *innermost)
            + struct.pack(f"<{len(packed_nodes)}I", *packed_nodes) + struct.pack(f"<{len(offsets)}I", *offsets)
            + bytes(area))


def with_inline(table: bytes, inline: bytes) -> bytes:
    """The symbol table with the inline part after it, 8-aligned."""
    return table + bytes(-len(table) % 8) + inline if inline else table


def decode(table: bytes):
    """([(address, name)], text_end): the inverse of `encode`, for checks and tests."""
    magic, count, names_len, text_end = HEADER.unpack_from(table, 0)
    if magic != MAGIC:
        raise ValueError("not a symbol table")
    addresses = struct.unpack_from(f"<{count}Q", table, HEADER.size)
    offsets = struct.unpack_from(f"<{count + 1}I", table, HEADER.size + 8 * count)
    names = table[HEADER.size + 8 * count + 4 * (count + 1):][:names_len]
    return [(a, names[offsets[i]:offsets[i + 1]].decode()) for i, a in enumerate(addresses)], text_end


def inline_of(elf: Elf, text_start: int, text_end: int) -> bytes:
    """The inline part for an ELF's DWARF (empty without debug information). Unreadable DWARF
    gives none too, with a warning: the backtraces then name symbols only."""
    sections = {s["name"]: elf.data[s["offset"]:s["offset"] + s["size"]]
                for s in elf.sections if s["name"].startswith(".debug_")}
    try:
        segments, nodes = dwarf_inline.inline_segments(sections, (text_start, text_end))
    except (dwarf_inline.Unsupported, KeyError, IndexError, struct.error) as error:
        print(f"ksyms: no inline table ({error}); backtraces name symbols only", file=sys.stderr)
        return b""
    return encode_inline(text_start, segments, nodes) if segments else b""


def table_of(elf_path: Path) -> bytes:
    """The table describing the code of the linked kernel at `elf_path`: its symbols, then
    where functions were inlined."""
    elf = Elf(Path(elf_path).read_bytes())
    symbols, text_start, text_end = code_symbols(elf)
    return with_inline(encode(symbols, text_end), inline_of(elf, text_start, text_end))


def relocatable_object(payload: bytes) -> bytes:
    """An AArch64 ELF relocatable object whose one section, `.kallsyms` (allocated, read-only,
    8-byte aligned), holds `payload`: what the second link adds, and linker.ld places."""
    shstrtab = b"\0" + SECTION.encode() + b"\0.shstrtab\0"
    data_offset = 64
    shstrtab_offset = data_offset + len(payload)
    shoff = (shstrtab_offset + len(shstrtab) + 7) & ~7
    # e_ident, e_type=REL, e_machine=AArch64 (183), e_version, entry, phoff, shoff, flags,
    # ehsize, phentsize, phnum, shentsize, shnum=3, shstrndx=2.
    header = (b"\x7fELF\x02\x01\x01" + bytes(9)
              + struct.pack("<HHIQQQIHHHHHH", 1, 183, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 2))
    section = struct.Struct("<IIQQQQIIQQ")
    null = section.pack(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    kallsyms = section.pack(1, 1, SHF_ALLOC, 0, data_offset, len(payload), 0, 0, 8, 0)  # PROGBITS
    names = section.pack(1 + len(SECTION) + 1, 3, 0, 0, shstrtab_offset, len(shstrtab), 0, 0, 1, 0)  # STRTAB
    body = header + payload + shstrtab
    return body + bytes(shoff - len(body)) + null + kallsyms + names


def check(elf_path: Path) -> list:
    """Problems with the built-in table of a linked kernel: [] when `.kallsyms` describes
    exactly the code of the image it is in."""
    elf = Elf(Path(elf_path).read_bytes())
    held = elf.section_bytes(SECTION)
    if held is None:
        return [f"{elf_path}: no {SECTION} section (not linked by scripts/link-kallsyms.py?)"]
    symbols, _, text_end = code_symbols(elf)
    # The inline part was read from the first link's DWARF: it holds if no function moved.
    expected = encode(symbols, text_end)
    if held[:len(expected)] != expected:
        return [f"{elf_path}: {SECTION} does not describe this image's code (the second link moved it)"]
    return []


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("table", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "table":
        symbols, text_end = decode(table_of(Path(sys.argv[2])))
        for address, name in symbols:
            print(f"{address:016x} {name}")
        print(f"{text_end:016x} (end of code)")
        return
    problems = check(Path(sys.argv[2]))
    for problem in problems:
        print(f"ksyms: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"ksyms: {sys.argv[2]}: {SECTION} describes its code")


if __name__ == "__main__":
    main()
