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

# orig_sha256 VERSION FILE: FILE's SHA-256 in the source index's stanza of qemu VERSION (empty
# when apt knows no such source). awk reads to the end: an early exit would be a SIGPIPE.
orig_sha256() {
    apt-cache showsrc qemu 2>/dev/null | awk -v v="$1" -v f="$2" '
        /^Package:/ { ours = 0 }
        $1 == "Version:" { ours = ($2 == v) }
        /^[^ ]/ { sums = ($1 == "Checksums-Sha256:"); next }
        ours && sums && $3 == f && !found { print $1; found = 1 }'
}

# build_counting_qemu DIR: qemu-aarch64 (linux-user only, TCG plugins on, every optional feature
# off) from the Debian source package of the installed qemu-user, into DIR/bin, with the plugin
# API's header in DIR/include. 5 to 15 minutes on two cores (ninja -j2; 15 when shared); the
# source tree is then deleted (about 600 MB), the downloaded tarball kept beside DIR.
build_counting_qemu() {
    local dest=$1 work version upstream orig sums
    work="$(dirname "$dest")/qemu-build"
    version=$(dpkg-query -W -f='${source:Version}' qemu-user)
    upstream=${version#*:}
    upstream=${upstream%-*}
    orig="qemu_${upstream}.orig.tar.xz"
    say "building qemu-aarch64 ${upstream} with TCG plugins from Debian's source (once; 5 to 15 minutes on two cores)"
    local deps=() dep
    for dep in gcc make pkgconf libglib2.0-dev zlib1g-dev ninja-build flex bison python3-venv; do
        dpkg -s "$dep" >/dev/null 2>&1 || deps+=("$dep")
    done
    if [ ${#deps[@]} -gt 0 ]; then
        say "installing ${deps[*]} (to build QEMU)"
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${deps[@]}" >/dev/null
    fi
    # QEMU 10 wants meson >= 1.5 (bookworm has 1.0) and pycotap, both in bookworm-backports.
    if ! /usr/bin/python3 -c 'import mesonbuild, pycotap' 2>/dev/null \
        || dpkg --compare-versions "$(dpkg-query -W -f='${Version}' meson 2>/dev/null || echo 0)" lt 1.5; then
        say "installing meson and python3-pycotap from bookworm-backports (to build QEMU)"
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -t bookworm-backports meson python3-pycotap >/dev/null
    fi
    mkdir -p "$work"
    if [ -z "$(orig_sha256 "$version" "$orig")" ]; then
        say "adding Debian bookworm-backports' sources (deb-src, for QEMU's source)"
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            | $SUDO tee /etc/apt/sources.list.d/bookworm-backports-src.sources >/dev/null
        $SUDO apt-get update -qq
        [ -n "$(orig_sha256 "$version" "$orig")" ] || { say "apt knows no source of qemu $version"; exit 1; }
    fi
    if [ ! -f "$work/$orig" ]; then
        # Only the upstream tarball is needed (Debian's patches are not applied): apt verifies
        # it against the signed index even when the rest of the package is no longer served.
        (cd "$work" && apt-get source --download-only "qemu=$version" >/dev/null 2>&1) || true
        [ -f "$work/$orig" ] || { say "could not download $orig (apt-get source qemu=$version)"; exit 1; }
    fi
    sums=$(orig_sha256 "$version" "$orig")
    if [ -z "$sums" ] || [ "$(sha256sum "$work/$orig" | cut -d' ' -f1)" != "$sums" ]; then
        say "$orig does not match its SHA-256 in Debian's index"
        exit 1
    fi
    rm -rf "$work/src"
    mkdir "$work/src"
    tar -C "$work/src" --strip-components=1 --no-same-owner -xf "$work/$orig"
    (
        cd "$work/src"
        mkdir build
        cd build
        # Debian's python3 (it has meson and pycotap); blobs: the +ds tarball ships no firmware.
        ../configure --python=/usr/bin/python3 --target-list=aarch64-linux-user --enable-plugins \
            --without-default-features --disable-docs --disable-werror --disable-install-blobs >configure.log 2>&1 \
            || { tail -20 configure.log; exit 1; }
        nice ninja -j2 qemu-aarch64 >ninja.log 2>&1 || { tail -40 ninja.log; exit 1; }
    )
    mkdir -p "$dest/bin" "$dest/include"
    cp "$work/src/build/qemu-aarch64" "$dest/bin/"
    cp "$work/src/include/qemu/qemu-plugin.h" "$dest/include/"
    rm -rf "${work:?}/src"
}

# `scripts/setup.sh --peers`, run by `make bench BENCH=peers` only (scripts/peers.py): QEMU's
# user-mode emulator (qemu-user, from bookworm-backports like qemu-system-arm), Go (golang-go,
# cross-compiles to arm64), Erlang/OTP for arm64 (erlang-base:arm64 through multiarch), the Rust
# target aarch64-unknown-linux-gnu with Debian's cross gcc to link it, and qemu-aarch64 registered with binfmt_misc (flag F) so
# that the Erlang VM can exec its AArch64 helper erl_child_setup (and erlc can run at all).
# Then the emulator that counts: qemu-aarch64 with TCG plugins (Debian's is static and has none),
# built once from Debian's source of that same qemu-user into target/peers/qemu (build_counting_qemu).
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
    counting="$(cd "$(dirname "$0")/.." && pwd)/target/peers/qemu"
    if [ ! -x "$counting/bin/qemu-aarch64" ] || [ ! -f "$counting/include/qemu-plugin.h" ]; then
        build_counting_qemu "$counting"
    fi
    say "counting with $("$counting/bin/qemu-aarch64" --version | head -1) (target/peers/qemu, TCG plugins)"
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
