/*
 * Base64, the standard alphabet with padding (RFC 4648, section 4): how
 * etcd's JSON gateway carries keys and values, which are bytes (base64.c).
 * Cluster layer; depends on nothing internal. Pure functions: any thread.
 */
#ifndef AC_CLUSTER_BASE64_H
#define AC_CLUSTER_BASE64_H

#include <stdbool.h>
#include <stddef.h>

/* The length of the encoding of n bytes, padding included, without the
 * terminating NUL; 0 when n is too large for the result to fit a size_t
 * (and for n = 0). */
size_t ac__base64_encoded_len(size_t n);

/* Encode n bytes of src into dst, which holds ac__base64_encoded_len(n) + 1
 * bytes; NUL-terminates and returns the encoded length. */
size_t ac__base64_encode(const void *src, size_t n, char *dst);

/* At most how many bytes n characters of base64 decode to. */
static inline size_t ac__base64_decoded_max(size_t n) { return n / 4 * 3; }

/* Decode n characters of src into dst, which holds
 * ac__base64_decoded_max(n) bytes; *out_len is the decoded length. Strict:
 * n is a multiple of 4, the characters are the standard alphabet, '='
 * comes only as the last one or two, and the bits the padding drops are
 * zero. On bad input returns false and sets *bad_at to the offset of the
 * first character at fault (n when the length is wrong); dst is then
 * unspecified. */
bool ac__base64_decode(const char *src, size_t n, void *dst, size_t *out_len, size_t *bad_at);

#endif
