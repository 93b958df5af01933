# What the actorc-hedge smoke tests share (sourced, not run).
#
# Each actorc-hedge a test starts runs in a session of its own (setsid),
# so its pid is also the id of its process group, which the actorc-node
# children of --nodes join. A run is ended by that id when it outlives its
# bound, and every group still alive when the test exits (a failure, an
# interrupt) is ended the same way: SIGTERM, then SIGKILL two seconds
# later.

hedge_groups=()

# end_group PID: end process group PID, politely first.
end_group() {
    kill -TERM -- "-$1" 2>/dev/null || return 0
    local i
    for i in $(seq 20); do
        kill -0 -- "-$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL -- "-$1" 2>/dev/null || true
}

end_hedge_groups() {
    local pid
    for pid in ${hedge_groups[@]+"${hedge_groups[@]}"}; do
        end_group "$pid"
    done
    hedge_groups=()
}

# forget_group PID: a group that has ended, not to be signalled again
# (its id may be taken by another process later).
forget_group() {
    local pid kept=()
    for pid in ${hedge_groups[@]+"${hedge_groups[@]}"}; do
        [ "$pid" = "$1" ] || kept+=("$pid")
    done
    hedge_groups=(${kept[@]+"${kept[@]}"})
}

# run_bounded SECONDS OUT COMMAND...: COMMAND's stdout into OUT, its exit
# status returned (124 when it ran past SECONDS and was ended). Fails the
# test if COMMAND left a process of its group behind.
run_bounded() {
    local secs=$1 out=$2
    shift 2
    setsid "$@" >"$out" &
    local pid=$! ticks=0 rc=0
    hedge_groups+=("$pid")
    while kill -0 "$pid" 2>/dev/null && [ "$ticks" -lt $((secs * 10)) ]; do
        sleep 0.1
        ticks=$((ticks + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "$1 still running after $secs s: ending it" >&2
        end_group "$pid"
        rc=124
    fi
    local status=0
    wait "$pid" || status=$?
    [ "$rc" = 124 ] || rc=$status
    if pgrep -g "$pid" >/dev/null 2>&1; then
        pgrep -a -g "$pid" >&2 || true
        echo "FAIL: processes outlived $1 (pid $pid)" >&2
        end_group "$pid"
        exit 1
    fi
    forget_group "$pid"
    return "$rc"
}

# A row of the table: ten columns, the last calls per request.
is_row='NF == 10 && $10 ~ /^[0-9]+[.][0-9]+$/'

# The rows of the table in FILE: their strategies' names, one a line.
table_rows() {
    awk "/^strategy .*p99/ { t = 1; next } t && $is_row { print \$1; next } t { exit }" "$1"
}

# p99_counts_failures FILE REQUESTS TIMEOUT_MS: every strategy in FILE
# that timed out more than 1 % of its REQUESTS must have a p99 at or past
# the deadline: its percentiles count the failed requests, at the time
# they failed.
p99_counts_failures() {
    awk -v n="$2" -v t="$3" '
        /^strategy .*p99/ { table = 1; next }
        table && !('"$is_row"') { exit }
        table {
            p99 = $4; sub(/ms$/, "", p99)
            if ($8 > 0.01 * n && (p99 == "-" || p99 + 0 < t)) {
                printf "FAIL: %s timed out %d of %d requests, yet its p99 is %s\n", $1, $8, n, $4
                bad = 1
            }
        }
        END { exit bad }' "$1"
}
