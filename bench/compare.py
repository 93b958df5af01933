#!/usr/bin/env python3
"""Set actorc's benchmark figures beside CAF's and Erlang's.

usage: compare.py [--markdown] [--remote] actorc=FILE caf=FILE erlang=FILE [baseline=FILE]

Each FILE holds the raw output of one system's run.sh (any number of runs);
every RESULT line is one per-run figure. Printed: per workload/metric, each
system's median over its runs, and actorc's ratio to the best peer, oriented
so that > 1 means actorc is better (throughput: actorc / best; latency,
time per op, memory, CPU: best / actorc). "n/a": the system did not run;
"-": the system has no such figure.

Caller placement: `ask`, `spawn` and `scatter_seq` are driven from outside
the runtime (a blocked thread), the `_in` figures from inside (an actor).
CAF has both; Erlang has only inside callers, so its plain figures are
filed under the `_in` rows (ALIASES) and its `ask` never meets actorc's or
CAF's outside `ask`.

Remote (two processes on 127.0.0.1): the peers' remote_ask is asked from
inside their runtimes; it stands in actorc's remote_ask_in row and beside
its remote_ask (an outside caller). actorc's zmq_* rows (raw ZeroMQ in the
same run) and its *_vs_zmq ratios have no peer counterpart.

Scatter/gather: actorc's scatter_seq_in (an actor tells the router with
itself as the sender) and scatter_seq_in_ask (the same caller with
ac_ask_in) both meet CAF's in-system scatter_seq_in_R and Erlang's
scatter_seq; scatter_par meets both peers' scatter_par. scatter_tail,
hedge_tail and scatter_open have no peer counterpart.

--remote: the files hold remote runs alone (bench/compare --remote). Printed:
the remote rows with each system's median and min-max over its runs, then
the remote targets from ratios taken round by round (actorc's run k beside
Erlang's run k, run in the same round), their median and min-max.
"""
import statistics
import sys
from collections import OrderedDict

SYSTEMS = ("actorc", "caf", "erlang")
PEERS = ("caf", "erlang")

# A peer's figure that measures what an actorc figure of another name
# measures; a tuple files it under each of those rows. Erlang has no caller
# outside its runtime: its spawn, ask and scatter_seq callers are processes,
# so they compare with actorc's in-system (_in) figures. CAF's in-system
# scatter is its request/then (_R) variant. actorc has two in-system
# scatter callers (tell with self as the sender, and ac_ask_in); the peers'
# one in-system scatter stands beside each.
SCATTER_IN = ("scatter_seq_in", "scatter_seq_in_ask")
# The peers' remote_ask callers are in-system (a CAF actor, an Erlang
# process): they stand in remote_ask_in, and beside actorc's remote_ask
# (a blocked outside thread) too, since across two processes the caller's
# place costs little beside the network.
REMOTE_ASK = ("remote_ask_in", "remote_ask")
ALIASES = {
    "erlang": {"spawn": "spawn_in", "ask": "ask_in", "scatter_seq": SCATTER_IN,
               "remote_ask": REMOTE_ASK},
    "caf": {"scatter_seq_in_R": SCATTER_IN, "remote_ask": REMOTE_ASK},
}


def read_runs(system, path):
    """{(workload, metric, unit): [value per run]} and the number of runs."""
    figures, runs = OrderedDict(), 0
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return figures, 0
    aliases = ALIASES.get(system, {})
    for line in lines:
        if line.startswith("# run ") and line.endswith((" suite", " remote")):
            runs += 1
        if not line.startswith("RESULT "):
            continue
        _, wl, metric, value, unit = line.split(maxsplit=4)
        names = aliases.get(wl, wl)
        for name in (names,) if isinstance(names, str) else names:
            figures.setdefault((name, metric, unit.strip()), []).append(float(value))
    return figures, runs


def higher_is_better(unit):
    return unit.endswith("/s")


def ratio(unit, mine, peers):
    """actorc against the best peer, > 1 when actorc is better."""
    if mine is None or not peers:
        return None
    if higher_is_better(unit):
        return mine / max(peers)
    best = min(peers)
    if mine == 0:
        return float("inf") if best > 0 else 1.0
    return best / mine


def fmt(v):
    if v is None:
        return "-"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= max(scale, 1e4):
            return f"{v / scale:.4g}{suffix}"
    return f"{v:.4g}"


def build_rows(data):
    keys = OrderedDict()
    for system in SYSTEMS:
        for key in data[system][0]:
            keys.setdefault(key)
    rows = []
    for key in keys:
        cells = {}
        for system in SYSTEMS:
            figures, runs = data[system]
            vals = figures.get(key)
            cells[system] = statistics.median(vals) if vals else ("n/a" if not figures else None)
        peers = [cells[p] for p in PEERS if isinstance(cells[p], float)]
        mine = cells["actorc"] if isinstance(cells["actorc"], float) else None
        best = None
        if peers:
            pick = max if higher_is_better(key[2]) else min
            best = [p for p in PEERS if cells[p] == pick(peers)][0]
        rows.append((key, cells, ratio(key[2], mine, peers), best))
    return rows


def cell_text(c):
    return c if isinstance(c, str) else fmt(c)


def table_lines(rows, markdown):
    head = ["workload", "metric", "unit", "actorc", "CAF", "Erlang", "actorc/best", "best peer"]
    body = []
    for (wl, metric, unit), cells, r, best in rows:
        body.append([wl, metric, unit] + [cell_text(cells[s]) for s in SYSTEMS]
                    + ["-" if r is None else f"{r:.2f}", best or "-"])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        out += ["| " + " | ".join(row) + " |" for row in body]
        return out
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    right = {3, 4, 5, 6}
    def line(row):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(row, widths))).rstrip()
    return [line(head), line(["-" * w for w in widths])] + [line(row) for row in body]


def baseline_lines(rows, base, markdown):
    """actorc now beside an earlier actorc (`base`) measured in the same
    run: each one's ratio to the best peer, and now against then."""
    head = ["workload", "metric", "unit", "baseline", "actorc", "now/baseline",
            "baseline/best", "actorc/best"]
    body = []
    for key, cells, r, best in rows:
        now = cells["actorc"] if isinstance(cells["actorc"], float) else None
        vals = base[0].get(key)
        then = statistics.median(vals) if vals else None
        if now is None or then is None:
            continue
        peers = [cells[p] for p in PEERS if isinstance(cells[p], float)]
        rb = ratio(key[2], then, peers)
        body.append(list(key) + [fmt(then), fmt(now), f"{ratio(key[2], now, [then]):.2f}",
                                 "-" if rb is None else f"{rb:.2f}",
                                 "-" if r is None else f"{r:.2f}"])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        return out + ["| " + " | ".join(row) + " |" for row in body]
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
            for row in [head, ["-" * w for w in widths]] + body]


REMOTE_WORKLOADS = ("remote_ask", "remote_ask_in", "remote_ask_gen_server", "zmq_rtt", "tcp_rtt",
                    "remote_tell", "zmq_pipelined", "remote_scatter", "zmq_scatter",
                    # actorc over its own TCP (tcp+direct://), with its run's baselines
                    "remote_ask_direct", "remote_ask_in_direct", "remote_ask_over_zmq_direct",
                    "zmq_rtt_direct", "tcp_rtt_direct", "remote_tell_direct",
                    "zmq_pipelined_direct")


def span(vals):
    return f"{fmt(statistics.median(vals))} ({fmt(min(vals))}-{fmt(max(vals))})"


def remote_table(data, markdown, base):
    """The remote rows: median (min-max) per system."""
    systems = (("baseline",) if base else ()) + SYSTEMS
    cols = {"baseline": base, **{s: data[s][0] for s in SYSTEMS}}
    keys = OrderedDict()
    for s in systems:
        for key in cols[s]:
            if key[0] in REMOTE_WORKLOADS:
                keys.setdefault(key)
    head = ["workload", "metric", "unit"] + [{"caf": "CAF", "erlang": "Erlang"}.get(s, s)
                                             for s in systems]
    body = [list(key) + [span(cols[s][key]) if cols[s].get(key) else "-" for s in systems]
            for key in keys]
    return render(head, body, markdown)


def render(head, body, markdown):
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        return out + ["| " + " | ".join(row) + " |" for row in body]
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
            for row in [head, ["-" * w for w in widths]] + body]


def per_round(mine, theirs, f):
    """f over actorc's and a peer's figures of the same rounds."""
    return [f(a, b) for a, b in zip(mine, theirs)]


def remote_targets(figs, erl, label):
    """The remote targets of one actorc build (figs) against Erlang's runs
    of the same rounds: (target, per-round values, bound, met?)."""
    rows = []
    def get(d, wl, metric):
        return d.get((wl, metric, "us")) or d.get((wl, metric, "x")) or []
    p99, p50 = get(figs, "remote_ask", "p99"), get(figs, "remote_ask", "p50")
    ep99, ep50 = get(erl, "remote_ask", "p99"), get(erl, "remote_ask", "p50")
    if p99 and ep99:
        rows.append(("remote_ask p99 / Erlang remote_ask p99", per_round(p99, ep99, lambda a, b: a / b), "<= 1.0", lambda v: v <= 1.0))
    if p50 and ep50:
        rows.append(("Erlang remote_ask p50 / remote_ask p50", per_round(p50, ep50, lambda a, b: b / a), ">= 2.0", lambda v: v >= 2.0))
    if p50:
        rows.append(("remote_ask p50 (us)", p50, "<= 25", lambda v: v <= 25.0))
    sc = get(figs, "remote_scatter", "p99_vs_zmq")
    if sc:
        rows.append(("remote_scatter p99_vs_zmq", sc, "<= 1.0", lambda v: v <= 1.0))
    for name in ("p50_vs_zmq", "p99_vs_zmq", "p50_vs_tcp", "p99_vs_tcp"):
        v = get(figs, "remote_ask", name)
        if v:
            rows.append((f"remote_ask {name} (no target here)", v, "-", None))
    dp99, dp50 = get(figs, "remote_ask_direct", "p99"), get(figs, "remote_ask_direct", "p50")
    if dp99 and ep99:
        rows.append(("remote_ask_direct p99 / Erlang remote_ask p99", per_round(dp99, ep99, lambda a, b: a / b), "<= 1.0", lambda v: v <= 1.0))
    if dp50 and ep50:
        rows.append(("Erlang remote_ask p50 / remote_ask_direct p50", per_round(dp50, ep50, lambda a, b: b / a), ">= 2.0", lambda v: v >= 2.0))
    for name in ("p50_vs_tcp", "p99_vs_tcp", "p50_vs_zmq_transport", "p99_vs_zmq_transport"):
        v = get(figs, "remote_ask_direct", name)
        if v:
            rows.append((f"remote_ask_direct {name} (no target here)", v, "-", None))
    head = [label, "median", "min-max", "rounds", "target", "median meets it"]
    body = []
    for name, vals, bound, ok in rows:
        med = statistics.median(vals)
        body.append([name, f"{med:.3g}", f"{min(vals):.3g}-{max(vals):.3g}", str(len(vals)),
                     bound, "-" if ok is None else ("yes" if ok(med) else "no")])
    return head, body


def main_remote(data, markdown, base):
    runs = ", ".join(f"{s} {data[s][1]}" for s in SYSTEMS)
    print(f"Remote workloads alone, medians (min-max) over runs ({runs}"
          + (f", baseline {base[1]}" if base else "") + ").")
    print("The peers' remote_ask callers are in-system; actorc's remote_ask is asked from a")
    print("blocked outside thread, remote_ask_in from an actor. zmq_*: raw ZeroMQ in the")
    print("same processes as actorc's run (*_vs_zmq: actorc / raw ZeroMQ, that run); tcp_rtt:")
    print("the same round trip over a plain TCP socket (*_vs_tcp), where the build has it.")
    print()
    for line in remote_table(data, markdown, base[0] if base else None):
        print(line)
    erl = data["erlang"][0]
    for label, figs in (("actorc", data["actorc"][0]),) + ((("baseline", base[0]),) if base else ()):
        head, body = remote_targets(figs, erl, f"{label}: target (ratios round by round)")
        if body:
            print()
            for line in render(head, body, markdown):
                print(line)


def main(argv):
    markdown = "--markdown" in argv
    if "--remote" in argv:
        paths = dict(a.split("=", 1) for a in argv if "=" in a)
        data = {s: read_runs(s, paths.get(s, "")) for s in SYSTEMS}
        base = read_runs("actorc", paths["baseline"]) if "baseline" in paths else None
        main_remote(data, markdown, base)
        return
    paths = dict(a.split("=", 1) for a in argv if "=" in a)
    data = {s: read_runs(s, paths.get(s, "")) for s in SYSTEMS}
    runs = ", ".join(f"{s} {data[s][1]}" for s in SYSTEMS)
    print(f"Medians over runs ({runs}). actorc/best: actorc against the best peer;")
    print("above 1.0 means actorc is better (throughput: actorc / best peer; us, ns/actor,")
    print("B/actor, B, KiB, %: best peer / actorc). n/a: did not run; -: no such figure.")
    print("Erlang's spawn, ask and scatter_seq callers are processes: they stand in the")
    print("spawn_in, ask_in and scatter_seq_in rows; CAF's scatter_seq_in_R in scatter_seq_in.")
    print("Both also stand beside scatter_seq_in_ask (actorc's in-system scatter by ac_ask_in).")
    print("ask and scatter_seq (CAF's and actorc's) are asked from a blocked thread outside")
    print("the runtime. scatter_tail, hedge_tail and scatter_open have no peer counterpart.")
    print("The peers' remote_ask (in-system callers) stands in remote_ask_in and beside")
    print("remote_ask; zmq_* (raw ZeroMQ, same run) and *_vs_zmq have no peer counterpart.")
    print()
    rows = build_rows(data)
    for line in table_lines(rows, markdown):
        print(line)
    if "baseline" in paths:
        base = read_runs("actorc", paths["baseline"])
        print()
        print(f"actorc beside the baseline build, in the same run ({base[1]} runs):"
              " now/baseline above 1.0 means better now.")
        print()
        for line in baseline_lines(rows, base, markdown):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
