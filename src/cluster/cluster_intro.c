/*
 * Introductions (static provider): a node joins by a few seeds, and the
 * members it does not list learn of it from them. When a node becomes a
 * member here, this node tells it the addresses of its other members,
 * one frame of lines "host:port"; the newcomer says hello to each it is
 * not connected to, once (a beat: the remote layer connects for it), and
 * every node that connects naming the cluster is a member. So a fourth
 * node that lists three seeds reaches the whole cluster, and two nodes
 * that join at once meet: the seed that has both Up names the first to
 * the second.
 *
 * No gossip: nothing is relayed further, and an address that does not
 * answer is not tried again (a seed is, as a listing). A provider that
 * gates membership (etcd, DNS) needs none: its listings name every member.
 * In the cluster actor's turns.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_internal.h"

/* Addresses in one introduction, at most (a frame of ~64 KiB). */
#define INTRO_MAX 2048

void ac__cluster_introduce(ac_cluster *c, const ac__member_rec *r)
{
    if (c->provider->listed_only)
        return;
    size_t len = 0, n = 0;
    for (size_t i = 0; i < c->member_count && n < INTRO_MAX; i++) {
        const ac__member_rec *m = c->members[i];
        if (m != r && !m->self && m->member)
            len += strlen(m->address) + 1, n++;
    }
    if (n == 0)
        return;
    char *body = ac__malloc(len);
    if (!body)
        return; /* it still reaches the nodes it lists */
    size_t at = 0;
    for (size_t i = 0; i < c->member_count && at < len; i++) {
        const ac__member_rec *m = c->members[i];
        if (m == r || m->self || !m->member)
            continue;
        size_t k = strlen(m->address);
        memcpy(body + at, m->address, k);
        body[at + k] = '\n';
        at += k + 1;
    }
    (void)ac__node_tell_system(c->node, r->address, r->incarnation, AC__CLUSTER_PATH,
                               AC__CLUSTER_INTRO_TYPE, (const uint8_t *)body, at);
    free(body);
}

void ac__cluster_on_intro(ac_cluster *c, const ac__note *n)
{
    if (c->provider->listed_only || !n->data || !ac__rec_find(c, n->address))
        return; /* only a node that is a member here introduces */
    const char *p = (const char *)n->data, *end = p + n->len;
    size_t count = 0;
    while (p < end && count++ < INTRO_MAX) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t k = (size_t)((nl ? nl : end) - p);
        char address[256];
        if (k > 0 && k < sizeof address) {
            memcpy(address, p, k);
            address[k] = '\0';
            if (ac__host_port_ok(address) && strcmp(address, c->card.address) != 0 &&
                !ac__rec_find(c, address))
                (void)ac__node_tell_system(c->node, address, 0, AC__CLUSTER_PATH,
                                           AC__CLUSTER_CARD_TYPE, (const uint8_t *)c->card_text,
                                           c->card_len);
        }
        p += k + 1;
    }
}
