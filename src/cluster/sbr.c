/*
 * The split-brain resolver's decision (sbr.h), after Akka's resolver:
 *
 *   keep-majority  the side with more than half the members keeps; with
 *                  exactly half on each side, the side of the member with
 *                  the lowest address keeps.
 *   static-quorum  the side with at least `quorum` members keeps, as long
 *                  as the other side is below it; otherwise (both sides
 *                  small, or both large enough) every side downs itself.
 *   keep-oldest    the side of the oldest member (the earliest up_since,
 *                  ties and unknowns by the lowest address) keeps, unless
 *                  the oldest is alone on its side and the other side has
 *                  two or more: then the oldest downs itself and the
 *                  other side keeps (a lone oldest node must not take the
 *                  cluster down with it).
 *   down-all       any unreachable member: every node downs itself.
 *
 * Invariant: it reads only its arguments, and the same partition seen
 * from its two sides gives opposite answers (keep-majority, keep-oldest,
 * static-quorum with one side at the quorum), so exactly one side
 * survives there.
 */
#include <string.h>

#include "cluster/sbr.h"

typedef struct sides {
    size_t reachable, unreachable;
} sides;

static sides count_sides(const ac__sbr_member *m, size_t n)
{
    sides s = {0, 0};
    for (size_t i = 0; i < n; i++) {
        if (m[i].reachable || m[i].self)
            s.reachable++;
        else
            s.unreachable++;
    }
    return s;
}

static bool on_this_side(const ac__sbr_member *m) { return m->reachable || m->self; }

/* Is a older than b? Unknown ages (0) come last; ties by address. */
static bool older(const ac__sbr_member *a, const ac__sbr_member *b)
{
    uint64_t x = a->up_since ? a->up_since : UINT64_MAX;
    uint64_t y = b->up_since ? b->up_since : UINT64_MAX;
    if (x != y)
        return x < y;
    return strcmp(a->address, b->address) < 0;
}

static const ac__sbr_member *lowest_address(const ac__sbr_member *m, size_t n)
{
    const ac__sbr_member *low = &m[0];
    for (size_t i = 1; i < n; i++)
        if (strcmp(m[i].address, low->address) < 0)
            low = &m[i];
    return low;
}

static const ac__sbr_member *oldest(const ac__sbr_member *m, size_t n)
{
    const ac__sbr_member *old = &m[0];
    for (size_t i = 1; i < n; i++)
        if (older(&m[i], old))
            old = &m[i];
    return old;
}

static ac__sbr_decision keep_if(bool keep) { return keep ? AC__SBR_KEEP : AC__SBR_DOWN_SELF; }

static ac__sbr_decision keep_majority(const ac__sbr_member *m, size_t n, sides s)
{
    if (s.reachable != s.unreachable)
        return keep_if(s.reachable > s.unreachable);
    return keep_if(on_this_side(lowest_address(m, n)));
}

static ac__sbr_decision static_quorum(size_t quorum, sides s)
{
    return keep_if(s.reachable >= quorum && s.unreachable < quorum);
}

static ac__sbr_decision keep_oldest(const ac__sbr_member *m, size_t n, sides s)
{
    if (on_this_side(oldest(m, n)))
        return keep_if(!(s.reachable == 1 && s.unreachable >= 2));
    return keep_if(s.unreachable == 1 && s.reachable >= 2);
}

ac__sbr_decision ac__sbr_decide(ac_cluster_downing strategy, size_t quorum,
                                const ac__sbr_member *members, size_t n)
{
    sides s = count_sides(members, n);
    if (n == 0 || s.unreachable == 0)
        return AC__SBR_KEEP;
    switch (strategy) {
    case AC_CLUSTER_DOWNING_KEEP_MAJORITY:
        return keep_majority(members, n, s);
    case AC_CLUSTER_DOWNING_STATIC_QUORUM:
        return static_quorum(quorum, s);
    case AC_CLUSTER_DOWNING_KEEP_OLDEST:
        return keep_oldest(members, n, s);
    case AC_CLUSTER_DOWNING_DOWN_ALL:
        return AC__SBR_DOWN_SELF;
    default:
        return AC__SBR_KEEP;
    }
}

const char *ac__sbr_strategy_name(ac_cluster_downing strategy)
{
    switch (strategy) {
    case AC_CLUSTER_DOWNING_KEEP_MAJORITY:
        return "keep-majority";
    case AC_CLUSTER_DOWNING_STATIC_QUORUM:
        return "static-quorum";
    case AC_CLUSTER_DOWNING_KEEP_OLDEST:
        return "keep-oldest";
    case AC_CLUSTER_DOWNING_DOWN_ALL:
        return "down-all";
    case AC_CLUSTER_DOWNING_OFF:
        return "off";
    default:
        return "unknown";
    }
}
