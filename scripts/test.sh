#!/usr/bin/env bash
# Build and run the test suite in several configurations, one after the
# other, stopping at the first that fails.
#
#   scripts/test.sh [CONFIG...]      (default: release asan tsan)
#
# See scripts/build.sh for the configurations. Environment: BUILD_ROOT,
# JOBS, CMAKE as for build.sh; CTEST_JOBS (default 2); CTEST_TIMEOUT, the
# per-test timeout in seconds for tests that set none (default 300);
# CTEST_ARGS, extra ctest arguments; ACTORC_SETARCH=auto|yes|no, whether to
# run sanitized tests with ASLR off (setarch -R); auto probes for it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(release asan tsan)
build_root=${BUILD_ROOT:-build}
ctest=${CTEST:-ctest}
ctest_jobs=${CTEST_JOBS:-2}
ctest_timeout=${CTEST_TIMEOUT:-300}
setarch_mode=${ACTORC_SETARCH:-auto}

declare -A result=() counts=() seconds=()
total_passed=0 total_failed=0 total_skipped=0

summary() {
    echo
    echo "==================== test summary ===================="
    local c
    for c in "${configs[@]}"; do
        printf '  %-8s %-10s %s\n' "$c" "${result[$c]:-not run}" \
            "${counts[$c]:-}${seconds[$c]:+ (${seconds[$c]} s)}"
    done
    echo "======================================================"
    echo "test: $total_passed passed, $total_failed failed, $total_skipped skipped"
}

# The sanitizer environment of a configuration.
sanitizer_env() {
    case "$1" in
        asan)
            echo "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
            echo "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" ;;
        tsan)
            echo "TSAN_OPTIONS=halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp${TSAN_OPTIONS:+ $TSAN_OPTIONS}" ;;
    esac
}

# Does a trivial program built with this sanitizer run? Some kernels (high
# vm.mmap_rnd_bits) map memory where the sanitizer runtime cannot live
# ("unexpected memory mapping"); with ASLR off (setarch -R) it works.
# Prints the command prefix to run tests with: nothing, or setarch.
probe_launcher() {
    local config=$1 flag
    case "$config" in
        asan) flag=-fsanitize=address,undefined ;;
        tsan) flag=-fsanitize=thread ;;
        *) return 0 ;;
    esac
    local setarch_cmd=(setarch "$(uname -m)" -R)
    case "$setarch_mode" in
        yes) echo "${setarch_cmd[*]}"; return 0 ;;
        no) return 0 ;;
    esac

    local cc dir out
    cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build_root/$config/CMakeCache.txt" 2>/dev/null || true)
    cc=${cc:-${CC:-cc}}
    dir=$(mktemp -d "${TMPDIR:-/tmp}/actorc-probe.XXXXXX")
    cat >"$dir/probe.c" <<'PROBE'
#include <pthread.h>
static void *run(void *arg) { return arg; }
int main(void)
{
    pthread_t t;
    if (pthread_create(&t, 0, run, 0) != 0) return 1;
    return pthread_join(t, 0);
}
PROBE
    if ! "$cc" $flag -pthread "$dir/probe.c" -o "$dir/probe" >"$dir/cc.log" 2>&1; then
        cat "$dir/cc.log" >&2
        echo "test: cannot build a $config program with $cc; tests will show why" >&2
        rm -rf "$dir"
        return 0
    fi
    local env_args=()
    mapfile -t env_args < <(sanitizer_env "$config")
    if out=$(env "${env_args[@]}" "$dir/probe" 2>&1); then
        rm -rf "$dir"
        return 0
    fi
    if env "${env_args[@]}" "${setarch_cmd[@]}" "$dir/probe" >/dev/null 2>&1; then
        case "$out" in
            *"unexpected memory mapping"*) echo "test: $config: sanitizer runtime hit 'unexpected memory mapping'; running tests with ASLR off (setarch -R)" >&2 ;;
            *) echo "test: $config: a trivial sanitized program fails but runs with ASLR off; running tests with setarch -R. Its output was:" >&2
               printf '%s\n' "$out" | head -5 >&2 ;;
        esac
        echo "${setarch_cmd[*]}"
    else
        echo "test: $config: a trivial sanitized program fails, even with setarch -R:" >&2
        printf '%s\n' "$out" | head -10 >&2
    fi
    rm -rf "$dir"
}

for config in "${configs[@]}"; do
    echo
    echo "==================== $config: build ===================="
    start=$(date +%s)
    if ! bash scripts/build.sh "$config"; then
        result[$config]="FAILED"
        counts[$config]="(build failed)"
        summary
        echo "test: the $config build FAILED; stopping" >&2
        exit 1
    fi

    echo
    echo "==================== $config: ctest ===================="
    launcher=$(probe_launcher "$config")
    env_args=()
    mapfile -t env_args < <(sanitizer_env "$config")
    log="$build_root/$config/ctest.log"
    set +e
    # shellcheck disable=SC2086 # launcher and CTEST_ARGS are lists of words
    env "${env_args[@]}" $launcher "$ctest" --test-dir "$build_root/$config" \
        --output-on-failure -j "$ctest_jobs" --timeout "$ctest_timeout" \
        ${CTEST_ARGS:-} 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    seconds[$config]=$(($(date +%s) - start))

    # Count from ctest's per-test lines ("1/9 Test #1: name ....   Passed").
    passed=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* +Passed +' "$log" || true)
    skipped=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*(Skipped|Not Run \(Disabled\))' "$log" || true)
    ran=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" || true)
    failed=$((ran - passed - skipped))
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
        failed=1 # ctest itself failed (no tests found with errors, bad arguments, ...)
    fi
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
    total_skipped=$((total_skipped + skipped))
    counts[$config]="$passed passed, $failed failed, $skipped skipped${launcher:+, under setarch -R}"

    if [ "$status" -ne 0 ]; then
        result[$config]="FAILED"
        summary
        echo "test: the $config tests FAILED (log: $log); stopping" >&2
        exit 1
    fi
    result[$config]="ok"
done

summary
