/*
 * What the wire tests, the fuzz target and its corpus share: a user
 * message type with wire hooks, the type a decoded type name stands for,
 * and sample frames of every kind, sender and payload.
 *
 * Single-threaded: the encode-call counter is a plain global.
 */
#ifndef ACTORC_TEST_WIRE_SAMPLES_H
#define ACTORC_TEST_WIRE_SAMPLES_H

#include <stddef.h>
#include <stdint.h>

#include <actorc.h>

#include "remote/wire.h"

/* test.Point: two int32s and a label, which travel as 4 + 4 bytes (big
 * endian) and the label's bytes. Its decode hook refuses a body shorter
 * than 8 bytes, a label longer than the payload holds or one with a NUL. */
typedef struct ws_point {
    int32_t x, y;
    char label[24];
} ws_point;

extern const ac_msg_type ws_point_type;
/* Calls of its encode hook so far. */
extern unsigned ws_point_encode_calls;
ac_msg *ws_point_new(int32_t x, int32_t y, const char *label);

/* The type a decoded type name stands for: a built-in, test.Point, or
 * NULL. */
const ac_msg_type *ws_type_named(ac__wire_span name);

/* A span over a C string. */
ac__wire_span ws_span(const char *s);
/* Same contents? */
bool ws_span_eq(ac__wire_span a, ac__wire_span b);

/* The samples: every frame kind with every sender variant it can carry
 * (a HELLO only with its node), the payloads taking turns among String,
 * Bytes, Int64, Error, test.Point and a raw body. */
size_t ws_sample_count(void);
/* Sample i as a whole frame, malloc'd (free it); its name in *name
 * (static storage), e.g. "tell-local-string". */
uint8_t *ws_sample_frame(size_t i, size_t *len, const char **name);
/* The envelope of sample i, its spans in static storage, body and type as
 * the frame carries them when `with_msg` is NULL; else *with_msg is the
 * message whose codec makes the body (one reference, the caller's), or
 * NULL for a raw body. */
ac__wire_env ws_sample_env(size_t i, ac_msg **with_msg);

/* Sample errors: an AggregateError of three AskTimeoutErrors, and one
 * with members, causes and a message that is not UTF-8. */
ac_error *ws_aggregate_of_timeouts(void);
ac_error *ws_mixed_error(void);

/* A chain of `depth` errors, each the cause of the one above. */
ac_error *ws_error_chain(size_t depth);

/* The seeds of the fuzz corpus (corpus/): every sample frame
 * ("frame-<name>.cbor"), the sample errors and a chain as deep as errors
 * go ("error-<name>.cbor"), Int64 bodies ("int64-<name>.cbor"), a
 * String body, and a message of three frames back to back
 * ("batch-three-frames.cbor"). Seed i, malloc'd, with its file name in *name (static
 * storage); NULL past the last. */
uint8_t *ws_corpus_seed(size_t i, size_t *len, const char **name);

/* Encode into a malloc'd buffer, growing it until it fits. NULL on 0 (not
 * encodable). */
uint8_t *ws_encode_env(const ac__wire_env *env, size_t *len);
uint8_t *ws_encode_msg(const ac__wire_env *env, const ac_msg *msg, size_t *len);
uint8_t *ws_encode_error(const ac_error *err, size_t *len);

#endif
