/*
 * The split-brain resolver's decision (sbr.c): given the members as this
 * node sees them (address, age, reachable or not) and a downing
 * strategy, does this node's side of a partition keep serving, or does
 * this node down itself? A pure function: no clock, no cluster, no
 * allocation, so that every strategy, tie and edge case is tested alone.
 *
 * Every node of a partition runs it over its own view after that view
 * has been stable for stable_after; with both sides seeing the same
 * members (one side's reachable set is the other's unreachable set) the
 * rules below give the two sides opposite answers, except where a rule
 * says both go (static-quorum with too few or too many, down-all).
 */
#ifndef AC_CLUSTER_SBR_H
#define AC_CLUSTER_SBR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <actorc/cluster.h>

typedef struct ac__sbr_member {
    const char *address; /* "host:port": ties go to the lowest */
    uint64_t up_since;   /* when it joined (its own clock, ms); lower is older; 0 unknown */
    bool reachable;      /* as this node sees it (this node itself: true) */
    bool self;
} ac__sbr_member;

typedef enum ac__sbr_decision {
    AC__SBR_KEEP = 0,      /* this side serves on: the unreachable are downed */
    AC__SBR_DOWN_SELF = 1, /* this node downs itself */
} ac__sbr_decision;

/* The decision for `members` (n of them, this node among them) under
 * `strategy`; quorum is static-quorum's size. With no unreachable member
 * there is nothing to resolve: KEEP. A strategy out of range, or
 * AC_CLUSTER_DOWNING_OFF: KEEP. */
ac__sbr_decision ac__sbr_decide(ac_cluster_downing strategy, size_t quorum,
                                const ac__sbr_member *members, size_t n);

/* The strategy's name, for logs and the docs ("keep-majority", ...). */
const char *ac__sbr_strategy_name(ac_cluster_downing strategy);

#endif
