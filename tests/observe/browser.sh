#!/usr/bin/env bash
# The observer page in a real browser: serve the demo system under load
# (observe_server), load the page in headless Chromium twice and check
# what a person would see — the routers and their routees, the open
# breaker marked, counts that moved between the two loads — then save a
# screenshot, which the test run keeps.
#
#   browser.sh SERVER CHECKER SCREENSHOT
#
# Without chromium (the Debian package chromium, which `make deps`
# installs) it fails and says so, as the suite's tests that need a
# program do, or exits 77 (skipped) with ACTORC_TEST_SKIP_MISSING=1.
# Every process it starts — the server,
# each browser with its child processes, in a process group of its own — is
# ended by its id when it exits, whatever the outcome.
set -euo pipefail

server=$1 checker=$2 screenshot=$3
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    if [ "${ACTORC_TEST_SKIP_MISSING:-0}" = 1 ]; then
        echo "browser: no chromium (Debian package chromium): skipped"
        exit 77
    fi
    echo "browser: no chromium: install the Debian package chromium (make deps)" >&2
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/actorc-browser.XXXXXX")
server_pid=
browser_pid=

# End a process group by its leader's id: TERM, then KILL after 2 s.
end_group() {
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -TERM -- "-$pid" 2>/dev/null || return 0
    for _ in $(seq 20); do
        kill -0 -- "-$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
}

cleanup() {
    end_group "$browser_pid"
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    [ -n "$server_pid" ] && wait "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Run the browser headless on `url` with more arguments, in a group of
# its own, for at most 60 s; its output into $work/$name.out.
browse() {
    local name=$1 url=$2
    shift 2
    setsid "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --no-first-run --no-default-browser-check --disable-extensions \
        --disable-background-networking --disable-sync --metrics-recording-only \
        --user-data-dir="$work/profile-$name" "$@" "$url" \
        >"$work/$name.out" 2>"$work/$name.log" &
    browser_pid=$!
    local waited=0
    while kill -0 "$browser_pid" 2>/dev/null; do
        if [ "$waited" -ge 600 ]; then
            echo "browser: chromium ($name) did not finish within 60 s" >&2
            tail -20 "$work/$name.log" >&2 || true
            end_group "$browser_pid"
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    local status=0
    wait "$browser_pid" || status=$?
    end_group "$browser_pid" # child processes it may have left
    browser_pid=
    if [ "$status" -ne 0 ]; then
        echo "browser: chromium ($name) exited with $status" >&2
        tail -20 "$work/$name.log" >&2 || true
        return 1
    fi
}

"$server" "$work/port" 120 >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 300); do
    [ -s "$work/port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
done
port=$(cat "$work/port")
url="http://127.0.0.1:$port/?interval=250"
echo "browser: the observer of the demo system at $url"

# Give the load a moment, so that the breaker has opened and every
# router has answered.
sleep 1
browse first "$url" --virtual-time-budget=3000 --dump-dom
sleep 1.5
browse second "$url" --virtual-time-budget=3000 --dump-dom
python3 "$checker" "$work/first.out" "$work/second.out"

mkdir -p "$(dirname "$screenshot")"
browse shot "$url" --virtual-time-budget=3000 --hide-scrollbars --window-size=1440,1400 \
    --screenshot="$screenshot"
if [ ! -s "$screenshot" ] || [ "$(head -c 8 "$screenshot" | od -An -tx1 | tr -d ' ')" != "89504e470d0a1a0a" ]; then
    echo "browser: no PNG screenshot at $screenshot" >&2
    exit 1
fi
echo "browser: screenshot kept at $screenshot ($(stat -c %s "$screenshot") bytes)"
