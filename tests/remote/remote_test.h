/*
 * What the remote tests and their node program (node_main.c) share: the
 * error the "fail" actor answers with, and a user type with a codec.
 */
#ifndef ACTORC_TESTS_REMOTE_TEST_H
#define ACTORC_TESTS_REMOTE_TEST_H

#include <string.h>

#include <actorc.h>

/* An AggregateError of three AskTimeoutErrors, with a cause: what the
 * node's "fail" actor replies, built the same way on both sides. */
static inline ac_error *rt_aggregate_error(void)
{
    ac_error *m[3];
    for (int i = 0; i < 3; i++)
        m[i] = ac_error_new(AC_ASK_TIMEOUT_ERROR, "Ask timed out on actorc://replicas/user/r%d after 80 ms",
                            i + 1);
    ac_error *agg = ac_error_aggregate(m, 3, "Scatter/gather router actorc://replicas/user/pool: none "
                                             "of 3 routees replied within 80ms");
    for (int i = 0; i < 3; i++)
        ac_error_release(m[i]);
    return agg;
}

/* A user type: two doubles, little-endian on the wire. */
typedef struct rt_point {
    double x, y;
} rt_point;

static inline size_t rt_point_encode(const void *payload, size_t size, uint8_t *buf, size_t cap)
{
    if (size != sizeof(rt_point))
        return 0;
    if (cap >= sizeof(rt_point))
        memcpy(buf, payload, sizeof(rt_point));
    return sizeof(rt_point);
}

static inline int rt_point_decode(const uint8_t *buf, size_t len, void *payload, size_t size)
{
    if (len != sizeof(rt_point) || size != sizeof(rt_point))
        return AC_EINVAL;
    memcpy(payload, buf, len);
    return AC_OK;
}

static const ac_msg_type rt_point_type = {
    .name = "test.Point", .encode = rt_point_encode, .decode = rt_point_decode};

/* The same name and no codec: cannot cross the wire. */
static const ac_msg_type rt_opaque_type = {.name = "test.Opaque"};
/* A codec the node program does not register. */
static const ac_msg_type rt_unknown_type = {
    .name = "test.Unknown", .encode = rt_point_encode, .decode = rt_point_decode};

#endif
