/*
 * The wire: frames in CBOR (wire.h).
 */
#include "remote/wire.h"

const ac__wire_limits ac__wire_default_limits = {
    .max_frame = 1u << 20,
    .max_text = 1024,
    .max_body = 1u << 20,
    .max_payload = 1u << 20,
};
