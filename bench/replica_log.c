/*
 * The replicas' notes and the measured ideal (see replica_log.h). A
 * report is asked for as the string "replica_log <from>" and answered
 * with the bytes of up to REPORT_CHUNK (recv, fire) pairs from `from`,
 * small enough to travel as one frame of any node.
 */
#define _GNU_SOURCE
#include "replica_log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define REPORT_PREFIX "replica_log "
enum { REPORT_CHUNK = 256, REPORT_TIMEOUT_MS = 5000 };

int64_t replica_log_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

void replica_log_recv(replica_log *log, int64_t req)
{
    if (req >= 0 && req < REPLICA_LOG_MAX)
        log->recv[req] = replica_log_now();
}

void replica_log_fire(replica_log *log, int64_t req)
{
    if (req >= 0 && req < REPLICA_LOG_MAX)
        log->fire[req] = replica_log_now();
}

bool replica_log_answer(ac_ctx *ctx, const replica_log *log, ac_msg *msg)
{
    const char *s = ac_msg_is(msg, &ac_msg_type_str) ? ac_msg_str(msg) : NULL;
    long from;
    if (!s || strncmp(s, REPORT_PREFIX, strlen(REPORT_PREFIX)) != 0 ||
        sscanf(s + strlen(REPORT_PREFIX), "%ld", &from) != 1)
        return false;
    int64_t pairs[2 * REPORT_CHUNK];
    size_t n = 0;
    for (long q = from; q >= 0 && q < REPLICA_LOG_MAX && n < REPORT_CHUNK; q++, n++) {
        pairs[2 * n] = log->recv[q];
        pairs[2 * n + 1] = log->fire[q];
    }
    ac_reply(ctx, ac_msg_bytes_new(pairs, n * 2 * sizeof pairs[0]));
    return true;
}

bool replica_log_fetch(ac_ref *replica, replica_log *into, int64_t n)
{
    for (int64_t from = 0; from < n && from < REPLICA_LOG_MAX; from += REPORT_CHUNK) {
        ac_answer a;
        if (ac_ask_wait(replica, ac_msg_printf(REPORT_PREFIX "%lld", (long long)from),
                        REPORT_TIMEOUT_MS, &a) != AC_OK)
            return false;
        size_t len = 0;
        const uint8_t *b = a.reply ? ac_msg_bytes(a.reply, &len) : NULL;
        size_t got = b ? len / (2 * sizeof(int64_t)) : 0;
        for (size_t k = 0; k < got; k++) {
            memcpy(&into->recv[from + (int64_t)k], b + 16 * k, 8);
            memcpy(&into->fire[from + (int64_t)k], b + 16 * k + 8, 8);
        }
        ac_answer_release(&a);
        if (!b)
            return false;
    }
    return true;
}

void replica_log_split(replica_log *const *logs, int replicas, const int64_t *t0,
                       const int64_t *end, int64_t first, int64_t n,
                       int64_t (*drawn_ms)(int replica, int64_t req), scatter_split *split)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t q = first + i;
        int best = 0; /* the earliest that fired (0: it never did) */
        for (int k = 1; k < replicas; k++)
            if (logs[k]->fire[q] &&
                (!logs[best]->fire[q] || logs[k]->fire[q] < logs[best]->fire[q]))
                best = k;
        int64_t fire = logs[best]->fire[q], recv = logs[best]->recv[q];
        split->ideal[i] = fire - t0[i];
        split->out[i] = recv - t0[i];
        split->timer_late[i] = fire - recv - drawn_ms(best, q) * 1000000;
        split->back[i] = end[i] - fire;
    }
}
