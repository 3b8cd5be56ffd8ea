#!/usr/bin/env bash
# Installs what beamcore needs on a fresh Debian bookworm machine: the Rust target
# aarch64-unknown-none (through rust-toolchain.toml), QEMU >= 9 from bookworm-backports
# (bookworm's own 7.2 lacks the raspi4b machine), the device-tree compiler, llvm-objcopy /
# llvm-objdump (the Pi 4 image and its semihosting check), gdb-multiarch (`make gdb`,
# `make debug` and the suite's debugger test) and matplotlib (`make plot`, `make trace` and the
# tool tests draw with it; Debian's python3-matplotlib, so no pip and no virtualenv).
# `--mutants` installs cargo-mutants instead (for `make mutants` only).
# Says what it installs; does nothing when everything is already there.
set -euo pipefail

say() { echo "setup: $*"; }

# `scripts/setup.sh --mutants`, run by `make mutants` only (never by `make test`, so CI does not
# spend minutes compiling it): cargo-mutants, at the major version whose mutant names
# docs/mutants-equivalent.md lists. Nothing else is checked or installed in this mode.
CARGO_MUTANTS_MAJOR=27
if [ "${1:-}" = "--mutants" ]; then
    if cargo mutants --version 2>/dev/null | grep -q "^cargo-mutants ${CARGO_MUTANTS_MAJOR}\."; then
        say "ready: $(cargo mutants --version)"
    else
        say "installing cargo-mutants ${CARGO_MUTANTS_MAJOR}.x (cargo install --locked; takes a few minutes)"
        cargo install --locked cargo-mutants --version "^${CARGO_MUTANTS_MAJOR}"
    fi
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# QEMU's version, asked of the QEMU launcher (scripts/qemu.py, the one place that names the
# emulator); empty when QEMU is missing.
qemu_version() { python3 "$(dirname "$0")/qemu.py" --version 2>/dev/null | head -1 || true; }

# `scripts/setup.sh --peers`, run by `make bench BENCH=peers` only (scripts/peers.py): QEMU's
# user-mode emulator (qemu-user, from bookworm-backports like qemu-system-arm), Go (golang-go,
# cross-compiles to arm64), Erlang/OTP for arm64 (erlang-base:arm64 through multiarch), the Rust
# target aarch64-unknown-linux-gnu with Debian's cross gcc to link it, and qemu-aarch64 registered with binfmt_misc (flag F) so
# that the Erlang VM can exec its AArch64 helper erl_child_setup (and erlc can run at all).
if [ "${1:-}" = "--peers" ]; then
    need=()
    command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
    command -v go >/dev/null 2>&1 || need+=(golang-go)
    command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu)
    ls /usr/lib/erlang/erts-*/bin/beam.smp >/dev/null 2>&1 || need+=(erlang-base:arm64)
    if [ ${#need[@]} -gt 0 ]; then
        if [[ " ${need[*]} " == *" erlang-base:arm64 "* ]] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
            say "adding the arm64 architecture to dpkg (multiarch, for erlang-base:arm64)"
            $SUDO dpkg --add-architecture arm64
        fi
        if [ ! -f /etc/apt/sources.list.d/bookworm-backports.sources ]; then
            say "adding Debian bookworm-backports (QEMU 10 and Go 1.23 live there)"
            printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
                | $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
        fi
        say "apt-get update"
        $SUDO apt-get update -qq
        for pkg in "${need[@]}"; do
            say "installing $pkg"
            case "$pkg" in
                qemu-user|golang-go) DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -t bookworm-backports "$pkg" >/dev/null ;;
                *) DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$pkg" >/dev/null ;;
            esac
        done
    fi
    if ! (cd "$(dirname "$0")/../bench/peers/tokio" && rustup target list --installed) | grep -q '^aarch64-unknown-linux-gnu$'; then
        say "installing Rust target aarch64-unknown-linux-gnu"
        (cd "$(dirname "$0")/../bench/peers/tokio" && rustup target add aarch64-unknown-linux-gnu)
    fi
    binfmt=/proc/sys/fs/binfmt_misc
    if [ ! -e "$binfmt/status" ]; then
        say "mounting binfmt_misc"
        $SUDO mount -t binfmt_misc binfmt_misc "$binfmt"
    fi
    if [ ! -e "$binfmt/qemu-aarch64" ]; then
        say "registering qemu-aarch64 with binfmt_misc (flag F, from /usr/share/qemu/binfmt.d)"
        $SUDO sh -c "cat /usr/share/qemu/binfmt.d/qemu-aarch64.conf > $binfmt/register"
    fi
    grep -q '^flags:.*F' "$binfmt/qemu-aarch64" || { say "qemu-aarch64 is registered without flag F"; exit 1; }
    say "ready: $(qemu-aarch64 --version | head -1); $(go version); erts $(basename "$(dirname "$(dirname "$(ls /usr/lib/erlang/erts-*/bin/beam.smp | tail -1)")")")"
    exit 0
fi

qemu_ok() {
    local major
    major=$(qemu_version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
    [ "${major:-0}" -ge 9 ]
}

need_apt=()
if ! qemu_ok; then need_apt+=(qemu-system-arm); fi
command -v dtc >/dev/null 2>&1 || need_apt+=(device-tree-compiler)
{ command -v llvm-objcopy && command -v llvm-objdump; } >/dev/null 2>&1 || need_apt+=(llvm)
# The debugger for an AArch64 target on any host (Debian's plain `gdb` knows only the host's).
command -v gdb-multiarch >/dev/null 2>&1 || need_apt+=(gdb-multiarch)
# Any Python 3 that imports it will do (scripts/mpl-python.sh picks it for the tools).
"$(dirname "$0")/mpl-python.sh" >/dev/null || need_apt+=(python3-matplotlib)

if [ ${#need_apt[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        say "missing ${need_apt[*]} and this is not a Debian machine: install them by hand (QEMU >= 9)"
        exit 1
    fi
    if [[ " ${need_apt[*]} " == *" qemu-system-arm "* ]]; then
        src=/etc/apt/sources.list.d/bookworm-backports.sources
        if [ ! -f "$src" ]; then
            say "adding Debian bookworm-backports as $src (QEMU 10 lives there)"
            $SUDO tee "$src" >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        fi
    fi
    say "apt-get update"
    $SUDO apt-get update -qq
    for pkg in "${need_apt[@]}"; do
        if [ "$pkg" = qemu-system-arm ]; then
            say "installing qemu-system-arm from bookworm-backports"
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -t bookworm-backports qemu-system-arm >/dev/null
        else
            say "installing $pkg"
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$pkg" >/dev/null
        fi
    done
fi

if ! rustup target list --installed 2>/dev/null | grep -q '^aarch64-unknown-none$'; then
    say "installing Rust target aarch64-unknown-none"
    rustup target add aarch64-unknown-none
fi

qemu_ok || { say "QEMU >= 9 still missing"; exit 1; }
command -v gdb-multiarch >/dev/null 2>&1 || { say "gdb-multiarch still missing"; exit 1; }
mpl_python=$("$(dirname "$0")/mpl-python.sh") || { say "matplotlib still missing (python3-matplotlib)"; exit 1; }
say "ready: $(qemu_version); $(gdb-multiarch --version | head -1); matplotlib $("$mpl_python" -c 'import matplotlib; print(matplotlib.__version__)') ($mpl_python)"
