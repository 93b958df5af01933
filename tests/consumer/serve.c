/*
 * A consumer of an installed actorc that serves its metrics: it starts the
 * HTTP endpoint (the actorc_http library) on an ephemeral port, scrapes
 * it once over a plain socket, and leaves stopping it to
 * ac_system_terminate.
 *
 * Expected output (one line):
 *     serve: scraped actorc_actors_started_total from /metrics
 */
#define _POSIX_C_SOURCE 200809L

#include <actorc.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define SERIES "actorc_actors_started_total"

/* The whole response to GET /metrics (HTTP/1.0: the server closes), or
 * -1. */
static ssize_t scrape(int port, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval timeout = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char request[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    ssize_t total = -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        write(fd, request, sizeof request - 1) == (ssize_t)(sizeof request - 1)) {
        ssize_t n;
        total = 0;
        while ((size_t)total < cap - 1 && (n = read(fd, buf + total, cap - 1 - (size_t)total)) > 0)
            total += n;
        buf[total] = '\0';
    }
    close(fd);
    return total;
}

int main(void)
{
    ac_system_options options = {.workers = 1, .metrics = true};
    ac_system *system = ac_system_create("serve", &options);
    if (system == NULL) {
        fprintf(stderr, "ac_system_create: %s\n", ac_last_error());
        return 1;
    }
    if (ac_metrics_serve(system, NULL) != AC_OK) {
        fprintf(stderr, "ac_metrics_serve: %s\n", ac_last_error());
        ac_system_terminate(system);
        return 1;
    }
    static char response[1 << 16];
    ssize_t n = scrape(ac_metrics_http_port(system), response, sizeof response);
    int ok = n > 0 && strncmp(response, "HTTP/1.", 7) == 0 && strstr(response, " 200 ") &&
             strstr(response, "\n" SERIES " ");
    if (ac_system_terminate(system) != AC_OK) {
        fprintf(stderr, "ac_system_terminate: %s\n", ac_last_error());
        return 1;
    }
    if (!ok) {
        fprintf(stderr, "serve: the scrape did not answer %s; it got:\n%s\n", SERIES,
                n > 0 ? response : "(nothing)");
        return 1;
    }
    printf("serve: scraped %s from /metrics\n", SERIES);
    return 0;
}
