#!/usr/bin/env bash
# Makes a new beamcore program: a Cargo project of its own, outside this checkout, that depends
# on the kernel here by path (`make new NAME=<name> [DIR=<parent>]`).
#
#   scripts/new-program.sh <name> [<parent dir, default: the checkout's parent>]
#
# Copies template/ to <parent>/<name>, replacing @BEAMCORE@ with this checkout's absolute path,
# @NAME@ with <name> and @CRATE@ with the name as a Rust identifier (- becomes _), and gives it
# this checkout's Cargo.lock. Refuses to write over anything that exists.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
template="$root/template"

usage() {
    echo "usage: scripts/new-program.sh <name> [<parent dir>]   (or: make new NAME=<name> [DIR=<parent dir>])" >&2
    exit 2
}

name=${1:-}
parent=${2:-$root/..}
[ -n "$name" ] || usage

# A package name cargo takes, that is also a usable crate name and does not clash with the
# crates the program depends on.
if ! [[ "$name" =~ ^[A-Za-z][A-Za-z0-9_-]*$ ]]; then
    echo "new-program: '$name' is not a usable name: start with a letter; then letters, digits, - and _ only" >&2
    exit 2
fi
crate=${name//-/_}
case "$crate" in
beamcore | beamcore_otp | core | std | alloc | test | proc_macro | self | super | crate)
    echo "new-program: '$name' is taken (a crate every program links, or a Rust keyword or built-in crate); choose another name" >&2
    exit 2
    ;;
esac
if [[ "$root" == *" "* ]]; then
    echo "new-program: the checkout's path has a space in it ($root); make and the cargo configuration need one without" >&2
    exit 2
fi

if [ ! -d "$parent" ]; then
    echo "new-program: the parent directory $parent does not exist; create it first" >&2
    exit 2
fi
parent=$(cd "$parent" && pwd -P)
dest="$parent/$name"
if [ -e "$dest" ] || [ -L "$dest" ]; then
    echo "new-program: $dest already exists; nothing written (choose another NAME or DIR, or remove it)" >&2
    exit 1
fi
case "$dest/" in
"$root"/*)
    echo "new-program: note: $dest is inside the beamcore checkout; it is a cargo workspace of its own, so that works," >&2
    echo "             but a program usually lives outside it (DIR=.. by default)" >&2
    ;;
esac

# Copy to a scratch directory next to the destination, fill in the placeholders, then move it
# into place in one step: an interrupted run leaves no half-made project at $dest.
scratch=$(mktemp -d "$parent/.new-program.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
chmod "$(printf '%o' $((0777 & ~0$(umask))))" "$scratch" # mktemp's 0700, made what mkdir would give
cp -R "$template/." "$scratch/"
rm -rf "$scratch/target"
# The checkout's lock file: the program starts with the dependency versions the kernel is built
# and tested with here (cargo drops the entries it does not need at the first build).
cp "$root/Cargo.lock" "$scratch/Cargo.lock"
while IFS= read -r -d '' file; do
    sed -i -e "s|@BEAMCORE@|$root|g" -e "s|@NAME@|$name|g" -e "s|@CRATE@|$crate|g" "$file"
done < <(find "$scratch" -type f -print0)
if grep -rl '@BEAMCORE@\|@NAME@\|@CRATE@' "$scratch" >/dev/null; then
    echo "new-program: placeholders left in $(grep -rl '@BEAMCORE@\|@NAME@\|@CRATE@' "$scratch" | tr '\n' ' ')" >&2
    exit 1
fi
mv -T "$scratch" "$dest"
trap - EXIT

echo "new-program: made $dest (the program is src/main.rs, its tests are tests/, README.md says more)"
echo "next:"
echo "    cd $dest"
echo "    make run      # build it and boot it in QEMU virt (SMP=4 by default; ICOUNT=1, ARGS='...')"
echo "    make test     # build and boot its in-QEMU tests"
