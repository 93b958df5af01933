#!/usr/bin/env python3
"""Which layer's headers each layer of src/ includes, and whether that
follows docs/architecture.md: base <- core <- ask <- routing, and
metrics and patterns above the core (routing uses them, and ask beyond
`ask/oneshot.h`, through the public API only; patterns use ask only
through `ask/ask_internal.h`; nothing below uses them); remote on top
(it may use base, core and ask headers) and cluster on top of remote
(base and core, and of remote only `remote/node_internal.h`: its hooks);
nothing below includes either.
Prints the matrix; exits 1 and names the file on any include that points
the wrong way.

    python3 scripts/layers.py
"""
import pathlib
import re
import sys

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
BASE = {"core/base.h", "core/last_error.h", "core/alloc.h", "core/clock.h", "core/sync.h",
        "log/log_internal.h", "core/status.c", "core/alloc.c", "core/alloc_fail.c",
        "core/clock.c", "core/sync.c", "log/log.c"}
ORDER = ["base", "core", "ask", "metrics", "patterns", "routing", "remote", "cluster"]
# What each layer may include besides itself.
ALLOWED = {
    "base": set(),
    "core": {"base"},
    "ask": {"base", "core"},
    "metrics": {"base", "core"},
    "patterns": {"base", "core", "ask"},
    "routing": {"base", "core", "ask"},
    "remote": {"base", "core", "ask"},
    "cluster": {"base", "core", "remote"},
}
# Where a layer may use only some of another's headers.
ONLY = {("routing", "ask"): {"ask/oneshot.h"}, ("patterns", "ask"): {"ask/ask_internal.h"},
        ("remote", "ask"): {"ask/oneshot.h"}, ("cluster", "remote"): {"remote/node_internal.h"}}


def layer_of(rel):
    return "base" if rel in BASE else rel.split("/")[0]


def main():
    uses = {a: {b: set() for b in ORDER} for a in ORDER}
    wrong = []
    for path in sorted(SRC.rglob("*.[ch]")):
        rel = path.relative_to(SRC).as_posix()
        mine = layer_of(rel)
        for inc in re.findall(r'^#include "([^"]+)"', path.read_text(), re.M):
            if not (SRC / inc).exists():
                continue  # the public headers, which every layer may use
            theirs = layer_of(inc)
            if theirs == mine:
                continue
            uses[mine][theirs].add(rel)
            if theirs not in ALLOWED[mine] or inc not in ONLY.get((mine, theirs), {inc}):
                wrong.append(f"{rel} includes {inc} ({mine} -> {theirs})")
    print("includes ->  " + "  ".join(f"{b:>8}" for b in ORDER))
    for a in ORDER:
        row = []
        for b in ORDER:
            mark = "   -    " if a == b else (f"{len(uses[a][b]):>5} f " if uses[a][b] else "   .    ")
            row.append(mark)
        print(f"{a:>10}   " + "  ".join(row))
    for line in wrong:
        print("wrong way:", line, file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
