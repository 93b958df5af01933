#!/usr/bin/env bash
# Configure and build one configuration of actorc in build/<config>.
#
#   scripts/build.sh CONFIG
#
# CONFIG is one of:
#   release  RelWithDebInfo (-O2 -g), everything (tests, benches, examples)
#   asan     ASan + UBSan (-O1 -g, assertions on), no benches
#   tsan     TSan (-O1 -g, assertions on), no benches
#   fuzz     the libFuzzer targets only (fuzz_wire, fuzz_node), with clang
#            (FUZZ_CC, default clang), ASan + UBSan and coverage for the
#            fuzzer in the whole library (-fsanitize=fuzzer-no-link)
#
# Environment: BUILD_ROOT (default: build), JOBS (default: nproc),
# CMAKE (default: cmake), EXTRA_CMAKE_ARGS (appended to the configure line).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

config=${1:?usage: scripts/build.sh release|asan|tsan|fuzz}
build_root=${BUILD_ROOT:-build}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
cmake=${CMAKE:-cmake}
dir="$build_root/$config"
targets=()

case "$config" in
    release)
        args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DACTORC_SANITIZE=
              -DACTORC_BUILD_BENCH=ON -DACTORC_BUILD_EXAMPLES=ON -DACTORC_BUILD_APPS=ON) ;;
    asan)
        args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" -DACTORC_SANITIZE=address
              -DACTORC_BUILD_BENCH=OFF -DACTORC_BUILD_EXAMPLES=ON -DACTORC_BUILD_APPS=ON) ;;
    tsan)
        args=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" -DACTORC_SANITIZE=thread
              -DACTORC_BUILD_BENCH=OFF -DACTORC_BUILD_EXAMPLES=ON -DACTORC_BUILD_APPS=ON) ;;
    fuzz)
        args=(-DCMAKE_C_COMPILER="${FUZZ_CC:-clang}" -DCMAKE_BUILD_TYPE=Debug
              "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link
              -DACTORC_SANITIZE=address
              -DACTORC_BUILD_BENCH=OFF -DACTORC_BUILD_EXAMPLES=OFF -DACTORC_BUILD_APPS=OFF)
        targets=(--target fuzz_wire fuzz_node) ;;
    *)
        echo "build: unknown configuration '$config' (release, asan, tsan, fuzz)" >&2
        exit 2 ;;
esac

# shellcheck disable=SC2086 # EXTRA_CMAKE_ARGS is a list of words
"$cmake" -S . -B "$dir" -DACTORC_BUILD_TESTS=ON -DACTORC_WITH_HTTP=ON -DACTORC_WITH_REMOTE=ON -DACTORC_WITH_ETCD=ON -DACTORC_WITH_DNS=ON -DACTORC_WITH_CLUSTER=ON "${args[@]}" ${EXTRA_CMAKE_ARGS:-}
"$cmake" --build "$dir" -j "$jobs" "${targets[@]}"
