#!/usr/bin/env bash
# A short actorc-hedge run on a tail-heavy setting: the table and the SVG
# must exist, scatter/gather's p99 must beat round-robin's, and the hedged
# routers' rows must be there, the adaptive one cutting the tail for a
# fraction of scatter/gather's calls. With a dead replica, a strategy that
# times out requests must show it in its percentiles. Each run is bounded
# in time and ended by its pid (smoke_lib.sh), also when the test fails.
set -euo pipefail
bin=$1
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
run_tail() {
    # 5 % of stalls: the adaptive delay's percentile must sit below them.
    run_bounded "$bound" "$out" "$bin" --requests 3000 --concurrency 16 --tail 5%:50ms \
        --median-ms 1 --svg "$dir/cdf.svg" --hedge-pct 90 --quiet ||
        { cat "$out"; echo "FAIL: actorc-hedge failed"; exit 1; }
    cat "$out"
}
run_tail
grep -q '^strategy .*p99' "$out" || { echo "FAIL: no table"; exit 1; }
grep -q '<svg' "$dir/cdf.svg" || { echo "FAIL: no SVG"; exit 1; }
grep -q "latency CDF written to $dir/cdf.svg" "$out" || { echo "FAIL: SVG path not printed"; exit 1; }
for s in round-robin random smallest-mailbox scatter-gather hedged-10ms hedged-p90; do
    grep -q "^$s " "$out" || { echo "FAIL: no row for $s"; exit 1; }
    grep -q ">$s<" "$dir/cdf.svg" || { echo "FAIL: no legend line for $s"; exit 1; }
done
grep -q '^  hedged-p90: *p99 .*x scatter-gather.s .* calls/req' "$out" ||
    { echo "FAIL: the hedged routers' price is not printed"; exit 1; }
# The model's own bound beside it: a hedge at p90 of these draws, and the
# hedge 1.5x would take.
grep -q "^the model's own bound (no runtime cost): scatter-gather p99 .*ms; a hedge at p90 .* calls/req" \
    "$out" || { echo "FAIL: the model's bound is not printed"; exit 1; }
grep -q '^  within 1.5x of scatter-gather on this model: a hedge at p[0-9]* ' "$out" ||
    { echo "FAIL: the 1.5x hedge is not printed"; exit 1; }
# Every legend line inside the picture: at most 7 px a character.
awk -v w="$(sed -n "s/.*<svg [^>]*width='\([0-9]*\)'.*/\1/p" "$dir/cdf.svg")" '
    match($0, /<text x=.[0-9.]+. y=.[0-9.]+. font-size=.1[13].[^>]*>[^<]*</) {
        line = substr($0, RSTART, RLENGTH)
        x = line; sub(/^<text x=./, "", x); sub(/[^0-9.].*/, "", x)
        t = line; sub(/^[^>]*>/, "", t); sub(/<$/, "", t)
        if (x + 7 * length(t) > w) { print "FAIL: legend line \"" t "\" leaves the picture"; bad = 1 }
    }
    END { exit bad }' "$dir/cdf.svg" || exit 1
p99() { awk -v s="$1" '$1 == s { v = $4; sub(/ms$/, "", v); print v }' "$out"; }
tail_beaten() {
    rr=$(p99 round-robin)
    sg=$(p99 scatter-gather)
    echo "p99: round-robin ${rr} ms, scatter-gather ${sg} ms"
    awk -v a="$sg" -v b="$rr" 'BEGIN { exit !(a + 0 < b + 0) }'
}
# Real time on a shared machine: a stall of the whole machine during the
# scatter run can hide the effect once, so a miss is measured again.
if ! tail_beaten; then
    echo "scatter-gather did not beat round-robin; measuring once more"
    run_tail
    tail_beaten ||
        { echo "FAIL: scatter-gather p99 ${sg} ms is not below round-robin's ${rr} ms"; exit 1; }
fi
col_of() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$out"; }
hedge_ok() {
    echo "hedged-p90: p99 $(p99 hedged-p90) ms for $(col_of hedged-p90 10) calls/req"
    awk -v a="$(p99 hedged-p90)" -v b="$(p99 round-robin)" -v c="$(col_of hedged-p90 10)" \
        'BEGIN { exit !(a + 0 < b + 0 && c + 0 < 1.5) }'
}
if ! hedge_ok; then
    echo "hedged-p90 did not beat round-robin for under 1.5 calls/req; measuring once more"
    run_tail
    hedge_ok || { echo "FAIL: hedged-p90 did not cut the tail cheaply"; exit 1; }
fi
# A dead replica with breakers on: once its breaker opens, round-robin
# stops sending it a third of the load and scatter/gather stops asking it.
# Real time again: a machine stalled past the 100 ms timeouts can time out
# live replicas too, so a miss is measured again, as above.
run_breakers() {
    run_bounded "$bound" "$dir/cb.txt" "$bin" --requests 3000 --concurrency 32 --dead-replica 1 \
        --timeout-ms 100 --breakers --svg "$dir/cb.svg" --quiet ||
        { cat "$dir/cb.txt"; echo "FAIL: actorc-hedge --dead-replica 1 failed"; exit 1; }
    cat "$dir/cb.txt"
}
col() { awk -v s="$1" -v c="$2" '$1 == s { print $c }' "$dir/cb.txt"; }
failed() { echo $(( $(col "$1" 8) + $(col "$1" 9) )); }
breakers_ok() {
    echo "round-robin failures: $(failed round-robin) plain, $(failed round-robin+cb) with breakers"
    echo "scatter-gather calls/req: $(col scatter-gather 10) plain, $(col scatter-gather+cb 10) with breakers"
    [ "$(failed round-robin+cb)" -lt $(( $(failed round-robin) / 2 )) ] &&
        awk -v a="$(col scatter-gather+cb 10)" 'BEGIN { exit !(a + 0 < 2.7) }'
}
run_breakers
if ! breakers_ok; then
    echo "the breakers did not cut failures and calls; measuring once more"
    run_breakers
    breakers_ok || { echo "FAIL: breakers did not cut round-robin's failures or scatter-gather's calls per request"; exit 1; }
fi
# A third of round-robin's requests time out at 100 ms: its p99 is the
# deadline, not the p99 of the requests that were answered. So for every
# strategy that timed out more than 1 %.
p99_counts_failures "$dir/cb.txt" 3000 100 ||
    { echo "FAIL: the percentiles leave out the requests that timed out"; exit 1; }
grep -q '^p50 .. max count every request, a failed one at the time its error came' "$dir/cb.txt" ||
    { echo "FAIL: the table's legend does not say how failed requests count"; exit 1; }
grep -q "a failed one at the time its error came" "$dir/cb.svg" ||
    { echo "FAIL: the SVG does not say how failed requests count"; exit 1; }
# A bad flag prints usage and exits with status 2.
set +e
run_bounded 30 /dev/null bash -c 'exec "$0" --no-such-flag 2>"$1"' "$bin" "$dir/err"
rc=$?
set -e
[ "$rc" = 2 ] || { echo "FAIL: bad flag exited $rc, expected 2"; exit 1; }
grep -q '^usage: actorc-hedge' "$dir/err" || { echo "FAIL: no usage on a bad flag"; exit 1; }
echo "PASS"
