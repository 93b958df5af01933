/*
 * The wire: one frame's envelope (wire.c) and the payloads and errors it
 * carries (codec.c), in CBOR (RFC 8949) through libcbor. Encoding writes
 * definite-length items with libcbor's cbor_encode_* into a caller's
 * buffer; decoding walks the frame once with the streaming decoder
 * (cbor_stream_decode), never building a tree, and points into the frame
 * instead of copying: a decoded envelope borrows the frame's bytes and
 * lives no longer than they do.
 *
 * A frame is one CBOR array:
 *
 *   [ version, kind, flags, corr, target_inc, target_path,
 *     sender, type_name, deadline_us, payload_size, body ]
 *
 *   version      unsigned, AC__WIRE_VERSION
 *   kind         unsigned, an ac__wire_kind
 *   flags        unsigned, AC__WIRE_F_*
 *   corr         unsigned 64: the correlation id of an ask, reply or
 *                undeliverable notice; 0 otherwise
 *   target_inc   unsigned 64: the incarnation the frame is meant for
 *                (0: whichever the receiver is); in a HELLO, the
 *                receiver's incarnation as the sender knows it (0: it
 *                knows none, as on a first or a new connection)
 *   target_path  text: a local actor path, "/user/..." (may be empty)
 *   sender       null, or [0, path] an actor on the sending node, or
 *                [1, system, address, incarnation, path] an actor on
 *                another node, or [2, system, address, incarnation, corr]
 *                a reply target on another node (an ask forwarded on)
 *   type_name    text: the message type's name (may be empty)
 *   deadline_us  unsigned: what is left of the ask's timeout, 0 for none
 *   payload_size unsigned: the payload bytes the receiver allocates
 *   body         bytes: the payload as the type's codec wrote it
 *
 * A ZeroMQ message between nodes carries one frame or several back to
 * back (a CBOR sequence, RFC 8742): a node sends what waits for one peer
 * together, so that a stream of small frames costs one message per batch
 * rather than one per frame. The message as a whole is bounded by
 * max_frame, as a single frame is; a frame that cannot be decoded ends the
 * message (what follows it cannot be found), not the connection.
 *
 * HELLO frames carry the sending node in the sender field as [1, ...]
 * (its own system, address and incarnation; path empty); a HELLO without
 * it is refused.
 *
 * Integers may take any CBOR head width (an encoder writes the shortest);
 * text must be UTF-8 without NUL; items of indefinite length, maps, tags,
 * floats and simple values other than null are refused where the frame
 * does not name them.
 *
 * Limits (ac__wire_limits) bound every length and count a decoder
 * accepts; anything over them, truncated, of the wrong major type or with
 * trailing bytes is refused with AC_EPROTO and a static reason.
 * Not thread-affine: any thread may encode or decode its own frames.
 */
#ifndef AC_REMOTE_WIRE_H
#define AC_REMOTE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actorc/error.h"
#include "actorc/msg.h"

#define AC__WIRE_VERSION 1

typedef enum ac__wire_kind {
    AC__WIRE_HELLO = 1,     /* a node introduces itself */
    AC__WIRE_TELL,          /* a message, sender optional */
    AC__WIRE_ASK,           /* a message whose sender is this node's reply target `corr` */
    AC__WIRE_REPLY,         /* the answer to the receiver's reply target `corr` */
    AC__WIRE_UNDELIVERABLE, /* the receiver's reply target `corr` will get no answer; body: why (text) */
    AC__WIRE_WATCH,         /* sender watches target */
    AC__WIRE_UNWATCH,       /* sender no longer watches target */
    AC__WIRE_TERMINATED,    /* the sender (an actor on the sending node) has stopped; flags */
    AC__WIRE_LEAVE,         /* the sending node is stopping */
    AC__WIRE_KIND_MAX = AC__WIRE_LEAVE
} ac__wire_kind;

/* The largest message of several frames a node sends: a frame bigger than
 * this travels alone, and every node accepts messages this big whatever
 * its max_frame (each frame in them still bounded by it). */
#define AC__WIRE_BATCH_MAX 16384u

/* Flags. A decoder takes any 32-bit value; what a bit means is the
 * kind's business. */
#define AC__WIRE_F_NONE 0u

/* A borrowed span of the frame. Text is not NUL-terminated. */
typedef struct ac__wire_span {
    const uint8_t *ptr;
    size_t len;
} ac__wire_span;

typedef enum ac__wire_sender_kind {
    AC__WIRE_SENDER_NONE = -1,
    AC__WIRE_SENDER_LOCAL = 0,  /* an actor on the sending node: path */
    AC__WIRE_SENDER_ACTOR = 1,  /* an actor on a third node: system, address, incarnation, path */
    AC__WIRE_SENDER_REPLY = 2   /* a reply target on a third node: system, address, incarnation, corr */
} ac__wire_sender_kind;

typedef struct ac__wire_sender {
    ac__wire_sender_kind kind;
    ac__wire_span system, address, path;
    uint64_t incarnation, corr;
} ac__wire_sender;

typedef struct ac__wire_env {
    uint32_t version;
    ac__wire_kind kind;
    uint32_t flags;
    uint64_t corr;
    uint64_t target_inc;
    ac__wire_span target_path;
    ac__wire_sender sender;
    ac__wire_span type_name;
    uint64_t deadline_us;
    uint64_t payload_size;
    ac__wire_span body;
} ac__wire_env;

/* What a decoder accepts. */
typedef struct ac__wire_limits {
    size_t max_frame;       /* bytes of one frame */
    size_t max_text;        /* bytes of one text item (paths, names, systems) */
    size_t max_body;        /* bytes of the body */
    uint64_t max_payload;   /* payload_size */
    size_t max_errors;      /* errors in one error body, counting every member and cause */
} ac__wire_limits;

/* The defaults: 1 MiB frames, 1 KiB texts, bodies and payloads up to the
 * frame, 4096 errors in one. */
extern const ac__wire_limits ac__wire_default_limits;

/* Encode `env` (version is set to AC__WIRE_VERSION) into buf[0..cap).
 * Returns the bytes it needs: when that exceeds cap, nothing usable was
 * written; call again with a bigger buffer. 0 when `env` cannot be
 * encoded (NULL, a kind or sender kind out of range, a NULL span with a
 * length). The encoder does not apply limits: the receiver's decide. */
size_t ac__wire_encode(const ac__wire_env *env, uint8_t *buf, size_t cap);

/* Decode one frame. AC_OK and *env (borrowing from buf), or AC_EPROTO
 * with *why set to a static reason ("truncated", "text too long",
 * "unknown kind", "unsupported version", "trailing bytes", ...) and the
 * last error saying the same; AC_EINVAL for a NULL env. `limits` NULL:
 * the defaults; `why` may be NULL. Never reads past buf[len-1]. */
int ac__wire_decode(const uint8_t *buf, size_t len, const ac__wire_limits *limits,
                    ac__wire_env *env, const char **why);

/* The first frame of a message holding one or more (buf[0..len)): AC_OK,
 * *env and *used, the frame's bytes (the next one, if any, starts there);
 * or as ac__wire_decode, except that bytes after the frame are not
 * refused. The frame itself is bounded by limits->max_frame. */
int ac__wire_decode_next(const uint8_t *buf, size_t len, const ac__wire_limits *limits,
                         ac__wire_env *env, size_t *used, const char **why);

/* ---- payload codecs --------------------------------------------------- */

/* The codec of a message type: the type's own encode/decode hooks (both
 * of them), or a built-in one for actorc.String, actorc.Bytes,
 * actorc.Int64 and actorc.Error. Encoding writes the body; payload_size
 * is what the receiving side allocates (ac_msg_new(type, payload_size))
 * before decoding into it. The built-in bodies:
 *
 *   actorc.String  the text's UTF-8 bytes, without the NUL (no NUL, valid
 *                  UTF-8); payload_size = bytes + 1
 *   actorc.Bytes   the bytes as they are; payload_size = bytes
 *   actorc.Int64   one CBOR integer (unsigned or negative, within int64);
 *                  payload_size = 8
 *   actorc.Error   one error item (below); payload_size = 0, as the
 *                  receiver makes its own error message
 *
 * A decoder refuses a payload_size other than the one its body implies. */

/* The built-in type called `name` (a span, as a decoded type_name), or
 * NULL. */
const ac_msg_type *ac__wire_builtin_type(ac__wire_span name);
/* Does `type` have a codec? */
bool ac__wire_has_codec(const ac_msg_type *type);
/* Encode msg's payload: the body bytes needed (as ac__wire_encode), and
 * *payload_size. 0 with *payload_size 0 is a valid empty body; a type
 * with no codec (or a built-in message not shaped as its constructor
 * makes it): SIZE_MAX. A type's own encode hook is called with buf and
 * cap as they are; the caller grows its buffer to the size returned. */
size_t ac__wire_encode_payload(const ac_msg *msg, uint8_t *buf, size_t cap, uint64_t *payload_size);
/* The *payload_size ac__wire_encode_payload reports for msg, without
 * encoding anything (0 for a message with no codec). */
uint64_t ac__wire_payload_size(const ac_msg *msg);
/* A new message of `type` from body (one reference, the caller's), or
 * NULL with *why (bad body, out of limits, no codec) and the last error:
 * AC_EPROTO for a body refused, AC_ECODEC for a type with no codec,
 * AC_ENOMEM, AC_EINVAL for a NULL type. `limits` NULL: the defaults;
 * `why` may be NULL. A type's decode hook gets body[0..len) and a zeroed
 * payload of payload_size bytes; anything but AC_OK from it refuses the
 * body. */
ac_msg *ac__wire_decode_payload(const ac_msg_type *type, const uint8_t *body, size_t len,
                                uint64_t payload_size, const ac__wire_limits *limits,
                                const char **why);

/* A whole frame for `msg`: `env` as given, except that its type_name,
 * payload_size and body are msg's (msg's type name, its codec's body,
 * written in place). Returns as ac__wire_encode (a size that fits on
 * retry when cap was short); 0 when env cannot be encoded or msg's type
 * has no codec. */
size_t ac__wire_encode_msg(const ac__wire_env *env, const ac_msg *msg, uint8_t *buf, size_t cap);

/* Errors on the wire: a CBOR tag AC__WIRE_ERROR_TAG over
 * [name, message, [members...], cause-or-null], members and cause being
 * error items again. Name and message are text, or byte strings when the
 * error's own bytes are not UTF-8; neither holds a NUL; the name is
 * non-empty and at most AC__WIRE_MAX_ERROR_NAME bytes, the message at
 * most AC__WIRE_MAX_ERROR_MESSAGE. An error has members only when it is
 * an AggregateError without a cause (the only errors with members that
 * ac_error builds); anything else with members is refused.
 *
 * Encoding returns as ac__wire_encode (0 for a NULL err). Decoding caps
 * depth at AC_ERROR_MAX_DEPTH (an error nested deeper is refused before
 * anything is built for it) and the total count of errors at
 * `max_errors`; a decode that fails releases whatever it built and
 * returns NULL with *why and the last error (AC_EPROTO, or AC_ENOMEM). */
#define AC__WIRE_ERROR_TAG 27001u
#define AC__WIRE_MAX_ERROR_NAME 256
#define AC__WIRE_MAX_ERROR_MESSAGE 65536
size_t ac__wire_encode_error(const ac_error *err, uint8_t *buf, size_t cap);
ac_error *ac__wire_decode_error(const uint8_t *buf, size_t len, size_t max_errors, const char **why);

#endif
