/*
 * The base64 codec of the etcd client: RFC 4648's vectors, every byte
 * value, every length up to a few blocks, and the strict decoder's
 * refusals (length, alphabet, misplaced padding, bits under the padding)
 * with the offset at fault.
 */
#define _POSIX_C_SOURCE 200809L

#include "ts_test.h"

#include <stdint.h>

#include "cluster/base64.h"

static void check_pair(const char *plain, size_t n, const char *encoded)
{
    char out[128];
    assert_int_equal(ac__base64_encoded_len(n), strlen(encoded));
    assert_int_equal(ac__base64_encode(plain, n, out), strlen(encoded));
    assert_string_equal(out, encoded);
    unsigned char back[96];
    size_t len = 99, bad = 99;
    assert_true(ac__base64_decode(encoded, strlen(encoded), back, &len, &bad));
    assert_int_equal(len, n);
    assert_memory_equal(back, plain, n);
}

static void test_rfc4648_vectors(void **state)
{
    (void)state;
    check_pair("", 0, "");
    check_pair("f", 1, "Zg==");
    check_pair("fo", 2, "Zm8=");
    check_pair("foo", 3, "Zm9v");
    check_pair("foob", 4, "Zm9vYg==");
    check_pair("fooba", 5, "Zm9vYmE=");
    check_pair("foobar", 6, "Zm9vYmFy");
    check_pair("\0\0\0", 3, "AAAA");
    check_pair("\xff\xff\xff", 3, "////");
    check_pair("\xfb\xff", 2, "+/8=");
}

static void test_every_byte_round_trips(void **state)
{
    (void)state;
    unsigned char all[256], back[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    char text[400];
    size_t n = ac__base64_encode(all, sizeof all, text);
    assert_int_equal(n, 344);
    size_t len = 0, bad = 0;
    assert_true(ac__base64_decode(text, n, back, &len, &bad));
    assert_int_equal(len, 256);
    assert_memory_equal(back, all, 256);
}

static void test_every_length_round_trips(void **state)
{
    (void)state;
    uint32_t x = 12345;
    for (size_t n = 0; n <= 100; n++) {
        unsigned char src[100], back[100];
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            src[i] = (unsigned char)(x >> 16);
        }
        char text[140];
        size_t m = ac__base64_encode(src, n, text);
        assert_int_equal(m, (n + 2) / 3 * 4);
        assert_int_equal(strlen(text), m);
        assert_true(ac__base64_decoded_max(m) >= n);
        size_t len = 0, bad = 0;
        assert_true(ac__base64_decode(text, m, back, &len, &bad));
        assert_int_equal(len, n);
        if (n)
            assert_memory_equal(back, src, n);
    }
}

static void check_refused(const char *text, size_t at)
{
    unsigned char out[64];
    size_t len = 7, bad = 999;
    if (ac__base64_decode(text, strlen(text), out, &len, &bad))
        fail_msg("'%s' was decoded, but it is not base64", text);
    if (bad != at)
        fail_msg("'%s': the fault was put at offset %zu, expected %zu", text, bad, at);
}

static void test_bad_input_is_refused_with_its_offset(void **state)
{
    (void)state;
    check_refused("Zg=", 3);       /* not a multiple of four */
    check_refused("Z", 1);
    check_refused("Zm9v!A==", 4);  /* outside the alphabet */
    check_refused("Zm9v YmFy", 9); /* a space: length first */
    check_refused("Zm9vYm y", 6);
    check_refused("Zg==Zg==", 2);  /* padding before the end */
    check_refused("Zg=a", 2);      /* a character after padding */
    check_refused("Z===", 1);      /* three pads */
    check_refused("====", 0);
    check_refused("Zh==", 1);      /* bits under the padding */
    check_refused("Zm9=", 2);
    check_refused("Zm-v", 2);      /* the URL alphabet is not this one */
    check_refused("Zm_v", 2);
    check_refused("Zm9\x80", 3);
}

static void test_sizes_that_cannot_fit_are_zero(void **state)
{
    (void)state;
    assert_int_equal(ac__base64_encoded_len(SIZE_MAX), 0);
    assert_int_equal(ac__base64_encoded_len(SIZE_MAX / 4 * 3 + 1), 0);
    assert_true(ac__base64_encoded_len(SIZE_MAX / 4 * 3 - 3) > 0);
    assert_int_equal(ac__base64_decoded_max(8), 6);
    assert_int_equal(ac__base64_decoded_max(0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc4648_vectors),
        cmocka_unit_test(test_every_byte_round_trips),
        cmocka_unit_test(test_every_length_round_trips),
        cmocka_unit_test(test_bad_input_is_refused_with_its_offset),
        cmocka_unit_test(test_sizes_that_cannot_fit_are_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
