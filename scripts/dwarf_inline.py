"""Where a linked image's code was inlined from: the DWARF `DW_TAG_inlined_subroutine` entries of
an ELF, flattened into address segments, each with the chain of functions inlined there
(innermost first), as `llvm-addr2line -i` reports them. scripts/ksyms.py puts the result in the
kernel's own symbol table, so a backtrace on the console names the program's function that LTO
folded into a kernel function (a process's closure into `sched::entry::call_in_place`).

Only the standard library, like ksyms.py: DWARF 2-5 `.debug_info`/`.debug_abbrev` are read by
hand, as far as inlining needs (the tags, names, address ranges and references; every other
attribute is skipped by its form). Ranges come from `.debug_ranges` (DWARF 4) or
`.debug_rnglists` (DWARF 5); an image whose units use forms indexed through `.debug_addr` or
`.debug_str_offsets` (split DWARF) is reported as unsupported rather than misread.
"""

import heapq
import struct

TAG_COMPILE_UNIT = 0x11
TAG_SUBPROGRAM = 0x2E
TAG_INLINED_SUBROUTINE = 0x1D
TAG_NAMESPACE = 0x39

AT_NAME = 0x03
AT_LOW_PC = 0x11
AT_HIGH_PC = 0x12
AT_ABSTRACT_ORIGIN = 0x31
AT_SPECIFICATION = 0x47
AT_RANGES = 0x55
AT_LINKAGE_NAME = 0x6E
AT_MIPS_LINKAGE_NAME = 0x2007
WANTED = {AT_NAME, AT_LOW_PC, AT_HIGH_PC, AT_ABSTRACT_ORIGIN, AT_SPECIFICATION, AT_RANGES, AT_LINKAGE_NAME,
          AT_MIPS_LINKAGE_NAME}

# Forms of a fixed size (DW_FORM_*: bytes), and the ones that hold a reference.
FIXED = {0x05: 2, 0x06: 4, 0x07: 8, 0x0B: 1, 0x0C: 1, 0x11: 1, 0x12: 2, 0x13: 4, 0x14: 8, 0x17: 4,
         0x19: 0, 0x1C: 4, 0x1D: 4, 0x1E: 16, 0x1F: 4, 0x20: 8, 0x21: 0, 0x25: 1, 0x26: 2, 0x27: 3,
         0x28: 4, 0x29: 1, 0x2A: 2, 0x2B: 3, 0x2C: 4}
UNIT_REFS = {0x11, 0x12, 0x13, 0x14, 0x15}
INDEXED = {0x1A, 0x1B, 0x22, 0x23, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C}


class Unsupported(Exception):
    """DWARF this reader does not handle; the image then carries no inline table."""


def uleb(data, at):
    result = shift = 0
    while True:
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, at


def sleb(data, at):
    result = shift = 0
    while True:
        byte = data[at]
        at += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            if byte & 0x40:
                result -= 1 << shift
            return result, at


def abbreviations(data, at):
    """{code: (tag, has_children, [(attribute, form, implicit_const)])} of one abbrev table."""
    table = {}
    while True:
        code, at = uleb(data, at)
        if code == 0:
            return table
        tag, at = uleb(data, at)
        children = data[at]
        at += 1
        specs = []
        while True:
            attribute, at = uleb(data, at)
            form, at = uleb(data, at)
            constant = None
            if form == 0x21:
                constant, at = sleb(data, at)
            if attribute == 0 and form == 0:
                break
            specs.append((attribute, form, constant))
        table[code] = (tag, children, specs)


INTERESTING = {TAG_COMPILE_UNIT, TAG_SUBPROGRAM, TAG_INLINED_SUBROUTINE, TAG_NAMESPACE}
SKIP, SKIP_BLOCK, SKIP_STRING, READ = range(4)


def plan(tag, specs, address_size):
    """How to read one abbreviation's attributes: runs of fixed-size attributes nobody needs
    become one skip (most DIEs are types, variables and parameters: this is the reader's speed).
    Steps: (SKIP, bytes), (SKIP_BLOCK,) for a ULEB-sized block, (SKIP_STRING,), or
    (READ, attribute, form, implicit constant)."""
    steps = []
    for attribute, form, constant in specs:
        needed = tag in INTERESTING and attribute in WANTED
        size = address_size if form == 0x01 else FIXED.get(form)
        if not needed and size is not None:
            if steps and steps[-1][0] == SKIP:
                steps[-1] = (SKIP, steps[-1][1] + size)
            else:
                steps.append((SKIP, size))
        elif not needed and form in (0x09, 0x18):
            steps.append((SKIP_BLOCK,))
        elif not needed and form == 0x08:
            steps.append((SKIP_STRING,))
        else:
            steps.append((READ, attribute, form, constant))
    return steps


class Reader:
    """One pass over `.debug_info`, keeping what inlining needs."""

    def __init__(self, sections):
        self.info = sections[".debug_info"]
        self.abbrev = sections[".debug_abbrev"]
        self.strings = sections.get(".debug_str", b"")
        self.line_strings = sections.get(".debug_line_str", b"")
        self.ranges = sections.get(".debug_ranges", b"")
        self.rnglists = sections.get(".debug_rnglists", b"")
        # DIE offset -> (linkage name, name, origin-or-specification offset, crate): subprograms.
        self.names = {}
        self.inlined = []  # (depth, [(low, high)], DIE offset of the origin, parent inline index)

    def string(self, section, offset):
        return section[offset:section.index(b"\0", offset)].decode("utf-8", "replace")

    def value(self, form, at, unit, constant):
        """(value, next offset) of one attribute; references come back as .debug_info offsets."""
        data = self.info
        if form == 0x16:  # indirect: the form comes first
            form, at = uleb(data, at)
        if form in INDEXED:
            raise Unsupported(f"DW_FORM {form:#x} needs .debug_addr/.debug_str_offsets (split DWARF)")
        if form == 0x01:
            return int.from_bytes(data[at:at + unit["address_size"]], "little"), at + unit["address_size"]
        if form == 0x08:
            end = data.index(b"\0", at)
            return data[at:end].decode("utf-8", "replace"), end + 1
        if form == 0x0E:
            return self.string(self.strings, struct.unpack_from("<I", data, at)[0]), at + 4
        if form == 0x1F:
            return self.string(self.line_strings, struct.unpack_from("<I", data, at)[0]), at + 4
        if form == 0x10:
            size = 4 if unit["version"] >= 3 else unit["address_size"]
            return int.from_bytes(data[at:at + size], "little"), at + size
        if form in (0x0F, 0x15):
            value, at = uleb(data, at)
            return (unit["offset"] + value if form == 0x15 else value), at
        if form == 0x0D:
            return sleb(data, at)
        if form in (0x09, 0x18):
            size, at = uleb(data, at)
            return None, at + size
        if form in (0x0A, 0x03, 0x04):
            width = {0x0A: 1, 0x03: 2, 0x04: 4}[form]
            size = int.from_bytes(data[at:at + width], "little")
            return None, at + width + size
        if form == 0x21:
            return constant, at
        size = FIXED.get(form)
        if size is None:
            raise Unsupported(f"unknown DW_FORM {form:#x}")
        value = int.from_bytes(data[at:at + size], "little") if size else True
        return (unit["offset"] + value if form in UNIT_REFS else value), at + size

    def range_list(self, offset, unit):
        """[(low, high)] of a DW_AT_ranges list."""
        out = []
        if unit["version"] < 5:
            base, size = unit["low_pc"], unit["address_size"]
            mask = (1 << (8 * size)) - 1
            while True:
                low = int.from_bytes(self.ranges[offset:offset + size], "little")
                high = int.from_bytes(self.ranges[offset + size:offset + 2 * size], "little")
                offset += 2 * size
                if low == 0 and high == 0:
                    return out
                if low == mask:
                    base = high
                elif low < high:
                    out.append((base + low, base + high))
        base, data = unit["low_pc"], self.rnglists
        while True:
            kind = data[offset]
            offset += 1
            if kind == 0:  # end_of_list
                return out
            if kind == 4:  # offset_pair
                low, offset = uleb(data, offset)
                high, offset = uleb(data, offset)
                out.append((base + low, base + high))
            elif kind == 5:  # base_address
                base = int.from_bytes(data[offset:offset + 8], "little")
                offset += 8
            elif kind == 6:  # start_end
                low, high = struct.unpack_from("<QQ", data, offset)
                offset += 16
                out.append((low, high))
            elif kind == 7:  # start_length
                low = int.from_bytes(data[offset:offset + 8], "little")
                length, offset = uleb(data, offset + 8)
                out.append((low, low + length))
            else:
                raise Unsupported(f"DW_RLE {kind:#x} needs .debug_addr")

    def pc_ranges(self, attributes, unit, high_is_offset):
        if AT_RANGES in attributes:
            return [(low, high) for low, high in self.range_list(attributes[AT_RANGES], unit) if low < high]
        low = attributes.get(AT_LOW_PC)
        high = attributes.get(AT_HIGH_PC)
        if low is None or high is None:
            return []
        if high_is_offset:
            high += low
        return [(low, high)] if low < high else []

    def read(self):
        data = self.info
        at = 0
        tables = {}
        while at < len(data):
            start = at
            length, version = struct.unpack_from("<IH", data, at)
            if length == 0xFFFFFFFF:
                raise Unsupported("64-bit DWARF")
            end = at + 4 + length
            if version >= 5:
                unit_type, address_size, abbrev_offset = struct.unpack_from("<BBI", data, at + 6)
                at += 12
                if unit_type not in (1, 3):  # compile, partial
                    at = end
                    continue
            else:
                abbrev_offset, address_size = struct.unpack_from("<IB", data, at + 6)
                at += 11
            key = (abbrev_offset, address_size)
            if key not in tables:
                tables[key] = {code: (tag, children, plan(tag, specs, address_size))
                               for code, (tag, children, specs) in abbreviations(self.abbrev, abbrev_offset).items()}
            unit = {"offset": start, "version": version, "address_size": address_size, "low_pc": 0}
            self.read_unit(at, end, tables[key], unit)
            at = end

    def read_unit(self, at, end, table, unit):
        # Per open DIE with children: the inline its children sit in (an index in self.inlined),
        # or None inside a function's own body; and the namespace it is (None if not one).
        stack = []
        namespaces = []
        info = self.info
        while at < end:
            offset = at
            code = info[at]
            if code < 0x80:
                at += 1
            else:
                code, at = uleb(info, at)
            if code == 0:
                if stack:
                    stack.pop()
                    namespaces.pop()
                continue
            tag, children, steps = table[code]
            attributes = {}
            high_is_offset = False
            for step in steps:
                kind = step[0]
                if kind == SKIP:
                    at += step[1]
                elif kind == SKIP_BLOCK:
                    size, at = uleb(info, at)
                    at += size
                elif kind == SKIP_STRING:
                    at = info.index(b"\0", at) + 1
                else:
                    _, attribute, form, constant = step
                    attributes[attribute], at = self.value(form, at, unit, constant)
                    # DW_FORM_addr is an address; any constant form is a length from low_pc.
                    high_is_offset |= attribute == AT_HIGH_PC and form != 0x01
            inline_index = None
            if tag == TAG_COMPILE_UNIT:
                unit["low_pc"] = attributes.get(AT_LOW_PC, 0) or 0
            elif tag == TAG_SUBPROGRAM:
                origin = attributes.get(AT_SPECIFICATION, attributes.get(AT_ABSTRACT_ORIGIN))
                linkage = attributes.get(AT_LINKAGE_NAME, attributes.get(AT_MIPS_LINKAGE_NAME))
                crate = next((name for name in namespaces if name is not None), None)
                self.names[offset] = (linkage, attributes.get(AT_NAME), origin, crate)
            elif tag == TAG_INLINED_SUBROUTINE and AT_ABSTRACT_ORIGIN in attributes:
                parent = stack[-1] if stack else None
                depth = 0 if parent is None else self.inlined[parent][0] + 1
                ranges = self.pc_ranges(attributes, unit, high_is_offset)
                self.inlined.append((depth, ranges, attributes[AT_ABSTRACT_ORIGIN], parent))
                inline_index = len(self.inlined) - 1
            if children:
                namespaces.append(attributes.get(AT_NAME) if tag == TAG_NAMESPACE else None)
                if tag == TAG_SUBPROGRAM:
                    # A function's body: the inlines in it are its own, not inside an enclosing one.
                    stack.append(None)
                elif inline_index is not None:
                    stack.append(inline_index)
                else:
                    stack.append(stack[-1] if stack else None)

    def name_of(self, offset):
        """(linkage name, crate) of the function a DIE offset names, following abstract origins
        and specifications: the mangled name (its plain name if it has none) and the outermost
        namespace it is declared in (the crate that defines it)."""
        plain = crate = None
        for _ in range(8):
            entry = self.names.get(offset)
            if entry is None:
                break
            linkage, name, origin, outer = entry
            crate = crate or outer
            if linkage and crate:
                return linkage, crate
            plain = plain or linkage or name
            if origin is None:
                break
            offset = origin
        return plain or "?", crate


# Crates whose inlined functions are left out of the table: a frame is named by the innermost
# function of the kernel or the program (`core::ptr::write` inlined in a program's function names
# the program's function), and the table stays a fraction of the size.
LIBRARY_CRATES = {"core", "alloc", "compiler_builtins", "rustc_demangle"}


def inline_segments(sections, code, leave_out=LIBRARY_CRATES):
    """([(start, node)], [(name, parent node)]): the code addresses split into segments, each
    with the innermost inline node (or None) covering it; a node's parent is the inline it sits
    in (None for a function's own body), and equal chains share their nodes. Inlines of a crate
    in `leave_out` count as part of what they were inlined into. Only ranges within `code`
    (start, end) count: the linker leaves the DWARF of the code it dropped (--gc-sections) at
    address 0 or another tombstone. Ascending starts; a segment
    ends where the next starts. Raises Unsupported on DWARF this reader cannot read."""
    if ".debug_info" not in sections or ".debug_abbrev" not in sections:
        return [], []
    reader = Reader(sections)
    reader.read()
    return flatten(reader, code, leave_out)


def flatten(reader, code, leave_out):
    """`inline_segments` of what a Reader has read."""
    # Nodes: one per distinct chain of kept inlines; an inline left out maps to its parent's.
    nodes = []
    node_ids = {}
    node_of = []
    for _depth, _ranges, origin, parent in reader.inlined:
        outer = None if parent is None else node_of[parent]
        name, crate = reader.name_of(origin)
        if crate in leave_out:
            node_of.append(outer)
            continue
        key = (name, outer)
        if key not in node_ids:
            node_ids[key] = len(nodes)
            nodes.append(key)
        node_of.append(node_ids[key])
    # Sweep: at each boundary the deepest open inline is the innermost.
    events = []
    for index, (depth, ranges, _origin, _parent) in enumerate(reader.inlined):
        if node_of[index] is None:
            continue
        for low, high in ranges:
            if not code[0] <= low < high <= code[1]:
                continue
            events.append((low, 1, depth, node_of[index]))
            events.append((high, 0, depth, node_of[index]))
    events.sort()
    open_nodes = {}
    heap = []
    segments = []
    i = 0
    while i < len(events):
        address = events[i][0]
        while i < len(events) and events[i][0] == address:
            _, opening, depth, node = events[i]
            if opening:
                open_nodes[node] = open_nodes.get(node, 0) + 1
                heapq.heappush(heap, (-depth, -node, node))
            else:
                open_nodes[node] -= 1
            i += 1
        while heap and open_nodes.get(heap[0][2], 0) <= 0:
            heapq.heappop(heap)
        innermost = heap[0][2] if heap else None
        if not segments or segments[-1][1] != innermost:
            segments.append((address, innermost))
    return used_only(segments, nodes)


def used_only(segments, nodes):
    """The segments and only the nodes they reach (an inline of dropped code reaches none),
    renumbered in order of first use."""
    renumbered = {}

    def keep(node):
        if node is None or node in renumbered:
            return None if node is None else renumbered[node]
        parent = keep(nodes[node][1])
        renumbered[node] = len(kept)
        kept.append((nodes[node][0], parent))
        return renumbered[node]

    kept = []
    segments = [(start, keep(node)) for start, node in segments]
    return segments, kept
