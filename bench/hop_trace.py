#!/usr/bin/env python3
"""Where a remote ask's time goes, hop by hop (core/hop_trace.h).

usage: hop_trace.py FILE...     the stamp files of one run (one per process)

Build with -DACTORC_HOP_TRACE=ON, then run for example
    ACTORC_HOP_TRACE=/tmp/hops actorc-bench-remote plain ask
which leaves /tmp/hops.<pid> for the caller's process and the server's.
Asks are sequential there, so each ac_ask_wait (ASK_BEGIN to ASK_END in
the caller's process) is followed through both processes' stamps:

  encode     caller: ac_ask_wait entered -> frame queued
  to_tp      frame queued -> the caller's transport gave it to ZeroMQ
  wire_out   -> the server's transport took it from ZeroMQ (both ZeroMQ
             I/O threads, TCP, and the server transport's own wake-up)
  serve      -> the reply queued (the server's dispatch, its worker's
             wake-up, the actor's turn)
  to_tp_b    reply queued -> the server's transport gave it to ZeroMQ
  wire_back  -> the caller's transport took it from ZeroMQ
  to_caller  -> the waiting caller has it (the settle and its wake-up)

Printed: each hop's p50 / p99 over all asks, its share of the slowest 1%,
and the slowest asks one by one, with how each transport found its work
(woken through its eventfd, by ZeroMQ, or by its spin).
"""
import bisect
import statistics
import sys

HOPS = {1: "ASK_BEGIN", 2: "ASK_END", 3: "OUT_PUSH", 4: "WAKE", 5: "WOKE", 6: "SPIN_FOUND",
        7: "SENT", 8: "RECEIVED", 9: "HANDLED"}
NAMES = ("encode", "to_tp", "wire_out", "serve", "to_tp_b", "wire_back", "to_caller")


def load(path):
    by_hop = {h: [] for h in HOPS}
    for line in open(path):
        ns, hop, _tid = line.split()
        by_hop.setdefault(int(hop), []).append(int(ns))
    for v in by_hop.values():
        v.sort()
    return by_hop


def after(stamps, t, limit):
    i = bisect.bisect_right(stamps, t)
    return stamps[i] if i < len(stamps) and stamps[i] <= limit else None


def between(stamps, lo, hi):
    return bisect.bisect_right(stamps, hi) - bisect.bisect_left(stamps, lo)


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def main(paths):
    procs = [load(p) for p in paths]
    callers = [p for p in procs if p[1]]
    if len(callers) != 1:
        sys.exit("hop_trace.py: want exactly one file with asks (ASK_BEGIN stamps)")
    a = callers[0]
    others = [p for p in procs if p is not a and p[8]]
    if not others:
        sys.exit("hop_trace.py: no server file (RECEIVED stamps)")
    b = max(others, key=lambda p: len(p[8]))
    asks = []
    for begin in a[1]:
        end = after(a[2], begin, begin + 10**9)
        if end is None:
            continue
        chain = [begin]
        for proc, hop in ((a, 3), (a, 7), (b, 8), (b, 3), (b, 7), (a, 8)):
            t = after(proc[hop], chain[-1], end)
            if t is None:
                break
            chain.append(t)
        else:
            chain.append(end)
            how = (("wake" if between(a[4], chain[0], chain[2]) else "spin" if between(a[6], chain[1], chain[2]) else "-"),
                   ("wake" if between(b[4], chain[3], chain[5]) else "spin" if between(b[6], chain[4], chain[5]) else "-"))
            asks.append(([(chain[i + 1] - chain[i]) / 1000 for i in range(7)], (end - begin) / 1000, how))
    if not asks:
        sys.exit("hop_trace.py: no complete ask")
    total = [t for _, t, _ in asks]
    print(f"{len(asks)} asks followed; total p50 {pct(total, .5):.1f} us, p99 {pct(total, .99):.1f} us")
    slow = sorted(asks, key=lambda x: -x[1])[:max(1, len(asks) // 100)]
    print(f"{'hop':10} {'p50 us':>8} {'p99 us':>8} {'mean in slowest 1%':>19} {'share':>6}")
    slow_total = statistics.mean(t for _, t, _ in slow)
    for i, name in enumerate(NAMES):
        v = [h[i] for h, _, _ in asks]
        m = statistics.mean(h[i] for h, _, _ in slow)
        print(f"{name:10} {pct(v, .5):8.1f} {pct(v, .99):8.1f} {m:19.1f} {100 * m / slow_total:5.0f}%")
    print("the slowest asks (us):", " ".join(f"{n:>9}" for n in NAMES), " total  caller tp / server tp")
    for hops, t, how in slow[:15]:
        print("                     ", " ".join(f"{h:9.1f}" for h in hops), f"{t:7.1f}  {how[0]} / {how[1]}")
    for side, idx in (("caller's transport", 0), ("server's transport", 1)):
        kinds = [h[2][idx] for h in asks]
        print(f"{side} found the frame: " + ", ".join(f"{k} {kinds.count(k)}" for k in ("wake", "spin", "-")))


if __name__ == "__main__":
    main(sys.argv[1:])
