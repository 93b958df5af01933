/*
 * The input of the inbound-path fuzz target (fuzz_node.c), shared with
 * the generator of its seeds (gen_node_corpus.c) and the replay of its
 * corpus in the suite (test_node_corpus.c).
 *
 * An input is a small program run against a real node ("srv") by a peer
 * made of raw ZeroMQ sockets: actions one after another, each an opcode
 * byte (taken modulo FN_OP_COUNT) followed by its operands. Bytes that
 * run out read as zeros, so every input is a valid program, and a
 * mutation of one byte changes one choice. Operands:
 *
 *   slot      one byte: bit 0 picks one of the peer's two DEALERs; a
 *             DEALER not open yet opens, its routing id chosen by a rid
 *             operand that follows
 *   rid       one byte (FN_RID_*), and the bytes that choice reads
 *   inc       one byte (FN_INC_*), and the bytes that choice reads
 *   addr      one byte (FN_ADDR_*), and for FN_ADDR_TEXT a text
 *   path      one byte (FN_PATH_*), and for FN_PATH_TEXT a text
 *   system    one byte (FN_SYS_*), and for FN_SYS_TEXT a text
 *   type      one byte (FN_TYPE_*), and for FN_TYPE_TEXT a text
 *   corr      one byte (FN_CORR_*), and for FN_CORR_RAW eight bytes
 *   text      a length byte, then that many bytes
 *   msg       one byte (FN_MSG_*), then the message's contents
 *
 * Actions (FN_OP_*):
 *
 *   RAW      slot, two length bytes (big endian), the bytes: one message
 *            of one part, as it is
 *   PARTS    slot, a count byte (2 + count % 3 parts), a text per part
 *   FRAMES   slot, a count byte (1 + count % 3 frames), each an envelope
 *            (below) encoded with ac__wire_encode; the frames back to
 *            back as one message
 *   HELLO    slot, inc (the receiver's incarnation as the peer knows
 *            it), addr, system, a flags byte (FN_HELLO_*): a HELLO from
 *            the DEALER, its sender's incarnation the routing id's
 *   RESOLVE  a ref index byte (of 4), a mode byte: even: system, a byte
 *            (odd: "@" and an addr), path: a path put together; odd: a
 *            text taken as the path. ac_node_resolve on srv.
 *   TELL     a target byte (FN_TARGET_*), msg, a sender byte
 *            (FN_SENDER_*): ac_tell from this thread
 *   ASK      a target byte, msg, a timeout byte (1 + t % 50 ms): ac_ask
 *   CLOSE    slot: what it sent is taken, then it is closed (its next
 *            use opens a new one, with a routing id of its own)
 *   SETTLE   a byte: what was sent is taken; then a sleep of
 *            (b % 8) * 5 ms, for timers and the node's housekeeping
 *
 * An envelope: kind byte (taken modulo 11: 0 and 10 are no kind, and
 * the frame is skipped), flags byte, corr, inc (target_inc), path
 * (target_path), a sender kind byte (modulo 4: none, local, actor,
 * reply) and the sender's fields (local: path; actor: system, addr, inc,
 * path; reply: system, addr, inc, corr), a body byte (even: msg,
 * encoded by its codec; odd: type, a text as the body, and a
 * payload-size byte (FN_SIZE_*)), a deadline byte (deadline_us = b * 1000).
 */
#ifndef ACTORC_TEST_FUZZ_NODE_H
#define ACTORC_TEST_FUZZ_NODE_H

#include <stddef.h>
#include <stdint.h>

enum {
    FN_OP_RAW,
    FN_OP_PARTS,
    FN_OP_FRAMES,
    FN_OP_HELLO,
    FN_OP_RESOLVE,
    FN_OP_TELL,
    FN_OP_ASK,
    FN_OP_CLOSE,
    FN_OP_SETTLE,
    FN_OP_COUNT
};

/* Routing ids of the peer's DEALERs. A first byte of zero (which libzmq
 * keeps for ids it makes itself) is made one. */
enum {
    FN_RID_A,     /* FN_INC_A_VALUE, as a node's: its incarnation's 8 bytes */
    FN_RID_B,
    FN_RID_C,
    FN_RID_SRV,   /* srv's own incarnation */
    FN_RID_RAW8,  /* eight bytes that follow */
    FN_RID_SHORT, /* a byte n, then 1 + n % 7 bytes: not a node's */
    FN_RID_LONG,  /* a byte n, then 9 + n % 16 bytes: not a node's */
    FN_RID_COUNT
};

enum {
    FN_INC_A,
    FN_INC_B,
    FN_INC_C,
    FN_INC_ZERO,
    FN_INC_SRV,  /* srv's incarnation */
    FN_INC_RAW8, /* eight bytes that follow (big endian) */
    FN_INC_SMALL, /* one byte that follows */
    FN_INC_COUNT
};

#define FN_INC_A_VALUE 0x00000000a11ce001ull
#define FN_INC_B_VALUE 0x00000000b0b0b002ull
#define FN_INC_C_VALUE 0x0123456789abcd03ull

/* Addresses a frame may name. Each is one the harness made, or text. */
enum {
    FN_ADDR_FAKE_A,  /* a ROUTER of the peer's: it takes srv's DEALER */
    FN_ADDR_FAKE_B,  /* another */
    FN_ADDR_SRV,     /* srv's own address */
    FN_ADDR_REFUSED, /* a port bound but not listening: refused at once */
    FN_ADDR_SILENT,  /* a listener whose accept queue is full: SYNs unanswered */
    FN_ADDR_SRV_BY_NAME, /* srv as "localhost:<port>": itself under another name */
    FN_ADDR_NO_PORT, /* "127.0.0.1" */
    FN_ADDR_TEXT,    /* a text */
    FN_ADDR_COUNT
};

enum {
    FN_PATH_ECHO,      /* "/user/echo": answers what it is told */
    FN_PATH_SINK,      /* "/user/sink": takes and drops */
    FN_PATH_KID,       /* "/user/parent/kid": an echo one level down */
    FN_PATH_PARENT,    /* "/user/parent" */
    FN_PATH_WATCHER,   /* "/user/watcher": watches its messages' senders */
    FN_PATH_NOBODY,    /* "/user/nobody" */
    FN_PATH_SYS_WATCH, /* "/system/watch" */
    FN_PATH_SYS_OTHER, /* "/system/other" */
    FN_PATH_EMPTY,     /* "" */
    FN_PATH_TEXT,
    FN_PATH_COUNT
};

enum { FN_SYS_FAKE, FN_SYS_SRV, FN_SYS_EMPTY, FN_SYS_TEXT, FN_SYS_COUNT };

enum {
    FN_TYPE_STRING,
    FN_TYPE_BYTES,
    FN_TYPE_INT64,
    FN_TYPE_ERROR,
    FN_TYPE_POINT, /* test.Point, registered on srv */
    FN_TYPE_EMPTY,
    FN_TYPE_UNKNOWN,
    FN_TYPE_TEXT,
    FN_TYPE_COUNT
};

enum {
    FN_CORR_ZERO,
    FN_CORR_ONE,
    FN_CORR_LAST,   /* the last correlation id srv gave an ask */
    FN_CORR_BEFORE, /* the one before */
    FN_CORR_RAW,    /* eight bytes that follow */
    FN_CORR_COUNT
};

/* Messages the harness makes. */
enum {
    FN_MSG_STRING,  /* a text: its NULs become '?' */
    FN_MSG_BYTES,   /* a text */
    FN_MSG_INT64,   /* eight bytes */
    FN_MSG_ERROR,   /* a flags byte (1: a cause, 2: an aggregate of two), name and message texts */
    FN_MSG_POINT,   /* x and y bytes, a label text */
    FN_MSG_UNWATCH, /* the string "unwatch": the watcher unwatches the sender */
    FN_MSG_COUNT
};

/* A body's payload_size. */
enum {
    FN_SIZE_BODY,      /* the body's length */
    FN_SIZE_BODY_NUL,  /* the length and one, as a String's */
    FN_SIZE_EIGHT,
    FN_SIZE_ZERO,
    FN_SIZE_BYTE,      /* one byte that follows */
    FN_SIZE_HUGE,      /* 2^40 */
    FN_SIZE_COUNT
};

enum {
    FN_TARGET_REF0, /* the refs RESOLVE made: 0..3 */
    FN_TARGET_ECHO = 4,
    FN_TARGET_SINK,
    FN_TARGET_WATCHER,
    FN_TARGET_KID,
    FN_TARGET_COUNT
};

enum {
    FN_SENDER_NONE,
    FN_SENDER_ECHO,
    FN_SENDER_WATCHER,
    FN_SENDER_REF0, /* refs 0..3 */
    FN_SENDER_COUNT = FN_SENDER_REF0 + 4
};

enum {
    FN_HELLO_OTHER_INC = 1, /* an inc operand follows: the sender's incarnation (else the rid's) */
    FN_HELLO_CARD = 2,      /* type and body texts follow: a cluster's card */
};

/* The hand-made seeds (node_seeds.c): seed i and its name (static
 * storage), or NULL past the last. */
size_t fn_seed_count(void);
const uint8_t *fn_seed(size_t i, size_t *len, const char **name);

/* The target itself (fuzz_node.c). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Stop the nodes and free what the target holds (the suite calls it
 * last; a fuzzer never does). */
void fuzz_node_teardown(void);

#endif
