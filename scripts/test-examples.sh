#!/usr/bin/env bash
# Builds and runs beamcore programs the way a user does: from a project outside this checkout
# that depends on the kernel by path (`make test-examples`).
#
#   scripts/test-examples.sh [NAME...]     (default: every directory in examples/, and `new`)
#
# For each directory in examples/ (a project like template/'s, with @BEAMCORE@ where this
# checkout's path goes): copy it to a fresh temporary directory, fill in the path, then with its
# own Makefile build it, boot it at 1 and at 4 cores and at 4 under -icount (each boot must exit
# with status 0 and print its verdict line, `<package name>: ok...`), and run its `make test`.
# `new` does the same for a project `make new NAME=hello` makes, whose program prints
# `hello: sum of squares ...`, and also checks its Pi 4 SD-card image (`make rpi4`, booted on
# QEMU raspi4b until it halts) and the messages of the usual mistakes (no `entry!`, a `main` of
# the wrong type, no target set).
#
# Every project builds in one cargo target directory, EXAMPLES_TARGET_DIR (default
# target/examples in this checkout), so the kernel is compiled once for all of them.
# KEEP=1 keeps the temporary directory. Exits non-zero if any step failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
export CARGO_TARGET_DIR=${EXAMPLES_TARGET_DIR:-$root/target/examples}
# Each boot's deadline (the runner's TIMEOUT), seconds.
boot_timeout=${BOOT_TIMEOUT:-120}
# Variables of the checkout's Makefile must not leak into the projects' (make exports them).
unset BOARD SMP CPU MACHINE_OPTS MEM ARGS TIMEOUT ICOUNT MAKEFLAGS MAKELEVEL MFLAGS
# Nor may flags a user would not have: RUSTFLAGS would replace the projects' own rustflags.
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_BUILD_TARGET

work=$(mktemp -d "${TMPDIR:-/tmp}/beamcore-examples.XXXXXX")
case "$work/" in "$root"/*)
    echo "test-examples: the temporary directory $work is inside the checkout; set TMPDIR elsewhere" >&2
    exit 2
    ;;
esac
if [ "${KEEP:-0}" = 1 ]; then
    echo "test-examples: working in $work (kept)"
else
    trap 'rm -rf "$work"' EXIT
fi

# A line each boot of an example must print besides its verdict (an extended regex), by example.
# The supervision tree's flaky child panics on purpose, and its backtrace must name `flaky`,
# which the compiler folds into the closure that spawns it: the name comes from an `inlined:`
# line (the image's inline table) or, should it not be inlined, from a frame of its own.
declare -A CONSOLE_EXPECT=(
    [supervision-tree]='^(  #[0-9]+ 0x[0-9a-f]{16}|       inlined:) supervision_tree::fragile::flaky(\+0x[0-9a-f]+)?$'
)

started_all=$(date +%s)
passed=0
failed=()

# step LABEL LOG COMMAND...: runs COMMAND with its output in LOG; prints one line.
step() {
    local label=$1 log=$2
    shift 2
    local start=$EPOCHREALTIME status took
    "$@" >"$log" 2>&1
    status=$?
    took=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    if [ $status -eq 0 ]; then
        echo "test-examples: ok      $label (${took} s)"
        passed=$((passed + 1))
        return 0
    fi
    echo "test-examples: FAILED  $label (${took} s; log $log, last lines:)"
    tail -n 25 "$log" | sed 's/^/    | /'
    failed+=("$label")
    return 1
}

# A project's checks, once it is in place at DIR with its placeholders filled in.
test_project() {
    local label=$1 dir=$2 verdict=$3
    local logs="$work/logs"
    if grep -rl '@BEAMCORE@\|@NAME@\|@CRATE@' "$dir" --exclude-dir=target >/dev/null; then
        echo "test-examples: FAILED  [$label] placeholders left: $(grep -rl '@BEAMCORE@\|@NAME@\|@CRATE@' "$dir" --exclude-dir=target | tr '\n' ' ')"
        failed+=("[$label] placeholders")
        return 1
    fi
    step "[$label] build (make build)" "$logs/$label-build.log" make -C "$dir" --no-print-directory build || return 1
    for config in "1 0" "4 0" "4 1"; do
        set -- $config
        local what="SMP=$1"
        [ "$2" = 1 ] && what+=" ICOUNT=1"
        local log="$logs/$label-run-smp$1-icount$2.log"
        step "[$label] make run $what" "$log" boot_and_check "$dir" "$1" "$2" "$verdict" "$log.out" \
            "${CONSOLE_EXPECT[$label]:-}"
    done
    step "[$label] make test" "$logs/$label-test.log" make -C "$dir" --no-print-directory test TIMEOUT="$boot_timeout"
}

# boot_and_check DIR SMP ICOUNT VERDICT OUT: `make run` in DIR, its output kept in OUT too; passes
# when it exits 0 and printed "smp: SMP cores online" and a line matching VERDICT (an ERE), and
# neither PANIC nor FAILED.
boot_and_check() {
    local dir=$1 smp=$2 icount=$3 verdict=$4 out=$5 expect=${6:-}
    make -C "$dir" --no-print-directory run SMP="$smp" ICOUNT="$icount" TIMEOUT="$boot_timeout" 2>&1 | tr -d '\r' >"$out"
    local status=${PIPESTATUS[0]}
    cat "$out"
    if [ $status -ne 0 ]; then
        echo "check: make run exited with status $status"
        return 1
    fi
    grep -q "^smp: $smp cores online" "$out" || { echo "check: no line 'smp: $smp cores online'"; return 1; }
    grep -Eq "$verdict" "$out" || { echo "check: no line matching /$verdict/"; return 1; }
    if [ -n "$expect" ] && ! grep -Eq "$expect" "$out"; then
        echo "check: no line matching /$expect/"
        return 1
    fi
    if grep -q "PANIC\|FAILED" "$out"; then
        echo "check: PANIC or FAILED in the output"
        return 1
    fi
}

# The Pi 4 SD-card files of the project at DIR, and that kernel8.img boots on QEMU raspi4b with
# cmdline.txt's bootargs and halts with status 0 (no semihosting: the board build parks its
# cores, so QEMU is stopped once the `halted` line is out).
rpi4_boot() {
    local dir=$1 verdict=$2
    make -C "$dir" --no-print-directory rpi4 ARGS="slice_us=500" || return 1
    local card="$dir/target/rpi4"
    for file in kernel8.img config.txt cmdline.txt; do
        [ -s "$card/$file" ] || { echo "check: $card/$file missing"; return 1; }
    done
    local dtb="$work/raspi4b.dtb" out="$work/logs/rpi4-console.log"
    dtc -q -I dts -O dtb -o "$dtb" "$root/kernel/hal/board/rpi4-qemu.dts" || return 1
    : >"$out"
    # python3 replaces itself with QEMU (exec): $! is QEMU's process.
    python3 "$root/scripts/qemu.py" --board rpi4 --no-semihosting --dtb "$dtb" \
        --append="$(cat "$card/cmdline.txt")" "$card/kernel8.img" </dev/null >>"$out" 2>&1 &
    local qemu=$! waited=0
    while ! grep -q '^halted with status' "$out" && kill -0 "$qemu" 2>/dev/null && [ $waited -lt $((boot_timeout * 10)) ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    kill "$qemu" 2>/dev/null
    wait "$qemu" 2>/dev/null
    sed -i 's/\r$//' "$out"
    cat "$out"
    grep -q '^config: slice_us=500 ' "$out" || { echo "check: cmdline.txt's slice_us=500 not in force"; return 1; }
    grep -Eq "$verdict" "$out" || { echo "check: no line matching /$verdict/"; return 1; }
    grep -q '^halted with status 0; all 4 cores parked' "$out" || { echo "check: no 'halted with status 0' line"; return 1; }
}

# expect_error DIR PATTERN CARGO-ARGS...: the build fails and says PATTERN.
expect_error() {
    local dir=$1 pattern=$2
    shift 2
    local out
    out=$(cd "$dir" && cargo "$@" 2>&1)
    local status=$?
    echo "$out"
    if [ $status -eq 0 ]; then
        echo "check: the build succeeded; it should have failed"
        return 1
    fi
    grep -Fq -- "$pattern" <<<"$out" || { echo "check: no '$pattern' in the errors"; return 1; }
}

# The usual mistakes, each in a copy of the project at DIR, and the message each must give.
mistakes() {
    local dir=$1 name=$2 logs="$work/logs"
    local copy="$work/mistake"
    reset_copy() { rm -rf "$copy" && cp -R "$dir" "$copy" && rm -rf "$copy/target"; }

    reset_copy
    sed -i '/^beamcore::entry!(main);$/d' "$copy/src/main.rs"
    step "[$name] mistake: no entry! gives its message" "$logs/mistake-no-entry.log" \
        expect_error "$copy" "beamcore: this program has no entry point" build --release

    # A second entry in the project's library: in a release build LTO finds it before the
    # linker does, and its message must still say what to do (the symbol's name does).
    reset_copy
    printf '\nfn other() -> beamcore::ExitCode {\n    beamcore::ExitCode::Success\n}\nbeamcore::entry!(other);\n' >>"$copy/src/lib.rs"
    step "[$name] mistake: entry! in the library too gives its message" "$logs/mistake-two-entries.log" \
        expect_error "$copy" "ONE_PER_PROGRAM__NOT_IN_A_LIBRARY" build --release

    reset_copy
    sed -i 's/^fn main() -> ExitCode {$/fn main() {/; s/^    ExitCode::Success$//' "$copy/src/main.rs"
    step "[$name] mistake: main() without ExitCode gives its message" "$logs/mistake-signature.log" \
        expect_error "$copy" 'expected `main` to return `ExitCode`, but it returns `()`' build --release

    reset_copy
    sed -i '/^\[build\]$/d; /^target = "aarch64-unknown-none"$/d' "$copy/.cargo/config.toml"
    step "[$name] mistake: no target gives its message" "$logs/mistake-target.log" \
        expect_error "$copy" "beamcore: the kernel builds for aarch64-unknown-none only" build --release
    rm -rf "$copy"
}

# same_setup SOURCE PACKAGE: the example's build set-up is the template's (its name filled in),
# so what is tested here is what `make new` gives.
same_setup() {
    local source=$1 package=$2 file status=0
    for file in Makefile .cargo/config.toml rust-toolchain.toml rustfmt.toml .gitignore; do
        if ! diff -u <(sed -e "s|@NAME@|$package|g" -e "s|@CRATE@|${package//-/_}|g" "$root/template/$file") \
            "$source/$file"; then
            echo "check: $source/$file differs from template/$file"
            status=1
        fi
    done
    return $status
}

mkdir -p "$work/logs"
wanted=("$@")
if [ ${#wanted[@]} -eq 0 ]; then
    for example in "$root"/examples/*/; do
        wanted+=("$(basename "$example")")
    done
    wanted+=(new)
fi

echo "test-examples: projects ${wanted[*]}; copies in $work; cargo target directory $CARGO_TARGET_DIR"
for name in "${wanted[@]}"; do
    if [ "$name" = new ]; then
        dir="$work/hello"
        if step "[new] make new NAME=hello DIR=$work" "$work/logs/new.log" \
            make -C "$root" --no-print-directory new NAME=hello DIR="$work"; then
            test_project new "$dir" '^hello: sum of squares 1\.\.=100 = 338350 \(cores online: [0-9]+\)$'
            step "[new] make rpi4, booted on QEMU raspi4b" "$work/logs/new-rpi4.log" \
                rpi4_boot "$dir" '^hello: sum of squares 1\.\.=100 = 338350 \(cores online: 4\)$'
            mistakes "$dir" new
        fi
        continue
    fi
    source_dir="$root/examples/$name"
    if [ ! -f "$source_dir/Cargo.toml" ]; then
        echo "test-examples: FAILED  [$name] no such example: $source_dir/Cargo.toml"
        failed+=("[$name] missing")
        continue
    fi
    package=$(sed -n 's/^name *= *"\([^"]*\)".*/\1/p' "$source_dir/Cargo.toml" | head -n 1)
    step "[$name] set-up files as template/'s" "$work/logs/$name-setup.log" same_setup "$source_dir" "$package"
    dir="$work/$name"
    cp -R "$source_dir" "$dir" && rm -rf "$dir/target"
    cp "$root/Cargo.lock" "$dir/Cargo.lock"
    grep -rl '@BEAMCORE@' "$dir" | while IFS= read -r file; do sed -i "s|@BEAMCORE@|$root|g" "$file"; done
    echo "test-examples: [$name] copied to $dir"
    test_project "$name" "$dir" "^$package: ok"
done

took=$(($(date +%s) - started_all))
if [ ${#failed[@]} -eq 0 ]; then
    echo "test-examples: all $passed steps passed in ${took} s"
    exit 0
fi
echo "test-examples: ${#failed[@]} of $((passed + ${#failed[@]})) steps FAILED in ${took} s:"
printf '    %s\n' "${failed[@]}"
exit 1
