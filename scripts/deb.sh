#!/usr/bin/env bash
# Build the Debian packages of actorc with the Debian tooling (dpkg-deb,
# dpkg-shlibdeps), from a build configured for /usr:
#
#   libactorc0     the shared libraries (libactorc.so.0 and its optional
#                  parts: -http, -remote, -cluster with etcd and DNS)
#   libactorc-dev  headers, the .so links, static archives, pkg-config and
#                  CMake files
#   actorc-tools   actorc-hedge, actorc-node, actorc-keygen, actorc-soak
#
#   scripts/deb.sh [OUT_DIR]      (default: $BUILD_ROOT/packages)
#
# Configures and builds $BUILD_ROOT/deb (RelWithDebInfo, prefix /usr, the
# multiarch libdir; libraries and programs, no tests), installs it into a
# staging tree, splits that into the three packages, strips what they
# ship (the libraries keep their symbol tables for the dynamic linker),
# computes their dependencies on Debian's library packages with
# dpkg-shlibdeps (and each other's with exact versions), and builds them
# with dpkg-deb. Environment: BUILD_ROOT (default build), JOBS, CMAKE,
# DEB_MAINTAINER (the Maintainer field).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
build_root=${BUILD_ROOT:-build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
cmake=${CMAKE:-cmake}
out=${1:-$build_root/packages}
maintainer=${DEB_MAINTAINER:-actorc developers <actorc@example.org>}
build="$build_root/deb"

for tool in dpkg-deb dpkg-shlibdeps dpkg-architecture fakeroot; do
    command -v "$tool" >/dev/null ||
        { echo "deb: no $tool (Debian packages dpkg-dev and fakeroot)" >&2; exit 1; }
done
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

"$cmake" -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
    -DCMAKE_INSTALL_LIBDIR="lib/$multiarch" -DACTORC_SANITIZE= -DACTORC_WERROR=OFF \
    -DACTORC_BUILD_TESTS=OFF -DACTORC_BUILD_BENCH=OFF -DACTORC_BUILD_EXAMPLES=OFF \
    -DACTORC_BUILD_APPS=ON -DACTORC_WITH_HTTP=ON -DACTORC_WITH_REMOTE=ON \
    -DACTORC_WITH_ETCD=ON -DACTORC_WITH_DNS=ON -DACTORC_WITH_CLUSTER=ON >/dev/null
"$cmake" --build "$build" -j "$jobs"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || { echo "deb: no project version in $build/CMakeCache.txt" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/actorc-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage="$work/stage"
DESTDIR="$stage" "$cmake" --install "$build" >/dev/null
DESTDIR="$stage" "$cmake" --install "$build" --component tools >/dev/null
libdir="usr/lib/$multiarch"

# ---- the package trees -----------------------------------------------------

pkg() { echo "$work/pkg/$1"; }
move() { # move PACKAGE PATH...: from the staging tree into the package's
    local p=$1
    shift
    for f in "$@"; do
        mkdir -p "$(pkg "$p")/$(dirname "$f")"
        mv "$stage/$f" "$(pkg "$p")/$f"
    done
}

cd "$stage"
runtime=$(find "$libdir" -maxdepth 1 -name 'lib*.so.*' | sort)
dev_links=$(find "$libdir" -maxdepth 1 -name 'lib*.so' | sort)
archives=$(find "$libdir" -maxdepth 1 -name 'lib*.a' | sort)
tools=$(find usr/bin -type f | sort)
cd "$root"
# shellcheck disable=SC2086 # lists of paths without spaces
{
    move libactorc0 $runtime
    move libactorc-dev usr/include $dev_links $archives "$libdir/pkgconfig" "$libdir/cmake"
    move actorc-tools $tools
}
left=$(cd "$stage" && find . -type f -o -type l)
[ -z "$left" ] || { echo "deb: installed but in no package: $left" >&2; exit 1; }

# Strip: the programs whole, the libraries of debugging symbols only.
find "$(pkg actorc-tools)/usr/bin" -type f -exec strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
find "$(pkg libactorc0)/$libdir" -type f -exec strip --strip-unneeded --remove-section=.comment --remove-section=.note {} +
find "$(pkg libactorc-dev)/$libdir" -name '*.a' -exec strip --strip-debug --enable-deterministic-archives {} +

# Documentation every package carries: the copyright and a changelog.
date_r=$(date -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}")
for p in libactorc0 libactorc-dev actorc-tools; do
    doc="$(pkg "$p")/usr/share/doc/$p"
    mkdir -p "$doc"
    cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: actorc
Comment: An actor runtime in C. The project has not chosen a licence yet;
 these packages are built from its sources for its own testing and use.

Files: *
Copyright: the actorc authors
License: unspecified
 No licence has been granted yet.
EOF
    printf 'actorc (%s) unstable; urgency=medium\n\n  * Packages of actorc %s.\n\n -- %s  %s\n' \
        "$version" "$version" "$maintainer" "$date_r" | gzip -9n >"$doc/changelog.gz"
done

# ---- control files ---------------------------------------------------------

# The shared libraries' shlibs: anything linked with one needs libactorc0
# of this version or later.
shlibs="$work/shlibs"
: >"$shlibs"
for f in $runtime; do
    soname=$(objdump -p "$(pkg libactorc0)/$f" | awk '/SONAME/ {print $2}')
    [ -n "$soname" ] || continue
    name=${soname%%.so.*}
    major=${soname##*.so.}
    if ! grep -q "^$name $major " "$shlibs"; then
        echo "$name $major libactorc0 (>= $version)" >>"$shlibs"
    fi
done
mkdir -p "$(pkg libactorc0)/DEBIAN"
cp "$shlibs" "$(pkg libactorc0)/DEBIAN/shlibs"
echo "activate-noawait ldconfig" >"$(pkg libactorc0)/DEBIAN/triggers"

# dpkg-shlibdeps reads debian/control of a source tree: a minimal one, and
# our own shlibs for the libraries of libactorc0.
mkdir -p "$work/src/debian"
printf 'Source: actorc\n\nPackage: libactorc0\nArchitecture: any\n' >"$work/src/debian/control"
cp "$shlibs" "$work/src/debian/shlibs.local"
depends_of() { # depends_of PACKAGE FILE...: its shlibs:Depends
    local p=$1
    shift
    (cd "$work/src" && dpkg-shlibdeps -O -x"$p" -l"$(pkg libactorc0)/$libdir" \
        -S"$(pkg libactorc0)" "$@" 2>"$work/shlibdeps.log") |
        sed -n 's/^shlibs:Depends=//p'
}
lib_files=()
for f in $runtime; do [ -L "$(pkg libactorc0)/$f" ] || lib_files+=("$(pkg libactorc0)/$f"); done
lib_depends=$(depends_of libactorc0 "${lib_files[@]}")
tool_files=()
for f in $tools; do tool_files+=("$(pkg actorc-tools)/$f"); done
tool_depends=$(depends_of actorc-tools "${tool_files[@]}")
# The -dev package: the runtime of this very version, and the -dev
# packages the pkg-config and CMake files name for static links and the
# optional parts.
dev_depends="libactorc0 (= $version), libc6-dev, libmicrohttpd-dev, libzmq3-dev, libcbor-dev, libcurl4-openssl-dev | libcurl-dev, libjansson-dev, libc-ares-dev"

control() { # control PACKAGE SECTION DEPENDS SUMMARY DESCRIPTION [EXTRA]
    local p=$1 section=$2 depends=$3 summary=$4 description=$5 extra=${6:-}
    local size
    size=$(du -sk --exclude=DEBIAN "$(pkg "$p")" | cut -f1)
    mkdir -p "$(pkg "$p")/DEBIAN"
    {
        echo "Package: $p"
        echo "Source: actorc"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $size"
        [ -z "$depends" ] || echo "Depends: $depends"
        [ -z "$extra" ] || echo "$extra"
        echo "Section: $section"
        echo "Priority: optional"
        echo "Homepage: https://github.com/actorc/actorc"
        echo "Description: $summary"
        printf '%s\n' "$description" | fold -s -w 72 | sed 's/ *$//; s/^/ /'
    } >"$(pkg "$p")/DEBIAN/control"
}
about="actorc is an actor runtime in C: actors with mailboxes and supervision, asks, routers (scatter/gather, hedged requests), circuit breakers, metrics with a live observer page, and remoting and cluster membership over ZeroMQ."
control libactorc0 libs "$lib_depends" "actor runtime in C - shared libraries" \
    "$about This package holds the shared libraries: libactorc and its optional parts (the HTTP endpoint with the observer page, remoting, cluster membership with its etcd and DNS providers)." \
    "Multi-Arch: same"
control libactorc-dev libdevel "$dev_depends" "actor runtime in C - development files" \
    "$about This package holds the headers, the static archives and the pkg-config and CMake files to build programs with actorc." \
    "Multi-Arch: same"
control actorc-tools utils "$tool_depends" "actor runtime in C - demo and tools" \
    "$about This package holds actorc-hedge (the hedged-request demo, with the observer page), actorc-node (a replica node), actorc-keygen (CURVE keys for nodes) and actorc-soak (a long randomised run)."

# ---- the packages ----------------------------------------------------------

mkdir -p "$out"
for p in libactorc0 libactorc-dev actorc-tools; do
    # md5sums of everything shipped
    (cd "$(pkg "$p")" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' |
        sort | xargs md5sum >DEBIAN/md5sums)
    find "$(pkg "$p")" -type d -exec chmod 0755 {} +
    fakeroot dpkg-deb --root-owner-group -Zxz --build "$(pkg "$p")" \
        "$out/${p}_${version}_${arch}.deb" >/dev/null
    echo "deb: $out/${p}_${version}_${arch}.deb"
    dpkg-deb -f "$out/${p}_${version}_${arch}.deb" Depends | sed 's/^/deb:   Depends: /'
done
