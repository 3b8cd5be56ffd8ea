#!/usr/bin/env python3
"""The linker of every bare-metal build (`.cargo/config.toml`: `make kernel`, `make run`, the
test kernels, the Pi 4 images, the benchmarks, the soak): rust-lld, twice, so the image carries
a table of its own functions (scripts/ksyms.py) that the kernel reads to name the frames of a
backtrace on its console.

1. Link as asked. linker.ld's `.kallsyms` output section, after `.rodata`, is empty.
2. Read that image's code symbols and write the table as an object file whose only section is
   `.kallsyms`.
3. Link again with that object added. The table lies after all code, so no function moves:
   the table describes the image it is in. This is checked (scripts/ksyms.py `check`); should
   the code have moved all the same, the table of the new image is linked in once more (as
   Linux's kallsyms does), and the link fails if it still does not hold.

rustc calls this with the arguments it would give rust-lld (`-flavor gnu ...`) and with the
toolchain's own bin directory, which holds rust-lld, first on PATH.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ksyms  # noqa: E402


def rust_lld() -> str:
    found = shutil.which("rust-lld")
    if found:
        return found
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True).stdout.strip()
    candidates = sorted(Path(sysroot, "lib", "rustlib").glob("*/bin/rust-lld"))
    if not candidates:
        sys.exit("link-kallsyms: rust-lld not found on PATH or in the toolchain")
    return str(candidates[0])


def expanded(args):
    """The arguments with any `@file` (a response file, which rustc uses for a command line too
    long for the system) replaced by the arguments it holds, one a line, backslash-escaped."""
    for arg in args:
        if arg.startswith("@") and Path(arg[1:]).is_file():
            for line in Path(arg[1:]).read_text().splitlines():
                yield re.sub(r"\\(.)", r"\1", line)
        else:
            yield arg


def output_path(args) -> Path:
    args = list(expanded(args))
    for i, arg in enumerate(args):
        if arg == "-o" and i + 1 < len(args):
            return Path(args[i + 1])
        if arg.startswith("-o") and len(arg) > 2:
            return Path(arg[2:])
    sys.exit("link-kallsyms: no -o in the linker arguments")


# Links with a table in all: the second normally; a third only if the code moved.
TABLE_LINKS = 2


def main():
    args = sys.argv[1:]
    lld = rust_lld()
    first = subprocess.run([lld, *args])
    if first.returncode != 0:
        sys.exit(first.returncode)
    out = output_path(args)
    for _ in range(TABLE_LINKS):
        table = ksyms.table_of(out)
        # Not beside the output: scripts look for kernels by name in deps/ (`ls -t name-*`).
        with tempfile.TemporaryDirectory(prefix="kallsyms-") as scratch:
            obj = Path(scratch) / "kallsyms.o"
            obj.write_bytes(ksyms.relocatable_object(table))
            again = subprocess.run([lld, *args, str(obj)])
        if again.returncode != 0:
            sys.exit(again.returncode)
        problems = ksyms.check(out)
        if not problems:
            return
    for problem in problems:
        print(f"link-kallsyms: {problem}", file=sys.stderr)
    os.unlink(out)
    sys.exit(1)


if __name__ == "__main__":
    main()
