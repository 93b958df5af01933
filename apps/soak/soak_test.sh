#!/usr/bin/env bash
# The short soak of the test suite: one run with a fixed seed, one with a
# random seed (printed, so a failure can be replayed), two short runs of
# one seed that must choose the same chaos actions, the --fail-alloc
# mode (run, or refused with status 2 in a build without the hook), the
# soak across processes (static seeds and etcd), a bad flag and bad
# values. Under ThreadSanitizer the runs are shorter, as it slows
# everything down several times over.
#
#   soak_test.sh BIN [SANITIZER] [valgrind]
set -euo pipefail
bin=$1
sanitizer=${2:-}
seconds=8
[ "$sanitizer" = thread ] && seconds=5
launcher=()
extra=()
if [ "${3:-}" = valgrind ]; then
    # One short run: valgrind runs the threads one at a time.
    launcher=(valgrind --quiet --error-exitcode=9 --leak-check=full --show-leak-kinds=all
              --errors-for-leak-kinds=all)
    extra=(--rss-pct 0 --grace-ms 30000)
    "${launcher[@]}" "$bin" --seed 0x5eed --duration 3 "${extra[@]}"
    echo "PASS"
    exit 0
fi

echo "== fixed seed"
"$bin" --seed 0x5eed --duration "$seconds"
echo "== random seed"
"$bin" --duration "$seconds"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "== the same seed replays the same chaos schedule"
for run in 1 2; do
    # Into a file first: a pipe into head would end the run with SIGPIPE
    # whenever head stops reading first, and pipefail would call that a
    # failure of the run.
    "$bin" --seed 0xabc --duration 2 --verbose 2>"$dir/verbose$run" >/dev/null ||
        { tail -20 "$dir/verbose$run"; echo "FAIL: the replay run $run failed"; exit 1; }
    grep -E '^soak: (spawn|stop) ' "$dir/verbose$run" | head -30 >"$dir/schedule$run" || true
done
# The actions come from one generator in order; how many fit in the run
# is the machine's doing (a loaded one fits fewer), so the runs are
# compared as far as both got.
n1=$(wc -l <"$dir/schedule1")
n2=$(wc -l <"$dir/schedule2")
n=$((n1 < n2 ? n1 : n2))
[ "$n" -ge 10 ] || { echo "FAIL: too few chaos actions ($n1 and $n2)"; exit 1; }
diff <(head -n "$n" "$dir/schedule1") <(head -n "$n" "$dir/schedule2") ||
    { echo "FAIL: seed 0xabc did not replay"; exit 1; }
echo "the first $n spawns and stops are the same in both runs"

echo "== allocation failures"
set +e
"$bin" --seed 0x5eed --duration 3 --fail-alloc 0.00002 >"$dir/out" 2>"$dir/err"
rc=$?
set -e
cat "$dir/out"
if [ "$rc" = 2 ] && grep -q 'not available in this build' "$dir/err"; then
    echo "--fail-alloc: not available in this build (refused with status 2, as documented)"
elif [ "$rc" != 0 ]; then
    tail -20 "$dir/err"
    echo "FAIL: --fail-alloc exited $rc"
    exit 1
fi

echo "== across processes: static seeds, then etcd"
cluster_run() {
    set +e
    "$bin" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    set -e
    cat "$dir/out"
    if [ "$rc" = 2 ] && grep -q 'not available in this build' "$dir/err"; then
        echo "--nodes: not available in this build (refused with status 2, as documented)"
        return 0
    fi
    [ "$rc" = 0 ] || { tail -30 "$dir/err"; echo "FAIL: $bin $* exited $rc"; exit 1; }
}
cluster_run --nodes 3 --duration "$seconds"
if command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ]; then
    cluster_run --nodes 3 --provider etcd --duration "$seconds"
else
    echo "--provider etcd: skipped, no etcd binary (Debian etcd-server)"
fi

set +e
"$bin" --no-such-flag >/dev/null 2>"$dir/err"
rc=$?
set -e
[ "$rc" = 2 ] || { echo "FAIL: bad flag exited $rc, expected 2"; exit 1; }
grep -q '^usage: actorc-soak' "$dir/err" || { echo "FAIL: no usage on a bad flag"; exit 1; }
# Bad values are usage errors that name the option, not a first part
# read and the rest ignored.
for bad in "--duration 5x" "--duration nan" "--seed -1" "--seed 0x" "--seed 12ab" \
           "--workers +2" "--grace-ms 1.5" "--nodes 6" "--fail-alloc 2"; do
    set +e
    # shellcheck disable=SC2086
    "$bin" $bad >/dev/null 2>"$dir/err"
    rc=$?
    set -e
    [ "$rc" = 2 ] || { echo "FAIL: $bad exited $rc, expected 2"; exit 1; }
    grep -q "bad value for ${bad%% *}" "$dir/err" || { echo "FAIL: $bad: no clear error"; exit 1; }
done
echo "PASS"
