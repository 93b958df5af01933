/*
 * CURVE for the ZeroMQ transport: a node's keys checked and copied, its
 * ROUTER a CURVE server whose clients a ZAP handler (RFC 27) admits by
 * their public key, its DEALERs CURVE clients; and the key tools of the
 * API (ac_node_curve_keypair, ac_node_curve_read_key).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "remote/transport_zmq.h"

static bool valid_z85_key(const char *k)
{
    uint8_t bin[32];
    return k && strlen(k) == 40 && zmq_z85_decode(bin, k) != NULL;
}

ac_status ac__zt_check_curve(const ac_node_options *o)
{
    if (!o->curve)
        return AC_OK;
    const ac_node_curve *c = o->curve;
    const char *bad = !valid_z85_key(c->server_public_key)   ? "server_public_key"
                      : !valid_z85_key(c->server_secret_key) ? "server_secret_key"
                      : !valid_z85_key(c->public_key)        ? "public_key"
                      : !valid_z85_key(c->secret_key)        ? "secret_key"
                                                             : NULL;
    if (bad)
        return ac__fail(AC_EINVAL, "ac_node_start: options.curve->%s is not a Z85 key (40 characters)",
                        bad);
    if (c->allowed_count && !c->allowed)
        return ac__fail(AC_EINVAL, "ac_node_start: options.curve->allowed is NULL");
    for (size_t i = 0; i < c->allowed_count; i++)
        if (!valid_z85_key(c->allowed[i]))
            return ac__fail(AC_EINVAL, "ac_node_start: options.curve->allowed[%zu] is not a Z85 key",
                            i);
    if (!zmq_has("curve"))
        return ac__fail(AC_ESYS, "ac_node_start: this libzmq has no CURVE");
    return AC_OK;
}

ac_status ac__zt_copy_curve(ac__zt *t, const ac_node_curve *c)
{
    if (!c)
        return AC_OK;
    t->curve = true;
    snprintf(t->curve_public, sizeof t->curve_public, "%s", c->public_key);
    snprintf(t->curve_secret, sizeof t->curve_secret, "%s", c->secret_key);
    snprintf(t->curve_server_public, sizeof t->curve_server_public, "%s", c->server_public_key);
    snprintf(t->curve_server_secret, sizeof t->curve_server_secret, "%s", c->server_secret_key);
    t->allowed = c->allowed_count ? ac__calloc(c->allowed_count, sizeof *t->allowed) : NULL;
    if (c->allowed_count && !t->allowed)
        return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
    for (size_t i = 0; i < c->allowed_count; i++) {
        if (!(t->allowed[i] = ac__strdup(c->allowed[i])))
            return ac__fail(AC_ENOMEM, "ac_node_start: out of memory");
        t->allowed_count++;
    }
    return AC_OK;
}

ac_status ac__zt_start_curve(ac__zt *t)
{
    if (!t->curve)
        return AC_OK;
    t->zap = zmq_socket(t->zctx, ZMQ_REP);
    if (!t->zap || zmq_bind(t->zap, "inproc://zeromq.zap.01") != 0)
        return ac__fail(AC_ESYS, "ac_node_start: cannot start the key check: %s",
                        zmq_strerror(zmq_errno()));
    ac__zt_set_int(t->router, ZMQ_CURVE_SERVER, 1);
    zmq_setsockopt(t->router, ZMQ_CURVE_SECRETKEY, t->curve_server_secret, 41);
    zmq_setsockopt(t->router, ZMQ_ZAP_DOMAIN, "actorc", 6);
    return AC_OK;
}

void ac__zt_dealer_curve(ac__zt *t, void *d)
{
    if (!t->curve)
        return;
    zmq_setsockopt(d, ZMQ_CURVE_SERVERKEY, t->curve_server_public, 41);
    zmq_setsockopt(d, ZMQ_CURVE_PUBLICKEY, t->curve_public, 41);
    zmq_setsockopt(d, ZMQ_CURVE_SECRETKEY, t->curve_secret, 41);
}

void ac__zt_free_curve(ac__zt *t)
{
    for (size_t i = 0; i < t->allowed_count; i++)
        free(t->allowed[i]);
    free(t->allowed);
    if (t->zap)
        zmq_close(t->zap);
}

static bool key_allowed(ac__zt *t, const uint8_t *key32)
{
    char z85[41];
    if (!zmq_z85_encode(z85, key32, 32))
        return false;
    if (strcmp(z85, t->curve_public) == 0)
        return true;
    for (size_t i = 0; i < t->allowed_count; i++)
        if (strcmp(z85, t->allowed[i]) == 0)
            return true;
    return false;
}

/* One ZAP request (RFC 27): version, request id, domain, address,
 * identity, mechanism, credentials... answered 200 or 400. */
void ac__zt_drain_zap(ac__zt *t)
{
    for (;;) {
        zmq_msg_t part[8];
        int n = 0;
        bool more = true;
        while (more && n < 8) {
            zmq_msg_init(&part[n]);
            if (zmq_msg_recv(&part[n], t->zap, n == 0 ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(&part[n]);
                if (n == 0)
                    return;
                break;
            }
            more = zmq_msg_more(&part[n]);
            n++;
        }
        while (more) { /* too many parts: drain them */
            zmq_msg_t x;
            zmq_msg_init(&x);
            zmq_msg_recv(&x, t->zap, 0);
            more = zmq_msg_more(&x);
            zmq_msg_close(&x);
        }
        bool ok = n >= 7 && zmq_msg_size(&part[5]) == 5 &&
                  memcmp(zmq_msg_data(&part[5]), "CURVE", 5) == 0 && zmq_msg_size(&part[6]) == 32 &&
                  key_allowed(t, zmq_msg_data(&part[6]));
        if (n >= 2) {
            zmq_send(t->zap, "1.0", 3, ZMQ_SNDMORE);
            zmq_send(t->zap, zmq_msg_data(&part[1]), zmq_msg_size(&part[1]), ZMQ_SNDMORE);
            zmq_send(t->zap, ok ? "200" : "400", 3, ZMQ_SNDMORE);
            zmq_send(t->zap, ok ? "OK" : "key not allowed", ok ? 2 : 15, ZMQ_SNDMORE);
            zmq_send(t->zap, "", 0, ZMQ_SNDMORE);
            zmq_send(t->zap, "", 0, 0);
        }
        if (!ok)
            ac__node_warn(t->node, "refused a peer whose key is not allowed");
        for (int i = 0; i < n; i++)
            zmq_msg_close(&part[i]);
    }
}

/* ---- the API's key tools ------------------------------------------------ */

ac_status ac_node_curve_keypair(char public_key[41], char secret_key[41])
{
    if (!public_key || !secret_key)
        return ac__fail(AC_EINVAL, "ac_node_curve_keypair: a buffer is NULL");
    if (!zmq_has("curve") || zmq_curve_keypair(public_key, secret_key) != 0)
        return ac__fail(AC_ESYS, "ac_node_curve_keypair: this libzmq has no CURVE");
    return AC_OK;
}

ac_status ac_node_curve_read_key(const char *file, char out[41])
{
    if (!file || !out)
        return ac__fail(AC_EINVAL, "ac_node_curve_read_key: %s is NULL", file ? "out" : "file");
    FILE *f = fopen(file, "r");
    if (!f)
        return ac__fail(AC_ENOTFOUND, "ac_node_curve_read_key: cannot read %.200s: %s", file,
                        strerror(errno));
    char buf[128];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = '\0';
    if (!valid_z85_key(buf))
        return ac__fail(AC_EINVAL, "ac_node_curve_read_key: %.200s holds no Z85 key (40 characters)",
                        file);
    memcpy(out, buf, 41);
    return AC_OK;
}
