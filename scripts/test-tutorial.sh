#!/usr/bin/env bash
# Runs docs/tutorial.md as a reader would (`make test-tutorial`): in a fresh, empty directory
# outside this checkout, with BEAMCORE set to the checkout, it takes the page's fenced blocks in
# order and
#   - runs each line of a ```sh block as a command, in one shell (a `cd` carries over), and fails
#     if one exits non-zero;
#   - writes a block announced by `<!-- file: PATH -->` to PATH, or appends it to PATH for
#     `<!-- append: PATH -->` (PATH relative to the shell's directory at that point);
#   - checks each line of a ```text block against what the commands of the last ```sh block
#     printed: some output line must match it whole, where `...` stands for anything;
#   - skips any other block (illustrations).
# It stops at the first failure: the later steps build on the earlier ones.
#
#   scripts/test-tutorial.sh [DOC]      (default: docs/tutorial.md)
#
# The project builds in test-examples' cargo target directory, EXAMPLES_TARGET_DIR (default
# target/examples in this checkout), so the kernel is compiled once for both. The temporary
# directory is removed unless a step failed or KEEP=1.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
doc=$(realpath "${1:-$root/docs/tutorial.md}")
export BEAMCORE=$root
export CARGO_TARGET_DIR=${EXAMPLES_TARGET_DIR:-$root/target/examples}
# As in test-examples: nothing of the checkout's Makefile (which exports these) or of a build
# environment a reader would not have may leak into the tutorial's commands.
unset BOARD SMP CPU MACHINE_OPTS MEM ARGS TIMEOUT ICOUNT MAKEFLAGS MAKELEVEL MFLAGS DIR NAME
unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_BUILD_TARGET

work=$(mktemp -d "${TMPDIR:-/tmp}/beamcore-tutorial.XXXXXX")
case "$work/" in "$root"/*)
    echo "test-tutorial: the temporary directory $work is inside the checkout; set TMPDIR elsewhere" >&2
    exit 2
    ;;
esac
# Removed at the end unless KEEP=1 or a step failed (its logs are there).
cleanup() {
    local status=$?
    if [ "${KEEP:-0}" = 1 ] || [ $status -ne 0 ]; then
        echo "test-tutorial: $work kept"
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
# The reader's empty directory, and the logs beside it (not in it).
home=$work/home
logs=$work/logs
mkdir -p "$home" "$logs"

started_all=$EPOCHREALTIME
commands=0
files=0
lines=0
block=0
last_output=""

seconds_since() {
    awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'
}

# Ends the run at a failure, already described above.
stop() {
    echo "test-tutorial: stopped after $commands commands, $files files, $lines output lines checked ($(seconds_since "$started_all") s)"
    exit 1
}

fail() {
    echo "test-tutorial: FAILED  $*"
    stop
}

# The lines of the current ```sh block, each run in this shell; their output, \r removed,
# collected in one log for the ```text blocks after it.
run_commands() {
    local output="$logs/block-$block.log" command log status start
    : >"$output"
    for command in "${body[@]}"; do
        [[ $command =~ ^[[:space:]]*(#.*)?$ ]] && continue
        commands=$((commands + 1))
        log="$logs/command-$commands.log"
        start=$EPOCHREALTIME
        eval "$command" </dev/null >"$log" 2>&1
        status=$?
        tr -d '\r' <"$log" >>"$output"
        if [ $status -ne 0 ]; then
            echo "test-tutorial: FAILED  \$ $command (status $status; in $PWD; log $log, last lines:)"
            tail -n 25 "$log" | sed 's/^/    | /'
            stop
        fi
        echo "test-tutorial: ok      \$ $command ($(seconds_since "$start") s)"
    done
    last_output=$output
}

# Does some line of FILE match EXPECTED whole, `...` standing for anything?
matches_a_line() {
    awk -v want="$1" '
        function matches(s,   i, at) {
            if (substr(s, 1, length(part[1])) != part[1]) return 0
            s = substr(s, length(part[1]) + 1)
            if (n == 1) return s == ""
            for (i = 2; i < n; i++) {
                at = index(s, part[i])
                if (at == 0) return 0
                s = substr(s, at + length(part[i]))
            }
            return length(s) >= length(part[n]) && substr(s, length(s) - length(part[n]) + 1) == part[n]
        }
        BEGIN { n = split(want, part, /\.\.\./) }
        matches($0) { found = 1; exit }
        END { exit !found }
    ' "$2"
}

# The current ```text block: each non-blank line must be in the last ```sh block's output.
check_output() {
    [ -n "$last_output" ] || fail "a text block (line $line_number) comes before any command"
    local expected
    for expected in "${body[@]}"; do
        [[ $expected =~ ^[[:space:]]*$ ]] && continue
        lines=$((lines + 1))
        if ! matches_a_line "$expected" "$last_output"; then
            echo "test-tutorial: FAILED  no output line matches: $expected (the text block ending at line $line_number)"
            echo "    (the output of the commands before it: $last_output, last lines:)"
            tail -n 25 "$last_output" | sed 's/^/    | /'
            stop
        fi
        echo "test-tutorial: ok      printed: $expected"
    done
}

# The current block, written to (or appended to) the file its marker named.
write_file() {
    local mode=$1 path=$2 verb=wrote
    [ "$mode" = append ] && verb="appended to"
    files=$((files + 1))
    mkdir -p "$(dirname "$path")" || fail "mkdir for $path"
    if [ "$mode" = file ]; then
        printf '%s\n' "${body[@]}" >"$path" || fail "writing $path"
    else
        [ -f "$path" ] || fail "appending to $path: no such file in $PWD"
        printf '%s\n' "${body[@]}" >>"$path" || fail "appending to $path"
    fi
    echo "test-tutorial: ok      $verb $path (${#body[@]} lines)"
}

echo "test-tutorial: $doc in $home; BEAMCORE=$BEAMCORE; cargo target directory $CARGO_TARGET_DIR"
cd "$home" || exit 2
marker_re='^<!-- (file|append): ([^ ]+) -->$'
fence_re='^```([A-Za-z0-9_-]*)$'
in_block=0
lang=""
pending_mode=""
pending_path=""
line_number=0
body=()
while IFS= read -r line <&3; do
    line_number=$((line_number + 1))
    if [ $in_block = 0 ]; then
        if [[ $line =~ $marker_re ]]; then
            pending_mode=${BASH_REMATCH[1]}
            pending_path=${BASH_REMATCH[2]}
        elif [[ $line =~ $fence_re ]]; then
            in_block=1
            lang=${BASH_REMATCH[1]}
            body=()
        fi
        continue
    fi
    if [ "$line" != '```' ]; then
        body+=("$line")
        continue
    fi
    in_block=0
    block=$((block + 1))
    if [ -n "$pending_mode" ]; then
        write_file "$pending_mode" "$pending_path"
        pending_mode=""
    elif [ "$lang" = sh ]; then
        run_commands
    elif [ "$lang" = text ]; then
        check_output
    fi
done 3<"$doc"
[ $in_block = 0 ] || fail "$doc ends inside a fenced block"
[ -z "$pending_mode" ] || fail "$doc: <!-- $pending_mode: $pending_path --> has no block after it"
[ $commands -gt 0 ] || fail "$doc has no sh block"

echo "test-tutorial: all passed: $commands commands, $files files written, $lines output lines checked in $(seconds_since "$started_all") s"
