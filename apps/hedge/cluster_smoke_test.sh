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
# The children were ended: no process of this node program is left.
sleep 0.5
if pgrep -f -- "^$node " >/dev/null 2>&1; then
    pgrep -af -- "^$node "
    echo "FAIL: actorc-node processes outlived actorc-hedge"
    exit 1
fi
echo "PASS"
