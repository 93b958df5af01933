/*
 * The ledger: every request the soak has sent and not yet seen answered.
 *
 * A request's id names its slot in a fixed table (the low bits) and a
 * sequence number (the high bits), so an answer finds its entry without a
 * search, and an answer whose entry is gone — or holds a newer request —
 * was an answer to a request already settled: a duplicate. Registering
 * happens before sending, so no answer can precede its entry. The table is
 * allocated once and never grows, which keeps the soak's own memory out of
 * the resident-memory check; when it is full the callers back off.
 *
 * A reaper thread walks the table and flags any request still open past
 * its deadline plus a grace period: an answer that was promised and lost.
 *
 * Lock order: a stripe lock, then the free-list lock or the stalls' lock
 * (stalls.c); never two stripes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "soak.h"

#define SLOT_BITS 13
#define CAPACITY (1u << SLOT_BITS)
#define STRIPES 64
#define REAP_EVERY_US 50000

typedef struct entry {
    uint64_t id; /* 0: free */
    uint64_t deadline_ns;
    soak_scenario sc;
} entry;

static entry table[CAPACITY];
static pthread_mutex_t stripe[STRIPES];
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t free_slots[CAPACITY];
static uint32_t free_top;
static atomic_uint_fast64_t next_seq = 1;
static atomic_size_t in_flight;

static pthread_t reaper;
static atomic_bool reaper_stop;

static pthread_mutex_t *lock_of(uint32_t slot) { return &stripe[slot % STRIPES]; }

static void ledger_init(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripe[i], NULL);
    for (uint32_t i = 0; i < CAPACITY; i++)
        free_slots[i] = CAPACITY - 1 - i;
    free_top = CAPACITY;
}

static bool pop_free(uint32_t *slot)
{
    pthread_mutex_lock(&free_lock);
    bool ok = free_top > 0;
    if (ok)
        *slot = free_slots[--free_top];
    pthread_mutex_unlock(&free_lock);
    return ok;
}

static void push_free(uint32_t slot)
{
    pthread_mutex_lock(&free_lock);
    free_slots[free_top++] = slot;
    pthread_mutex_unlock(&free_lock);
}

uint64_t ledger_register(const soak_scenario *sc, int64_t answer_within_ms)
{
    uint32_t slot;
    if (!pop_free(&slot)) {
        atomic_fetch_add(&g_stats.backpressure, 1);
        return 0;
    }
    uint64_t id = (atomic_fetch_add(&next_seq, 1) << SLOT_BITS) | slot;
    pthread_mutex_lock(lock_of(slot));
    table[slot].id = id;
    table[slot].deadline_ns = soak_now_ns() + (uint64_t)answer_within_ms * 1000000ull;
    table[slot].sc = *sc;
    table[slot].sc.req.id = id;
    table[slot].sc.sent_ns = soak_now_ns();
    pthread_mutex_unlock(lock_of(slot));
    atomic_fetch_add(&in_flight, 1);
    atomic_fetch_add(&g_stats.requests, 1);
    atomic_fetch_add(&g_stats.by_mode[sc->mode], 1);
    return id;
}

/* Take the entry for `id` out of the table; false when it is not there. */
static bool take(uint64_t id, soak_scenario *sc)
{
    uint32_t slot = (uint32_t)(id & (CAPACITY - 1));
    pthread_mutex_lock(lock_of(slot));
    bool found = id != 0 && table[slot].id == id;
    if (found) {
        *sc = table[slot].sc;
        table[slot].id = 0;
    }
    pthread_mutex_unlock(lock_of(slot));
    if (found) {
        push_free(slot);
        atomic_fetch_sub(&in_flight, 1);
    }
    return found;
}

void ledger_withdraw(uint64_t id)
{
    soak_scenario sc;
    if (take(id, &sc))
        atomic_fetch_add(&g_stats.withdrawn, 1);
}

static void describe_unknown(uint64_t id, const soak_outcome *out)
{
    char what[160];
    if (out->error)
        snprintf(what, sizeof what, "%s: %.100s", ac_error_name(out->error),
                 ac_error_message(out->error));
    else
        snprintf(what, sizeof what, "a reply from %s",
                 out->sender ? ac_ref_path(out->sender) : "nobody");
    if (id >> SLOT_BITS && id >> SLOT_BITS < atomic_load(&next_seq))
        soak_violation(
            "request %llu answered twice (or after it was given up): the extra answer was %s",
            (unsigned long long)id, what);
    else
        soak_violation("an answer (%s) for request %llu, which was never sent", what,
                       (unsigned long long)id);
}

void ledger_settle(uint64_t id, const soak_outcome *out)
{
    soak_scenario sc;
    if (!take(id, &sc)) {
        describe_unknown(id, out);
        return;
    }
    atomic_fetch_add(&g_stats.settled, 1);
    atomic_fetch_add(&g_stats.by_kind[expect_kind(out)], 1);
    const char *wrong = expect_check(&sc, out);
    if (wrong)
        soak_violation("request %llu: %s", (unsigned long long)id, wrong);
}

void ledger_dead_letter(uint64_t id, int slot_no, uint32_t gen)
{
    uint32_t slot = (uint32_t)(id & (CAPACITY - 1));
    pthread_mutex_lock(lock_of(slot));
    const entry *e = &table[slot];
    bool mine = id != 0 && e->id == id && e->sc.mode == MODE_TELL_SELF && e->sc.slot == slot_no &&
                e->sc.gen == gen;
    pthread_mutex_unlock(lock_of(slot));
    if (mine) {
        soak_outcome out = {.status = AC_EDEAD, .dead_lettered = true};
        ledger_settle(id, &out);
    }
}

bool ledger_outstanding(uint64_t id)
{
    uint32_t slot = (uint32_t)(id & (CAPACITY - 1));
    pthread_mutex_lock(lock_of(slot));
    bool open = id != 0 && table[slot].id == id;
    pthread_mutex_unlock(lock_of(slot));
    return open;
}

size_t ledger_in_flight(void) { return atomic_load(&in_flight); }

/* ---- the reaper ---------------------------------------------------------- */

static void reap_stripe(int s, uint64_t now, uint64_t grace_ns)
{
    uint64_t lost_tells[16];
    size_t n_lost = 0;
    pthread_mutex_lock(&stripe[s]);
    for (uint32_t slot = (uint32_t)s; slot < CAPACITY; slot += STRIPES) {
        const entry *e = &table[slot];
        /* Time the system spent stalled does not count against it. */
        if (e->id && now > e->deadline_ns + grace_ns &&
            now > e->deadline_ns + grace_ns + stalls_within(e->sc.sent_ns, now)) {
            /* With allocations failing on purpose, a tell (no ask, so no
             * timeout to say so) may be lost at any hop: a message or
             * envelope not made is a send that failed. It is given up,
             * not called a lost answer; asks still must be answered. */
            if (g_cfg.fail_alloc > 0 && e->sc.mode == MODE_TELL_SELF &&
                n_lost < sizeof lost_tells / sizeof lost_tells[0]) {
                lost_tells[n_lost++] = e->id;
                continue;
            }
            char desc[200];
            expect_describe(&e->sc, desc, sizeof desc);
            soak_violation("request %llu (%s) unanswered %llu ms past its deadline (grace %lld "
                           "ms): a lost answer",
                           (unsigned long long)e->id, desc,
                           (unsigned long long)((now - e->deadline_ns) / 1000000),
                           (long long)g_cfg.grace_ms);
            table[slot].deadline_ns = UINT64_MAX / 2; /* reported once */
        }
    }
    pthread_mutex_unlock(&stripe[s]);
    for (size_t i = 0; i < n_lost; i++)
        ledger_withdraw(lost_tells[i]);
}

static void *reaper_main(void *arg)
{
    (void)arg;
    uint64_t grace_ns = (uint64_t)g_cfg.grace_ms * 1000000ull;
    while (!atomic_load(&reaper_stop)) {
        uint64_t now = soak_now_ns();
        for (int s = 0; s < STRIPES; s++)
            reap_stripe(s, now, grace_ns);
        soak_sleep_us(REAP_EVERY_US);
        uint64_t woke = soak_now_ns();
        if (woke - now > 2 * REAP_EVERY_US * 1000ull)
            stalls_record(now + REAP_EVERY_US * 1000ull, woke);
    }
    return NULL;
}

void ledger_start_reaper(void)
{
    ledger_init();
    pthread_create(&reaper, NULL, reaper_main, NULL);
}

void ledger_stop_reaper(void)
{
    atomic_store(&reaper_stop, true);
    pthread_join(reaper, NULL);
}

bool ledger_drain(int64_t ms)
{
    uint64_t until = soak_now_ns() + (uint64_t)ms * 1000000ull;
    while (ledger_in_flight() > 0 && soak_now_ns() < until && !atomic_load(&g_failed))
        soak_sleep_us(2000);
    return ledger_in_flight() == 0;
}
