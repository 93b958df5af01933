#!/usr/bin/env bash
# Install a build of actorc into a scratch prefix, then build and run the
# programs of this directory against it the ways README.md tells: with
# CMake (find_package, shared and static, with and without the component
# http) and with pkg-config and the C compiler (shared, the archive, fully
# static; actorc-http shared and static). A program that does not serve
# metrics must build with libmicrohttpd out of sight and must not load it.
#
#   install.sh BUILD_DIR SOURCE_DIR [SANITIZE] [C_COMPILER] [CMAKE] [HTTP]
#
# HTTP (default ON) says whether the build has actorc_http.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
consumer_init install_consumer "$@"

prefix="$tmp/prefix"
step "installing $build into a scratch prefix"
install_into "$prefix"

# ---- what is installed -----------------------------------------------------

exports "$libdir/libactorc.so"
links "$libdir/libactorc.so" '!microhttpd'
links "$libdir/libactorc.so" '!libzmq'
# Remoting, when this build has it: the node alone, linking the runtime.
if [ -e "$libdir/libactorc-remote.so" ]; then
    for f in libactorc-remote.a pkgconfig/actorc-remote.pc cmake/actorc/actorcRemoteTargets.cmake; do
        [ -e "$libdir/$f" ] || fail "$f not in $libdir"
    done
    # Besides its API, the hooks actorc_cluster uses (AC__SPI in
    # src/remote/node_internal.h; not API).
    leaked=$(nm -D --defined-only "$libdir/libactorc-remote.so" | awk '{print $NF}' |
        grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | grep -v -E '^ac_(node_|ref_is_remote$|system_node$)' |
        grep -v -E '^ac__node_(hooks_set|tell_system|fail_asks|heartbeat_timeout_ms|stopping)$' || true)
    [ -z "$leaked" ] || fail "libactorc-remote.so exports more than ac_node_*, ac_system_node, ac_ref_is_remote and the cluster hooks: $leaked"
    links "$libdir/libactorc-remote.so" 'libactorc\.so' 'libzmq' 'libcbor'
    step "libactorc-remote: the node alone, linking libactorc, libzmq and libcbor"
fi
# Cluster membership, when this build has it: its API alone, linking the
# remote layer and the runtime.
if [ -e "$libdir/libactorc-cluster.so" ]; then
    for f in libactorc-cluster.a pkgconfig/actorc-cluster.pc cmake/actorc/actorcClusterTargets.cmake; do
        [ -e "$libdir/$f" ] || fail "$f not in $libdir"
    done
    leaked=$(nm -D --defined-only "$libdir/libactorc-cluster.so" | awk '{print $NF}' |
        grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' |
        grep -v -E '^ac_(cluster_|member_|system_cluster$|msg_type_member_event$)' || true)
    [ -z "$leaked" ] || fail "libactorc-cluster.so exports more than ac_cluster_*, ac_member_*, ac_system_cluster and ac_msg_type_member_event: $leaked"
    links "$libdir/libactorc-cluster.so" 'libactorc\.so' 'libactorc-remote\.so'
    step "libactorc-cluster: membership alone, linking libactorc-remote and libactorc"
fi
if [ "$http" = ON ]; then
    for f in libactorc-http.so libactorc-http.a pkgconfig/actorc-http.pc \
             cmake/actorc/actorcHttpTargets.cmake; do
        [ -e "$libdir/$f" ] || fail "$f not in $libdir"
    done
    # The HTTP part links the runtime rather than holding a copy of it.
    exports "$libdir/libactorc-http.so" "ac_metrics_http_port ac_metrics_serve ac_metrics_serve_stop"
    links "$libdir/libactorc-http.so" 'libactorc\.so' 'libmicrohttpd'
    objects=$(ar t "$libdir/libactorc-http.a" | sort | tr '\n' ' ')
    [ "$objects" = "http.c.o http_guard.c.o observer_page.c.o " ] ||
        fail "libactorc-http.a holds $objects; expected only the HTTP endpoint's objects (and its page)"
    step "libactorc-http: the endpoint alone, linking libactorc and libmicrohttpd"
else
    [ ! -e "$libdir/libactorc-http.so" ] || fail "libactorc-http.so installed by a build without HTTP"
fi

# ---- CMake -------------------------------------------------------------------

step "building the consumer with CMake (find_package), libmicrohttpd out of sight"
without_mhd cmake_consumer "$tmp/cmake-build"
links "$tmp/cmake-build/consumer_shared" 'libactorc\.so' '!microhttpd'
check_output "cmake, shared" "$expect_consumer" \
    env LD_LIBRARY_PATH="$libdir" "$tmp/cmake-build/consumer_shared"
links "$tmp/cmake-build/consumer_static" '!libactorc' '!microhttpd'
check_output "cmake, static" "$expect_consumer" "$tmp/cmake-build/consumer_static"

if [ "$http" = ON ]; then
    step "find_package(actorc COMPONENTS http) without libmicrohttpd must fail, and say why"
    if without_mhd "$cmake" -S "$here" -B "$tmp/cmake-no-mhd" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" -DCONSUMER_HTTP=ON >"$tmp/no-mhd.log" 2>&1; then
        fail "the component http was found without libmicrohttpd"
    fi
    grep -q 'needs libmicrohttpd' "$tmp/no-mhd.log" ||
        { cat "$tmp/no-mhd.log" >&2; fail "the failure does not name libmicrohttpd"; }

    step "building the consumer with CMake (find_package COMPONENTS http)"
    cmake_consumer "$tmp/cmake-http" -DCONSUMER_HTTP=ON
    links "$tmp/cmake-http/serve_shared" 'libactorc-http\.so' 'libactorc\.so' 'microhttpd'
    check_output "cmake, http, shared" "$expect_serve" \
        env LD_LIBRARY_PATH="$libdir" "$tmp/cmake-http/serve_shared"
    links "$tmp/cmake-http/serve_static" '!libactorc' 'microhttpd'
    check_output "cmake, http, static" "$expect_serve" "$tmp/cmake-http/serve_static"
fi

if [ -e "$libdir/libactorc-cluster.so" ]; then
    step "building the cluster consumer with CMake (find_package COMPONENTS cluster)"
    cmake_consumer "$tmp/cmake-cluster" -DCONSUMER_CLUSTER=ON
    links "$tmp/cmake-cluster/cluster_shared" 'libactorc-cluster\.so' 'libactorc-remote\.so' 'libactorc\.so'
    check_output "cmake, cluster, shared" "$expect_cluster" \
        env LD_LIBRARY_PATH="$libdir" "$tmp/cmake-cluster/cluster_shared"
    links "$tmp/cmake-cluster/cluster_static" '!libactorc'
    check_output "cmake, cluster, static" "$expect_cluster" "$tmp/cmake-cluster/cluster_static"
fi

# ---- pkg-config ---------------------------------------------------------------

step "building the consumer with pkg-config, libmicrohttpd out of sight"
pkgconfig_runtime

if [ "$http" = ON ]; then
    step "building the serving consumer with pkg-config (actorc-http)"
    out="$tmp/pkgconfig-http"
    mkdir -p "$out"
    cp "$here/serve.c" "$out/app.c"
    # The README's recipes, as written. shellcheck disable=SC2046
    (
        cd "$out" &&
        export PKG_CONFIG_PATH="$pcdir" &&
        "$cc" -std=c11 app.c -o app-shared $(pkg-config --cflags --libs actorc-http) &&
        libdir=$(pkg-config --variable=libdir actorc) &&
        "$cc" -std=c11 app.c -o app-static $(pkg-config --cflags actorc-http) \
            "$libdir/libactorc-http.a" "$libdir/libactorc.a" \
            $(pkg-config --libs libmicrohttpd) -lpthread -lm
    ) >"$tmp/step.log" 2>&1 || { cat "$tmp/step.log" >&2; fail "an actorc-http recipe did not build"; }
    step "pkg-config: actorc-http: $(PKG_CONFIG_PATH="$pcdir" pkg-config --libs actorc-http)"
    links "$out/app-shared" 'libactorc-http\.so' 'libactorc\.so' 'microhttpd'
    check_output "pkg-config, http, shared" "$expect_serve" \
        env LD_LIBRARY_PATH="$libdir" "$out/app-shared"
    links "$out/app-static" '!libactorc' 'microhttpd'
    check_output "pkg-config, http, static" "$expect_serve" "$out/app-static"
fi

if [ -e "$libdir/libactorc-cluster.so" ]; then
    step "building the cluster consumer with pkg-config (actorc-cluster)"
    out="$tmp/pkgconfig-cluster"
    mkdir -p "$out"
    cp "$here/cluster.c" "$out/app.c"
    # shellcheck disable=SC2046
    (
        cd "$out" &&
        export PKG_CONFIG_PATH="$pcdir" &&
        "$cc" -std=c11 app.c -o app-shared $(pkg-config --cflags --libs actorc-cluster)
    ) >"$tmp/step.log" 2>&1 || { cat "$tmp/step.log" >&2; fail "the actorc-cluster recipe did not build"; }
    step "pkg-config: actorc-cluster: $(PKG_CONFIG_PATH="$pcdir" pkg-config --libs actorc-cluster)"
    links "$out/app-shared" 'libactorc-cluster\.so' 'libactorc-remote\.so' 'libactorc\.so'
    check_output "pkg-config, cluster, shared" "$expect_cluster" \
        env LD_LIBRARY_PATH="$libdir" "$out/app-shared"
fi

step "ok"
