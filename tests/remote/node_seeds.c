/*
 * The hand-made seeds of the inbound-path fuzz target (fuzz_node.h has
 * the format): each walks one way into the node, so that the fuzzer
 * starts deep. The committed corpus (corpus-node/) holds them as
 * "seed-<name>.bin", written by the node_corpus tool (gen_node_corpus.c)
 * and checked by the suite, beside what the fuzzer found
 * ("found-<what>.bin").
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_node.h"
#include "remote/wire.h"

/* Operand spellings. */
#define HELLO_A_AT(addr) FN_OP_HELLO, 0, FN_RID_A, FN_INC_ZERO, addr, FN_SYS_FAKE, 0
#define HELLO_A HELLO_A_AT(FN_ADDR_FAKE_A)
#define NO_SENDER 0
#define LOCAL_SENDER 1
#define ACTOR_SENDER 2
#define REPLY_SENDER 3
#define MSG 0 /* a body of a message the harness makes */
#define RAW_BODY 1
#define NO_BODY RAW_BODY, FN_TYPE_EMPTY, 0, FN_SIZE_BODY
#define STR_HI FN_MSG_STRING, 2, 'h', 'i'
#define PATH_USER_A FN_PATH_TEXT, 7, '/', 'u', 's', 'e', 'r', '/', 'a'
/* One envelope of kind k to path p, no sender, the string "hi". */
#define ENV(k, p) k, 0, FN_CORR_ZERO, FN_INC_ZERO, p, NO_SENDER, MSG, STR_HI, 0

typedef struct seed {
    const char *name;
    const uint8_t *data;
    size_t len;
} seed;

#define SEED(n, ...)                                                                          \
    {                                                                                         \
        n, (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})             \
    }

static const seed seeds[] = {
    SEED("hello-ask-echo", HELLO_A, FN_OP_FRAMES, 0, 0,
         AC__WIRE_ASK, 0, FN_CORR_ONE, FN_INC_ZERO, FN_PATH_ECHO, NO_SENDER, MSG, STR_HI, 0),
    SEED("tell-kid-from-local-sender", HELLO_A, FN_OP_FRAMES, 0, 0,
         AC__WIRE_TELL, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_KID, LOCAL_SENDER, PATH_USER_A,
         MSG, FN_MSG_INT64, 0, 0, 0, 0, 0, 0, 0, 42, 0),
    SEED("echo-to-sender-at-fake-b", HELLO_A, FN_OP_FRAMES, 0, 0,
         AC__WIRE_TELL, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_ECHO,
         ACTOR_SENDER, FN_SYS_FAKE, FN_ADDR_FAKE_B, FN_INC_B, FN_PATH_SINK, MSG, STR_HI, 0),
    SEED("echo-to-reply-at-refused-port", HELLO_A, FN_OP_FRAMES, 0, 0,
         AC__WIRE_TELL, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_ECHO,
         REPLY_SENDER, FN_SYS_TEXT, 3, 'a', 'b', 'c', FN_ADDR_REFUSED, FN_INC_C,
         FN_CORR_RAW, 0, 0, 0, 0, 0, 0, 0, 9, MSG, STR_HI, 0),
    SEED("echo-to-sender-at-silent-port", HELLO_A, FN_OP_FRAMES, 0, 0,
         AC__WIRE_TELL, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_ECHO,
         ACTOR_SENDER, FN_SYS_FAKE, FN_ADDR_SILENT, FN_INC_B, FN_PATH_SINK, MSG, STR_HI, 0,
         FN_OP_SETTLE, 7),
    SEED("watch-unwatch-watch-nobody", HELLO_A, FN_OP_FRAMES, 0, 2,
         AC__WIRE_WATCH, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_ECHO, LOCAL_SENDER, PATH_USER_A,
         NO_BODY, 0,
         AC__WIRE_UNWATCH, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_ECHO, LOCAL_SENDER, PATH_USER_A,
         NO_BODY, 0,
         AC__WIRE_WATCH, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_NOBODY, LOCAL_SENDER,
         PATH_USER_A, NO_BODY, 0),
    SEED("watch-and-leave", HELLO_A, FN_OP_FRAMES, 0, 1,
         AC__WIRE_WATCH, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_SINK, LOCAL_SENDER, PATH_USER_A,
         NO_BODY, 0, ENV(AC__WIRE_LEAVE, FN_PATH_EMPTY)),
    SEED("terminated-from-peer", HELLO_A, FN_OP_FRAMES, 0, 0,
         AC__WIRE_TERMINATED, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_SYS_WATCH, LOCAL_SENDER,
         PATH_USER_A, NO_BODY, 0),
    SEED("ask-through-ref-and-reply",
         FN_OP_RESOLVE, 0, 0, FN_SYS_FAKE, 1, FN_ADDR_FAKE_A, FN_PATH_ECHO,
         FN_OP_ASK, FN_TARGET_REF0, STR_HI, 49,
         FN_OP_HELLO, 0, FN_RID_A, FN_INC_SRV, FN_ADDR_FAKE_A, FN_SYS_FAKE, 0,
         FN_OP_FRAMES, 0, 0,
         AC__WIRE_REPLY, 0, FN_CORR_LAST, FN_INC_SRV, FN_PATH_EMPTY, NO_SENDER, MSG, STR_HI, 0),
    SEED("ask-through-ref-and-undeliverable",
         FN_OP_RESOLVE, 0, 0, FN_SYS_FAKE, 1, FN_ADDR_FAKE_A, FN_PATH_ECHO,
         FN_OP_ASK, FN_TARGET_REF0, STR_HI, 49,
         FN_OP_HELLO, 0, FN_RID_A, FN_INC_SRV, FN_ADDR_FAKE_A, FN_SYS_FAKE, 0,
         FN_OP_FRAMES, 0, 0,
         AC__WIRE_UNDELIVERABLE, 1, FN_CORR_LAST, FN_INC_SRV, FN_PATH_EMPTY, NO_SENDER,
         RAW_BODY, FN_TYPE_EMPTY, 3, 'w', 'h', 'y', FN_SIZE_ZERO, 0),
    SEED("three-parts", FN_OP_PARTS, 0, FN_RID_A, 1, 1, 0xff, 2, 0x83, 0x01, 0),
    SEED("raw-ten-bytes", HELLO_A, FN_OP_RAW, 0, 0, 10,
         0x01, 0x00, 0x03, 0x01, 0x61, 0x62, 0x03, 0x00, 0x63, 0x64),
    SEED("hello-tell-leave-in-one-message", FN_OP_FRAMES, 0, FN_RID_A, 2,
         AC__WIRE_HELLO, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_EMPTY,
         ACTOR_SENDER, FN_SYS_FAKE, FN_ADDR_FAKE_A, FN_INC_A, FN_PATH_EMPTY, NO_BODY, 0,
         ENV(AC__WIRE_TELL, FN_PATH_ECHO), ENV(AC__WIRE_LEAVE, FN_PATH_EMPTY)),
    SEED("new-incarnation-at-same-address", HELLO_A,
         FN_OP_HELLO, 1, FN_RID_B, FN_INC_ZERO, FN_ADDR_FAKE_A, FN_SYS_FAKE, 0,
         FN_OP_FRAMES, 0, 0, ENV(AC__WIRE_ASK, FN_PATH_ECHO),
         FN_OP_FRAMES, 1, 0, ENV(AC__WIRE_ASK, FN_PATH_ECHO)),
    SEED("hello-again-without-knowing-srv", HELLO_A, FN_OP_SETTLE, 0,
         FN_OP_HELLO, 0, FN_INC_ZERO, FN_ADDR_FAKE_A, FN_SYS_FAKE, 0,
         FN_OP_HELLO, 0, FN_INC_SRV, FN_ADDR_FAKE_A, FN_SYS_FAKE, 0),
    SEED("ask-for-an-earlier-incarnation", HELLO_A, FN_OP_FRAMES, 0, 0,
         AC__WIRE_ASK, 0, FN_CORR_ONE, FN_INC_SMALL, 7, FN_PATH_ECHO, NO_SENDER, MSG, STR_HI, 0),
    SEED("ask-without-hello", FN_OP_FRAMES, 0, FN_RID_C, 0, ENV(AC__WIRE_ASK, FN_PATH_ECHO)),
    SEED("hello-claiming-srv-address", HELLO_A_AT(FN_ADDR_SRV)),
    SEED("hello-with-srv-incarnation", FN_OP_HELLO, 0, FN_RID_SRV, FN_INC_ZERO, FN_ADDR_FAKE_A,
         FN_SYS_FAKE, 0),
    SEED("hello-with-a-card", FN_OP_HELLO, 0, FN_RID_A, FN_INC_ZERO, FN_ADDR_FAKE_A, FN_SYS_FAKE,
         FN_HELLO_CARD, 4, 'c', 'a', 'r', 'd', 2, 0xa0, 0xff),
    SEED("resolve-tell-ask",
         FN_OP_RESOLVE, 0, 0, FN_SYS_SRV, 0, FN_PATH_ECHO,
         FN_OP_TELL, FN_TARGET_REF0, STR_HI, FN_SENDER_ECHO,
         FN_OP_RESOLVE, 1, 1, 31, 'a', 'c', 't', 'o', 'r', 'c', ':', '/', '/', 'x', '@', '1', '2',
         '7', '.', '0', '.', '0', '.', '1', ':', '1', '/', 'u', 's', 'e', 'r', '/', 'a', '/', 'b',
         FN_OP_TELL, FN_TARGET_REF0 + 1, FN_MSG_INT64, 1, 2, 3, 4, 5, 6, 7, 8, FN_SENDER_WATCHER,
         FN_OP_RESOLVE, 2, 0, FN_SYS_FAKE, 1, FN_ADDR_FAKE_B, FN_PATH_KID,
         FN_OP_ASK, FN_TARGET_REF0 + 2, STR_HI, 9),
    SEED("watcher-watches-a-peer-actor", HELLO_A, FN_OP_FRAMES, 0, 1,
         AC__WIRE_TELL, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_WATCHER, LOCAL_SENDER, PATH_USER_A,
         MSG, STR_HI, 0,
         AC__WIRE_TELL, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_WATCHER, LOCAL_SENDER, PATH_USER_A,
         MSG, FN_MSG_UNWATCH, 0),
    SEED("tell-to-system-path", HELLO_A, FN_OP_FRAMES, 0, 0,
         ENV(AC__WIRE_TELL, FN_PATH_SYS_OTHER)),
    SEED("payloads", HELLO_A, FN_OP_FRAMES, 0, 2,
         AC__WIRE_ASK, 0, FN_CORR_ONE, FN_INC_ZERO, FN_PATH_ECHO, NO_SENDER,
         MSG, FN_MSG_ERROR, 3, 1, 'E', 2, 'm', 'm', 0,
         AC__WIRE_ASK, 0, FN_CORR_ONE, FN_INC_ZERO, FN_PATH_ECHO, NO_SENDER,
         MSG, FN_MSG_POINT, 3, 4, 1, 'p', 0,
         AC__WIRE_ASK, 0, FN_CORR_ONE, FN_INC_ZERO, FN_PATH_ECHO, NO_SENDER,
         RAW_BODY, FN_TYPE_UNKNOWN, 1, 'x', FN_SIZE_BODY, 0),
    SEED("bad-bodies", HELLO_A, FN_OP_FRAMES, 0, 2,
         AC__WIRE_ASK, 0, FN_CORR_ONE, FN_INC_ZERO, FN_PATH_ECHO, NO_SENDER,
         RAW_BODY, FN_TYPE_INT64, 3, 'a', 'b', 'c', FN_SIZE_EIGHT, 0,
         AC__WIRE_ASK, 0, FN_CORR_ONE, FN_INC_ZERO, FN_PATH_ECHO, NO_SENDER,
         RAW_BODY, FN_TYPE_STRING, 1, 'x', FN_SIZE_HUGE, 0,
         AC__WIRE_TELL, 0, FN_CORR_ZERO, FN_INC_ZERO, FN_PATH_ECHO, NO_SENDER,
         RAW_BODY, FN_TYPE_POINT, 2, 0, 1, FN_SIZE_BODY, 0),
    SEED("close-and-open-again", HELLO_A, FN_OP_CLOSE, 0,
         FN_OP_HELLO, 0, FN_RID_B, FN_INC_ZERO, FN_ADDR_FAKE_B, FN_SYS_FAKE, 0,
         FN_OP_FRAMES, 0, 0, ENV(AC__WIRE_ASK, FN_PATH_KID)),
    SEED("odd-routing-ids", FN_OP_HELLO, 0, FN_RID_SHORT, 3, 1, 2, 3, 4, FN_INC_ZERO,
         FN_ADDR_FAKE_A, FN_SYS_FAKE, 0,
         FN_OP_FRAMES, 1, FN_RID_LONG, 0, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0,
         ENV(AC__WIRE_ASK, FN_PATH_ECHO)),
    /* What the fuzzer found first as a crash that needed many inputs
     * before it: a DEALER whose routing id is srv's incarnation, which
     * srv's own DEALER takes over when srv dials itself; what the peer's
     * DEALER sends then, and its close, made libzmq 4.3.4 abort srv's
     * process on the ROUTER's next heartbeat. */
    SEED("srv-takes-over-a-routing-id", FN_OP_RAW, 0, FN_RID_SRV, 0, 1, 0xff, FN_OP_SETTLE, 0,
         FN_OP_RESOLVE, 0, 0, FN_SYS_FAKE, 1, FN_ADDR_SRV_BY_NAME, FN_PATH_ECHO,
         FN_OP_TELL, FN_TARGET_REF0, STR_HI, FN_SENDER_NONE, FN_OP_SETTLE, 2,
         FN_OP_RAW, 0, 0, 1, 0xfe, FN_OP_SETTLE, 1, FN_OP_CLOSE, 0,
         FN_OP_SETTLE, 7, FN_OP_SETTLE, 7, FN_OP_SETTLE, 7, FN_OP_SETTLE, 7, FN_OP_SETTLE, 7,
         FN_OP_SETTLE, 7, FN_OP_SETTLE, 7),
    /* A HELLO naming an address that refuses srv's connection, or never
     * answers it, from a DEALER that then goes: srv kept the peer up for
     * good. */
    SEED("hello-naming-a-refused-port-then-gone", HELLO_A_AT(FN_ADDR_REFUSED), FN_OP_CLOSE, 0),
    SEED("hello-naming-a-silent-port-then-gone", HELLO_A_AT(FN_ADDR_SILENT), FN_OP_CLOSE, 0),
    /* A HELLO naming srv itself as "localhost:<port>": srv dialled itself
     * and kept the peer up for good. */
    SEED("hello-naming-srv-by-another-name-then-gone", HELLO_A_AT(FN_ADDR_SRV_BY_NAME),
         FN_OP_CLOSE, 0),
};

#define SEED_COUNT (sizeof seeds / sizeof seeds[0])

size_t fn_seed_count(void) { return SEED_COUNT; }

const uint8_t *fn_seed(size_t i, size_t *len, const char **name)
{
    if (i >= SEED_COUNT)
        return NULL;
    *len = seeds[i].len;
    *name = seeds[i].name;
    return seeds[i].data;
}
