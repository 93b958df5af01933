/*
 * The ledger of the cluster chaos soak (chaos_soak.h): every request
 * takes a slot under a fresh id before it is sent, and its completion
 * gives the slot back. An answer is judged as it arrives:
 *
 *   - for a request whose slot is no longer its own (settled already, or
 *     never taken): a duplicate;
 *   - a reply that is not "<node> <incarnation> <id>" of this request: wrong;
 *   - a reply from an incarnation the driver's cluster downed before the
 *     answer arrived: stale;
 *   - any error (a SoakError, NodeDownError, a timeout, an aggregate of
 *     them): an answer, counted as an error.
 *
 * A request unanswered past its ask deadline plus the grace is lost. The
 * downed incarnations are kept in a small table; the run has a few
 * hundred of them at most.
 */
#include <stdlib.h>
#include <string.h>

#include "chaos_soak.h"
#include "soak.h"

const char *const ch_router_names[CR_COUNT] = {"round-robin", "scatter-gather", "hedged",
                                                "consistent-hash"};

typedef struct slot {
    uint64_t id; /* 0: free */
    int router;
    uint64_t deadline_ns;
} slot;

#define DOWNED_MAX 4096

static struct {
    pthread_mutex_t lock;
    slot slots[CH_SLOTS];
    uint64_t next_id;
    size_t in_flight;
    uint64_t downed[DOWNED_MAX];
    size_t downed_n;
    ch_counts n;
} L = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

uint64_t ch_ledger_take(int router)
{
    pthread_mutex_lock(&L.lock);
    uint64_t id = 0;
    if (L.in_flight < CH_SLOTS - 1) {
        /* Ids walk the slots in order; one still taken is skipped. */
        for (int tries = 0; tries < CH_SLOTS && !id; tries++) {
            uint64_t cand = L.next_id++;
            slot *s = &L.slots[cand & (CH_SLOTS - 1)];
            if (s->id == 0) {
                *s = (slot){.id = cand, .router = router,
                            .deadline_ns = soak_now_ns() +
                                           (uint64_t)(CH_ASK_MS + g_cfg.grace_ms) * 1000000ull};
                L.in_flight++;
                id = cand;
            }
        }
    }
    pthread_mutex_unlock(&L.lock);
    return id;
}

void ch_ledger_withdraw(uint64_t id)
{
    pthread_mutex_lock(&L.lock);
    slot *s = &L.slots[id & (CH_SLOTS - 1)];
    if (s->id == id) {
        s->id = 0;
        L.in_flight--;
    }
    pthread_mutex_unlock(&L.lock);
}

void ch_count_sent(void)
{
    pthread_mutex_lock(&L.lock);
    L.n.sent++;
    pthread_mutex_unlock(&L.lock);
}

size_t ch_in_flight(void)
{
    pthread_mutex_lock(&L.lock);
    size_t n = L.in_flight;
    pthread_mutex_unlock(&L.lock);
    return n;
}

static bool downed_locked(uint64_t inc)
{
    for (size_t i = 0; i < L.downed_n; i++)
        if (L.downed[i] == inc)
            return true;
    return false;
}

void ch_incarnation_downed(uint64_t incarnation)
{
    pthread_mutex_lock(&L.lock);
    if (!downed_locked(incarnation) && L.downed_n < DOWNED_MAX)
        L.downed[L.downed_n++] = incarnation;
    pthread_mutex_unlock(&L.lock);
}

/* A reply's text against request `id`: NULL when it is right, else what
 * is wrong with it; *inc its incarnation. */
static const char *read_reply(const ac_msg *reply, uint64_t id, uint64_t *inc)
{
    const char *text = ac_msg_str(reply);
    int node;
    unsigned long long i, rid;
    if (!text || sscanf(text, "%d %llx %llu", &node, &i, &rid) != 3)
        return "a reply that is not <node> <incarnation> <id>";
    if (node < 0 || node >= g_nodes.count)
        return "a reply naming no node of the run";
    *inc = i;
    return rid == id ? NULL : "the reply to another request";
}

void ch_settle(const ac_answer *a, void *user)
{
    uint64_t id = (uint64_t)(uintptr_t)user;
    uint64_t inc = 0;
    const char *wrong = a->reply ? read_reply(a->reply, id, &inc) : NULL;
    pthread_mutex_lock(&L.lock);
    slot *s = &L.slots[id & (CH_SLOTS - 1)];
    bool mine = s->id == id;
    int router = mine ? s->router : 0;
    if (mine) {
        s->id = 0;
        L.in_flight--;
        L.n.answered++;
        L.n.by_router[router]++;
        if (a->reply)
            L.n.replies++;
        else
            L.n.errors++;
    } else {
        L.n.dup++;
    }
    bool stale = mine && a->reply && !wrong && downed_locked(inc);
    L.n.stale += stale;
    L.n.wrong += mine && wrong;
    pthread_mutex_unlock(&L.lock);
    if (!mine)
        soak_violation("request %llu answered a second time (or never asked)",
                       (unsigned long long)id);
    else if (wrong)
        soak_violation("request %llu through %s: %s (\"%s\")", (unsigned long long)id,
                       ch_router_names[router], wrong, ac_msg_str(a->reply));
    else if (stale)
        soak_violation("request %llu through %s answered by incarnation %016llx, downed already",
                       (unsigned long long)id, ch_router_names[router],
                       (unsigned long long)inc);
}

void ch_reap(void)
{
    uint64_t now = soak_now_ns(), lost_id = 0;
    pthread_mutex_lock(&L.lock);
    for (size_t i = 0; i < CH_SLOTS; i++) {
        slot *s = &L.slots[i];
        if (s->id && now > s->deadline_ns) {
            lost_id = s->id;
            s->id = 0;
            L.in_flight--;
            L.n.lost++;
        }
    }
    pthread_mutex_unlock(&L.lock);
    if (lost_id)
        soak_violation("request %llu unanswered %lld ms past its deadline", (unsigned long long)lost_id,
                       (long long)g_cfg.grace_ms);
}

ch_counts ch_counts_get(void)
{
    pthread_mutex_lock(&L.lock);
    ch_counts n = L.n;
    pthread_mutex_unlock(&L.lock);
    return n;
}
