/*
 * The endpoint slot: where a server of the exposition hangs off a system's
 * registry, so that terminating the system stops it.
 *
 * The core knows the server only as a pointer, a port and a stop function.
 * That keeps the HTTP endpoint (and its libmicrohttpd) out of libactorc:
 * it lives in the actorc_http library, which attaches itself here through
 * public calls, and a program that never serves metrics links none of it.
 *
 * The slot is under the registry lock. A stop function is always called
 * outside it: stopping joins the server's threads, and a scrape in
 * progress takes the registry lock to render.
 */
#include "metrics/metrics_internal.h"

ac_status ac_metrics_endpoint_attach(ac_system *system, void *endpoint, int port,
                                     ac_metrics_endpoint_stop_fn *stop)
{
    if (!system || !endpoint || !stop)
        return ac__fail(AC_EINVAL, "ac_metrics_endpoint_attach: %s is NULL",
                        !system ? "system" : !endpoint ? "endpoint" : "stop");
    ac__metrics *reg = ac__metrics_of(system);
    if (!reg)
        return ac__fail(AC_EINVAL, "ac_metrics_endpoint_attach: metrics are off for system \"%s\"",
                        system->name);
    pthread_mutex_lock(&reg->lock);
    int busy_port = reg->endpoint.server ? reg->endpoint.port : 0;
    bool busy = reg->endpoint.server != NULL;
    if (!busy)
        reg->endpoint = (ac__endpoint){.server = endpoint, .port = port, .stop = stop};
    pthread_mutex_unlock(&reg->lock);
    if (busy)
        return ac__fail(AC_EEXIST,
                        "ac_metrics_endpoint_attach: system \"%s\" has an endpoint already, "
                        "on port %d",
                        system->name, busy_port);
    return AC_OK;
}

/* The attached endpoint, taken off the slot when `stop` is NULL or its
 * own; NULL otherwise. */
static ac__endpoint take(ac__metrics *reg, ac_metrics_endpoint_stop_fn *stop)
{
    ac__endpoint taken = {0};
    pthread_mutex_lock(&reg->lock);
    if (reg->endpoint.server && (!stop || reg->endpoint.stop == stop)) {
        taken = reg->endpoint;
        reg->endpoint = (ac__endpoint){0};
    }
    pthread_mutex_unlock(&reg->lock);
    return taken;
}

void *ac_metrics_endpoint_detach(ac_system *system, ac_metrics_endpoint_stop_fn *stop)
{
    ac__metrics *reg = system ? ac__metrics_of(system) : NULL;
    return reg && stop ? take(reg, stop).server : NULL;
}

int ac_metrics_endpoint_port(const ac_system *system)
{
    ac__metrics *reg = system ? ac__metrics_of(system) : NULL;
    if (!reg)
        return 0;
    pthread_mutex_lock(&reg->lock);
    int port = reg->endpoint.server ? reg->endpoint.port : 0;
    pthread_mutex_unlock(&reg->lock);
    return port;
}

void ac__endpoint_shutdown(ac__metrics *reg)
{
    ac__endpoint taken = take(reg, NULL);
    if (taken.server)
        taken.stop(taken.server);
}
