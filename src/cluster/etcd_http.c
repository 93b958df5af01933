/*
 * Requests to etcd's JSON gateway: a POST of a JSON object to the
 * endpoints in turn, its answer read whole (a call) or line by line (a
 * stream: the gateway writes one JSON object per line).
 *
 * Each request has its own easy handle in a multi handle of its own, so
 * the client needs no lock, and a stop signal can wake the request's
 * poll (etcd_retry.c); its connection closes with it. A thread that
 * sends many requests (the keepers of many leases) sets a session on its
 * stop signal instead: one easy handle and one multi handle, reused for
 * each of its requests, so that libcurl keeps the connection open
 * between them. libcurl is told to stay away from signals (the
 * process has other threads) and from proxies (etcd is reached
 * directly), to speak http and https only, and not to wait for a
 * "100 Continue".
 *
 * Failover. An endpoint that cannot be reached, times out or answers
 * 502, 503 or 504 is skipped for the next; any other answer is etcd's
 * and final. The endpoint that answered is where the next request
 * starts. A stream that broke after etcd had answered is not moved to
 * another endpoint here: the watcher lists again first.
 *
 * Sizes are capped: a call's answer at 64 MiB, an error's at 64 KiB, a
 * line of a stream at 16 MiB. Beyond them the answer is refused
 * (AC_EPROTO) rather than grown without bound.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cluster/etcd_internal.h"
#include "core/alloc.h"

#define MAX_REPLY ((size_t)64 << 20)
#define MAX_ERROR_BODY ((size_t)64 << 10)
#define MAX_LINE ((size_t)16 << 20)
#define POLL_MS 1000 /* libcurl shortens it for its own timers */

/* One request to one endpoint, and what came back. */
typedef struct xfer {
    CURL *h;
    char *buf; /* the answer, or a stream's unfinished line; NUL-terminated */
    size_t len, cap;
    size_t scanned; /* a stream's bytes already searched for a newline */
    long http_code;
    bool overflow, nomem;
    bool ended; /* the consumer of a stream asked to end it */
    bool streaming;
    uint32_t timeout_ms; /* a stream of lines that must end within it; 0: none */
    ac__etcd_line_fn on_line; /* NULL: a call */
    void *ctx;
    char curl_error[CURL_ERROR_SIZE];
} xfer;

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_result;

static void global_init(void) { global_result = curl_global_init(CURL_GLOBAL_ALL); }

ac_status ac__etcd_http_init(void)
{
    pthread_once(&global_once, global_init);
    if (global_result != CURLE_OK)
        return ac__fail(global_result == CURLE_OUT_OF_MEMORY ? AC_ENOMEM : AC_EFAILED,
                        "etcd: libcurl cannot start: %s", curl_easy_strerror(global_result));
    return AC_OK;
}

/* ---- the answer ------------------------------------------------------- */

static bool append(xfer *x, const char *p, size_t n, size_t limit)
{
    if (n > limit || x->len > limit - n) {
        x->overflow = true;
        return false;
    }
    if (x->len + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 1024;
        while (cap < x->len + n + 1)
            cap *= 2;
        char *b = ac__realloc(x->buf, cap);
        if (!b) {
            x->nomem = true;
            return false;
        }
        x->buf = b;
        x->cap = cap;
    }
    memcpy(x->buf + x->len, p, n);
    x->len += n;
    x->buf[x->len] = '\0';
    return true;
}

/* Hand each complete line of a stream to its consumer; false when the
 * consumer asked to end. */
static bool feed_lines(xfer *x)
{
    char *nl;
    while ((nl = memchr(x->buf + x->scanned, '\n', x->len - x->scanned))) {
        size_t n = (size_t)(nl - x->buf);
        *nl = '\0';
        if (n > 0 && x->buf[n - 1] == '\r')
            x->buf[--n] = '\0';
        bool go = n == 0 || x->on_line(x->buf, n, x->ctx);
        size_t rest = x->len - (size_t)(nl + 1 - x->buf);
        memmove(x->buf, nl + 1, rest + 1);
        x->len = rest;
        x->scanned = 0;
        if (!go) {
            x->ended = true;
            return false;
        }
    }
    x->scanned = x->len;
    return true;
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *arg)
{
    xfer *x = arg;
    size_t n = size * nmemb;
    if (x->http_code == 0) {
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->http_code);
        x->streaming = x->on_line && x->http_code == 200;
    }
    size_t limit = x->streaming ? MAX_LINE : x->on_line ? MAX_ERROR_BODY : MAX_REPLY;
    if (!append(x, p, n, limit))
        return 0;
    if (x->streaming && !feed_lines(x))
        return 0;
    return n;
}

/* ---- one endpoint ------------------------------------------------------- */

static CURLcode configure(CURL *h, ac__etcd *e, const char *url, const char *body,
                          struct curl_slist *headers, xfer *x)
{
    long connect_ms = e->o.connect_timeout_ms;
    CURLcode rc = CURLE_OK;
#define SET(option, value)                                                   \
    do {                                                                     \
        if (rc == CURLE_OK)                                                  \
            rc = curl_easy_setopt(h, option, value);                         \
    } while (0)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_POST, 1L);
    SET(CURLOPT_POSTFIELDS, body);
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, x);
    SET(CURLOPT_ERRORBUFFER, x->curl_error);
    SET(CURLOPT_NOSIGNAL, 1L);
    SET(CURLOPT_PROXY, "");
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    if (x->on_line && !x->timeout_ms) {
        SET(CURLOPT_TCP_KEEPALIVE, 1L);
        SET(CURLOPT_TCP_KEEPIDLE, 5L);
        SET(CURLOPT_TCP_KEEPINTVL, 2L);
    } else {
        SET(CURLOPT_TIMEOUT_MS, (long)(x->timeout_ms ? x->timeout_ms : e->o.request_timeout_ms));
    }
#undef SET
    return rc;
}

/* Run m until its transfer ends, or stop is raised (AC_ETERMINATED);
 * how the multi handle fared in *mc. */
static ac_status pump(CURLM *m, ac__etcd_stop *stop, CURLMcode *mc)
{
    int running = 1;
    for (;;) {
        *mc = curl_multi_perform(m, &running);
        if (*mc != CURLM_OK || !running)
            break;
        if (stop && ac__etcd_stop_raised(stop))
            return AC_ETERMINATED;
        *mc = curl_multi_poll(m, NULL, 0, POLL_MS, NULL);
        if (*mc != CURLM_OK)
            break;
    }
    return *mc == CURLM_OUT_OF_MEMORY ? AC_ENOMEM : AC_OK;
}

/* Drive h to its end in m, or until stop is raised (AC_ETERMINATED). The
 * transfer's own result in *result; a failure of the multi handle is
 * one too, explained in x->curl_error. */
static ac_status drive_in(CURLM *m, CURL *h, ac__etcd_stop *stop, xfer *x, CURLcode *result)
{
    if (curl_multi_add_handle(m, h) != CURLM_OK)
        return AC_ENOMEM;
    CURLMcode mc = CURLM_OK;
    ac_status st = AC_ETERMINATED;
    if (!stop || ac__etcd_stop_enter(stop, m)) {
        st = pump(m, stop, &mc);
        if (stop)
            ac__etcd_stop_leave(stop);
    }
    *result = CURLE_OK;
    if (st == AC_OK && mc != CURLM_OK) {
        snprintf(x->curl_error, sizeof x->curl_error, "libcurl: %s", curl_multi_strerror(mc));
        *result = CURLE_FAILED_INIT;
    }
    CURLMsg *msg;
    int left;
    while (st == AC_OK && mc == CURLM_OK && (msg = curl_multi_info_read(m, &left)))
        if (msg->msg == CURLMSG_DONE)
            *result = msg->data.result;
    curl_multi_remove_handle(m, h);
    return st;
}

/* The same in a multi handle of its own. */
static ac_status drive(CURL *h, ac__etcd_stop *stop, xfer *x, CURLcode *result)
{
    CURLM *m = curl_multi_init();
    if (!m)
        return AC_ENOMEM;
    ac_status st = drive_in(m, h, stop, x, result);
    curl_multi_cleanup(m);
    return st;
}

ac_status ac__etcd_session_init(ac__etcd_session *s)
{
    s->m = curl_multi_init();
    s->h = s->m ? curl_easy_init() : NULL;
    if (!s->h) {
        ac__etcd_session_fini(s);
        return ac__fail(AC_ENOMEM, "etcd: no memory for an HTTP session");
    }
    return AC_OK;
}

void ac__etcd_session_fini(ac__etcd_session *s)
{
    if (s->h)
        curl_easy_cleanup(s->h);
    if (s->m)
        curl_multi_cleanup(s->m);
    s->h = NULL;
    s->m = NULL;
}

/* One attempt at endpoint k; the outcome in x and *result. With a
 * session its handles are reused (the connection stays open); without,
 * the request has handles of its own. */
static ac_status attempt(ac__etcd *e, ac__etcd_session *session, size_t k, ac__etcd_stop *stop,
                         const char *path, const char *body, struct curl_slist *headers,
                         xfer *x, CURLcode *result)
{
    char url[AC__ETCD_MAX_URL + 64];
    snprintf(url, sizeof url, "%s%s", e->endpoint[k], path);
    x->len = x->scanned = 0;
    x->http_code = 0;
    x->overflow = x->nomem = x->ended = x->streaming = false;
    x->curl_error[0] = '\0';
    x->h = session ? session->h : curl_easy_init();
    if (!x->h)
        return AC_ENOMEM;
    if (session) /* options only: its connections stay */
        curl_easy_reset(x->h);
    ac_status st = AC_OK;
    CURLcode rc = configure(x->h, e, url, body, headers, x);
    if (rc != CURLE_OK) {
        *result = rc;
        st = rc == CURLE_OUT_OF_MEMORY ? AC_ENOMEM : AC_EFAILED;
    } else {
        st = session ? drive_in(session->m, x->h, stop, x, result) : drive(x->h, stop, x, result);
    }
    if (!session)
        curl_easy_cleanup(x->h);
    x->h = NULL;
    return st;
}

/* ---- the endpoints in turn ------------------------------------------------ */

/* Why endpoint k did not answer, appended to a list of such reasons. */
static void note_reason(char *list, size_t cap, const char *endpoint, const char *why)
{
    size_t used = strlen(list);
    if (used + 4 < cap)
        snprintf(list + used, cap - used, "%s%s: %s", used ? "; " : "", endpoint, why);
}

static bool unavailable(long code) { return code == 502 || code == 503 || code == 504; }

/* The endpoints in turn, from the one that answered last, until one
 * answers: AC_OK with the answer in x; or the failure, in err. */
static ac_status try_endpoints(ac__etcd *e, ac__etcd_session *session, ac__etcd_stop *stop,
                               const char *what, const char *path, const char *body,
                               struct curl_slist *headers, xfer *x, ac__etcd_err *err)
{
    char reasons[sizeof err->msg];
    reasons[0] = '\0';
    bool all_timeouts = true;
    size_t first = atomic_load_explicit(&e->preferred, memory_order_relaxed) % e->n;
    for (size_t i = 0; i < e->n; i++) {
        size_t k = (first + i) % e->n;
        CURLcode cc = CURLE_OK;
        ac_status st = attempt(e, session, k, stop, path, body, headers, x, &cc);
        if (st == AC_ETERMINATED)
            return ac__etcd_errf(err, st, "%s: stopped", what);
        if (st == AC_ENOMEM || x->nomem)
            return ac__etcd_errf(err, AC_ENOMEM, "%s: no memory for the request or its answer",
                                 what);
        if (x->overflow)
            return ac__etcd_errf(err, AC_EPROTO, "%s: the answer of %s is too large", what,
                                 e->endpoint[k]);
        const char *why = x->curl_error[0] ? x->curl_error : curl_easy_strerror(cc);
        bool answered = cc == CURLE_OK || (cc == CURLE_WRITE_ERROR && x->ended);
        if (answered && !unavailable(x->http_code)) {
            atomic_store_explicit(&e->preferred, k, memory_order_relaxed);
            return AC_OK;
        }
        if (x->streaming) /* it answered, then broke */
            return ac__etcd_errf(err, AC_EFAILED, "%s: the stream from %s broke: %s", what,
                                 e->endpoint[k], why);
        char code[48];
        if (answered)
            snprintf(code, sizeof code, "HTTP %ld (unavailable)", x->http_code);
        note_reason(reasons, sizeof reasons, e->endpoint[k], answered ? code : why);
        all_timeouts = all_timeouts && !answered && cc == CURLE_OPERATION_TIMEDOUT;
    }
    return ac__etcd_errf(err, all_timeouts ? AC_ETIMEOUT : AC_EFAILED,
                         "%s: no endpoint answered: %s", what, reasons);
}

static ac_status exchange(ac__etcd *e, ac__etcd_session *session, ac__etcd_stop *stop,
                          const char *what, const char *path, const char *body, xfer *x,
                          ac__etcd_err *err)
{
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *more = headers ? curl_slist_append(headers, "Expect:") : NULL;
    if (!more) {
        curl_slist_free_all(headers);
        return ac__etcd_errf(err, AC_ENOMEM, "%s: no memory for the request", what);
    }
    ac_status st = try_endpoints(e, session, stop, what, path, body, more, x, err);
    curl_slist_free_all(more);
    return st;
}

/* ---- etcd's errors ---------------------------------------------------------- */

/* A gRPC status code as an ac_status. */
static ac_status grpc_status(json_int_t code)
{
    switch (code) {
    case 3: /* INVALID_ARGUMENT */
        return AC_EINVAL;
    case 4: /* DEADLINE_EXCEEDED */
        return AC_ETIMEOUT;
    case 5: /* NOT_FOUND */
        return AC_ENOTFOUND;
    default:
        return AC_EFAILED;
    }
}

/* The status and message of an error object: {"error": "...",
 * "message": "...", "code": N} from a call, or {"error": {"grpc_code":
 * N, "message": "..."}} in a stream. AC_OK when obj holds no error. */
static ac_status error_of(json_t *obj, const char *what, long http_code, ac__etcd_err *err)
{
    json_t *e = json_object_get(obj, "error");
    if (!e)
        return AC_OK;
    json_t *inner = json_is_object(e) ? e : obj;
    const char *message = json_string_value(json_object_get(inner, "message"));
    if (!message)
        message = json_is_string(e) ? json_string_value(e) : "(no message)";
    json_t *code = json_object_get(inner, json_is_object(e) ? "grpc_code" : "code");
    json_int_t c = json_is_integer(code) ? json_integer_value(code) : 2 /* UNKNOWN */;
    if (http_code)
        return ac__etcd_errf(err, grpc_status(c), "%s: etcd refused it: %s (HTTP %ld, code %d)",
                             what, message, http_code, (int)c);
    return ac__etcd_errf(err, grpc_status(c), "%s: etcd refused it: %s (code %d)", what, message,
                         (int)c);
}

ac_status ac__etcd_stream_error(json_t *msg, const char *what, ac__etcd_err *err)
{
    return error_of(msg, what, 0, err);
}

/* An answer that is not etcd's: what it was, shortly. */
static ac_status not_etcd(const xfer *x, const char *what, ac__etcd_err *err)
{
    char quoted[80];
    ac__etcd_quote(x->buf ? x->buf : "", x->len, quoted, sizeof quoted);
    return ac__etcd_errf(err, AC_EPROTO, "%s: the answer (HTTP %ld) is not etcd's JSON: %s",
                         what, x->http_code, quoted);
}

/* The JSON object of an answer read whole, or etcd's error. */
static ac_status decode_answer(const xfer *x, const char *what, json_t **reply,
                               ac__etcd_err *err)
{
    json_error_t jerr;
    json_t *obj = x->len ? json_loadb(x->buf, x->len, 0, &jerr) : NULL;
    if (!json_is_object(obj)) {
        json_decref(obj);
        return not_etcd(x, what, err);
    }
    ac_status st = x->http_code == 200 ? AC_OK : error_of(obj, what, x->http_code, err);
    if (st == AC_OK && x->http_code != 200)
        st = not_etcd(x, what, err);
    if (st != AC_OK) {
        json_decref(obj);
        return st;
    }
    *reply = obj;
    return AC_OK;
}

/* ---- calls and streams -------------------------------------------------------- */

/* The body as text; the object is consumed. */
static char *body_text(json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return text;
}

ac_status ac__etcd_call(ac__etcd *e, ac__etcd_stop *stop, const char *what, const char *path,
                        json_t *body, json_t **reply, ac__etcd_err *err)
{
    *reply = NULL;
    char *text = body_text(body);
    if (!text)
        return ac__etcd_errf(err, AC_ENOMEM, "%s: no memory for the request", what);
    xfer x = {0};
    ac_status st = exchange(e, stop ? stop->session : NULL, stop, what, path, text, &x, err);
    if (st == AC_OK)
        st = decode_answer(&x, what, reply, err);
    free(x.buf);
    free(text);
    return st;
}

ac_status ac__etcd_stream(ac__etcd *e, ac__etcd_stop *stop, const char *what, const char *path,
                          json_t *body, ac__etcd_line_fn on_line, void *ctx,
                          ac__etcd_err *err)
{
    char *text = body_text(body);
    if (!text)
        return ac__etcd_errf(err, AC_ENOMEM, "%s: no memory for the request", what);
    xfer x = {.on_line = on_line, .ctx = ctx};
    ac_status st = exchange(e, stop ? stop->session : NULL, stop, what, path, text, &x, err);
    if (st == AC_OK && !x.ended) {
        json_t *ignored = NULL;
        if (x.http_code != 200)
            st = decode_answer(&x, what, &ignored, err);
        if (st == AC_OK)
            st = ac__etcd_errf(err, AC_EFAILED, "%s: etcd closed the stream", what);
        json_decref(ignored);
    }
    free(x.buf);
    free(text);
    return st;
}

ac_status ac__etcd_lines(ac__etcd *e, ac__etcd_stop *stop, const char *what, const char *path,
                         const char *text, uint32_t timeout_ms, ac__etcd_line_fn on_line,
                         void *ctx, ac__etcd_err *err)
{
    uint32_t limit = e->o.request_timeout_ms;
    xfer x = {.on_line = on_line, .ctx = ctx,
              .timeout_ms = timeout_ms && timeout_ms < limit ? timeout_ms : limit};
    ac_status st = exchange(e, stop ? stop->session : NULL, stop, what, path, text, &x, err);
    if (st == AC_OK && x.http_code != 200) {
        json_t *ignored = NULL;
        st = decode_answer(&x, what, &ignored, err);
        if (st == AC_OK)
            st = not_etcd(&x, what, err);
        json_decref(ignored);
    }
    free(x.buf);
    return st;
}
