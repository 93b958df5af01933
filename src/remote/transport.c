/*
 * The register of transports (transport.h): the bind URL's scheme names
 * one. A new transport is one file behind the ops table and a line here.
 */
#include <string.h>

#include "core/base.h"
#include "remote/transport.h"

static const ac__transport_ops *const transports[] = {
    &ac__transport_zmq,
    &ac__transport_inproc,
    &ac__transport_tcp,
};

const ac__transport_ops *ac__transport_for(const char *bind)
{
    const char *sep = strstr(bind, "://");
    for (size_t i = 0; sep && i < sizeof transports / sizeof transports[0]; i++) {
        size_t n = strlen(transports[i]->scheme);
        if ((size_t)(sep - bind) == n && memcmp(bind, transports[i]->scheme, n) == 0)
            return transports[i];
    }
    return ac__fail_null(AC_EINVAL,
                         "ac_node_start: options.bind \"%.200s\" names no transport: "
                         "tcp://<host>:<port> (ZeroMQ), tcp+direct://<host>:<port> (TCP "
                         "without ZeroMQ) or inproc://<name>:<port> (this process)",
                         bind);
}
