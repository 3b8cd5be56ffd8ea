#!/usr/bin/env python3
"""The source tree's shape, checked: `make check` runs this.

- No import cycle in kernel/sched/, at any folder level: among the parts of sched/ itself (each
  file, and each folder taken whole), and among the parts of each of its folders (run/runqueue/
  among the files of run/, say). A file that names a module through `super::x`,
  `super::super::x` or `crate::x::y` (sched is a crate: kernel/sched/lib.rs) depends on it; the dependency counts at the level of
  the nearest folder that holds both, between the two parts of that folder they stand in (a file
  of run/ naming proc/process.rs: run -> proc among sched/'s parts). A file naming its own
  folder's items (`super::helper` in a folder's file) is no dependency between parts. Each level's
  graph must have no cycle: a cycle means two jobs that cannot be read, tested or changed apart.
- No Rust source file anywhere in the tree longer than MAX_LINES, tests apart: one job per file
  (issue #31). Test code is exempt (a file under a `tests/` directory, which covers the crates'
  `src/tests/`, or a loom model, `loom*.rs`): a test file is a list of cases, read one at a
  time. A file over the limit that another branch owns is named in ALLOWED_LONG, with why; an
  entry that is no longer needed (the file shrank, moved or went) fails too, so the list only
  shrinks. The files are those git tracks or would add (untracked, not ignored), so a new file
  is checked before its first commit; outside a git checkout, every .rs file but target/'s.

That the exception vectors name no higher layer is no longer checked here: they are in the
hardware crate, which cannot name the scheduler or the SMP crate at all (scripts/check-layers.py).

In the import graph comments are ignored (a doc comment may point at another module). Exits 1
with what it found.
"""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHED = ROOT / "kernel" / "sched"
MAX_LINES = 400

# Files allowed over MAX_LINES, each with the reason: none. The mechanism stays for a file another
# branch owns while it is being changed (issue #31 split the simulator and the demo workloads,
# the last entries). An entry must say why; the check fails on one that is no longer needed
# (its file within the limit, or gone), so the dict only shrinks.
ALLOWED_LONG: dict[str, str] = {}


def without_comments(source):
    return re.sub(r"//[^\n]*", "", source)


def module_path(path, sched=SCHED):
    """A file's module under sched, as path segments: `run/percore.rs` is (run, percore),
    `run/runqueue/mod.rs` is (run, runqueue), the crate's root sched/lib.rs is ()."""
    parts = path.relative_to(sched).with_suffix("").parts
    if parts == ("lib",):
        return ()  # the crate's root: sched is a crate of its own (kernel/sched/lib.rs)
    return parts[:-1] if parts[-1] == "mod" else parts


def named_paths(source):
    """The module paths a file's code names, each as (prefix, segments): `super::a::{b, c::d}`
    gives ("super::", [a, b]) and ("super::", [a, c, d]); only the segments up to the first
    brace's items matter to the graph."""
    found = []
    for m in re.finditer(r"\b((?:super::)+|crate::|self::)((?:\w+::)*)(\{[^}]*\}|\w+)", source):
        head = [s for s in m.group(2).split("::") if s]
        tail = m.group(3)
        items = [t.strip() for t in tail.strip("{}").split(",")] if tail.startswith("{") else [tail]
        for item in items:
            first = re.match(r"\w+", item)
            found.append((m.group(1), head + ([first.group(0)] if first else [])))
    return found


def levels(sched=SCHED):
    """{folder: {part: {part it names: [files that name it]}}} for every folder of `sched` (the
    folder as a path under sched: "" for sched/ itself, "run" for run/, "run/runqueue", ...).
    A part is a file (its stem) or a sub-folder (its name) of that folder."""
    files = sorted(sched.rglob("*.rs"))
    modules = {module_path(f, sched) for f in files}
    graphs = {}
    for f in files:
        me = module_path(f, sched)
        folder = me if f.name == "mod.rs" else me[:-1]
        graphs.setdefault("/".join(folder), {})
        if me:
            graphs.setdefault("/".join(me[:-1]), {}).setdefault(me[-1], {})
    for f in files:
        me = module_path(f, sched)
        if not me:
            continue  # sched/lib.rs declares and re-exports every module
        for prefix, segments in named_paths(without_comments(f.read_text())):
            if prefix == "crate::":
                base = ()
            elif prefix == "self::":
                base = me
            else:
                ups = prefix.count("super")
                if ups > len(me):
                    continue  # beyond sched (`super::super` at sched/x.rs names the crate)
                base = me[: len(me) - ups]
            target = base + tuple(segments)
            while target and target not in modules:
                target = target[:-1]  # down to the module that holds the item named
            shared = 0
            while shared < min(len(me), len(target)) and me[shared] == target[shared]:
                shared += 1
            if shared == len(target) or shared == len(me):
                continue  # its own folder's items, or a folder's mod.rs naming its own parts
            graph = graphs["/".join(me[:shared])]
            graph.setdefault(me[shared], {}).setdefault(target[shared], []).append(str(f.relative_to(sched)))
            graph.setdefault(target[shared], {})
    return graphs


def dependencies(sched=SCHED):
    """{part: {part it names: [files that name it]}} among the parts of sched/ itself (its files
    and its folders, each folder taken whole)."""
    return levels(sched)[""]


def is_test_code(path):
    """True for a file under a `tests/` directory (tests/, crates/x/tests/, crates/x/src/tests/)
    or a loom model (`loom*.rs`): exempt from MAX_LINES."""
    parts = pathlib.PurePosixPath(path).parts
    return "tests" in parts[:-1] or parts[-1].startswith("loom")


def rust_files(root=ROOT):
    """The repository's .rs files, relative to `root`: what git tracks or would add (untracked
    and not ignored, so a new file counts before its first commit). Outside a git checkout,
    every .rs file but those under target/."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.rs"],
            cwd=root, capture_output=True, text=True, check=True,
        ).stdout.split("\0")
        return sorted(p for p in set(listed) if p and (root / p).is_file())
    except (OSError, subprocess.CalledProcessError):
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.rs")
                      if "target" not in p.relative_to(root).parts)


def long_files(lines, allowed=ALLOWED_LONG, limit=MAX_LINES):
    """What breaks the line limit, given {path: lines}: a file over it that is neither test code
    nor allowed, and an allowance no longer needed (its file within the limit, or gone)."""
    problems = []
    for path, count in sorted(lines.items()):
        if count > limit and not is_test_code(path) and path not in allowed:
            problems.append(f"{path}: {count} lines (at most {limit} outside tests: one job per file, "
                            "split it by concern)")
    for path in sorted(allowed):
        if path not in lines:
            problems.append(f"{path}: in ALLOWED_LONG but not in the tree: remove it from the list")
        elif lines[path] <= limit:
            problems.append(f"{path}: {lines[path]} lines, within {limit} now: remove it from ALLOWED_LONG")
    return problems


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    problems = []
    graphs = levels()
    for folder, graph in sorted(graphs.items()):
        where = f"kernel/sched/{folder}/" if folder else "kernel/sched/"
        for component in cycles(graph):
            problems.append(f"import cycle among the parts of {where}: " + ", ".join(component))
            for a in component:
                for b in sorted(set(graph[a]) & set(component)):
                    problems.append(f"    {a} -> {b} ({', '.join(sorted(set(graph[a][b])))})")
    files = rust_files()
    problems += long_files({path: len((ROOT / path).read_text().splitlines()) for path in files})
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    parts = sum(len(graph) for graph in graphs.values())
    print(f"structure: {parts} parts in {len(graphs)} kernel/sched folders, no import cycle; {len(files)} Rust files, none over "
          f"{MAX_LINES} lines outside tests but the {len(ALLOWED_LONG)} allowed")


if __name__ == "__main__":
    main()
