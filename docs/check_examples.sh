#!/usr/bin/env bash
# Check that the C in the docs is the C that CI builds.
#
#   docs/check_examples.sh [PAGE.md ...]     (default: every docs/*.md)
#
# Every ```c block in a page must start with a line
#     // file: docs/examples/NAME.c
# and be that file, byte for byte, first line included: the page quotes the
# file whole, and docs/CMakeLists.txt builds and runs the file. A block
# without that line, a file that does not exist, or a difference fails the
# check (with a diff). Exit status: 0 when every block matches, 1 otherwise.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

pages=("$@")
[ ${#pages[@]} -gt 0 ] || pages=("$HERE"/*.md)

status=0 blocks=0
for page in "${pages[@]}"; do
  rm -f "$TMP"/block-*
  # Split the page's ```c blocks into block-<n> files, each prefixed with
  # the line number where it starts.
  awk -v dir="$TMP" '
    !inblock && /^```c[[:space:]]*$/ { inblock = 1; n++; out = dir "/block-" n; printf "%d\n", NR + 1 > out; next }
    inblock && /^```[[:space:]]*$/   { inblock = 0; close(out); next }
    inblock                          { print > out }
    END { if (inblock) { print "unterminated ```c block" > "/dev/stderr"; exit 1 } }
  ' "$page" || { status=1; continue; }
  for block in "$TMP"/block-*; do
    [ -e "$block" ] || continue
    blocks=$((blocks + 1))
    line="$(head -n 1 "$block")"
    tail -n +2 "$block" > "$block.c"
    first="$(head -n 1 "$block.c")"
    where="$(basename "$page"):$line"
    if [[ ! "$first" =~ ^//\ file:\ (docs/examples/[A-Za-z0-9_-]+\.c)$ ]]; then
      echo "$where: a \`\`\`c block must start with '// file: docs/examples/NAME.c' (found: '$first')" >&2
      status=1
      continue
    fi
    file="${BASH_REMATCH[1]}"
    if [ ! -f "$REPO/$file" ]; then
      echo "$where: quotes $file, which does not exist" >&2
      status=1
    elif ! diff -u --label "$file" --label "$where" "$REPO/$file" "$block.c" >&2; then
      echo "$where: differs from $file (above: - the file, + the page)" >&2
      status=1
    fi
  done
done
if [ "$status" = 0 ]; then
  echo "check_examples: $blocks quoted examples match their files"
fi
exit "$status"
