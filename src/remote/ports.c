/*
 * Free loopback ports for processes that must know each other's ports
 * before any of them binds: a static seed list of local nodes. Every port
 * is held bound until all are picked, so the OS cannot hand out the same
 * one twice in one call; they are released together on return.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "actorc/remote.h"

#include "core/base.h"

ac_status ac_node_free_ports(int *ports, size_t count)
{
    if (!ports)
        return ac__fail(AC_EINVAL, "ac_node_free_ports: ports is NULL");
    if (count == 0 || count > AC_NODE_FREE_PORTS_MAX)
        return ac__fail(AC_EINVAL, "ac_node_free_ports: count = %zu; from 1 to %d", count,
                        AC_NODE_FREE_PORTS_MAX);
    int fds[AC_NODE_FREE_PORTS_MAX];
    size_t held = 0;
    ac_status st = AC_OK;
    for (; held < count; held++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;
        if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
            st = ac__fail(AC_ESYS, "ac_node_free_ports: no free port on 127.0.0.1 (%zu of %zu): %s",
                          held + 1, count, strerror(errno));
            if (fd >= 0)
                close(fd);
            break;
        }
        fds[held] = fd;
        ports[held] = ntohs(a.sin_port);
    }
    for (size_t i = 0; i < held; i++)
        close(fds[i]);
    return st;
}
