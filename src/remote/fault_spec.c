/*
 * Rules of the fault layer written as text (remote.h: options.faults,
 * ACTORC_FAULTS, ac_node_faults_apply, ac_node_link_fault_parse).
 *
 * A spec is rules separated by ';', a rule items separated by ','. Every
 * item is checked before anything is applied, and the first wrong one is
 * named with its rule: a spec in an environment variable is read by
 * nobody else, so the message must say exactly where it went wrong.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/base.h"
#include "remote/fault.h"
#include "remote/node_internal.h"

#define PLUS_MINUS "\xc2\xb1" /* U+00B1 in UTF-8 */

bool ac__fault_is_pass(const ac_link_fault *f)
{
    return f->delay_us == 0 && f->jitter_us == 0 && f->drop == 0 && !f->blackhole && f->rate == 0;
}

bool ac__fault_peer_ok(const char *peer)
{
    size_t n = strlen(peer);
    const char *colon = strrchr(peer, ':');
    if (n == 0 || n > 255 || !colon || colon == peer || !colon[1])
        return false;
    for (const char *c = colon + 1; *c; c++)
        if (*c < '0' || *c > '9')
            return false;
    return strtol(colon + 1, NULL, 10) <= 65535;
}

ac_status ac__fault_check(const char *who, const ac_link_fault *f)
{
    const char *bad = f->delay_us < 0                   ? "delay_us is negative"
                      : f->jitter_us < 0                ? "jitter_us is negative"
                      : f->delay_us > 3600000000ll      ? "delay_us is over an hour"
                      : f->jitter_us > 3600000000ll     ? "jitter_us is over an hour"
                      : !(f->drop >= 0 && f->drop <= 1) ? "drop is not a share from 0 to 1"
                                                        : NULL;
    return bad ? ac__fail(AC_EINVAL, "%s: %s", who, bad) : AC_OK;
}

/* ---- values ------------------------------------------------------------------- */

/* A number at *s, its end in *end: false when there is none. */
static bool number(const char *s, const char **end, double *v)
{
    char *e;
    errno = 0;
    *v = strtod(s, &e);
    if (e == s || errno || !isfinite(*v) || *v < 0 || *s == '-' || *s == '+')
        return false;
    *end = e;
    return true;
}

/* "20ms", "500us", "1.5s", "20" (ms) at s, up to `stop` (exclusive). */
static bool duration(const char *s, const char *stop, int64_t *us)
{
    double v;
    const char *u;
    if (!number(s, &u, &v) || u > stop)
        return false;
    size_t n = (size_t)(stop - u);
    double scale = n == 0 || (n == 2 && memcmp(u, "ms", 2) == 0) ? 1e3
                   : n == 2 && memcmp(u, "us", 2) == 0           ? 1
                   : n == 1 && *u == 's'                          ? 1e6
                                                                  : -1;
    if (scale < 0 || v * scale > 3.6e9)
        return false;
    *us = (int64_t)(v * scale + 0.5);
    return true;
}

/* "20ms±5ms" or "20ms+-5ms" or "20ms": delay and jitter. */
static bool delay_jitter(const char *s, const char *stop, ac_link_fault *f)
{
    const char *pm = strstr(s, PLUS_MINUS);
    size_t pm_len = 2;
    if (!pm || pm >= stop) {
        pm = strstr(s, "+-");
        if (pm && pm >= stop)
            pm = NULL;
    }
    if (!pm)
        return duration(s, stop, &f->delay_us);
    return duration(s, pm, &f->delay_us) && duration(pm + pm_len, stop, &f->jitter_us);
}

/* "1%" or "0.01". */
static bool share(const char *s, const char *stop, double *out)
{
    double v;
    const char *e;
    if (!number(s, &e, &v))
        return false;
    if (e + 1 == stop && *e == '%')
        v /= 100;
    else if (e != stop)
        return false;
    if (v > 1)
        return false;
    *out = v;
    return true;
}

/* "1MB/s", "64kB", "1000" (bytes): a size or a rate, `per_s` the "/s". */
static bool bytes(const char *s, const char *stop, bool per_s, uint64_t *out)
{
    double v;
    const char *u;
    if (!number(s, &u, &v) || u > stop)
        return false;
    size_t n = (size_t)(stop - u);
    if (per_s && n >= 2 && memcmp(stop - 2, "/s", 2) == 0)
        n -= 2;
    double scale = n == 0 || (n == 1 && *u == 'B')     ? 1
                   : n == 2 && memcmp(u, "kB", 2) == 0 ? 1e3
                   : n == 2 && memcmp(u, "MB", 2) == 0 ? 1e6
                   : n == 2 && memcmp(u, "GB", 2) == 0 ? 1e9
                                                       : -1;
    if (scale < 0 || v * scale < 1 || v * scale > 1e15)
        return false;
    *out = (uint64_t)(v * scale + 0.5);
    return true;
}

/* ---- items --------------------------------------------------------------------- */

/* One item of a link's fault, [s, stop): NULL, or what is wrong. */
static const char *item(const char *s, const char *stop, ac_link_fault *f)
{
    size_t n = (size_t)(stop - s);
    const char *eq = memchr(s, '=', n);
    if (!eq) {
        if (n == 9 && memcmp(s, "blackhole", 9) == 0)
            return f->blackhole = true, NULL;
        if (n == 4 && memcmp(s, "pass", 4) == 0)
            return *f = (ac_link_fault){0}, NULL;
        if (n && stop[-1] == '%')
            return share(s, stop, &f->drop) ? NULL : "a drop share is 0% to 100%";
        return delay_jitter(s, stop, f) ? NULL
                                        : "not an item (delay=, jitter=, drop=, rate=, queue=, "
                                          "blackhole, pass)";
    }
    const char *v = eq + 1;
    size_t k = (size_t)(eq - s);
#define KEY(name) (k == sizeof name - 1 && memcmp(s, name, k) == 0)
    if (KEY("delay"))
        return delay_jitter(v, stop, f) ? NULL : "delay is a time: 20ms, 500us, 1s, or 20ms±5ms";
    if (KEY("jitter"))
        return duration(v, stop, &f->jitter_us) ? NULL : "jitter is a time: 5ms, 500us, 1s";
    if (KEY("drop"))
        return share(v, stop, &f->drop) ? NULL : "drop is a share: 1% or 0.01, at most 100%";
    if (KEY("rate"))
        return bytes(v, stop, true, &f->rate) ? NULL : "rate is bytes a second: 1MB/s, 64kB/s, 1000";
    if (KEY("queue")) {
        uint64_t q;
        if (!bytes(v, stop, false, &q) || q > SIZE_MAX)
            return "queue is a size: 16MB, 64kB, 100000";
        f->max_queue_bytes = (size_t)q;
        return NULL;
    }
#undef KEY
    return "unknown item (peer=, dir=, delay=, jitter=, drop=, rate=, queue=, blackhole, pass)";
}

static const char *trim(const char **s, const char *stop)
{
    while (*s < stop && (**s == ' ' || **s == '\t'))
        (*s)++;
    while (stop > *s && (stop[-1] == ' ' || stop[-1] == '\t'))
        stop--;
    return stop;
}

ac_status ac_node_link_fault_parse(const char *text, ac_link_fault *out)
{
    if (!text || !out)
        return ac__fail(AC_EINVAL, "ac_node_link_fault_parse: %s is NULL", text ? "out" : "text");
    ac_link_fault f = {0};
    for (const char *s = text, *e; *s; s = *e ? e + 1 : e) {
        e = strchr(s, ',');
        if (!e)
            e = s + strlen(s);
        const char *a = s, *z = trim(&a, e);
        const char *why = a == z ? "an empty item" : item(a, z, &f);
        if (why)
            return ac__fail(AC_EINVAL, "ac_node_link_fault_parse: \"%.*s\": %s", (int)(z - a), a, why);
    }
    if (ac__fault_check("ac_node_link_fault_parse", &f) != AC_OK)
        return AC_EINVAL;
    *out = f;
    return AC_OK;
}

/* ---- rules --------------------------------------------------------------------- */

/* One rule, [s, stop): NULL, or what is wrong (the item in `bad`). */
static const char *rule(const char *s, const char *stop, ac__fault_rule *r, const char **bad,
                        size_t *bad_len)
{
    *r = (ac__fault_rule){.dir = AC_LINK_BOTH};
    for (const char *i = s, *e; i < stop; i = e + 1) {
        e = memchr(i, ',', (size_t)(stop - i));
        if (!e)
            e = stop;
        const char *a = i, *z = trim(&a, e);
        *bad = a, *bad_len = (size_t)(z - a);
        size_t n = (size_t)(z - a);
        if (n > 5 && memcmp(a, "peer=", 5) == 0) {
            if (n - 5 >= sizeof r->peer)
                return "the peer's address is too long";
            memcpy(r->peer, a + 5, n - 5);
            r->peer[n - 5] = '\0';
            if (!ac__fault_peer_ok(r->peer))
                return "peer is an address, <host>:<port>";
        } else if (n > 4 && memcmp(a, "dir=", 4) == 0) {
            r->dir = n == 7 && memcmp(a + 4, "out", 3) == 0    ? AC_LINK_OUT
                     : n == 6 && memcmp(a + 4, "in", 2) == 0   ? AC_LINK_IN
                     : n == 8 && memcmp(a + 4, "both", 4) == 0 ? AC_LINK_BOTH
                                                               : 0;
            if (!r->dir)
                return "dir is out, in or both";
        } else {
            const char *why = n ? item(a, z, &r->f) : "an empty item";
            if (why)
                return why;
        }
    }
    *bad = s, *bad_len = (size_t)(stop - s);
    if (!r->peer[0])
        return "no peer=<host>:<port>";
    return ac__fault_check("", &r->f) == AC_OK ? NULL : "a value is out of range";
}

ac_status ac__fault_spec_parse(const char *who, const char *spec, ac__fault_rule **rules,
                               size_t *count)
{
    *rules = NULL;
    *count = 0;
    size_t cap = 1;
    for (const char *c = spec; *c; c++)
        cap += *c == ';';
    if (cap > AC__FAULT_MAX_RULES)
        return ac__fail(AC_EINVAL, "%s: %zu rules, more than %d", who, cap, AC__FAULT_MAX_RULES);
    ac__fault_rule *r = ac__calloc(cap, sizeof *r);
    if (!r)
        return ac__fail(AC_ENOMEM, "%s: out of memory", who);
    size_t n = 0, index = 0;
    for (const char *s = spec, *e; *s; s = *e ? e + 1 : e) {
        e = strchr(s, ';');
        if (!e)
            e = s + strlen(s);
        const char *a = s, *z = trim(&a, e);
        index++;
        if (a == z)
            continue; /* "a;;b" or a trailing ';' */
        const char *bad = a, *why;
        size_t bad_len = 0;
        if ((why = rule(a, z, &r[n], &bad, &bad_len))) {
            free(r);
            return ac__fail(AC_EINVAL, "%s: rule %zu (\"%.*s\"), \"%.*s\": %s", who, index,
                            (int)(z - a > 200 ? 200 : z - a), a, (int)(bad_len > 100 ? 100 : bad_len),
                            bad, why);
        }
        n++;
    }
    *rules = r;
    *count = n;
    return AC_OK;
}

/* ---- the API ------------------------------------------------------------------- */

static ac_status fault_layer(ac_node *node, const char *who)
{
    if (!node)
        return ac__fail(AC_EINVAL, "%s: node is NULL", who);
    if (!node->fault)
        return ac__fail(AC_ESTOPPED, "%s: node %s runs without the fault layer (start it with "
                                     "options.faults, \"\" for none yet, or ACTORC_FAULTS)",
                        who, node->address);
    return AC_OK;
}

/* Does the node know a peer at that address (resolved, connected or
 * heard from), not itself? Rules for an address nothing has named yet
 * are for the start's spec (options.faults, ACTORC_FAULTS); a call names
 * a peer the program has met, so that a typo is an error, not a rule
 * that never applies. A pass is always taken: it heals. */
static ac_status peer_known(ac_node *node, const char *who, const char *peer)
{
    pthread_mutex_lock(&node->lock);
    ac__peer *p = ac__ptab_by_address(&node->peers, peer, strlen(peer));
    bool self = p && p == node->self;
    pthread_mutex_unlock(&node->lock);
    if (self)
        return ac__fail(AC_EINVAL, "%s: %s is this node's own address", who, peer);
    if (!p)
        return ac__fail(AC_ENOTFOUND, "%s: node %s knows no peer at %s (resolve a path there "
                                      "first, or give the rule at start: options.faults, "
                                      "ACTORC_FAULTS)",
                        who, node->address, peer);
    return AC_OK;
}

ac_status ac_node_link_fault(ac_node *node, const char *peer, ac_link_direction direction,
                             const ac_link_fault *fault)
{
    static const char who[] = "ac_node_link_fault";
    if (fault_layer(node, who) != AC_OK)
        return ac_last_status();
    if (!peer)
        return ac__fail(AC_EINVAL, "%s: peer is NULL", who);
    if (!ac__fault_peer_ok(peer))
        return ac__fail(AC_EINVAL, "%s: peer \"%.200s\" is not <host>:<port>", who, peer);
    if (direction != AC_LINK_OUT && direction != AC_LINK_IN && direction != AC_LINK_BOTH)
        return ac__fail(AC_EINVAL, "%s: direction %d is not AC_LINK_OUT, _IN or _BOTH", who,
                        (int)direction);
    ac_link_fault pass = {0};
    if (fault && ac__fault_check(who, fault) != AC_OK)
        return AC_EINVAL;
    if (fault && !ac__fault_is_pass(fault) && peer_known(node, who, peer) != AC_OK)
        return ac_last_status();
    return ac__fault_set(node->fault, peer, (unsigned)direction, fault ? fault : &pass);
}

ac_status ac_node_faults_apply(ac_node *node, const char *spec)
{
    static const char who[] = "ac_node_faults_apply";
    if (fault_layer(node, who) != AC_OK)
        return ac_last_status();
    if (!spec)
        return ac__fail(AC_EINVAL, "%s: spec is NULL", who);
    ac__fault_rule *rules;
    size_t n;
    if (ac__fault_spec_parse(who, spec, &rules, &n) != AC_OK)
        return ac_last_status();
    ac_status st = AC_OK;
    for (size_t i = 0; i < n && st == AC_OK; i++)
        if (!ac__fault_is_pass(&rules[i].f))
            st = peer_known(node, who, rules[i].peer);
    for (size_t i = 0; i < n && st == AC_OK; i++)
        st = ac__fault_set(node->fault, rules[i].peer, rules[i].dir, &rules[i].f);
    free(rules);
    return st;
}
