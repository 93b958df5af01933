#!/usr/bin/env bash
# Make sure the Debian packages given as arguments are installed.
#
#   scripts/deps.sh PACKAGE...
#
# As root, installs the missing ones with apt-get. Otherwise prints the
# command that would install them and exits 1.
set -euo pipefail

if [ $# -eq 0 ]; then
    exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "deps: no dpkg-query: not a Debian-based system; make sure these are installed: $*" >&2
    exit 0
fi

missing=()
for pkg in "$@"; do
    status=$(dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null || true)
    case "$status" in
        *"ok installed"*) ;;
        *) missing+=("$pkg") ;;
    esac
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "deps: the needed Debian packages are installed"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    echo "deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
    echo "deps: installed ${missing[*]}"
else
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    echo "deps: install them with:" >&2
    echo "sudo apt-get install -y ${missing[*]}" >&2
    exit 1
fi
