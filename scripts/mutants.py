#!/usr/bin/env python3
"""make mutants: mutation testing of the pure code (balancing policy, priorities, the deque
algorithm, the bootargs parser) with cargo-mutants, against the host tests.

cargo-mutants makes one small change at a time to the code named in .cargo/mutants.toml (an
operator flipped, a function body replaced by a constant, ...), rebuilds, and runs the host
tests: a mutant the tests still pass on ("missed") is behaviour no test pins down. Every missed
mutant must be listed in docs/mutants-equivalent.md with the reason it cannot change what the
code does (or why no host test can see it); a missed mutant that is not listed fails the run.

Prints `N caught, M missed, K unviable, T timeouts` and the run time, and writes mutants.caught,
mutants.missed, mutants.unviable, mutants.timeouts and mutants.seconds into
bench/results.json, keeping its other figures. cargo-mutants' own report is in
target/mutants/mutants.out/ (caught.txt, missed.txt, ..., one log per mutant in log/).

Usage: mutants.py [--jobs N] [--no-write] [--report] [-- extra cargo-mutants arguments]
Extra arguments (for instance `-- --re 'in place|pinned'`, only the mutants whose names match;
`--file` adds to the configured scope rather than narrowing it) make a partial run, whose
figures are not written. `--report` runs nothing: it judges and records the last run again (for
instance after adding entries to docs/mutants-equivalent.md).
"""

import argparse
import json
import re
import shlex
import subprocess
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "target/mutants"
REPORT = OUTPUT / "mutants.out"
EQUIVALENT = ROOT / "docs/mutants-equivalent.md"
# An entry of docs/mutants-equivalent.md: "- `file: description` reason".
ENTRY = re.compile(r"^- `([^`]+)`")
# A line of cargo-mutants' missed.txt: "file:line:column: description".
MUTANT = re.compile(r"^(?P<file>[^:]+):\d+:\d+: (?P<what>.*)$")


def key(mutant):
    """A mutant without its line and column, so the list survives edits elsewhere in the file."""
    match = MUTANT.match(mutant)
    return f"{match['file']}: {match['what']}" if match else mutant


def equivalent_mutants():
    if not EQUIVALENT.exists():
        return set()
    return {m[1] for line in EQUIVALENT.read_text().splitlines() if (m := ENTRY.match(line))}


def read_list(name):
    path = REPORT / name
    return [line for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def timestamp(text):
    """cargo-mutants' RFC 3339 times, with nanoseconds (datetime takes microseconds)."""
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", text).replace("Z", "+00:00"))


def scope_problems(config_path=ROOT / ".cargo/mutants.toml", root=ROOT):
    """What is wrong with the scope in `config_path`: [] when every `examine_globs` entry names
    at least one Rust file under `root` that `exclude_globs` leaves in. A glob that names nothing
    (a file moved, a crate split) would make cargo-mutants examine less, silently: once it
    examined nothing and still exited 0."""
    import tomllib  # Python 3.11+, like the rest of the scripts

    config = tomllib.loads(Path(config_path).read_text())
    # `dir/**` matches the directories (Python's glob), cargo-mutants' the files in them.
    excluded = set()
    for pattern in config.get("exclude_globs", []):
        for path in root.glob(pattern):
            excluded |= set(path.rglob("*")) if path.is_dir() else {path}
    problems = []
    for pattern in config.get("examine_globs", []):
        files = [path for path in root.glob(pattern) if path.suffix == ".rs" and path not in excluded]
        if not files:
            problems.append(f"{config_path}: examine_globs entry {pattern!r} names no Rust file left in")
    if not config.get("examine_globs"):
        problems.append(f"{config_path}: no examine_globs: cargo-mutants would examine the whole workspace")
    return problems


def mutants_command(jobs, extra=()):
    """The cargo-mutants command line. `--workspace`: run from the root, cargo-mutants examines
    only the root manifest's package (the kernel crate), whose files are none of the scope's:
    without it the examine globs filter everything out and the run finds 0 mutants."""
    return ["cargo", "mutants", "--workspace", "--jobs", str(jobs), "--output", str(OUTPUT.relative_to(ROOT)),
            "--no-times", *extra]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", "-j", type=int, default=2, help="mutants built and tested at once (default 2)")
    parser.add_argument("--no-write", action="store_true", help="do not write bench/results.json")
    parser.add_argument("--report", action="store_true", help="do not run: judge the last run in target/mutants")
    parser.add_argument("extra", nargs="*", help="more cargo-mutants arguments (after --): a partial run")
    options = parser.parse_args()
    problems = scope_problems()
    if problems:
        sys.exit("\n".join(["mutants: the scope is wrong:", *problems]))

    command = mutants_command(options.jobs, options.extra)
    outcomes_path = REPORT / "outcomes.json"
    if not options.report:
        print(f"==> mutants: {shlex.join(command)} (scope and test options in .cargo/mutants.toml)", flush=True)
        # cargo-mutants exits non-zero when mutants are missed or time out; judged below instead.
        status = subprocess.run(command, cwd=ROOT).returncode
        if status not in (0, 2, 3) or not outcomes_path.exists():
            # 2: missed mutants, 3: timeouts; anything else (1: usage, 4: the baseline failed) is a
            # failure of the run itself.
            sys.exit(f"mutants: cargo-mutants failed (exit status {status}); see {REPORT.relative_to(ROOT)}/")
    if not outcomes_path.exists():
        sys.exit(f"mutants: no run to report on in {REPORT.relative_to(ROOT)}/")
    outcomes = json.loads(outcomes_path.read_text())
    if outcomes.get("end_time") is None:
        sys.exit("mutants: the last run did not finish (interrupted, or still running)")
    # The run's own wall-clock time, baseline build included.
    seconds = round((timestamp(outcomes["end_time"]) - timestamp(outcomes["start_time"])).total_seconds())
    figures = {
        "caught": outcomes["caught"],
        "missed": outcomes["missed"],
        "unviable": outcomes["unviable"],
        "timeouts": outcomes["timeout"],
    }
    print(f"mutants: {figures['caught']} caught, {figures['missed']} missed, {figures['unviable']} unviable, "
          f"{figures['timeouts']} timeouts (of {outcomes['total_mutants']}) in {seconds // 60} min {seconds % 60} s")

    listed = equivalent_mutants()
    missed = read_list("missed.txt")
    unexplained = [m for m in missed if key(m) not in listed]
    explained = len(missed) - len(unexplained)
    print(f"mutants: {explained} of the missed are listed as equivalent in {EQUIVALENT.relative_to(ROOT)}")
    for mutant in read_list("timeout.txt"):
        print(f"mutants: timed out (the tests hang instead of passing; counted apart from caught): {mutant}")
    if not options.extra:
        missed_keys = {key(m) for m in missed}
        for entry in sorted(listed - missed_keys):
            print(f"mutants: listed as equivalent but not missed any more (remove it): {entry}")

    if options.extra or options.no_write:
        print("mutants: partial run or --no-write: bench/results.json left as it was")
    else:
        path = ROOT / "bench/results.json"
        results = json.loads(path.read_text()) if path.exists() else {}
        recorded = f"{shlex.join(command)} (cargo-mutants {outcomes.get('cargo_mutants_version', '?')}, " \
                   f"host tests per .cargo/mutants.toml)"
        for name, value in figures.items():
            results[f"mutants.{name}"] = {"command": recorded, "suite": "mutants", "unit": "mutants", "value": value}
        results["mutants.seconds"] = {"command": recorded, "suite": "mutants", "unit": "s", "value": seconds}
        path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
        print(f"mutants: figures written to {path.relative_to(ROOT)}")

    if unexplained:
        print(f"mutants: {len(unexplained)} missed mutants are neither caught by a test nor listed as equivalent:")
        for mutant in unexplained:
            print(f"  {mutant}")
        sys.exit(1)


if __name__ == "__main__":
    main()
