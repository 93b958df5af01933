#!/usr/bin/env bash
# One run of a peer's remote (two-process) workloads alone, wired exactly
# as the peer's own run.sh wires them (its run.sh runs them only after the
# suite and mem workloads, minutes each): bench/compare --remote calls it.
#   bench/remote_peers.sh erlang|caf OUT
# Appends a `# peer=...` header, `# run remote` and the RESULT lines to
# OUT. PEERS_DIR: the peer benchmarks (default: ../shared/peers beside the
# repository; read-only: builds go under $TMPDIR/peers-build). Installs
# the peer's Debian package when root and it is missing, as run.sh does.
# Every process it starts is stopped by pid, also on failure or interrupt.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PEERS_DIR="${PEERS_DIR:-$(dirname "$REPO")/shared/peers}"
peer="${1:?usage: remote_peers.sh erlang|caf OUT}"
OUT="${2:?usage: remote_peers.sh erlang|caf OUT}"
BUILD_DIR="${TMPDIR:-/tmp}/peers-build/$peer"
mkdir -p "$BUILD_DIR" "$(dirname "$OUT")"

A_PID= B_PID= EPMD_PID=
stop_all() {
  for p in $A_PID $B_PID $EPMD_PID; do kill "$p" 2>/dev/null || true; done
  for p in $A_PID $B_PID $EPMD_PID; do wait "$p" 2>/dev/null || true; done
  A_PID= B_PID= EPMD_PID=
}
trap stop_all EXIT INT TERM

install_if_root() {
  [ "$(id -u)" = 0 ] || { echo "needs: apt-get install -y $*" >&2; exit 1; }
  apt-get update -qq && apt-get install -y -qq "$@" >/dev/null
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

erlang_remote() {
  command -v erlc >/dev/null 2>&1 || install_if_root erlang-base erlang-dev
  if [ ! -f "$BUILD_DIR/bench.beam" ] || [ "$PEERS_DIR/erlang/bench.erl" -nt "$BUILD_DIR/bench.beam" ]; then
    erlc -o "$BUILD_DIR" "$PEERS_DIR/erlang/bench.erl"
  fi
  local dist=(-noshell -pa "$BUILD_DIR" -setcookie peers_bench -start_epmd false
              -kernel inet_dist_use_interface '{127,0,0,1}')
  local port b_out="$BUILD_DIR/remote-b.out" i
  port=$(free_port)
  export ERL_EPMD_PORT="$port"
  epmd -port "$port" -address 127.0.0.1 &
  EPMD_PID=$!
  for i in $(seq 100); do epmd -port "$port" -names >/dev/null 2>&1 && break; sleep 0.05; done
  : > "$b_out"
  (cd "$BUILD_DIR" && exec timeout 120 erl "${dist[@]}" -name b@127.0.0.1 -run bench main remote_server) > "$b_out" &
  B_PID=$!
  for i in $(seq 200); do grep -qs '^READY' "$b_out" && break; sleep 0.05; done
  grep -qs '^READY' "$b_out" || { echo "erlang node B did not start" >&2; cat "$b_out" >&2; exit 1; }
  echo "# peer=erlang erlang-base=$(dpkg-query -W -f='${Version}' erlang-base 2>/dev/null || echo '?') host_cpus=$(nproc) date=$(date -Is)" >> "$OUT"
  echo "# run remote" >> "$OUT"
  (cd "$BUILD_DIR" && exec timeout 120 erl "${dist[@]}" -name a@127.0.0.1 -run bench main remote b@127.0.0.1) >> "$OUT" &
  A_PID=$!
  wait "$A_PID"; A_PID=
  wait "$B_PID"; B_PID=
}

caf_remote() {
  dpkg-query -W -f='${Status}' libcaf-dev 2>/dev/null | grep -q "ok installed" || install_if_root libcaf-dev g++
  if [ ! -x "$BUILD_DIR/bench" ] || [ "$PEERS_DIR/caf/bench.cpp" -nt "$BUILD_DIR/bench" ]; then
    g++ -std=c++17 -O2 -Wall -o "$BUILD_DIR/bench" "$PEERS_DIR/caf/bench.cpp" -lcaf_io -lcaf_core -lpthread
  fi
  local b_out="$BUILD_DIR/remote-b.out" port= i
  : > "$b_out"
  timeout 120 "$BUILD_DIR/bench" remote_server > "$b_out" &
  B_PID=$!
  for i in $(seq 200); do
    port=$(awk '/^PORT /{print $2}' "$b_out" 2>/dev/null); [ -n "$port" ] && break; sleep 0.05
  done
  [ -n "$port" ] || { echo "caf remote server did not start" >&2; cat "$b_out" >&2; exit 1; }
  echo "# peer=caf libcaf-dev=$(dpkg-query -W -f='${Version}' libcaf-dev 2>/dev/null || echo '?') host_cpus=$(nproc) date=$(date -Is)" >> "$OUT"
  echo "# run remote" >> "$OUT"
  timeout 120 "$BUILD_DIR/bench" remote "$port" >> "$OUT" &
  A_PID=$!
  wait "$A_PID"; A_PID=
  wait "$B_PID"; B_PID=
}

case "$peer" in
  erlang) erlang_remote ;;
  caf) caf_remote ;;
  *) echo "usage: remote_peers.sh erlang|caf OUT" >&2; exit 64 ;;
esac
