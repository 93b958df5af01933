#!/usr/bin/env bash
# actorc on a machine without libmicrohttpd-dev: configure actorc with
# libmicrohttpd out of pkg-config's sight, build and install the library
# alone, and build and run the consumer against that install with CMake and
# pkg-config. The default (ACTORC_WITH_HTTP=AUTO) must leave the HTTP part
# out quietly and install nothing of it; ACTORC_WITH_HTTP=ON must fail and
# say why; the installed package must report its component http missing.
#
#   no_http.sh BUILD_DIR SOURCE_DIR [SANITIZE] [C_COMPILER] [CMAKE] [HTTP]
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
consumer_init install_consumer_no_http "$@"

library_only=(-DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release -DACTORC_BUILD_TESTS=OFF
              -DACTORC_BUILD_BENCH=OFF -DACTORC_BUILD_EXAMPLES=OFF -DACTORC_BUILD_APPS=OFF)

step "ACTORC_WITH_HTTP=ON without libmicrohttpd must fail, and say why"
if without_mhd "$cmake" -S "$src" -B "$tmp/build-on" "${library_only[@]}" -DACTORC_WITH_HTTP=ON \
    >"$tmp/on.log" 2>&1; then
    fail "configured with ACTORC_WITH_HTTP=ON and no libmicrohttpd"
fi
grep -q 'libmicrohttpd' "$tmp/on.log" || { cat "$tmp/on.log" >&2; fail "the failure does not name libmicrohttpd"; }

step "configuring and building actorc without libmicrohttpd (ACTORC_WITH_HTTP=AUTO)"
build="$tmp/build"
without_mhd "$cmake" -S "$src" -B "$build" "${library_only[@]}" >"$tmp/auto.log" 2>&1 ||
    { cat "$tmp/auto.log" >&2; fail "configure without libmicrohttpd"; }
grep -q 'not building actorc_http' "$tmp/auto.log" ||
    { cat "$tmp/auto.log" >&2; fail "configure did not say it leaves actorc_http out"; }
quiet "$cmake" --build "$build" -j 2

prefix="$tmp/prefix"
step "installing it into a scratch prefix"
install_into "$prefix"
for f in libactorc-http.so libactorc-http.a pkgconfig/actorc-http.pc \
         cmake/actorc/actorcHttpTargets.cmake; do
    [ ! -e "$libdir/$f" ] || fail "$f installed by a build without HTTP"
done
exports "$libdir/libactorc.so"

step "building the consumer with CMake (find_package)"
without_mhd cmake_consumer "$tmp/cmake-build"
check_output "cmake, shared" "$expect_consumer" \
    env LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/consumer_shared"
check_output "cmake, static" "$expect_consumer" "$tmp/cmake-build/consumer_static"

step "find_package(actorc COMPONENTS http) must fail, and say why"
if "$cmake" -S "$here" -B "$tmp/cmake-http" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_COMPILER="$cc" -DCONSUMER_HTTP=ON >"$tmp/http.log" 2>&1; then
    fail "the component http was found in an install without it"
fi
grep -q 'built without its HTTP endpoint' "$tmp/http.log" ||
    { cat "$tmp/http.log" >&2; fail "the failure does not say the HTTP part was not built"; }

step "building the consumer with pkg-config"
pkgconfig_runtime

step "ok"
