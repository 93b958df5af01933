#!/usr/bin/env python3
"""Check two DOM dumps of the observer page (browser.sh): what a person
would see of the demo system (tests/observe/ob_demo.h).

    browser_check.py FIRST.html SECOND.html

The routers and their routees are in the page — the gathering ones and
the pools (round-robin, smallest-mailbox with its mailbox column, and
round-robin with breakers) — routee-2 of the flaky and of the guarded
router is marked with its open breaker, the hedged router shows hedges
and its hedge delay, the breakers panel lists every breaker with the
open ones marked, and the counts moved between the two loads.

The same checks serve Chromium's DOM dump (browser.sh) and the DOM that
Firefox hands back (firefox.py): both are the page's outerHTML.
"""
import html.parser
import sys


class Page(html.parser.HTMLParser):
    """Routers (data-router) with their routees' rows and cells."""

    def __init__(self):
        super().__init__()
        self.routers = {}
        self.router = None
        self.row = None
        self.cell = None
        self.polls = 0
        self.hedges_sent = {}
        self.hedge_delay = {}
        self.breakers = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "body" and a.get("data-polls"):
            self.polls = int(a["data-polls"])
        if tag == "div" and "router" in classes and "data-router" in a:
            self.router = a["data-router"]
            self.routers[self.router] = {"kind": a.get("data-kind"), "routees": {}}
        elif tag == "tr" and "breaker" in classes and "data-breaker" in a:
            self.router = None
            self.breakers[a["data-breaker"]] = {"state": a.get("data-state"), "classes": classes}
        elif tag == "tr" and "routee" in classes and self.router:
            self.row = {"classes": classes, "cells": {}, "pills": [], "stray": ""}
            self.routers[self.router]["routees"][a["data-routee"]] = self.row
        elif tag == "td" and self.row is not None and classes:
            self.cell = classes[0]
            self.row["cells"][self.cell] = ""
        elif tag == "span" and "pill" in classes and self.row is not None:
            self.row["pills"].append(classes[1] if len(classes) > 1 else "")
        elif tag == "b" and "hedges-sent" in classes and self.router:
            self.cell = "hedges-sent"
            self.hedges_sent[self.router] = ""
        elif tag == "b" and "hedge-delay" in classes and self.router:
            self.cell = "hedge-delay"
            self.hedge_delay[self.router] = ""

    def handle_endtag(self, tag):
        if tag in ("td", "b"):
            self.cell = None
        if tag == "tr":
            self.row = None

    def handle_data(self, data):
        if self.cell == "hedges-sent" and self.router:
            self.hedges_sent[self.router] += data
        elif self.cell == "hedge-delay" and self.router:
            self.hedge_delay[self.router] += data
        elif self.cell and self.row is not None:
            self.row["cells"][self.cell] += data
        elif self.row is not None and self.cell is None:
            self.row["stray"] += data.strip()


def number(text):
    return int("".join(ch for ch in text if ch.isdigit()) or "0")


def load(path):
    page = Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def by_suffix(routers, suffix):
    for path, r in routers.items():
        if path.endswith(suffix):
            return r
    raise SystemExit(f"browser_check: no router {suffix} in the page (routers: {list(routers)})")


def calls(router):
    return sum(number(r["cells"].get("calls", "")) for r in router["routees"].values())


def routed(router):
    return sum(number(r["cells"].get("routed", "")) for r in router["routees"].values())


def routee(router, name):
    return next((r for p, r in router["routees"].items() if p.endswith("/" + name)), None)


def check_open(fails, name, routers, suffix):
    """routee-2 of the router is marked open, routee-1 closed."""
    r = by_suffix(routers, suffix)
    bad, good = routee(r, "routee-2"), routee(r, "routee-1")
    if not bad or "breaker-open" not in bad["classes"] or "open" not in bad["pills"]:
        fails.append(f"{name} load: {suffix}'s routee-2 is not marked open: {bad}")
    if not good or "breaker-open" in good["classes"] or "closed" not in good["pills"]:
        fails.append(f"{name} load: {suffix}'s routee-1 is not shown closed: {good}")


def check_pools(fails, name, page):
    """The pool routers' cards: kind, routees, their counts."""
    for suffix, kind, n in (("/user/pool", "round-robin", 3),
                            ("/user/shortest", "smallest-mailbox", 2),
                            ("/user/guarded", "round-robin", 3)):
        r = by_suffix(page.routers, suffix)
        if r["kind"] != kind:
            fails.append(f"{name} load: {suffix} is shown as {r['kind']}, not {kind}")
        names = sorted(p.rsplit("/", 1)[-1] for p in r["routees"])
        want = [f"routee-{k}" for k in range(1, n + 1)]
        if names != want:
            fails.append(f"{name} load: {suffix} shows routees {names}, not {want}")
        if routed(r) == 0:
            fails.append(f"{name} load: {suffix} shows nothing routed")
        stray = {p: x["stray"] for p, x in r["routees"].items() if x["stray"]}
        if stray:
            fails.append(f"{name} load: {suffix} has text outside its cells: {stray}")
    shortest = by_suffix(page.routers, "/user/shortest")
    if any("mailbox" not in r["cells"] for r in shortest["routees"].values()):
        fails.append(f"{name} load: the smallest-mailbox router shows no mailbox depths")
    pool = by_suffix(page.routers, "/user/pool")
    if any("mailbox" in r["cells"] for r in pool["routees"].values()):
        fails.append(f"{name} load: the round-robin pool shows mailbox depths it does not keep")
    check_open(fails, name, page.routers, "/user/guarded")


def check_breakers(fails, name, page):
    """The breakers panel: every routee's breaker, the open ones marked."""
    for router, n in (("/user/flaky", 2), ("/user/guarded", 3)):
        for k in range(1, n + 1):
            suffix = f"{router}/routee-{k}"
            b = next((b for p, b in page.breakers.items() if p.endswith(suffix)), None)
            want = "open" if k == 2 else "closed"
            if not b:
                fails.append(f"{name} load: no breaker {suffix} in the panel ({list(page.breakers)})")
            elif b["state"] != want or (want == "open") != ("breaker-open" in b["classes"]):
                fails.append(f"{name} load: breaker {suffix} is shown {b}, not {want}")


def main():
    first, second = load(sys.argv[1]), load(sys.argv[2])
    fails = []
    for page, name in ((first, "first"), (second, "second")):
        if page.polls < 1:
            fails.append(f"{name} load: the page never drew the view")
        for suffix, kind, n in (("/user/scatter", "scatter-gather", 3),
                                ("/user/hedged", "hedged", 3),
                                ("/user/flaky", "scatter-gather", 2)):
            r = by_suffix(page.routers, suffix)
            if r["kind"] != kind:
                fails.append(f"{name} load: {suffix} is shown as {r['kind']}, not {kind}")
            names = sorted(p.rsplit("/", 1)[-1] for p in r["routees"])
            want = [f"routee-{k}" for k in range(1, n + 1)]
            if names != want:
                fails.append(f"{name} load: {suffix} shows routees {names}, not {want}")
        check_open(fails, name, page.routers, "/user/flaky")
        hedged = [k for k in page.hedges_sent if k.endswith("/user/hedged")]
        if not hedged or number(page.hedges_sent[hedged[0]]) == 0:
            fails.append(f"{name} load: the hedged router shows no hedges sent")
        delay = [v for k, v in page.hedge_delay.items() if k.endswith("/user/hedged")]
        if not delay or delay[0].strip() != "5.00 ms":
            fails.append(f"{name} load: the hedged router's delay is shown as {delay}, not 5.00 ms")
        check_pools(fails, name, page)
        check_breakers(fails, name, page)
    for suffix in ("/user/scatter", "/user/hedged", "/user/flaky"):
        a, b = calls(by_suffix(first.routers, suffix)), calls(by_suffix(second.routers, suffix))
        print(f"browser_check: {suffix}: {a} calls, then {b}")
        if b <= a:
            fails.append(f"{suffix}: the calls did not move between the loads ({a}, then {b})")
    for suffix in ("/user/pool", "/user/shortest"):
        a, b = routed(by_suffix(first.routers, suffix)), routed(by_suffix(second.routers, suffix))
        print(f"browser_check: {suffix}: {a} routed, then {b}")
        if b <= a:
            fails.append(f"{suffix}: the routed counts did not move between the loads ({a}, then {b})")
    for f in fails:
        print("browser_check:", f, file=sys.stderr)
    if fails:
        sys.exit(1)
    print("browser_check: routers, pools, routees, the hedge delay, the open breakers and "
          "moving counts are shown")


if __name__ == "__main__":
    main()
