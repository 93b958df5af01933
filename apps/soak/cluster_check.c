/*
 * The soak across processes: the ledger of requests in flight and the
 * judge of their answers (cluster_soak.h).
 *
 * A request carries what the replicas are to do with it (reply now,
 * reply late, refuse with a SoakError, only one of them replies, or
 * nobody does), so the judge knows which answers are allowed: a reply
 * only where a replica replies, and from the replica that did (the reply
 * names it and its sender must be its ref); a NodeDownError, an
 * UndeliverableError or an AggregateError holding them only while a
 * fault was in the air (from its start until a few seconds after it
 * ended); a caller's own AskTimeoutError through a scatter or hedged
 * router never (the router answers first). Each slot settles once: a
 * second answer is a violation, and so is one never given (the reaper).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_soak.h"
#include "soak.h"

#define CL_FAULT_TAIL_NS 4000000000ull /* a fault's effects may outlast it */

static const char *const beh_names_cl[] = {"now", "late", "error", "only", "silent"};

/* The reaper reads a slot while a caller may be taking it again, so its
 * fields are atomic too (their values are only trusted after the id). */
typedef struct slot {
    _Atomic uint64_t id; /* 0: free */
    _Atomic uint8_t beh, param, router;
    _Atomic uint64_t sent_ns, deadline_ns;
} slot;

static struct {
    int nodes;
    int ports[CL_MAX_NODES];
    slot slots[CL_SLOTS];
    pthread_mutex_t free_lock;
    uint32_t free_stack[CL_SLOTS];
    size_t free_top;
    uint64_t next_gen;
    pthread_mutex_t fault_lock;
    uint64_t fault_start[256], fault_end[256];
    size_t faults;
    atomic_uint_fast64_t replies, errors, aggregates, node_down, timeouts;
} L;

void cl_check_init(int nodes, const int *ports)
{
    L.nodes = nodes;
    memcpy(L.ports, ports, (size_t)nodes * sizeof *ports);
    pthread_mutex_init(&L.free_lock, NULL);
    pthread_mutex_init(&L.fault_lock, NULL);
    for (uint32_t k = 0; k < CL_SLOTS; k++)
        L.free_stack[L.free_top++] = CL_SLOTS - 1 - k;
}

cl_answer_counts cl_answers(void)
{
    return (cl_answer_counts){.replies = L.replies,
                              .aggregates = L.aggregates,
                              .node_down = L.node_down,
                              .timeouts = L.timeouts,
                              .errors = L.errors};
}

/* ---- faults: when answers that need one are allowed ----------------- */

size_t cl_fault_begin(void)
{
    pthread_mutex_lock(&L.fault_lock);
    size_t k = L.faults < 256 ? L.faults++ : 255;
    L.fault_start[k] = soak_now_ns();
    L.fault_end[k] = UINT64_MAX;
    pthread_mutex_unlock(&L.fault_lock);
    return k;
}

void cl_fault_end(size_t k)
{
    pthread_mutex_lock(&L.fault_lock);
    L.fault_end[k] = soak_now_ns();
    pthread_mutex_unlock(&L.fault_lock);
}

/* Did a fault overlap [from, to], its tail included? */
static bool fault_during(uint64_t from, uint64_t to)
{
    bool any = false;
    pthread_mutex_lock(&L.fault_lock);
    for (size_t k = 0; k < L.faults && !any; k++) {
        uint64_t end = L.fault_end[k] == UINT64_MAX ? UINT64_MAX : L.fault_end[k] + CL_FAULT_TAIL_NS;
        any = L.fault_start[k] <= to && end >= from;
    }
    pthread_mutex_unlock(&L.fault_lock);
    return any;
}

/* ---- the ledger ------------------------------------------------------- */

uint64_t cl_ledger_take(int router, int beh, int param)
{
    pthread_mutex_lock(&L.free_lock);
    if (L.free_top == 0) {
        pthread_mutex_unlock(&L.free_lock);
        return 0;
    }
    uint32_t k = L.free_stack[--L.free_top];
    uint64_t id = (++L.next_gen << 10) | k;
    pthread_mutex_unlock(&L.free_lock);
    slot *s = &L.slots[k];
    s->beh = (uint8_t)beh;
    s->param = (uint8_t)param;
    s->router = (uint8_t)router;
    s->sent_ns = soak_now_ns();
    s->deadline_ns = s->sent_ns + (uint64_t)CL_ASK_MS * 1000000ull;
    atomic_store(&s->id, id);
    return id;
}

static void ledger_give_back(uint32_t k)
{
    pthread_mutex_lock(&L.free_lock);
    L.free_stack[L.free_top++] = k;
    pthread_mutex_unlock(&L.free_lock);
}

void cl_ledger_withdraw(uint64_t id)
{
    uint64_t expect = id;
    if (atomic_compare_exchange_strong(&L.slots[id & (CL_SLOTS - 1)].id, &expect, 0))
        ledger_give_back((uint32_t)(id & (CL_SLOTS - 1)));
}

size_t cl_in_flight(void)
{
    pthread_mutex_lock(&L.free_lock);
    size_t n = CL_SLOTS - L.free_top;
    pthread_mutex_unlock(&L.free_lock);
    return n;
}

/* The replica a sender's path names ("actorc://soak@127.0.0.1:PORT/..."),
 * or -1. */
static int replica_of(const ac_ref *sender)
{
    const char *p = sender ? ac_ref_path(sender) : NULL;
    const char *colon = p ? strstr(p, "127.0.0.1:") : NULL;
    if (!colon)
        return -1;
    int port = atoi(colon + strlen("127.0.0.1:"));
    for (int i = 0; i < L.nodes; i++)
        if (L.ports[i] == port)
            return i;
    return -1;
}

/* A member of a scatter's or hedge's AggregateError: allowed? */
static bool member_allowed(const ac_error *m, int beh, bool fault)
{
    if (ac_error_is(m, SOAK_ERROR))
        return beh == CB_ERROR || beh == CB_ONLY;
    if (ac_error_is(m, AC_ASK_TIMEOUT_ERROR))
        return beh == CB_SILENT || fault;
    if (ac_error_is(m, AC_NODE_DOWN_ERROR) || ac_error_is(m, AC_UNDELIVERABLE_ERROR) ||
        ac_error_is(m, AC_ACTOR_STOPPED_ERROR))
        return fault;
    return false;
}

static const char *judge(const slot *s, uint64_t id, const ac_answer *a, bool fault)
{
    static _Thread_local char why[512];
    int beh = s->beh, param = s->param;
    bool via_gather = s->router != R_RR;
    if (a->reply) {
        int64_t v;
        if (ac_msg_int64_get(a->reply, &v) != AC_OK)
            return "a reply that is not an Int64";
        uint64_t rid = (uint64_t)v >> 16;
        int from = (int)(v & 0xff);
        if (rid != id) {
            snprintf(why, sizeof why, "the reply to request %llu answers request %llu",
                     (unsigned long long)id, (unsigned long long)rid);
            return why;
        }
        if (beh == CB_ERROR || beh == CB_SILENT)
            return "a reply where no replica replies";
        if (beh == CB_ONLY && from != param)
            return "a reply from a replica told to refuse";
        if (replica_of(a->sender) != from) {
            snprintf(why, sizeof why, "replica %d's reply has sender %s", from,
                     a->sender ? ac_ref_path(a->sender) : "(none)");
            return why;
        }
        return NULL;
    }
    const ac_error *e = a->error;
    if (ac_error_is(e, AC_AGGREGATE_ERROR)) {
        if (!via_gather)
            return "an AggregateError from the round-robin router";
        size_t n = ac_error_member_count(e);
        bool success_possible = beh == CB_NOW || beh == CB_LATE || beh == CB_ONLY;
        if (success_possible && !fault)
            return "an AggregateError where a replica replies and no fault was in the air";
        if (n == 0 && !fault)
            return "\"no routees\" with every replica up";
        for (size_t i = 0; i < n; i++)
            if (!member_allowed(ac_error_member(e, i), beh, fault)) {
                snprintf(why, sizeof why, "AggregateError member %zu is %s: %s", i,
                         ac_error_name(ac_error_member(e, i)),
                         ac_error_message(ac_error_member(e, i)));
                return why;
            }
        return NULL;
    }
    if (via_gather && !(ac_error_is(e, AC_ASK_TIMEOUT_ERROR) && fault))
        return "a router's answer other than a reply or an AggregateError";
    if (ac_error_is(e, SOAK_ERROR))
        return beh == CB_ERROR || beh == CB_ONLY ? NULL : "a SoakError where none was asked for";
    if (ac_error_is(e, AC_ASK_TIMEOUT_ERROR))
        return beh == CB_SILENT || fault ? NULL : "an ask timeout with every replica answering";
    if (member_allowed(e, beh, fault))
        return NULL;
    return "an error no fault explains";
}

void cl_settle(const ac_answer *a, void *user)
{
    uint64_t id = (uint64_t)(uintptr_t)user;
    uint32_t k = (uint32_t)(id & (CL_SLOTS - 1));
    slot *s = &L.slots[k];
    uint64_t expect = id;
    if (!atomic_compare_exchange_strong(&s->id, &expect, 0)) {
        soak_violation("cluster: request %llu answered twice (or an answer for no request)",
                       (unsigned long long)id);
        return;
    }
    uint64_t now = soak_now_ns();
    bool fault = fault_during(s->sent_ns, now);
    const char *bad = judge(s, id, a, fault);
    if (bad) {
        char *text = a->error ? ac_error_to_string(a->error) : NULL;
        soak_violation("cluster: request %llu via %s, beh %s/%d, after %.1f ms: %s%s%s",
                       (unsigned long long)id, cl_router_names[s->router], beh_names_cl[s->beh],
                       s->param, (double)(now - s->sent_ns) / 1e6, bad, text ? " — " : "",
                       text ? text : "");
        free(text);
    }
    if (a->reply)
        atomic_fetch_add(&L.replies, 1);
    else if (ac_error_is(a->error, AC_AGGREGATE_ERROR))
        atomic_fetch_add(&L.aggregates, 1);
    else if (ac_error_is(a->error, AC_NODE_DOWN_ERROR))
        atomic_fetch_add(&L.node_down, 1);
    else if (ac_error_is(a->error, AC_ASK_TIMEOUT_ERROR))
        atomic_fetch_add(&L.timeouts, 1);
    else
        atomic_fetch_add(&L.errors, 1);
    ledger_give_back(k);
}

void *cl_reaper(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop)) {
        soak_sleep_us(100000);
        uint64_t now = soak_now_ns(), grace = (uint64_t)g_cfg.grace_ms * 1000000ull;
        for (uint32_t k = 0; k < CL_SLOTS; k++) {
            slot *s = &L.slots[k];
            uint64_t id = atomic_load(&s->id);
            if (id && now > s->deadline_ns + grace && atomic_load(&s->id) == id)
                soak_violation("cluster: request %llu via %s (beh %s) unanswered %.0f ms after "
                               "its deadline",
                               (unsigned long long)id, cl_router_names[s->router],
                               beh_names_cl[s->beh], (double)(now - s->deadline_ns) / 1e6);
        }
    }
    return NULL;
}
