# Helpers of the consumer tests (install.sh, no_http.sh, embed.sh), which
# source this file and call consumer_init first:
#
#   consumer_init NAME BUILD_DIR SOURCE_DIR [SANITIZE] [C_COMPILER] [CMAKE] [HTTP]
#
# sets build, src, cc, cmake, http (ON or OFF), here (this directory) and
# tmp (a scratch directory removed on exit). It exits 77 (skipped) for
# sanitizer builds: their libraries need the sanitizer runtime flags, which
# a plain consumer does not pass.

expect_consumer="consumer: hello, consumer, from greeter"
expect_serve="serve: scraped actorc_actors_started_total from /metrics"
expect_cluster="cluster: consumer joined, first event: up self"

consumer_init() {
    test_name=$1
    shift
    if [ $# -lt 2 ]; then
        echo "usage: $0 BUILD_DIR SOURCE_DIR [SANITIZE] [C_COMPILER] [CMAKE] [HTTP]" >&2
        exit 2
    fi
    build=$(cd "$1" && pwd)
    src=$(cd "$2" && pwd)
    local sanitize=${3:-}
    cc=${4:-${CC:-cc}}
    cmake=${5:-cmake}
    http=${6:-ON}
    here="$src/tests/consumer"
    if [ -n "$sanitize" ]; then
        echo "$test_name: skipped: sanitizer build ($sanitize)"
        exit 77
    fi
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/actorc-consumer.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    mkdir "$tmp/no-pkgconfig"
}

fail() {
    echo "$test_name: FAILED: $*" >&2
    exit 1
}

step() { echo "$test_name: $*"; }

# Run "$@", printing its output only when it fails.
quiet() {
    local log="$tmp/step.log"
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        fail "$*"
    fi
}

# Run "$@" with libmicrohttpd out of pkg-config's sight, as on a machine
# without libmicrohttpd-dev: pkg-config searches only PKG_CONFIG_PATH.
without_mhd() {
    PKG_CONFIG_LIBDIR="$tmp/no-pkgconfig" "$@"
}

# check_output NAME EXPECTED COMMAND...
check_output() {
    local name=$1 expected=$2 out status=0
    shift 2
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

# The shared libraries a program or library loads, one name a line
# (nothing for a static executable), as the loader finds them with
# LD_LIBRARY_PATH=$libdir.
loads() {
    LD_LIBRARY_PATH="$libdir" ldd "$1" 2>/dev/null | awk '$1 ~ /^lib/ {print $1}' || true
}

# links FILE PATTERN... : FILE loads a library matching each PATTERN
# (a grep -E expression; !PATTERN: none matches).
links() {
    local file=$1 pattern libs
    shift
    libs=$(loads "$file")
    for pattern in "$@"; do
        case "$pattern" in
            !*) if grep -qE "${pattern#!}" <<<"$libs"; then
                    printf '%s\n' "$libs" >&2
                    fail "$(basename "$file") loads ${pattern#!} (its libraries are above)"
                fi ;;
            *) if ! grep -qE "$pattern" <<<"$libs"; then
                    printf '%s\n' "$libs" >&2
                    fail "$(basename "$file") does not load $pattern (its libraries are above)"
                fi ;;
        esac
    done
}

# install_into PREFIX: install $build there and set pcdir, libdir, cmakedir.
install_into() {
    local prefix=$1 pc
    quiet "$cmake" --install "$build" --prefix "$prefix"
    [ -f "$prefix/include/actorc.h" ] || fail "include/actorc.h not installed"
    [ -f "$prefix/include/actorc/actor.h" ] || fail "include/actorc/actor.h not installed"
    pc=$(find "$prefix" -name actorc.pc -path '*/pkgconfig/*' -print -quit)
    [ -n "$pc" ] || fail "actorc.pc not installed"
    pcdir=$(dirname "$pc")
    libdir=$(dirname "$pcdir")
    cmakedir="$libdir/cmake/actorc"
    local f
    for f in libactorc.so libactorc.a cmake/actorc/actorcConfig.cmake; do
        [ -e "$libdir/$f" ] || fail "$f not in $libdir"
    done
}

# The internal functions libactorc exports for actorc's own optional
# libraries (AC__SPI in src/core; not API). A change to that interface
# changes this list.
ACTORC_SPI="ac__alloc_should_fail ac__alloc_small ac__assert_fail ac__ext_attach ac__ext_dead_letter
ac__ext_deliver_path ac__ext_detach ac__ext_find ac__ext_locate ac__ext_located_read
ac__ext_located_type ac__ext_lookup_top ac__ext_node_take ac__ext_ref_is_dead
ac__ext_terminated_new ac__ext_unwatch_as ac__ext_watch_as ac__fail ac__fail_null
ac__alloc_request_flush ac__alloc_trim ac__free_small ac__mailbox_len ac__member_group_add ac__member_group_props ac__member_group_remove
ac__member_group_size ac__oom_abort ac__ref_init ac__refset_add ac__refset_clear
ac__refset_contains ac__refset_remove ac__thread_name"

# exports LIBRARY [EXPECTED]: the shared LIBRARY exports only the public
# API (ac_*) and, from libactorc, the listed internal interface; exactly
# EXPECTED (a sorted, space-separated list) when given.
exports() {
    local lib=$1 expected=${2:-} symbols leaked
    symbols=$(nm -D --defined-only "$lib" | awk '{print $NF}' |
        grep -v -E '^(_init|_fini|_edata|_end|__bss_start)$' | sort)
    leaked=$(grep -v -E '^ac_[A-Za-z0-9]' <<<"$symbols" |
        grep -v -x -F -f <(tr ' ' '\n' <<<"$ACTORC_SPI" | grep -v '^$') || true)
    if [ -n "$leaked" ]; then
        printf '%s\n' "$leaked" >&2
        fail "$(basename "$lib") exports symbols outside the public ac_ API (above)"
    fi
    if [ -n "$expected" ] && [ "$(echo $symbols)" != "$expected" ]; then
        printf '%s\n' "$symbols" >&2
        fail "$(basename "$lib") exports the above, expected: $expected"
    fi
    step "$(basename "$lib"): exports only ac_* ($(wc -l <<<"$symbols") symbols)"
}

# cmake_consumer DIR [ARGS...]: configure and build the consumer project
# in DIR against $prefix.
cmake_consumer() {
    local dir=$1
    shift
    quiet "$cmake" -S "$here" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release "$@"
    quiet "$cmake" --build "$dir"
}

# The README's pkg-config recipes for the runtime alone, run as written,
# with app.c the consumer's main.c; libmicrohttpd is out of sight.
pkgconfig_runtime() {
    local out=$tmp/pkgconfig
    mkdir -p "$out"
    cp "$here/main.c" "$out/app.c"
    # shellcheck disable=SC2046 # word splitting of pkg-config's output is intended
    (
        cd "$out" &&
        export PKG_CONFIG_PATH="$pcdir" PKG_CONFIG_LIBDIR="$tmp/no-pkgconfig" &&
        "$cc" -std=c11 app.c -o app-shared $(pkg-config --cflags --libs actorc) &&
        "$cc" -std=c11 app.c -o app-archive $(pkg-config --cflags actorc) \
            "$(pkg-config --variable=libdir actorc)/libactorc.a" -lpthread -lm &&
        "$cc" -std=c11 -static app.c -o app-static $(pkg-config --cflags --libs --static actorc)
    ) >"$tmp/step.log" 2>&1 || { cat "$tmp/step.log" >&2; fail "a pkg-config recipe did not build"; }
    step "pkg-config: actorc: $(PKG_CONFIG_PATH="$pcdir" pkg-config --static --libs actorc)"
    links "$out/app-shared" 'libactorc\.so' '!microhttpd'
    check_output "pkg-config, shared" "$expect_consumer" env LD_LIBRARY_PATH="$libdir" "$out/app-shared"
    links "$out/app-archive" '!libactorc' '!microhttpd'
    check_output "pkg-config, libactorc.a" "$expect_consumer" "$out/app-archive"
    [ -z "$(loads "$out/app-static")" ] || fail "app-static is not a static executable"
    check_output "pkg-config --static, -static" "$expect_consumer" "$out/app-static"
}
