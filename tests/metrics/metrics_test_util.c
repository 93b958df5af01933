/*
 * A minimal HTTP client: one request per connection (HTTP/1.0, so the
 * server closes when done), reading until EOF.
 */
#define _POSIX_C_SOURCE 200809L

#include "metrics_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int connect_local(int port, int timeout_ms)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = timeout_ms % 1000 * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static char *read_all(int fd, size_t *len)
{
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (n + 4096 + 1 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t got = read(fd, buf + n, 4096);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static char *header_value(const char *head, size_t head_len, const char *name)
{
    size_t nlen = strlen(name);
    for (const char *p = head; p < head + head_len;) {
        const char *eol = strstr(p, "\r\n");
        if (!eol || eol > head + head_len)
            break;
        if ((size_t)(eol - p) > nlen + 1 && strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1;
            while (*v == ' ')
                v++;
            return strndup(v, (size_t)(eol - v));
        }
        p = eol + 2;
    }
    return NULL;
}

mt_response mt_http(int port, const char *method, const char *path)
{
    return mt_http_within(port, method, path, 10000);
}

mt_response mt_http_within(int port, const char *method, const char *path, int timeout_ms)
{
    mt_response r = {.status = -1};
    int fd = connect_local(port, timeout_ms);
    if (fd < 0)
        return r;
    char req[512];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n\r\n", method,
                     path, port);
    if (write(fd, req, (size_t)n) != n) {
        close(fd);
        return r;
    }
    size_t len;
    char *all = read_all(fd, &len);
    close(fd);
    char *end = strstr(all, "\r\n\r\n");
    if (!end || sscanf(all, "HTTP/%*d.%*d %d", &r.status) != 1) {
        r.status = -1;
        free(all);
        return r;
    }
    r.content_type = header_value(all, (size_t)(end - all) + 2, "Content-Type");
    r.body_len = len - (size_t)(end + 4 - all);
    r.body = malloc(r.body_len + 1);
    memcpy(r.body, end + 4, r.body_len);
    r.body[r.body_len] = '\0';
    free(all);
    return r;
}

void mt_response_free(mt_response *r)
{
    free(r->content_type);
    free(r->body);
    r->content_type = r->body = NULL;
}

double mt_sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, series, n) == 0 && line[n] == ' ')
            return strtod(line + n + 1, NULL);
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return -1;
}

bool mt_has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return true;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return false;
}
