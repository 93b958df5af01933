#!/usr/bin/env python3
"""Which layer's headers each layer of src/ includes, and whether that
follows docs/architecture.md: base <- core <- ask <- routing, and
metrics and patterns above the core (routing uses them, and ask beyond
`ask/oneshot.h`, through the public API only; patterns use ask only
through `ask/ask_internal.h`; nothing below uses them); remote on top
(it may use base, core and ask headers, and the metrics API) and cluster
on top of remote (base and core, of remote only `remote/node_internal.h`:
its hooks, and of routing only `routing/member_group.h`: a cluster router
is a router over members; the public API of everything).

Public headers (include/actorc/*.h) belong to layers too, and are held to
the same rule: a layer may include the public headers of the layers it
may use through the public API, and the umbrella <actorc.h> only from the
top. The public headers' own includes are checked the same way. One
exception is named below: the system's `metrics` option turns the
registry on from the core.

Prints the matrix; exits 1 and names the file on any include that points
the wrong way.

    python3 scripts/layers.py
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
INCLUDE = ROOT / "include"
BASE = {"core/base.h", "core/last_error.h", "core/alloc.h", "core/clock.h", "core/host_port.h",
        "core/sync.h", "log/log_internal.h", "core/status.c", "core/alloc.c", "core/alloc_fail.c",
        "core/sync.c", "log/log.c"}
ORDER = ["base", "core", "ask", "metrics", "patterns", "routing", "remote", "cluster"]
# What each layer may include of the internal headers besides its own.
ALLOWED = {
    "base": set(),
    "core": {"base"},
    "ask": {"base", "core"},
    "metrics": {"base", "core"},
    "patterns": {"base", "core", "ask"},
    "routing": {"base", "core", "ask"},
    "remote": {"base", "core", "ask"},
    "cluster": {"base", "core", "remote", "routing"},
}
# Where a layer may use only some of another's internal headers.
ONLY = {("routing", "ask"): {"ask/oneshot.h"}, ("patterns", "ask"): {"ask/ask_internal.h"},
        ("remote", "ask"): {"ask/oneshot.h"}, ("cluster", "remote"): {"remote/node_internal.h"},
        ("cluster", "routing"): {"routing/member_group.h"}}
# The layer of each public header; the umbrella is above them all.
PUBLIC = {
    # The core's API is the base of every internal file (core/base.h).
    "actorc/export.h": "base", "actorc/status.h": "base", "actorc/log.h": "base",
    "actorc/msg.h": "base", "actorc/system.h": "base", "actorc/actor.h": "base",
    "actorc/error.h": "base", "actorc/supervision.h": "base", "actorc/timer.h": "base",
    "actorc/ask.h": "ask", "actorc/metrics.h": "metrics", "actorc/observe.h": "metrics", "actorc/breaker.h": "patterns",
    "actorc/router.h": "routing", "actorc/scatter_gather.h": "routing",
    "actorc/hedge.h": "routing", "actorc/remote.h": "remote", "actorc/cluster.h": "cluster",
    "actorc.h": "top",
}
# Whose public API each layer may use (its own and those below it always).
PUBLIC_ALLOWED = {
    "base": {"base"},
    "core": {"base", "core"},
    "ask": {"base", "core", "ask"},
    "metrics": {"base", "core", "metrics"},
    "patterns": {"base", "core", "ask", "metrics", "patterns"},
    "routing": {"base", "core", "ask", "metrics", "patterns", "routing"},
    "remote": {"base", "core", "ask", "metrics", "remote"},
    "cluster": {"base", "core", "ask", "metrics", "patterns", "routing", "remote", "cluster",
                "top"},
}
# Named exceptions: (file, header) -> why.
EXCEPTIONS = {
    ("core/system.c", "actorc/metrics.h"):
        "ac_system_options.metrics turns the registry on when the system is made",
}
INCLUDE_RE = re.compile(r'^#include [<"](actorc(?:\.h|/[a-z_]+\.h)|[a-z_]+/[a-z_]+\.h)[">]', re.M)


def layer_of(rel):
    if rel in PUBLIC:
        return PUBLIC[rel]
    return "base" if rel in BASE else rel.split("/")[0]


def check(rel, text, mine, uses, wrong):
    for inc in INCLUDE_RE.findall(text):
        public = inc in PUBLIC
        if not public and not (SRC / inc).exists():
            continue  # a system header
        theirs = layer_of(inc)
        if (rel, inc) in EXCEPTIONS:
            continue
        if public:
            if theirs not in PUBLIC_ALLOWED[mine]:
                wrong.append(f"{rel} includes the public {inc} ({mine} -> {theirs})")
            continue
        if theirs == mine:
            continue
        uses[mine][theirs].add(rel)
        if theirs not in ALLOWED[mine] or inc not in ONLY.get((mine, theirs), {inc}):
            wrong.append(f"{rel} includes {inc} ({mine} -> {theirs})")


def main():
    uses = {a: {b: set() for b in ORDER} for a in ORDER}
    wrong = []
    for path in sorted(SRC.rglob("*.[ch]")):
        rel = path.relative_to(SRC).as_posix()
        check(rel, path.read_text(), layer_of(rel), uses, wrong)
    for path in sorted(INCLUDE.rglob("*.h")):
        rel = path.relative_to(INCLUDE).as_posix()
        if rel not in PUBLIC:
            wrong.append(f"include/{rel} is a public header of no known layer (add it to PUBLIC)")
            continue
        mine = PUBLIC[rel]
        if mine == "top":
            continue
        check("include/" + rel, path.read_text(), mine, uses, wrong)
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
