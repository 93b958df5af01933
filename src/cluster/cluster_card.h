/*
 * A node's card (cluster_card.c): how its cluster layer describes it to
 * the others (the body of its HELLO and of each beat), and the rules for
 * the names and addresses a card holds. The cluster's insides and its
 * membership providers both use it; it depends on nothing of either.
 */
#ifndef AC_CLUSTER_CARD_H
#define AC_CLUSTER_CARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/host_port.h"

#define AC__CLUSTER_MAX_ROLES 16
#define AC__CLUSTER_MAX_TEXT 64 /* a name, a role, a system name */

#define AC__CARD_LEAVING 1u /* the node leaves the cluster */
#define AC__CARD_DOWNED 2u  /* to a node the sender's side downed: it is out */

typedef struct ac__card {
    char cluster[AC__CLUSTER_MAX_TEXT + 1];
    char system[AC__CLUSTER_MAX_TEXT + 1];
    char address[256];
    uint64_t incarnation;
    unsigned flags;
    uint64_t up_since; /* when it joined, ms of its wall clock; 0: not said */
    char roles[AC__CLUSTER_MAX_ROLES][AC__CLUSTER_MAX_TEXT + 1];
    size_t roles_count;
} ac__card;

/* Text for the wire (a card's body): lines, see cluster_card.c. The
 * length in *len; NULL when out of memory. */
char *ac__card_encode(const ac__card *card, size_t *len);
/* Parse a body; false for anything malformed. */
bool ac__card_decode(const uint8_t *body, size_t len, ac__card *out);

/* [A-Za-z0-9._-]{1,64}: a cluster name or a role. */
bool ac__cluster_name_ok(const char *s);
/* A member's address is "host:port" by the rule of core/host_port.h
 * (ac__host_port_ok). */

#endif
