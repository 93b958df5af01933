#!/usr/bin/env bash
# The short cluster chaos soak of the test suite (cluster.soak_short): five
# node processes under partitions, kills, stops and bad links for half a
# minute with a fixed seed, then the same with partitions by the fault
# layer (as root the first run uses network namespaces), and bad values.
# A run must exit 0 and its summary line say PASS with nothing lost,
# duplicated, stale or wrong, every heal reconverged and every cut side
# downed by itself. Under the sanitizers the processes run several times
# slower: the runs are shorter, under ThreadSanitizer a heal may take a few
# seconds more (the --converge-slack-ms given below), and memory is not
# judged (shadow memory and quarantine grow on their own).
#
#   soak_cluster_test.sh BIN [SANITIZER]
set -euo pipefail
bin=$1
sanitizer=${2:-}
seconds=30
extra=()
case "$sanitizer" in
    address) seconds=25 ;;
    thread) seconds=25; extra=(--converge-slack-ms 10000) ;;
esac

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

run() {
    set +e
    "$bin" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    set -e
    cat "$dir/out"
    if [ "$rc" = 2 ] && grep -q 'not available in this build' "$dir/err"; then
        echo "--cluster: not available in this build (refused with status 2, as documented)"
        exit 0
    fi
    [ "$rc" = 0 ] || { tail -30 "$dir/err"; echo "FAIL: $bin $* exited $rc"; exit 1; }
    local line
    line=$(grep '^soak-cluster: seed=' "$dir/out") || { echo "FAIL: no summary line"; exit 1; }
    for want in ' lost=0 ' ' dup=0 ' ' stale=0 ' ' wrong=0 ' ' PASS$'; do
        grep -Eq -- "$want" <<<"$line" || { echo "FAIL: summary without '$want'"; exit 1; }
    done
    # Every heal reconverged and every node cut off downed itself: n/n.
    for what in heals_converged minority_downed; do
        grep -Eq " $what=([0-9]+)/\\1 " <<<"$line" || { echo "FAIL: $what not all"; exit 1; }
    done
    grep -Eq ' partitions=[1-9]' <<<"$line" || { echo "FAIL: no partition was made"; exit 1; }
    grep -Eq ' answered=[1-9]' <<<"$line" || { echo "FAIL: nothing was answered"; exit 1; }
}

echo "== five nodes, chaos, fixed seed (namespaces as root)"
run --cluster 5 --chaos --seed 0x5eed --duration "$seconds" "${extra[@]}"
echo "== partitions by the fault layer"
run --cluster 5 --chaos --seed 0xc4a05 --duration "$seconds" --partitions fault "${extra[@]}"

for bad in "--cluster 6" "--cluster 2" "--partitions wire" "--stable-after-ms 50" "--stable-after-ms 999" \
           "--rss-growth-kb -1"; do
    set +e
    # shellcheck disable=SC2086
    "$bin" $bad >/dev/null 2>"$dir/err"
    rc=$?
    set -e
    [ "$rc" = 2 ] || { echo "FAIL: $bad exited $rc, expected 2"; exit 1; }
    grep -q "bad value for ${bad%% *}" "$dir/err" || { echo "FAIL: $bad: no clear error"; exit 1; }
done
echo "PASS"
