/*
 * Ordered tell streams: the per-sender FIFO promise, under the same load.
 *
 * Two source actors and the driver thread send numbered tells to two
 * sink actors: the sources as themselves (sender: self), the driver with
 * no sender. A stream is one (source, sink) pair. The sink expects each
 * stream's numbers to go 1, 2, 3, ... with no gap, no repeat and no
 * reordering; at the end every number sent must have arrived. Sources
 * and sinks are never stopped, so nothing of a stream may be lost. The
 * driver holds back while a sink is more than a few thousand tells
 * behind, so the sinks' mailboxes stay bounded.
 */
#include <string.h>

#include "soak.h"

#define SOURCES 2
#define SINKS 2
#define STREAMS ((SOURCES + 1) * SINKS) /* source index SOURCES: the driver */
#define MAX_BEHIND 4096

typedef struct seq_msg {
    uint32_t stream;
    uint64_t seq;
} seq_msg;

typedef struct burst_msg {
    uint32_t sink, count;
} burst_msg;

static const ac_msg_type seq_type = {.name = "soak.Seq"};
static const ac_msg_type burst_type = {.name = "soak.Burst"};

static ac_ref *sources[SOURCES], *sinks[SINKS];
static atomic_uint_fast64_t sent[STREAMS], received[STREAMS];
static uint64_t driver_seq[SINKS]; /* the driver thread's own counters */
static int source_index[SOURCES];

typedef struct source_state {
    uint64_t next[SINKS];
} source_state;

typedef struct sink_state {
    uint64_t expected[STREAMS];
} sink_state;

static bool send_seq(ac_ref *to, uint32_t stream, uint64_t seq, ac_ref *sender)
{
    ac_msg *m = ac_msg_new(&seq_type, sizeof(seq_msg));
    if (!m)
        return false;
    *(seq_msg *)ac_msg_payload(m) = (seq_msg){.stream = stream, .seq = seq};
    if (ac_tell(to, m, sender) != AC_OK)
        return false;
    atomic_fetch_add(&sent[stream], 1);
    atomic_fetch_add(&g_stats.tells_sent, 1);
    return true;
}

static void source_receive(ac_ctx *ctx, ac_msg *msg)
{
    source_state *st = ac_ctx_state(ctx);
    const burst_msg *b = ac_msg_data(msg);
    int src = *(const int *)ac_ctx_user_data(ctx);
    uint32_t stream = (uint32_t)(src * SINKS) + b->sink;
    for (uint32_t i = 0; i < b->count; i++)
        if (send_seq(sinks[b->sink], stream, st->next[b->sink] + 1, ac_self(ctx)))
            st->next[b->sink]++;
}

static void sink_receive(ac_ctx *ctx, ac_msg *msg)
{
    sink_state *st = ac_ctx_state(ctx);
    const seq_msg *s = ac_msg_data(msg);
    uint32_t src = s->stream / SINKS;
    bool from_source = src < SOURCES && ac_sender(ctx) == sources[src];
    if (src < SOURCES ? !from_source : ac_sender(ctx) != NULL)
        soak_violation("stream %u: a tell from %s, not from its source", s->stream,
                       ac_ref_path(ac_sender(ctx)));
    if (s->seq != st->expected[s->stream] + 1)
        soak_violation("FIFO broken: stream %u to %s delivered tell %llu after %llu", s->stream,
                       ac_self_name(ctx), (unsigned long long)s->seq,
                       (unsigned long long)st->expected[s->stream]);
    st->expected[s->stream] = s->seq;
    atomic_fetch_add(&received[s->stream], 1);
    atomic_fetch_add(&g_stats.tells_received, 1);
}

static const ac_actor_def source_def = {
    .name = "SoakSource", .state_size = sizeof(source_state), .receive = source_receive};
static const ac_actor_def sink_def = {
    .name = "SoakSink", .state_size = sizeof(sink_state), .receive = sink_receive};

static ac_ref *spawn_named(ac_system *sys, const ac_actor_def *def, void *user, const char *what,
                           int i)
{
    char name[32];
    snprintf(name, sizeof name, "%s-%d", what, i);
    ac_props *p = ac_props_new(def, user);
    return p ? ac_spawn(sys, p, name) : NULL;
}

int streams_start(ac_system *sys)
{
    for (int i = 0; i < SINKS; i++)
        if (!(sinks[i] = spawn_named(sys, &sink_def, NULL, "sink", i)))
            return -1;
    for (int i = 0; i < SOURCES; i++) {
        source_index[i] = i;
        if (!(sources[i] = spawn_named(sys, &source_def, &source_index[i], "source", i)))
            return -1;
    }
    return 0;
}

static uint64_t behind(uint32_t sink)
{
    uint64_t n = 0;
    for (uint32_t src = 0; src <= SOURCES; src++) {
        uint32_t s = src * SINKS + sink;
        n += atomic_load(&sent[s]) - atomic_load(&received[s]);
    }
    return n;
}

void streams_step(soak_rng *rng)
{
    uint32_t src = soak_rng_below(rng, SOURCES + 1);
    uint32_t sink = soak_rng_below(rng, SINKS);
    uint32_t count = 1 + soak_rng_below(rng, 32);
    if (behind(sink) > MAX_BEHIND)
        return;
    if (src == SOURCES) {
        for (uint32_t i = 0; i < count; i++)
            if (send_seq(sinks[sink], src * SINKS + sink, driver_seq[sink] + 1, NULL))
                driver_seq[sink]++;
        return;
    }
    ac_msg *m = ac_msg_new(&burst_type, sizeof(burst_msg));
    if (!m)
        return;
    *(burst_msg *)ac_msg_payload(m) = (burst_msg){.sink = sink, .count = count};
    ac_tell(sources[src], m, NULL);
}

bool streams_verify(void)
{
    uint64_t until = soak_now_ns() + 5000000000ull;
    for (int s = 0; s < STREAMS; s++) {
        while (atomic_load(&received[s]) < atomic_load(&sent[s]) && soak_now_ns() < until)
            soak_sleep_us(1000);
        uint64_t got = atomic_load(&received[s]), want = atomic_load(&sent[s]);
        if (got != want) {
            soak_violation("stream %d lost tells: %llu sent, %llu delivered", s,
                           (unsigned long long)want, (unsigned long long)got);
            return false;
        }
    }
    return true;
}
