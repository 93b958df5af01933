#!/usr/bin/env bash
# actorc-hedge --nodes 3: the replicas in three actorc-node processes,
# the cluster routers in front. The four rows must be there with every
# request answered, scatter/gather must ask all three replicas and
# round-robin one, and no actorc-node may be left running afterwards.
set -euo pipefail
bin=$1
node=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out="$dir/out.txt"
"$bin" --nodes 3 --node-program "$node" --requests 1000 --concurrency 8 --svg "$dir/cdf.svg" \
    --quiet >"$out" || { cat "$out"; echo "FAIL: actorc-hedge --nodes 3 failed"; exit 1; }
cat "$out"
col() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$out"; }
for s in round-robin random scatter-gather hedged-10ms; do
    grep -q "^$s " "$out" || { echo "FAIL: no row for $s"; exit 1; }
    [ "$(col "$s" 8)" = 0 ] && [ "$(col "$s" 9)" = 0 ] ||
        { echo "FAIL: $s had timeouts or errors"; exit 1; }
done
awk -v a="$(col scatter-gather 10)" 'BEGIN { exit !(a + 0 == 3) }' ||
    { echo "FAIL: scatter-gather made $(col scatter-gather 10) calls per request, not 3"; exit 1; }
awk -v a="$(col round-robin 10)" 'BEGIN { exit !(a + 0 == 1) }' ||
    { echo "FAIL: round-robin made $(col round-robin 10) calls per request, not 1"; exit 1; }
# A dead replica node with breakers: once its breaker opens, round-robin
# stops sending it a third of the load and scatter/gather stops asking it.
# Real time on a shared machine: a miss is measured once more.
run_breakers() {
    "$bin" --nodes 3 --node-program "$node" --requests 1000 --concurrency 16 --dead-replica 1 \
        --timeout-ms 100 --breakers --svg "$dir/cb.svg" --quiet >"$dir/cb.txt"
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
# The children were ended: no process of this node program is left.
sleep 0.5
if pgrep -f -- "^$node " >/dev/null 2>&1; then
    pgrep -af -- "^$node "
    echo "FAIL: actorc-node processes outlived actorc-hedge"
    exit 1
fi
echo "PASS"
