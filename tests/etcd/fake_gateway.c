/*
 * The stand-in for etcd's gateway. See fake_gateway.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "fake_gateway.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ts_test.h"
#include "etcd_harness.h"

#define HEADER "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"

/* ---- the stand-in -------------------------------------------------------- */

/* Read one request's head and body; its path into path. */
static bool read_request(int c, char *path, size_t cap, char *body, size_t body_cap)
{
    char buf[8192];
    size_t n = 0;
    char *end = NULL;
    while (!end && n < sizeof buf - 1) {
        ssize_t got = recv(c, buf + n, sizeof buf - 1 - n, 0);
        if (got <= 0)
            return false;
        n += (size_t)got;
        buf[n] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end || sscanf(buf, "POST %255s", path) != 1)
        return false;
    (void)cap;
    const char *cl = strcasestr(buf, "Content-Length:");
    size_t want = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
    size_t have = n - (size_t)(end + 4 - buf);
    memmove(buf, end + 4, have);
    while (have < want && have < sizeof buf - 1) {
        ssize_t got = recv(c, buf + have, sizeof buf - 1 - have, 0);
        if (got <= 0)
            return false;
        have += (size_t)got;
    }
    buf[have] = '\0';
    snprintf(body, body_cap, "%.*s", (int)(body_cap - 1), buf);
    return true;
}

static void send_all(int c, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t put = send(c, s, n, MSG_NOSIGNAL);
        if (put <= 0)
            return;
        s += put;
        n -= (size_t)put;
    }
}

static void play(fake *f, int c, const reply *r)
{
    if (strncmp(r->chunks[0], "HTTP/", 5) != 0)
        send_all(c, HEADER);
    for (int i = 0; i < MAX_CHUNKS && r->chunks[i]; i++) {
        send_all(c, r->chunks[i]);
        ts_sleep_ms(20);
    }
    while (r->hold && !atomic_load(&f->stop)) { /* until the client hangs up */
        struct pollfd p = {.fd = c, .events = POLLIN};
        char b;
        if (poll(&p, 1, 20) > 0 && recv(c, &b, 1, 0) <= 0)
            break;
    }
}

static const reply *pick(const reply *list, size_t n, atomic_int *calls)
{
    int k = atomic_fetch_add(calls, 1);
    return list && n ? &list[(size_t)k < n ? (size_t)k : n - 1] : NULL;
}

static void serve(fake *f, int c)
{
    char path[256], body[512];
    if (!read_request(c, path, sizeof path, body, sizeof body))
        return;
    const reply *r;
    if (strcmp(path, "/v3/kv/range") == 0) {
        r = pick(f->ranges, f->nranges, &f->range_calls);
    } else if (strcmp(path, "/v3/watch") == 0) {
        int k = atomic_load(&f->watch_calls);
        pthread_mutex_lock(&f->mu);
        if (k < 4)
            snprintf(f->watch_bodies[k], sizeof f->watch_bodies[k], "%s", body);
        pthread_mutex_unlock(&f->mu);
        r = pick(f->watches, f->nwatches, &f->watch_calls);
    } else {
        r = pick(f->others, f->nothers, &f->other_calls);
    }
    if (r)
        play(f, c, r);
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    while (!atomic_load(&f->stop)) {
        struct pollfd p = {.fd = f->fd, .events = POLLIN};
        if (poll(&p, 1, 20) <= 0)
            continue;
        int c = accept(f->fd, NULL, NULL);
        if (c < 0)
            continue;
        serve(f, c);
        close(c);
    }
    return NULL;
}

void fake_start(fake *f)
{
    f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(f->fd, 16), 0);
    assert_int_equal(getsockname(f->fd, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
    pthread_mutex_init(&f->mu, NULL);
    assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

void fake_stop(fake *f)
{
    atomic_store(&f->stop, true);
    pthread_join(f->thread, NULL);
    close(f->fd);
    pthread_mutex_destroy(&f->mu);
}

ac__etcd *fake_client(const fake *f)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", f->port);
    return eh_client(url, &(ac__etcd_options){.backoff_initial_ms = 20, .backoff_max_ms = 40});
}

bool wait_calls(atomic_int *calls, int n, double timeout_s)
{
    double end = ts_now() + timeout_s;
    while (atomic_load(calls) < n) {
        if (ts_now() > end)
            return false;
        ts_sleep_ms(5);
    }
    return true;
}
