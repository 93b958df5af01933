/*
 * The static provider (provider.h): a list of seed addresses, given at
 * join, each listed once at start without an incarnation (whichever
 * node answers there). It does not gate membership: any node that
 * connects naming the cluster is a member too, so the nodes form a full
 * mesh from a few seeds each.
 *
 * Its status: JOINED at once when no seed but this node's own is listed
 * (nobody to wait for: the others come to it), else when a first member
 * is Up; a seed that does not answer is counted by the cluster
 * (listing_noun "seed"). No threads: start and member_up are all it
 * does.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/provider.h"

#define MAX_SEEDS 1024

typedef struct static_state {
    ac_cluster *cluster;
    char **seeds; /* this node's own left out */
    size_t count;
} static_state;

static const void *static_options_of(const ac_cluster_options *o) { return o->static_options; }

static ac_status static_check(const void *options)
{
    const ac_cluster_static_options *o = options;
    if (!o)
        return AC_OK;
    return ac__provider_check_list(o->seeds, o->seeds_count, "static_options.seeds", MAX_SEEDS,
                                   ac__host_port_ok, "host:port (port 1..65535)");
}

static void static_free(void *state)
{
    static_state *s = state;
    if (!s)
        return;
    for (size_t i = 0; i < s->count; i++)
        free(s->seeds[i]);
    free(s->seeds);
    free(s);
}

static ac_status static_create(const ac__provider_env *env, const void *options, void **state)
{
    const ac_cluster_static_options *o = options;
    size_t n = o ? o->seeds_count : 0;
    static_state *s = ac__calloc(1, sizeof *s);
    if (s && n)
        s->seeds = ac__calloc(n, sizeof *s->seeds);
    if (!s || (n && !s->seeds))
        goto oom;
    s->cluster = env->cluster;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(o->seeds[i], env->self->address) == 0)
            continue;
        if (!(s->seeds[s->count] = ac__strdup(o->seeds[i])))
            goto oom;
        s->count++;
    }
    *state = s;
    return AC_OK;
oom:
    static_free(s);
    return ac__fail(AC_ENOMEM, "ac_cluster_join: out of memory");
}

static ac_status static_start(void *state)
{
    static_state *s = state;
    for (size_t i = 0; i < s->count; i++)
        if (ac__provider_list(s->cluster, s->seeds[i], 0) != AC_OK)
            return ac__fail(AC_ENOMEM, "ac_cluster_join: out of memory");
    if (s->count == 0)
        ac__provider_ok(s->cluster);
    return AC_OK;
}

static void static_member_up(void *state)
{
    static_state *s = state;
    ac__provider_ok(s->cluster);
}

static void static_stop(void *state) { (void)state; }

const ac__provider_ops ac__provider_static = {
    .name = "static",
    .listed_only = false,
    .listing_noun = "seed",
    .options_of = static_options_of,
    .check = static_check,
    .create = static_create,
    .start = static_start,
    .member_up = static_member_up,
    .stop = static_stop,
    .free = static_free,
};
