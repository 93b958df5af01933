#!/usr/bin/env bash
# actorc-hedge --nodes 3: the replicas in three actorc-node processes,
# the cluster routers in front. Its rows must be the local demo's, every
# request answered, scatter/gather must ask all three replicas and
# round-robin one; with a dead replica node, a strategy that times out
# requests must show it in its percentiles. Each run is bounded in time
# and ended by its pid with its children (smoke_lib.sh), also when the
# test fails, and no actorc-node it started may outlive it.
set -euo pipefail
bin=$1
node=$2
# shellcheck source=smoke_lib.sh
. "$(dirname "$0")/smoke_lib.sh"
dir=$(mktemp -d)
trap 'end_hedge_groups; rm -rf "$dir"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
# Under a sanitizer a run takes several times as long as in a release
# build; this bounds a run that hangs, not one that is slow.
bound=200
out="$dir/out.txt"
# The rows the local demo prints, from a short run of it.
run_bounded "$bound" "$dir/local.txt" "$bin" --requests 200 --concurrency 8 \
    --svg "$dir/local.svg" --quiet || { cat "$dir/local.txt"; echo "FAIL: the local demo failed"; exit 1; }
table_rows "$dir/local.txt" >"$dir/local.rows"
grep -qx hedged-p95 "$dir/local.rows" || { cat "$dir/local.txt"; echo "FAIL: no hedged-p95 row locally"; exit 1; }
run_bounded "$bound" "$out" "$bin" --nodes 3 --node-program "$node" --requests 1000 \
    --concurrency 8 --svg "$dir/cdf.svg" --quiet ||
    { cat "$out"; echo "FAIL: actorc-hedge --nodes 3 failed"; exit 1; }
cat "$out"
table_rows "$out" >"$dir/nodes.rows"
diff -u "$dir/local.rows" "$dir/nodes.rows" ||
    { echo "FAIL: --nodes 3 does not print the local demo's rows (- local, + --nodes 3)"; exit 1; }
col() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$out"; }
while read -r s; do
    [ "$(col "$s" 8)" = 0 ] && [ "$(col "$s" 9)" = 0 ] ||
        { echo "FAIL: $s had timeouts or errors"; exit 1; }
done <"$dir/nodes.rows"
awk -v a="$(col scatter-gather 10)" 'BEGIN { exit !(a + 0 == 3) }' ||
    { echo "FAIL: scatter-gather made $(col scatter-gather 10) calls per request, not 3"; exit 1; }
awk -v a="$(col round-robin 10)" 'BEGIN { exit !(a + 0 == 1) }' ||
    { echo "FAIL: round-robin made $(col round-robin 10) calls per request, not 1"; exit 1; }
# The client's link to node 1 slow (the node's fault layer): every
# strategy still answers every request (the link adds 30-50 ms a round
# trip, well inside the 1 s deadline); bad link knobs are refused.
run_bounded "$bound" "$dir/slow.txt" "$bin" --nodes 3 --node-program "$node" --requests 300 \
    --concurrency 8 --slow-link "1:20ms±5ms" --lossy-link 2:0% --svg "$dir/slow.svg" --quiet ||
    { cat "$dir/slow.txt"; echo "FAIL: actorc-hedge --slow-link failed"; exit 1; }
cat "$dir/slow.txt"
grep -q "link to node 1:20ms±5ms" "$dir/slow.txt" || { echo "FAIL: the slow link is not said"; exit 1; }
while read -r s; do
    [ "$(awk -v s="$s" '$1 == s && NF >= 10 { print $8 + $9 }' "$dir/slow.txt")" = 0 ] ||
        { echo "FAIL: $s had timeouts or errors behind a slow link"; exit 1; }
done <"$dir/nodes.rows"
for bad in "--slow-link 4:20ms" "--slow-link 1:fast" "--lossy-link 1:200%" "--slow-link 20ms"; do
    # shellcheck disable=SC2086 # the knob and its value are two words
    if "$bin" --nodes 3 --node-program "$node" $bad --quiet >"$dir/bad.txt" 2>&1; then
        echo "FAIL: $bad was taken"; exit 1
    fi
    grep -q "usage: actorc-hedge" "$dir/bad.txt" || { cat "$dir/bad.txt"; echo "FAIL: $bad: no usage"; exit 1; }
done
# A dead replica node with breakers: once its breaker opens, round-robin
# stops sending it a third of the load and scatter/gather stops asking it.
# Real time on a shared machine: a miss is measured once more.
run_breakers() {
    run_bounded "$bound" "$dir/cb.txt" "$bin" --nodes 3 --node-program "$node" --requests 1000 \
        --concurrency 16 --dead-replica 1 --timeout-ms 100 --breakers --svg "$dir/cb.svg" --quiet ||
        { cat "$dir/cb.txt"; echo "FAIL: actorc-hedge --nodes 3 --dead-replica 1 failed"; exit 1; }
    cat "$dir/cb.txt"
}
cb() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$dir/cb.txt"; }
failed() { echo $(( $(cb "$1" 8) + $(cb "$1" 9) )); }
breakers_ok() {
    echo "round-robin failures: $(failed round-robin) plain, $(failed round-robin+cb) with breakers"
    [ "$(failed round-robin+cb)" -lt $(( $(failed round-robin) / 2 )) ] &&
        awk -v a="$(cb scatter-gather+cb 10)" 'BEGIN { exit !(a + 0 < 2.95) }'
}
run_breakers
if ! breakers_ok; then
    run_breakers
    breakers_ok || { echo "FAIL: breakers did not route around the dead replica node"; exit 1; }
fi
# A third of round-robin's requests time out at 100 ms: its p99 is the
# deadline, not the p99 of the requests that were answered. So for every
# strategy that timed out more than 1 %.
p99_counts_failures "$dir/cb.txt" 1000 100 ||
    { echo "FAIL: the percentiles leave out the requests that timed out"; exit 1; }
echo "PASS"
