/*
 * The wire decoders under arbitrary bytes: a fuzz target.
 *
 * LLVMFuzzerTestOneInput gives one input to every decoder a peer's bytes
 * reach: the envelope, then the payload codec its type name selects over
 * its body, the frames of a message read one after another, and, on
 * their own, the error decoder and the Int64 and String payload
 * decoders. Whatever decodes must re-encode and decode again to
 * the same thing (the encoder writes shortest forms, so a re-encoded
 * envelope is never longer than its input); a difference aborts, as does
 * any sanitizer report.
 *
 * Built two ways: with clang's -fsanitize=fuzzer as the fuzzer fuzz_wire
 * (when the compiler has it), and into the corpus test of the plain suite
 * (test_corpus.c), which replays the committed corpus and deterministic
 * mutations of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire_samples.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "fuzz_wire: %s failed at line %d\n", #cond, __LINE__); \
            abort();                                                          \
        }                                                                     \
    } while (0)

/* Small limits, so that inputs reach them. */
static const ac__wire_limits limits = {
    .max_frame = 1u << 16,
    .max_text = 256,
    .max_body = 1u << 15,
    .max_payload = 1u << 15,
    .max_errors = 64,
};

static bool sender_eq(const ac__wire_sender *a, const ac__wire_sender *b)
{
    return a->kind == b->kind && ws_span_eq(a->system, b->system) &&
           ws_span_eq(a->address, b->address) && ws_span_eq(a->path, b->path) &&
           a->incarnation == b->incarnation && a->corr == b->corr;
}

static bool env_eq(const ac__wire_env *a, const ac__wire_env *b)
{
    return a->version == b->version && a->kind == b->kind && a->flags == b->flags &&
           a->corr == b->corr && a->target_inc == b->target_inc &&
           ws_span_eq(a->target_path, b->target_path) && sender_eq(&a->sender, &b->sender) &&
           ws_span_eq(a->type_name, b->type_name) && a->deadline_us == b->deadline_us &&
           a->payload_size == b->payload_size && ws_span_eq(a->body, b->body);
}

static void check_envelope_again(const ac__wire_env *env, size_t size)
{
    uint8_t *again = malloc(size);
    FUZZ_CHECK(again);
    size_t n = ac__wire_encode(env, again, size);
    FUZZ_CHECK(n > 0 && n <= size);
    ac__wire_env env2;
    FUZZ_CHECK(ac__wire_decode(again, n, &limits, &env2, NULL) == AC_OK);
    FUZZ_CHECK(env_eq(env, &env2));
    free(again);
}

static bool same_error(const ac_error *a, const ac_error *b)
{
    char *sa = ac_error_to_string(a), *sb = ac_error_to_string(b);
    bool same = sa && sb && strcmp(sa, sb) == 0 && ac_error_depth(a) == ac_error_depth(b);
    free(sa);
    free(sb);
    return same;
}

static bool same_msg(const ac_msg *a, const ac_msg *b)
{
    if (ac_msg_type_of(a) != ac_msg_type_of(b))
        return false;
    if (ac_msg_is(a, &ac_msg_type_error))
        return same_error(ac_msg_error(a), ac_msg_error(b));
    return ac_msg_size(a) == ac_msg_size(b) &&
           memcmp(ac_msg_data(a), ac_msg_data(b), ac_msg_size(a)) == 0;
}

static void check_payload_again(const ac_msg *msg)
{
    uint64_t payload_size;
    size_t need = ac__wire_encode_payload(msg, NULL, 0, &payload_size);
    FUZZ_CHECK(need != SIZE_MAX);
    uint8_t *body = malloc(need ? need : 1);
    FUZZ_CHECK(body);
    FUZZ_CHECK(ac__wire_encode_payload(msg, body, need, &payload_size) == need);
    ac_msg *again = ac__wire_decode_payload(ac_msg_type_of(msg), body, need, payload_size,
                                            &ac__wire_default_limits, NULL);
    FUZZ_CHECK(again && same_msg(msg, again));
    ac_msg_release(again);
    free(body);
}

static void try_payload(const ac_msg_type *type, const uint8_t *body, size_t len,
                        uint64_t payload_size)
{
    const char *why = NULL;
    ac_msg *msg = ac__wire_decode_payload(type, body, len, payload_size, &limits, &why);
    FUZZ_CHECK(msg || why);
    if (msg)
        check_payload_again(msg);
    ac_msg_release(msg);
}

static void try_error(const uint8_t *data, size_t size)
{
    const char *why = NULL;
    ac_error *err = ac__wire_decode_error(data, size, limits.max_errors, &why);
    FUZZ_CHECK(err || why);
    if (!err)
        return;
    FUZZ_CHECK(ac_error_depth(err) <= AC_ERROR_MAX_DEPTH);
    size_t n;
    uint8_t *again = ws_encode_error(err, &n);
    FUZZ_CHECK(again);
    ac_error *err2 = ac__wire_decode_error(again, n, limits.max_errors, NULL);
    FUZZ_CHECK(err2 && same_error(err, err2));
    ac_error_release(err2);
    ac_error_release(err);
    free(again);
}

/* The input as a message of frames back to back, as a node reads one:
 * each frame that decodes re-encodes to itself and ends within the
 * input; the first that does not ends the message. A whole-frame decode
 * that succeeds is a sequence of one. */
static void try_sequence(const uint8_t *data, size_t size, bool whole_ok)
{
    size_t at = 0, frames = 0;
    while (at < size) {
        ac__wire_env env;
        size_t used = 0;
        const char *why = NULL;
        if (ac__wire_decode_next(data + at, size - at, &limits, &env, &used, &why) != AC_OK) {
            FUZZ_CHECK(why != NULL && !(whole_ok && frames == 0));
            return;
        }
        FUZZ_CHECK(used > 0 && used <= size - at);
        check_envelope_again(&env, used);
        at += used;
        frames++;
    }
    FUZZ_CHECK(!whole_ok || frames == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ac__wire_env env;
    const char *why = NULL;
    if (ac__wire_decode(data, size, &limits, &env, &why) == AC_OK) {
        check_envelope_again(&env, size);
        const ac_msg_type *type = ws_type_named(env.type_name);
        if (type)
            try_payload(type, env.body.ptr, env.body.len, env.payload_size);
    } else {
        FUZZ_CHECK(why != NULL);
    }
    try_sequence(data, size, why == NULL);
    try_error(data, size);
    try_payload(&ac_msg_type_int64, data, size, sizeof(int64_t));
    try_payload(&ac_msg_type_str, data, size, (uint64_t)size + 1);
    return 0;
}
