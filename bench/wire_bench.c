/*
 * actorc-wire-bench: the wire codec of actorc_remote on one thread.
 *
 *   actorc-wire-bench            every workload
 *   actorc-wire-bench NAME       one: wire_encode, wire_decode,
 *                                wire_encode_msg, wire_decode_msg
 *
 * The frame is an ASK from an actor on another node (system, address,
 * incarnation, path) to a local path, with a type name, a deadline and a
 * 48-byte body: about 170 bytes, what a small request costs on the wire.
 * wire_encode and wire_decode time the envelope alone (the body a span of
 * bytes already encoded); wire_encode_msg writes a String message's frame
 * with ac__wire_encode_msg (its body in place), and wire_decode_msg
 * decodes such a frame and its payload into a new message, released in
 * the loop. Each workload runs ROUNDS rounds of ITERATIONS frames after a
 * warm-up and prints the median round as `RESULT <workload> ns_per_frame
 * <v> ns`; a decode that fails, or an encode of the wrong size, is a
 * VERIFICATION FAILED.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "remote/wire.h"

#define ROUNDS 7
#define ITERATIONS 1000000
#define FRAME_CAP 512

static ac__wire_span span(const char *s) { return (ac__wire_span){(const uint8_t *)s, strlen(s)}; }

static const char BODY[] = "{\"user\":\"user-42\",\"fields\":[\"name\",\"email\"]}..";

static ac__wire_env request_env(void)
{
    return (ac__wire_env){
        .kind = AC__WIRE_ASK,
        .corr = 0x1234567,
        .target_inc = 0x0123456789abcdefu,
        .target_path = span("/user/store/replica-2"),
        .sender = {.kind = AC__WIRE_SENDER_ACTOR,
                   .system = span("frontend"),
                   .address = span("tcp://10.0.0.12:7000"),
                   .incarnation = 0xdeadbeefcafe0001u,
                   .path = span("/user/http/conn-17")},
        .type_name = span("app.GetUser"),
        .deadline_us = 250000,
        .payload_size = sizeof BODY,
        .body = {(const uint8_t *)BODY, sizeof BODY - 1},
    };
}

static volatile uint64_t sink;

typedef uint64_t (*round_fn)(void *ctx);

/* The median of ROUNDS rounds, in ns per frame. */
static double time_rounds(round_fn run, void *ctx)
{
    double ns[ROUNDS];
    sink += run(ctx); /* warm-up */
    for (int r = 0; r < ROUNDS; r++) {
        int64_t t0 = now_ns();
        sink += run(ctx);
        ns[r] = (double)(now_ns() - t0) / ITERATIONS;
    }
    return median(ns, ROUNDS);
}

typedef struct frame {
    ac__wire_env env;
    ac_msg *msg;
    uint8_t buf[FRAME_CAP];
    size_t len;
} frame;

static uint64_t encode_round(void *ctx)
{
    frame *f = ctx;
    uint64_t total = 0;
    for (int i = 0; i < ITERATIONS; i++) {
        f->env.corr = (uint64_t)i;
        total += ac__wire_encode(&f->env, f->buf, sizeof f->buf);
    }
    return total;
}

static uint64_t decode_round(void *ctx)
{
    const frame *f = ctx;
    uint64_t total = 0;
    for (int i = 0; i < ITERATIONS; i++) {
        ac__wire_env env;
        if (ac__wire_decode(f->buf, f->len, &ac__wire_default_limits, &env, NULL) != AC_OK)
            fail("wire_decode: a valid frame refused");
        total += env.corr + env.body.len;
    }
    return total;
}

static uint64_t encode_msg_round(void *ctx)
{
    frame *f = ctx;
    uint64_t total = 0;
    for (int i = 0; i < ITERATIONS; i++) {
        f->env.corr = (uint64_t)i;
        total += ac__wire_encode_msg(&f->env, f->msg, f->buf, sizeof f->buf);
    }
    return total;
}

static uint64_t decode_msg_round(void *ctx)
{
    const frame *f = ctx;
    uint64_t total = 0;
    for (int i = 0; i < ITERATIONS; i++) {
        ac__wire_env env;
        if (ac__wire_decode(f->buf, f->len, &ac__wire_default_limits, &env, NULL) != AC_OK)
            fail("wire_decode_msg: a valid frame refused");
        ac_msg *m = ac__wire_decode_payload(&ac_msg_type_str, env.body.ptr, env.body.len,
                                            env.payload_size, &ac__wire_default_limits, NULL);
        if (!m)
            fail("wire_decode_msg: a valid payload refused");
        total += ac_msg_size(m);
        ac_msg_release(m);
    }
    return total;
}

static void setup(frame *f, bool with_msg)
{
    f->env = request_env();
    f->msg = with_msg ? ac_msg_str_new(BODY) : NULL;
    if (with_msg && !f->msg)
        die("ac_msg_str_new");
    f->len = with_msg ? ac__wire_encode_msg(&f->env, f->msg, f->buf, sizeof f->buf)
                      : ac__wire_encode(&f->env, f->buf, sizeof f->buf);
    if (f->len == 0 || f->len > sizeof f->buf)
        fail("the frame does not fit its buffer");
}

typedef struct workload {
    const char *name;
    round_fn run;
    bool with_msg;
} workload;

static const workload workloads[] = {
    {"wire_encode", encode_round, false},
    {"wire_decode", decode_round, false},
    {"wire_encode_msg", encode_msg_round, true},
    {"wire_decode_msg", decode_msg_round, true},
};

static void run_workload(const workload *w)
{
    frame *f = xcalloc(1, sizeof *f);
    setup(f, w->with_msg);
    printf("# %s: a %zu-byte frame\n", w->name, f->len);
    result(w->name, "ns_per_frame", time_rounds(w->run, f), "ns");
    ac_msg_release(f->msg);
    free(f);
}

int main(int argc, char **argv)
{
    size_t n = sizeof workloads / sizeof *workloads;
    bool ran = false;
    for (size_t i = 0; i < n; i++) {
        if (argc < 2 || strcmp(argv[1], workloads[i].name) == 0) {
            run_workload(&workloads[i]);
            ran = true;
        }
    }
    if (!ran) {
        fprintf(stderr, "usage: actorc-wire-bench [wire_encode|wire_decode|wire_encode_msg|"
                        "wire_decode_msg]\n");
        return 2;
    }
    return 0;
}
