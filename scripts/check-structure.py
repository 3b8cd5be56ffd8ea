#!/usr/bin/env python3
"""The scheduler's shape, checked: `make check` runs this.

- No import cycle among the modules of kernel/sched/: a module (a file, or a directory with its
  mod.rs) that names another through `super::x` or `crate::sched::x` depends on it, and the
  dependency graph must have no cycle. A cycle means two jobs that cannot be read, tested or
  changed apart.
- No file in kernel/sched/ longer than MAX_LINES: one job per file.
- The exception vectors name neither the scheduler nor the SMP layer: they call the handlers
  registered at boot.

Comments are ignored (a doc comment may point at another module). Exits 1 with what it found.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHED = ROOT / "kernel" / "sched"
EXCEPTION = ROOT / "kernel" / "arch" / "aarch64" / "exception.rs"
MAX_LINES = 400


def without_comments(source):
    return re.sub(r"//[^\n]*", "", source)


def module_of(path, sched=SCHED):
    """The sched module a file belongs to: `runqueue/slow.rs` and `runqueue/mod.rs` are `runqueue`."""
    return path.relative_to(sched).parts[0].removesuffix(".rs")


def dependencies(sched=SCHED):
    """{module: {module it names: [files that name it]}} for the modules of `sched`."""
    files = sorted(sched.rglob("*.rs"))
    modules = {module_of(f, sched) for f in files if f.name != "mod.rs" or f.parent != sched}
    graph = {m: {} for m in modules}
    for f in files:
        if f.parent == sched and f.name == "mod.rs":
            continue  # sched/mod.rs declares and re-exports every module
        me = module_of(f, sched)
        for name in re.findall(r"(?:\bsuper|crate::sched)::(\w+)", without_comments(f.read_text())):
            if f.parent != sched and name not in modules:
                continue  # `super::x` inside a directory module names its own parent's items
            if name in modules and name != me:
                graph[me].setdefault(name, []).append(str(f.relative_to(sched)))
    return graph


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
    graph = dependencies()
    for component in cycles(graph):
        problems.append("import cycle among kernel/sched modules: " + ", ".join(component))
        for a in component:
            for b in sorted(set(graph[a]) & set(component)):
                problems.append(f"    {a} -> {b} ({', '.join(sorted(set(graph[a][b])))})")
    for f in sorted(SCHED.rglob("*.rs")):
        lines = len(f.read_text().splitlines())
        if lines > MAX_LINES:
            problems.append(f"{f.relative_to(ROOT)}: {lines} lines (at most {MAX_LINES}: one job per file)")
    named = re.findall(r"\b(crate::(?:sched|smp)\b|super::super::(?:sched|smp)\b)", without_comments(EXCEPTION.read_text()))
    if named:
        problems.append(f"{EXCEPTION.relative_to(ROOT)} names {sorted(set(named))}: it must call registered handlers")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"structure: {len(graph)} sched modules, no import cycle, no file over {MAX_LINES} lines, "
          "exception vectors name no scheduler or SMP item")


if __name__ == "__main__":
    main()
