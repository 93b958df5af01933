/*
 * The host:port rule every layer that names a peer checks against: the
 * cluster's member addresses and seeds, etcd endpoints, DNS servers, and
 * (in time) a node's advertised address. Base layer: depends on nothing
 * internal, and inline, so that actorc's optional libraries check by the
 * same rule without a symbol of libactorc. Pure functions; any thread.
 */
#ifndef AC_CORE_HOST_PORT_H
#define AC_CORE_HOST_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The length of the port at s: 1 to 5 digits worth 1..65535, with no
 * further digit after them; 0 when s starts with none such. */
static inline size_t ac__port_len(const char *s)
{
    size_t i = 0;
    long port = 0;
    while (s[i] >= '0' && s[i] <= '9' && i < 5)
        port = port * 10 + (s[i++] - '0');
    return (port >= 1 && port <= 65535 && !(s[i] >= '0' && s[i] <= '9')) ? i : 0;
}

/* "host:port", 3 to 255 bytes: a host (before the last ':'; not empty, no
 * whitespace or control bytes, '/', '@' or ','), then a port 1..65535 and
 * nothing after it. NULL is not. */
static inline bool ac__host_port_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 3 || n > 255)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f || s[i] == '/' || s[i] == '@' ||
            s[i] == ',')
            return false;
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return false;
    size_t p = ac__port_len(colon + 1);
    return p > 0 && colon[1 + p] == '\0';
}

#endif
