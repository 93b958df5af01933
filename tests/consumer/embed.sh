#!/usr/bin/env bash
# actorc inside another project (add_subdirectory): configure the project
# in embed/, which checks that actorc turned on none of its own tests,
# benches, examples, apps or -Werror, build it, and run what it built
# against actorc::actorc, actorc::actorc_static and, when this build has
# it, actorc::actorc_http.
#
#   embed.sh BUILD_DIR SOURCE_DIR [SANITIZE] [C_COMPILER] [CMAKE] [HTTP]
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
consumer_init embed_consumer "$@"

out="$tmp/embed"
step "configuring and building a project that embeds actorc"
quiet "$cmake" -S "$here/embed" -B "$out" -DACTORC_SOURCE_DIR="$src" -DCMAKE_C_COMPILER="$cc" \
    -DACTORC_WITH_HTTP="$http"
quiet "$cmake" --build "$out" -j 2

check_output "embedded, shared" "$expect_consumer" "$out/embed_shared"
check_output "embedded, static" "$expect_consumer" "$out/embed_static"
if [ "$http" = ON ]; then
    [ -x "$out/embed_serve" ] || fail "actorc::actorc_http is missing from the embedding project"
    check_output "embedded, http" "$expect_serve" "$out/embed_serve"
fi

step "ok"
