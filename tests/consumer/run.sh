#!/usr/bin/env bash
# Install a build of actorc into a scratch prefix, then build and run the
# consumer in this directory against it two ways: with CMake
# (find_package(actorc), shared and static) and with pkg-config and the C
# compiler directly.
#
#   run.sh BUILD_DIR SOURCE_DIR [SANITIZE] [C_COMPILER]
#
# Exits 77 (skipped) for sanitizer builds: their libraries need the
# sanitizer runtime flags, which a plain consumer does not pass.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD_DIR SOURCE_DIR [SANITIZE] [C_COMPILER]" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
sanitize=${3:-}
cc=${4:-${CC:-cc}}
here="$src/tests/consumer"
expected="consumer: hello, consumer, from greeter"

if [ -n "$sanitize" ]; then
    echo "install_consumer: skipped: sanitizer build ($sanitize)"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/actorc-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

fail() {
    echo "install_consumer: FAILED: $*" >&2
    exit 1
}

step() { echo "install_consumer: $*"; }

# Run "$@", printing its output only when it fails.
quiet() {
    local log="$tmp/step.log"
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        fail "$*"
    fi
}

check_output() { # NAME COMMAND...
    local name=$1 out status=0
    shift
    out=$("$@" 2>&1) || status=$?
    if [ "$status" -ne 0 ]; then
        printf '%s\n' "$out" >&2
        fail "$name exited with status $status"
    fi
    if [ "$out" != "$expected" ]; then
        printf '%s\n' "$out" >&2
        fail "$name printed the above, expected: $expected"
    fi
    step "$name: ok ($out)"
}

step "installing $build into a scratch prefix"
quiet cmake --install "$build" --prefix "$prefix"

[ -f "$prefix/include/actorc.h" ] || fail "include/actorc.h not installed"
[ -f "$prefix/include/actorc/actor.h" ] || fail "include/actorc/actor.h not installed"

pc=$(find "$prefix" -name actorc.pc -path '*/pkgconfig/*' -print -quit)
[ -n "$pc" ] || fail "actorc.pc not installed"
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")
[ -e "$libdir/libactorc.so" ] || fail "libactorc.so not in $libdir"
[ -e "$libdir/libactorc.a" ] || fail "libactorc.a not in $libdir"
[ -f "$libdir/cmake/actorc/actorcConfig.cmake" ] || fail "actorcConfig.cmake not in $libdir/cmake/actorc"

# Only the public API (ac_*, never the internal ac__*) is exported.
if command -v nm >/dev/null 2>&1; then
    leaked=$(nm -D --defined-only "$libdir/libactorc.so" | awk '{print $NF}' |
        grep -v -E '^ac_[A-Za-z0-9]' | grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' || true)
    internal=$(nm -D --defined-only "$libdir/libactorc.so" | awk '{print $NF}' | grep -E '^ac__' || true)
    if [ -n "$leaked$internal" ]; then
        printf '%s\n' "$leaked" "$internal" >&2
        fail "libactorc.so exports symbols outside the public ac_ API (above)"
    fi
    step "exported symbols: only ac_*"
fi

# (a) CMake: find_package(actorc), actorc::actorc and actorc::actorc_static.
step "building the consumer with CMake (find_package)"
quiet cmake -S "$here" -B "$tmp/cmake-build" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release
quiet cmake --build "$tmp/cmake-build"
check_output "cmake, shared" env LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/consumer_shared"
check_output "cmake, static" "$tmp/cmake-build/consumer_static"

# (b) pkg-config and the compiler directly.
step "building the consumer with pkg-config"
version=$(PKG_CONFIG_PATH="$pcdir" pkg-config --modversion actorc) || fail "pkg-config --modversion actorc"
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs actorc) || fail "pkg-config --cflags --libs actorc"
step "pkg-config: actorc $version: $flags"
# shellcheck disable=SC2086 # word splitting of $flags is intended
quiet "$cc" -std=c11 -Wall -Wextra -Werror -pthread "$here/main.c" -o "$tmp/consumer_pkgconfig" $flags
check_output "pkg-config, shared" env LD_LIBRARY_PATH="$libdir" "$tmp/consumer_pkgconfig"

step "ok"
