#!/usr/bin/env bash
# Build and run actorc's benchmarks, like the peers' run.sh.
#   RUNS=5 bench/run.sh               # 5 runs of (suite + mem + remote + cluster + fault + members), then aggregate
#   SCALE=1 bench/run.sh              # also the scale and partition runs (64 processes,
#                                     # 1,000 etcd members, namespaces): minutes each, no
#                                     # peer counterpart, so not in every compare round
#   OUT=file RUNS=1 NO_AGGREGATE=1 bench/run.sh   # append raw output to file
# BUILD_DIR: the CMake build directory (default: build/release at the
# repository root, which `make build` shares). One without a cache yet is
# configured as `make build` does (RelWithDebInfo: -O2 -g), less tests and
# examples, which the benchmark does not need.
# PEERS_DIR: the peer benchmarks (default: ../shared/peers beside the
# repository), for aggregate.py.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
PEERS_DIR="${PEERS_DIR:-$(dirname "$REPO")/shared/peers}"
BUILD_DIR="${BUILD_DIR:-$REPO/build/release}"
RUNS="${RUNS:-5}"
OUT="${OUT:-${TMPDIR:-/tmp}/peers-results/actorc-$(date +%Y%m%d-%H%M%S).txt}"
BENCH="$BUILD_DIR/bench/actorc-bench"
mkdir -p "$(dirname "$OUT")"

# Build (incremental: a no-op when up to date). Build output goes to stderr.
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S "$REPO" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACTORC_SANITIZE= \
    -DACTORC_BUILD_BENCH=ON -DACTORC_BUILD_TESTS=OFF -DACTORC_BUILD_EXAMPLES=OFF \
    -DACTORC_BUILD_APPS=OFF >&2
fi
cmake --build "$BUILD_DIR" --target actorc-bench -j "$(nproc)" >&2
# The remote benchmarks exist only in a build with remoting.
REMOTE_BENCH=
if [ -d "$BUILD_DIR/bench/CMakeFiles/actorc-bench-remote.dir" ]; then
  cmake --build "$BUILD_DIR" --target actorc-bench-remote -j "$(nproc)" >&2
  REMOTE_BENCH="$BUILD_DIR/bench/actorc-bench-remote"
else
  echo "run.sh: $BUILD_DIR has no remoting: no remote benchmarks" >&2
fi
CLUSTER_BENCH=
if [ -d "$BUILD_DIR/bench/CMakeFiles/actorc-bench-cluster.dir" ]; then
  cmake --build "$BUILD_DIR" --target actorc-bench-cluster -j "$(nproc)" >&2
  CLUSTER_BENCH="$BUILD_DIR/bench/actorc-bench-cluster"
fi
FAULT_BENCH=
if [ -d "$BUILD_DIR/bench/CMakeFiles/actorc-bench-fault.dir" ]; then
  cmake --build "$BUILD_DIR" --target actorc-bench-fault -j "$(nproc)" >&2
  FAULT_BENCH="$BUILD_DIR/bench/actorc-bench-fault"
fi

# The membership benchmark exists only in a build with cluster membership.
MEMBERS_BENCH=
if [ -d "$BUILD_DIR/bench/CMakeFiles/actorc-bench-members.dir" ]; then
  cmake --build "$BUILD_DIR" --target actorc-bench-members -j "$(nproc)" >&2
  MEMBERS_BENCH="$BUILD_DIR/bench/actorc-bench-members"
else
  echo "run.sh: $BUILD_DIR has no cluster membership: no membership benchmark" >&2
fi

# The scale benchmarks: with cluster membership, and with the etcd client.
SCALE_BENCH=
if [ -d "$BUILD_DIR/bench/CMakeFiles/actorc-bench-scale.dir" ]; then
  cmake --build "$BUILD_DIR" --target actorc-bench-scale -j "$(nproc)" >&2
  SCALE_BENCH="$BUILD_DIR/bench/actorc-bench-scale"
fi
MEMBERS_LOAD=
if [ -d "$BUILD_DIR/bench/CMakeFiles/actorc-members-load.dir" ]; then
  cmake --build "$BUILD_DIR" --target actorc-members-load -j "$(nproc)" >&2
  MEMBERS_LOAD="$BUILD_DIR/bench/actorc-members-load"
fi
# The partition benchmark (network namespaces; a skip line without root).
PARTITION_BENCH=
if [ -d "$BUILD_DIR/bench/CMakeFiles/actorc-bench-partition.dir" ]; then
  cmake --build "$BUILD_DIR" --target actorc-bench-partition -j "$(nproc)" >&2
  PARTITION_BENCH="$BUILD_DIR/bench/actorc-bench-partition"
fi

commit="$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo '?')"
echo "# peer=actorc version=$("$BENCH" version)+$commit cc=$("$BENCH" compiler) host_cpus=$(nproc) date=$(date -Is)" >> "$OUT"
for r in $(seq 1 "$RUNS"); do
  echo "# run $r suite" >> "$OUT"
  timeout 600 "$BENCH" suite >> "$OUT"
  echo "# run $r mem" >> "$OUT"
  timeout 300 "$BENCH" mem >> "$OUT"
  if [ -n "$REMOTE_BENCH" ]; then
    echo "# run $r remote" >> "$OUT"
    timeout 900 "$REMOTE_BENCH" >> "$OUT"
  fi
  if [ -n "$CLUSTER_BENCH" ]; then
    echo "# run $r cluster" >> "$OUT"
    timeout 600 "$CLUSTER_BENCH" >> "$OUT"
  fi
  if [ -n "$FAULT_BENCH" ]; then
    echo "# run $r fault" >> "$OUT"
    timeout 600 "$FAULT_BENCH" >> "$OUT"
  fi
  if [ -n "$MEMBERS_BENCH" ]; then
    echo "# run $r members" >> "$OUT"
    timeout 900 "$MEMBERS_BENCH" >> "$OUT"
  fi
  if [ -n "${SCALE:-}" ] && [ -n "$SCALE_BENCH" ]; then
    echo "# run $r scale" >> "$OUT"
    timeout 600 "$SCALE_BENCH" >> "$OUT"
  fi
  if [ -n "${SCALE:-}" ] && [ -n "$MEMBERS_LOAD" ]; then
    echo "# run $r members_load" >> "$OUT"
    timeout 1600 "$MEMBERS_LOAD" >> "$OUT"
  fi
  if [ -n "${SCALE:-}" ] && [ -n "$PARTITION_BENCH" ]; then
    echo "# run $r partition" >> "$OUT"
    timeout 600 "$PARTITION_BENCH" >> "$OUT"
  fi
done
if [ -z "${NO_AGGREGATE:-}" ]; then
  python3 "$PEERS_DIR/aggregate.py" "$OUT"
fi
echo "raw output: $OUT" >&2
