#!/usr/bin/env bash
# The Debian packages as a user gets them: build them (scripts/deb.sh),
# check them with lintian (no errors) and their fields (sonames, the
# shlibs, dependencies that this machine's Debian packages satisfy),
# install them with dpkg into a scratch root, build the consumer programs
# of this directory against the installed files with pkg-config and with
# CMake, run them and the installed tools, then remove the packages with
# dpkg and check that nothing of them is left.
#
#   deb.sh BUILD_DIR SOURCE_DIR [SANITIZE] [C_COMPILER] [CMAKE] [HTTP]
#
# Registered in the release configuration only (the packages are built
# from a build of their own, with the build's plain flags; a sanitizer
# build's libraries are not what a package ships). Without dpkg-dev,
# fakeroot or lintian it fails and names the package (make deps installs
# them), or exits 77 (skipped) with ACTORC_TEST_SKIP_MISSING=1. The packages' own build goes to
# BUILD_DIR/deb-packages and is kept, so a second run only rebuilds what
# changed.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
consumer_init package_deb "$@"

for tool in dpkg-deb:dpkg dpkg-shlibdeps:dpkg-dev fakeroot:fakeroot lintian:lintian \
            pkg-config:pkg-config; do
    command -v "${tool%%:*}" >/dev/null && continue
    [ "${ACTORC_TEST_SKIP_MISSING:-0}" = 1 ] && { step "skipped: no ${tool%%:*}"; exit 77; }
    fail "no ${tool%%:*}: install the Debian package ${tool##*:} (make deps)"
done

out="$tmp/debs"
step "building the packages (scripts/deb.sh)"
BUILD_ROOT="$build/deb-packages" JOBS=${JOBS:-2} quiet bash "$src/scripts/deb.sh" "$out"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/deb-packages/deb/CMakeCache.txt")
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
debs=()
for p in libactorc0 libactorc-dev actorc-tools; do
    f="$out/${p}_${version}_${arch}.deb"
    [ -f "$f" ] || fail "no $f"
    debs+=("$f")
done

# ---- what the packages say ---------------------------------------------------

step "lintian"
lintian --tag-display-limit 0 "${debs[@]}" >"$tmp/lintian.log" 2>&1 || true
if grep -E '^E: ' "$tmp/lintian.log" >&2; then
    fail "lintian reports errors (above)"
fi
step "lintian: no errors ($(grep -c '^W: ' "$tmp/lintian.log" || true) warnings)"

field() { dpkg-deb -f "$1" "$2"; }
lib_deb=${debs[0]} dev_deb=${debs[1]} tools_deb=${debs[2]}
# Every runtime library's soname major is 0, and the shlibs name them all.
dpkg-deb -x "$lib_deb" "$tmp/lib-contents"
dpkg-deb -e "$lib_deb" "$tmp/lib-control"
for so in libactorc libactorc-http libactorc-remote libactorc-cluster; do
    f="$tmp/lib-contents/usr/lib/$multiarch/$so.so.0"
    [ -L "$f" ] || fail "libactorc0 has no $so.so.0 link"
    soname=$(objdump -p "$f" | awk '/SONAME/ {print $2}')
    [ "$soname" = "$so.so.0" ] || fail "$so's soname is $soname, not $so.so.0"
    grep -qx "$so 0 libactorc0 (>= $version)" "$tmp/lib-control/shlibs" ||
        fail "the shlibs do not name $so 0"
done
[ -z "$(find "$tmp/lib-contents" -name '*.a' -o -name '*.h')" ] || fail "libactorc0 ships development files"
# Dependencies: on Debian's library packages, found by dpkg-shlibdeps.
lib_depends=$(field "$lib_deb" Depends)
for want in libc6 libzmq5 libcbor0.8 libcurl4 libjansson4 libc-ares2 libmicrohttpd12; do
    grep -qE "(^|, )$want( |,|$)" <<<"$lib_depends" || fail "libactorc0 does not depend on $want: $lib_depends"
done
grep -q "libactorc0 (= $version)" <<<"$(field "$dev_deb" Depends)" ||
    fail "libactorc-dev does not depend on libactorc0 (= $version)"
grep -q "libactorc0 (>= $version)" <<<"$(field "$tools_deb" Depends)" ||
    fail "actorc-tools does not depend on libactorc0 (actorc-soak links it)"
step "sonames, shlibs and dependencies: ok (libactorc0: $lib_depends)"
# Every dependency is a package this machine has installed (the Debian
# names are right, and the packages are installable here).
for deb in "${debs[@]}"; do
    field "$deb" Depends | tr ',' '\n' | sed 's/([^)]*)//; s/^ *//; s/ *$//' | while read -r alt; do
        [ -n "$alt" ] || continue
        ok=no
        for name in $(tr '|' ' ' <<<"$alt"); do
            case "$name" in libactorc0) ok=yes ;; esac
            dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "ok installed" && ok=yes
        done
        [ "$ok" = yes ] || fail "$(basename "$deb") depends on $alt, which is not installed here"
    done
done

# ---- installed into a scratch root -------------------------------------------

root="$tmp/root"
admin="$root/var/lib/dpkg"
mkdir -p "$admin/info" "$admin/updates" "$admin/triggers"
touch "$admin/status" "$admin/available"
dpkg_root() {
    # The dependencies are this machine's (checked above), not the
    # scratch root's; the ldconfig trigger is the machine's too.
    dpkg --root="$root" --admindir="$admin" --force-depends --force-not-root \
        --force-script-chrootless --no-triggers --log=/dev/null "$@"
}
step "dpkg -i into a scratch root"
quiet dpkg_root -i "${debs[@]}"
for p in libactorc0 libactorc-dev actorc-tools; do
    dpkg_root -s "$p" 2>/dev/null | grep -q "^Status: install ok" || fail "$p is not installed in the root"
done
prefix="$root/usr"
libdir="$prefix/lib/$multiarch"
pcdir="$libdir/pkgconfig"
[ -f "$prefix/include/actorc.h" ] || fail "no usr/include/actorc.h"
[ -f "$pcdir/actorc.pc" ] || fail "no actorc.pc in $pcdir"

step "building the consumer with CMake (find_package) against the installed files"
cmake_consumer "$tmp/cmake-build" -DCONSUMER_HTTP=ON -DCONSUMER_CLUSTER=ON
check_output "cmake, shared" "$expect_consumer" env LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/consumer_shared"
check_output "cmake, static" "$expect_consumer" "$tmp/cmake-build/consumer_static"
check_output "cmake, http, shared" "$expect_serve" env LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/serve_shared"
check_output "cmake, cluster, shared" "$expect_cluster" \
    env LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/cluster_shared"

step "building the consumer with pkg-config against the installed files"
pkgconfig_runtime
out_http="$tmp/pkgconfig-http"
mkdir -p "$out_http"
cp "$here/serve.c" "$out_http/app.c"
# shellcheck disable=SC2046 # word splitting of pkg-config's output is intended
(cd "$out_http" && PKG_CONFIG_PATH="$pcdir" "$cc" -std=c11 app.c -o app \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs actorc-http)) >"$tmp/step.log" 2>&1 ||
    { cat "$tmp/step.log" >&2; fail "the actorc-http recipe did not build"; }
check_output "pkg-config, http" "$expect_serve" env LD_LIBRARY_PATH="$libdir" "$out_http/app"

step "running the installed tools"
for tool in actorc-hedge actorc-node actorc-keygen actorc-soak; do
    [ -x "$root/usr/bin/$tool" ] || fail "no usr/bin/$tool"
done
LD_LIBRARY_PATH="$libdir" "$root/usr/bin/actorc-keygen" "$tmp/node" >"$tmp/keys" 2>&1 ||
    { cat "$tmp/keys" >&2; fail "actorc-keygen failed"; }
[ -s "$tmp/node.pub" ] && [ -s "$tmp/node.key" ] || fail "actorc-keygen wrote no keys"
rm -f "$tmp/node.pub" "$tmp/node.key"
LD_LIBRARY_PATH="$libdir" "$root/usr/bin/actorc-hedge" --help >"$tmp/hedge" 2>&1 ||
    { cat "$tmp/hedge" >&2; fail "actorc-hedge --help failed"; }
LD_LIBRARY_PATH="$libdir" "$root/usr/bin/actorc-soak" --help >"$tmp/soak" 2>&1 ||
    { cat "$tmp/soak" >&2; fail "actorc-soak --help failed"; }
step "tools: ok"

step "dpkg --purge"
quiet dpkg_root --purge actorc-tools libactorc-dev libactorc0
left=$(cd "$root" && find . -path ./var -prune -o \( -type f -o -type l \) -print)
[ -z "$left" ] || fail "left behind after the purge: $left"
step "ok"
