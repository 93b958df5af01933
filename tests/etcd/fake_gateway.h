/*
 * A scripted stand-in for etcd's JSON gateway, on a free port of
 * 127.0.0.1: for each request it plays the next answer of a list, by
 * path (the range call, the watch, anything else), the last one again
 * once the list is used up. One connection at a time, served by a
 * thread of its own.
 */
#ifndef ACTORC_FAKE_GATEWAY_H
#define ACTORC_FAKE_GATEWAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "cluster/etcd.h"

#define MAX_CHUNKS 8
/* A scripted answer, closed after its chunks (R) or held open (HELD). */
#define R(...) {.chunks = {__VA_ARGS__}}
#define HELD(...) {.chunks = {__VA_ARGS__}, .hold = true}

/* One scripted answer: its chunks, written 20 ms apart (a first chunk
 * that does not start with "HTTP/" gets a 200 head); then either the
 * connection is closed or, with hold, kept until the client goes. */
typedef struct reply {
    const char *chunks[MAX_CHUNKS];
    bool hold;
} reply;

typedef struct fake {
    const reply *ranges, *watches, *others;
    size_t nranges, nwatches, nothers;
    atomic_int range_calls, watch_calls, other_calls;
    pthread_mutex_t mu;
    char watch_bodies[4][512]; /* the first few watch requests' bodies */
    int fd, port;
    pthread_t thread;
    atomic_bool stop;
} fake;

/* Start serving (the test fails when it cannot). */
void fake_start(fake *f);
void fake_stop(fake *f);
/* A client of the stand-in, with quick retries. */
ac__etcd *fake_client(const fake *f);
/* Wait until *calls reaches n. */
bool wait_calls(atomic_int *calls, int n, double timeout_s);

#endif
