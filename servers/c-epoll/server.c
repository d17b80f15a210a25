/* c-epoll: non-blocking sockets and one epoll loop per worker thread.
 *
 * Every worker thread owns a listening socket bound with SO_REUSEPORT (the kernel spreads new
 * connections over them), an epoll instance, and a timer heap for /delay and /tenth. HTTP/1.1
 * is parsed and written by hand: requests may arrive split anywhere, pipelined requests are
 * answered in order (a waiting request holds back the ones behind it on its connection).
 * The database paths live in db.c: their queries go out on the loop's own PostgreSQL
 * connections, whose sockets share the loop's epoll set.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "db.h"
#include "tls.h"

#define MAX_HEAD (16 * 1024)   /* request line + headers (SPEC asks for 8 KiB) */
#define MAX_FIELDS 128         /* SPEC asks for 64 */
#define MAX_BODY (1 << 20)     /* largest /echo body */
#define MAX_DELAY_MS 60000
#define MAX_COMPRESS_KB 4096   /* /compress?kb= at most this */
#define OUT_HIGH_WATER (1 << 20) /* stop answering pipelined requests while this much is unsent */

static const char HELLO[] = "Hello, World!";
static const char *hello_file;
static atomic_ulong tenth_counter;
static char *compress_doc;     /* $COMPRESS_FILE, read once at start (NULL: unset or unreadable) */
static size_t compress_doc_len;
static SSL_CTX *tls_ctx;      /* with $TLS_CERT/$TLS_KEY: every connection speaks TLS (tls.c) */

/* ---- small growable buffer ------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

static void buf_reserve(buf_t *b, size_t extra) {
    if (b->len + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) { perror("c-epoll: realloc"); exit(1); }
    b->p = p;
    b->cap = cap;
}

static void buf_add(buf_t *b, const void *data, size_t n) {
    buf_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void buf_free(buf_t *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- Date header, formatted at most once a second per loop ------------------------------ */

typedef struct {
    time_t sec;
    char text[40]; /* "Sun, 06 Nov 1994 08:49:37 GMT" */
} date_cache_t;

static void date_refresh(date_cache_t *d) {
    time_t now = time(NULL);
    if (now == d->sec) return;
    struct tm tm;
    gmtime_r(&now, &tm);
    static const char *days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    snprintf(d->text, sizeof d->text, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday],
             tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    d->sec = now;
}

/* ---- connections and the per-loop timer heap ------------------------------------------- */

struct loop;

typedef struct conn {
    int fd;
    SSL *ssl;           /* NULL in plaintext */
    struct loop *loop;
    buf_t in;           /* received bytes; in_off = start of the next unparsed request */
    size_t in_off;
    size_t scan_from;   /* where to resume looking for the end of the head */
    buf_t out;
    size_t out_off;
    int waiting;        /* a /delay or /tenth response is parked on a timer */
    int close_after;    /* close once out is flushed */
    int peer_eof;       /* the client half-closed */
    int dead;           /* socket closed while waiting: free when the timer fires */
    int sent_continue;  /* 100 Continue already sent for the current request */
    /* the parked response */
    long pend_bytes;
    int pend_keep;
    int pend_is_tenth;
    unsigned long pend_tenth;
} conn_t;

typedef struct {
    uint64_t due_ns;
    conn_t *c;
} timer_t_;

typedef struct loop {
    int ep;
    int lfd;
    db_t *db;          /* NULL without $DATABASE_URL */
    date_cache_t date;
    timer_t_ *heap;
    size_t nheap, capheap;
} loop_t;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void heap_push(loop_t *l, uint64_t due, conn_t *c) {
    if (l->nheap == l->capheap) {
        l->capheap = l->capheap ? l->capheap * 2 : 256;
        l->heap = realloc(l->heap, l->capheap * sizeof *l->heap);
        if (!l->heap) { perror("c-epoll: realloc"); exit(1); }
    }
    size_t i = l->nheap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (l->heap[parent].due_ns <= due) break;
        l->heap[i] = l->heap[parent];
        i = parent;
    }
    l->heap[i] = (timer_t_){due, c};
}

static timer_t_ heap_pop(loop_t *l) {
    timer_t_ top = l->heap[0];
    timer_t_ last = l->heap[--l->nheap];
    size_t i = 0, n = l->nheap;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && l->heap[child + 1].due_ns < l->heap[child].due_ns) child++;
        if (last.due_ns <= l->heap[child].due_ns) break;
        l->heap[i] = l->heap[child];
        i = child;
    }
    if (n) l->heap[i] = last;
    return top;
}

/* ---- responses ------------------------------------------------------------------------- */

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

/* keep: 1 = keep-alive, 0 = close; http10 adds "Connection: keep-alive" when keeping.
 * `extra`: more header lines ("" for none). */
static void respond_head_x(conn_t *c, int status, const char *ctype, size_t len, int keep, int http10,
                           const char *extra) {
    char head[320];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nDate: %s\r\n%sContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
                     status, reason(status), c->loop->date.text, extra, ctype, len,
                     !keep ? "Connection: close\r\n" : http10 ? "Connection: keep-alive\r\n" : "");
    buf_add(&c->out, head, (size_t)n);
    if (!keep) c->close_after = 1;
}

static void respond_head(conn_t *c, int status, const char *ctype, size_t len, int keep, int http10) {
    respond_head_x(c, status, ctype, len, keep, http10, "");
}

static void respond(conn_t *c, int status, const char *ctype, const void *body, size_t len, int keep,
                    int http10) {
    respond_head(c, status, ctype, len, keep, http10);
    buf_add(&c->out, body, len);
}

/* The database paths send a Server header beside Date (SPEC). */
static void respond_db(conn_t *c, int status, const char *ctype, const void *body, size_t len, int keep,
                       int http10) {
    respond_head_x(c, status, ctype, len, keep, http10, "Server: c-epoll\r\n");
    buf_add(&c->out, body, len);
}

static void respond_error(conn_t *c, int status) {
    const char *r = reason(status);
    respond(c, status, "text/plain", r, strlen(r), 0, 0);
}

static void respond_xs(conn_t *c, long bytes, int keep, int http10) {
    respond_head(c, 200, "text/plain", (size_t)bytes, keep, http10);
    buf_reserve(&c->out, (size_t)bytes);
    memset(c->out.p + c->out.len, 'x', (size_t)bytes);
    c->out.len += (size_t)bytes;
}

static void respond_tenth(conn_t *c, unsigned long v, int keep, int http10) {
    char num[32];
    int n = snprintf(num, sizeof num, "%lu", v);
    respond(c, 200, "text/plain", num, (size_t)n, keep, http10);
}

/* C has no JSON library in its standard library: this small serializer escapes a string
 * value the way JSON requires and builds the one-member object per request. */
static size_t json_escape(char *dst, size_t cap, const char *s) {
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') { dst[n++] = '\\'; dst[n++] = (char)ch; }
        else if (ch < 0x20) n += (size_t)snprintf(dst + n, cap - n, "\\u%04x", ch);
        else dst[n++] = (char)ch;
    }
    return n;
}

static size_t json_message(char *dst, size_t cap, const char *message) {
    size_t n = 0;
    n += (size_t)snprintf(dst, cap, "{\"message\":\"");
    n += json_escape(dst + n, cap - n - 3, message);
    dst[n++] = '"';
    dst[n++] = '}';
    return n;
}

/* Reads $HELLO_FILE from disk (a blocking read on the loop thread, on every request). */
static void respond_file(conn_t *c, int keep, int http10) {
    int fd = open(hello_file, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0) close(fd);
        respond(c, 500, "text/plain", "cannot read file", 16, keep, http10);
        return;
    }
    buf_t body = {0};
    buf_reserve(&body, (size_t)st.st_size + 1);
    for (;;) {
        buf_reserve(&body, 4096);
        ssize_t r = read(fd, body.p + body.len, body.cap - body.len);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        body.len += (size_t)r;
    }
    close(fd);
    respond(c, 200, "text/html", body.p, body.len, keep, http10);
    buf_free(&body);
}

/* GET /compress: the first `kb` KiB of $COMPRESS_FILE, gzipped with zlib on this request
 * (deflateInit2 with windowBits 15 + 16 for the gzip wrapper, level 6 = Z_DEFAULT_COMPRESSION),
 * inline on the loop's thread: epoll gives no pool, and a loop per core is the model. */
static void respond_compress(conn_t *c, long kb, int keep, int http10) {
    if (!compress_doc) {
        respond(c, 500, "text/plain", "no $COMPRESS_FILE", 17, keep, http10);
        return;
    }
    size_t in_len = (size_t)kb * 1024 < compress_doc_len ? (size_t)kb * 1024 : compress_doc_len;
    z_stream zs = {0};
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        respond(c, 500, "text/plain", "deflateInit2", 12, keep, http10);
        return;
    }
    buf_t out = {0};
    buf_reserve(&out, deflateBound(&zs, in_len));
    zs.next_in = (unsigned char *)compress_doc;
    zs.avail_in = (uInt)in_len;
    zs.next_out = (unsigned char *)out.p;
    zs.avail_out = (uInt)out.cap;
    int rc = deflate(&zs, Z_FINISH); /* one call: deflateBound leaves room for all of it */
    out.len = zs.total_out;
    deflateEnd(&zs);
    if (rc == Z_STREAM_END) {
        respond_head_x(c, 200, "application/json", out.len, keep, http10, "Content-Encoding: gzip\r\n");
        buf_add(&c->out, out.p, out.len);
    } else {
        respond(c, 500, "text/plain", "deflate", 7, keep, http10);
    }
    buf_free(&out);
}

/* Reads $COMPRESS_FILE whole, once, before the loops start. */
static void read_compress_doc(void) {
    const char *path = getenv("COMPRESS_FILE");
    FILE *f = path && *path ? fopen(path, "rb") : NULL;
    if (!f) return;
    buf_t b = {0};
    for (;;) {
        buf_reserve(&b, 1 << 16);
        size_t r = fread(b.p + b.len, 1, b.cap - b.len, f);
        if (r == 0) break;
        b.len += r;
    }
    fclose(f);
    compress_doc = b.p;
    compress_doc_len = b.len;
}

/* ---- request parsing ------------------------------------------------------------------- */

static int is_tchar(unsigned char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* Strict non-negative decimal: digits only, value <= max; -1 otherwise. */
static long parse_uint(const char *s, size_t n, long max) {
    if (n == 0 || n > 10) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v > max ? -1 : v;
}

/* Looks up `name` in a query string; returns def when absent, -1 when invalid. */
static long query_param(const char *q, size_t qn, const char *name, long def, long max) {
    size_t nl = strlen(name);
    size_t i = 0;
    long result = def;
    while (i < qn) {
        size_t j = i;
        while (j < qn && q[j] != '&') j++;
        const char *eq = memchr(q + i, '=', j - i);
        size_t klen = eq ? (size_t)(eq - (q + i)) : j - i;
        if (klen == nl && memcmp(q + i, name, nl) == 0) {
            if (!eq) return -1;
            result = parse_uint(eq + 1, (size_t)(q + j - (eq + 1)), max);
            if (result < 0) return -1;
        }
        i = j + 1;
    }
    return result;
}

/* Does a comma-separated header value contain the token (case-insensitive)? */
static int has_token(const char *v, size_t n, const char *tok) {
    size_t tl = strlen(tok), i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
        size_t j = i;
        while (j < n && v[j] != ',') j++;
        size_t k = j;
        while (k > i && (v[k - 1] == ' ' || v[k - 1] == '\t')) k--;
        if (k - i == tl && strncasecmp(v + i, tok, tl) == 0) return 1;
        i = j;
    }
    return 0;
}

/* Decodes a chunked body starting at p. Returns 1 when complete (*used = bytes consumed,
 * the decoded body in *out), 0 when more bytes are needed, -400 on bad framing, -413 when the
 * decoded body would exceed MAX_BODY. */
static int parse_chunked(const char *p, size_t n, size_t *used, buf_t *out) {
    size_t i = 0;
    out->len = 0;
    for (;;) {
        /* chunk-size [; ext] CRLF */
        size_t line_end = i;
        while (line_end + 1 < n && !(p[line_end] == '\r' && p[line_end + 1] == '\n')) {
            if (line_end - i > 1024) return -400;
            line_end++;
        }
        if (line_end + 1 >= n) return n - i > 1024 ? -400 : 0;
        size_t size = 0, k = i, digits = 0;
        for (; k < line_end; k++, digits++) {
            char ch = p[k];
            int d = (ch >= '0' && ch <= '9') ? ch - '0' : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
                  : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10 : -1;
            if (d < 0) break;
            if (digits >= 8) return -413;
            size = size * 16 + (size_t)d;
        }
        if (digits == 0 || (k < line_end && p[k] != ';' && p[k] != ' ' && p[k] != '\t')) return -400;
        i = line_end + 2;
        if (size == 0) {
            /* trailer fields, then the empty line */
            for (;;) {
                size_t e = i;
                while (e + 1 < n && !(p[e] == '\r' && p[e + 1] == '\n')) e++;
                if (e + 1 >= n) return 0;
                if (e == i) { *used = e + 2; return 1; }
                i = e + 2;
            }
        }
        if (out->len + size > MAX_BODY) return -413;
        if (n - i < size + 2) return 0;
        buf_add(out, p + i, size);
        i += size;
        if (p[i] != '\r' || p[i + 1] != '\n') return -400;
        i += 2;
    }
}

typedef struct {
    const char *method; size_t method_len;
    const char *target; size_t target_len;
    int http10;
    int keep;
    long content_length; /* -1 when absent */
    int chunked;
    int expect_continue;
} request_t;

/* Parses the head [p, p+n) (ending with CRLFCRLF). Returns 0 or an HTTP status. */
static int parse_head(const char *p, size_t n, request_t *rq) {
    const char *end = p + n;
    const char *eol = memmem(p, n, "\r\n", 2);
    /* request line: method SP target SP HTTP/1.x */
    const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
    if (!sp1 || sp1 == p) return 400;
    for (const char *q = p; q < sp1; q++)
        if (!is_tchar((unsigned char)*q)) return 400;
    const char *sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
    if (!sp2 || sp2 == sp1 + 1 || sp1[1] != '/') return 400;
    for (const char *q = sp1 + 1; q < sp2; q++)
        if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f) return 400;
    size_t vl = (size_t)(eol - sp2 - 1);
    if (vl != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0) return 400;
    if (sp2[8] == '1') rq->http10 = 0;
    else if (sp2[8] == '0') rq->http10 = 1;
    else return 505;
    rq->method = p; rq->method_len = (size_t)(sp1 - p);
    rq->target = sp1 + 1; rq->target_len = (size_t)(sp2 - sp1 - 1);
    rq->content_length = -1;
    rq->chunked = 0;
    rq->expect_continue = 0;
    int conn_close = 0, conn_keep = 0, fields = 0, te_seen = 0;
    const char *line = eol + 2;
    while (line < end - 2) {
        const char *le = memmem(line, (size_t)(end - line), "\r\n", 2);
        if (++fields > MAX_FIELDS) return 431;
        const char *colon = memchr(line, ':', (size_t)(le - line));
        if (!colon || colon == line) return 400;
        for (const char *q = line; q < colon; q++)
            if (!is_tchar((unsigned char)*q)) return 400;
        size_t name_len = (size_t)(colon - line);
        const char *v = colon + 1, *ve = le;
        while (v < ve && (*v == ' ' || *v == '\t')) v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
        size_t vn = (size_t)(ve - v);
        if (name_len == 14 && strncasecmp(line, "content-length", 14) == 0) {
            long cl = 0;
            if (vn == 0 || vn > 18) return vn > 18 ? 413 : 400;
            for (size_t i = 0; i < vn; i++) {
                if (v[i] < '0' || v[i] > '9') return 400;
                cl = cl * 10 + (v[i] - '0');
            }
            if (rq->content_length >= 0 && rq->content_length != cl) return 400;
            rq->content_length = cl;
        } else if (name_len == 17 && strncasecmp(line, "transfer-encoding", 17) == 0) {
            te_seen = 1;
            /* only "chunked" (as the final coding) is understood */
            if (vn == 7 && strncasecmp(v, "chunked", 7) == 0) rq->chunked = 1;
            else return 501;
        } else if (name_len == 10 && strncasecmp(line, "connection", 10) == 0) {
            if (has_token(v, vn, "close")) conn_close = 1;
            if (has_token(v, vn, "keep-alive")) conn_keep = 1;
        } else if (name_len == 6 && strncasecmp(line, "expect", 6) == 0) {
            if (vn == 12 && strncasecmp(v, "100-continue", 12) == 0) rq->expect_continue = 1;
        }
        line = le + 2;
    }
    if (te_seen && rq->content_length >= 0) return 400; /* ambiguous framing */
    rq->keep = rq->http10 ? (conn_keep && !conn_close) : !conn_close;
    return 0;
}

/* ---- routing --------------------------------------------------------------------------- */

static int method_is(const request_t *rq, const char *m) {
    size_t n = strlen(m);
    return rq->method_len == n && memcmp(rq->method, m, n) == 0;
}

static int path_is(const char *path, size_t n, const char *want) {
    size_t wn = strlen(want);
    return n == wn && memcmp(path, want, n) == 0;
}

static void park(conn_t *c, long ms, int keep, int http10, int is_tenth, unsigned long tenth, long bytes) {
    c->waiting = 1;
    c->pend_keep = keep | (http10 << 1);
    c->pend_is_tenth = is_tenth;
    c->pend_tenth = tenth;
    c->pend_bytes = bytes;
    heap_push(c->loop, now_ns() + (uint64_t)ms * 1000000ull, c);
}

static int db_route(const char *path, size_t n) {
    if (path_is(path, n, "/db")) return DB_ONE;
    if (path_is(path, n, "/queries")) return DB_QUERIES;
    if (path_is(path, n, "/fortunes")) return DB_FORTUNES;
    if (path_is(path, n, "/updates")) return DB_UPDATES;
    return -1;
}

/* Queues the request on the loop's database; the connection waits (like a timer) for db_finish. */
static void serve_db(conn_t *c, enum db_kind kind, const char *q, size_t qn, int keep, int http10) {
    if (c->loop->db && db_submit(c->loop->db, c, kind, db_count_param(q, qn), keep, http10) == 0) {
        c->waiting = 1;
        return;
    }
    static const char msg[] = "no database";
    respond_db(c, 503, "text/plain", msg, sizeof msg - 1, keep, http10);
}

static void dispatch(conn_t *c, const request_t *rq, const char *body, size_t body_len) {
    const char *path = rq->target;
    const char *qm = memchr(rq->target, '?', rq->target_len);
    size_t plen = qm ? (size_t)(qm - path) : rq->target_len;
    const char *q = qm ? qm + 1 : "";
    size_t qn = qm ? rq->target_len - plen - 1 : 0;
    int keep = rq->keep, h10 = rq->http10;
    int get = method_is(rq, "GET");
    int db_kind = db_route(path, plen);

    if (path_is(path, plen, "/")) {
        if (!get) goto not_allowed;
        respond(c, 200, "text/plain", HELLO, sizeof HELLO - 1, keep, h10);
    } else if (path_is(path, plen, "/json")) {
        if (!get) goto not_allowed;
        char json[128];
        size_t n = json_message(json, sizeof json, HELLO);
        respond(c, 200, "application/json", json, n, keep, h10);
    } else if (path_is(path, plen, "/file")) {
        if (!get) goto not_allowed;
        respond_file(c, keep, h10);
    } else if (path_is(path, plen, "/delay")) {
        if (!get) goto not_allowed;
        long ms = query_param(q, qn, "ms", 0, MAX_DELAY_MS);
        long bytes = query_param(q, qn, "bytes", 0, MAX_BODY);
        if (ms < 0 || bytes < 0) {
            respond(c, 400, "text/plain", "bad ms or bytes", 15, keep, h10);
        } else if (ms == 0) {
            respond_xs(c, bytes, keep, h10);
        } else {
            park(c, ms, keep, h10, 0, 0, bytes);
        }
    } else if (path_is(path, plen, "/tenth")) {
        if (!get) goto not_allowed;
        long ms = query_param(q, qn, "ms", 2000, MAX_DELAY_MS);
        if (ms < 0) {
            respond(c, 400, "text/plain", "bad ms", 6, keep, h10);
            return;
        }
        unsigned long v = atomic_fetch_add(&tenth_counter, 1) + 1;
        if (v % 10 == 0 && ms > 0) park(c, ms, keep, h10, 1, v, 0);
        else respond_tenth(c, v, keep, h10);
    } else if (path_is(path, plen, "/compress")) {
        if (!get) goto not_allowed;
        long kb = query_param(q, qn, "kb", 0, MAX_COMPRESS_KB); /* absent: 0, refused */
        if (kb < 1) respond(c, 400, "text/plain", "bad kb", 6, keep, h10);
        else respond_compress(c, kb, keep, h10);
    } else if (db_kind >= 0) {
        if (!get) goto not_allowed;
        serve_db(c, (enum db_kind)db_kind, q, qn, keep, h10);
    } else if (path_is(path, plen, "/echo")) {
        if (!method_is(rq, "POST")) goto not_allowed;
        respond(c, 200, "application/octet-stream", body, body_len, keep, h10);
    } else {
        respond(c, 404, "text/plain", "Not Found", 9, keep, h10);
    }
    return;
not_allowed:
    respond(c, 405, "text/plain", "Method Not Allowed", 18, keep, h10);
}

/* Answers as many complete requests from the input buffer as possible, in order. Returns 1
 * if it stopped because too much output is queued (more may be answerable once it drains). */
static int process(conn_t *c) {
    buf_t chunked = {0};
    int backed_up = 0;
    for (;;) {
        if (c->waiting || c->close_after) break;
        if (c->out.len - c->out_off >= OUT_HIGH_WATER) {
            backed_up = 1;
            break;
        }
        const char *p = c->in.p + c->in_off;
        size_t avail = c->in.len - c->in_off;
        if (avail == 0) break;
        /* skip empty lines between requests (RFC 9112 2.2) */
        if (p[0] == '\r' || p[0] == '\n') {
            c->in_off++;
            c->scan_from = c->in_off;
            continue;
        }
        size_t from = c->scan_from > c->in_off + 3 ? c->scan_from - 3 : c->in_off;
        const char *he = memmem(c->in.p + from, c->in.len - from, "\r\n\r\n", 4);
        if (!he) {
            c->scan_from = c->in.len;
            if (avail > MAX_HEAD) respond_error(c, 431);
            break;
        }
        size_t head_len = (size_t)(he - p) + 4;
        if (head_len > MAX_HEAD) { respond_error(c, 431); break; }
        request_t rq;
        int st = parse_head(p, head_len, &rq);
        if (st) { respond_error(c, st); break; }
        const char *body = p + head_len;
        size_t body_len = 0, used = head_len;
        if (rq.chunked) {
            size_t consumed = 0;
            int r = parse_chunked(body, avail - head_len, &consumed, &chunked);
            if (r == -413 || r == -400) { respond_error(c, -r); break; }
            if (r == 0) goto need_more;
            body = chunked.p ? chunked.p : "";
            body_len = chunked.len;
            used += consumed;
        } else if (rq.content_length > 0) {
            if (rq.content_length > MAX_BODY) { respond_error(c, 413); break; }
            if (avail - head_len < (size_t)rq.content_length) goto need_more;
            body_len = (size_t)rq.content_length;
            used += body_len;
        }
        dispatch(c, &rq, body, body_len);
        c->in_off += used;
        c->scan_from = c->in_off;
        c->sent_continue = 0;
        continue;
    need_more:
        if (rq.expect_continue && !rq.http10 && !c->sent_continue) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            buf_add(&c->out, cont, sizeof cont - 1);
            c->sent_continue = 1;
        }
        c->scan_from = c->in_off; /* re-parse this head when more body arrives */
        break;
    }
    buf_free(&chunked);
    /* compact the input buffer */
    if (c->in_off == c->in.len) {
        c->in.len = c->in_off = c->scan_from = 0;
        if (c->in.cap > 64 * 1024) buf_free(&c->in);
    } else if (c->in_off > 0 && (c->in_off > 64 * 1024 || c->in_off * 2 > c->in.len)) {
        memmove(c->in.p, c->in.p + c->in_off, c->in.len - c->in_off);
        c->in.len -= c->in_off;
        c->scan_from -= c->in_off;
        c->in_off = 0;
    }
    return backed_up;
}

/* ---- I/O ------------------------------------------------------------------------------- */

static void conn_free(conn_t *c) {
    buf_free(&c->in);
    buf_free(&c->out);
    free(c);
}

static void conn_close(conn_t *c) {
    if (c->fd >= 0) {
        if (c->ssl) tls_close(c->ssl); /* close_notify first (SPEC: Connection: close over TLS) */
        c->ssl = NULL;
        close(c->fd); /* also removes it from the epoll set */
        c->fd = -1;
    }
    if (c->waiting) c->dead = 1; /* the timer still points here */
    else conn_free(c);
}

/* Writes what is pending. Returns -1 if the connection was closed. */
static int flush_out(conn_t *c) {
    while (c->out_off < c->out.len) {
        const char *p = c->out.p + c->out_off;
        size_t n = c->out.len - c->out_off;
        ssize_t w = c->ssl ? tls_send(c->ssl, p, n) : send(c->fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) return 0; /* EPOLLOUT (edge-triggered) tells us when to go on */
            conn_close(c);
            return -1;
        }
        c->out_off += (size_t)w;
    }
    c->out.len = c->out_off = 0;
    if (c->out.cap > 256 * 1024) buf_free(&c->out);
    if (c->close_after) {
        conn_close(c);
        return -1;
    }
    return 0;
}

/* Reads everything available (edge-triggered). Returns 1 if it stopped before EAGAIN because
 * the connection is parked or backed up with a full buffer, -1 if the connection was closed. */
static int read_in(conn_t *c) {
    for (;;) {
        if ((c->waiting || c->out.len - c->out_off >= OUT_HIGH_WATER) &&
            c->in.len - c->in_off > MAX_BODY + MAX_HEAD)
            return 1;
        buf_reserve(&c->in, 16 * 1024);
        /* over TLS this drains OpenSSL's buffered records too: it goes on until WANT_READ */
        char *p = c->in.p + c->in.len;
        size_t n = c->in.cap - c->in.len;
        ssize_t r = c->ssl ? tls_recv(c->ssl, p, n) : recv(c->fd, p, n, 0);
        if (r > 0) {
            c->in.len += (size_t)r;
            continue;
        }
        if (r == 0) {
            c->peer_eof = 1;
            return 0;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN) return 0;
        conn_close(c);
        return -1;
    }
}

/* Reads, answers and writes until nothing more can be done right now. */
static void drive(conn_t *c) {
    for (;;) {
        int stopped_early = 0, backed_up = 0;
        if (!c->close_after) {
            stopped_early = read_in(c);
            if (stopped_early < 0) return;
            backed_up = process(c);
        }
        if (flush_out(c) < 0) return;
        int idle = !c->waiting && c->out.len == c->out_off;
        if (c->peer_eof && idle) { /* client done sending and everything answered */
            conn_close(c);
            return;
        }
        /* go on if reading or answering was held back and the output has drained since */
        if (!(stopped_early || backed_up) || c->waiting || c->close_after ||
            c->out.len - c->out_off >= OUT_HIGH_WATER)
            return;
    }
}

/* After the response a connection waited for: answer whatever was pipelined behind it. */
static void resume(conn_t *c) {
    if (!c->close_after) process(c);
    if (flush_out(c) < 0) return;
    if (!c->waiting && c->out.len == c->out_off) drive(c);
}

static void fire_timer(conn_t *c) {
    c->waiting = 0;
    if (c->dead) {
        conn_free(c);
        return;
    }
    int keep = c->pend_keep & 1, h10 = c->pend_keep >> 1;
    if (c->pend_is_tenth) respond_tenth(c, c->pend_tenth, keep, h10);
    else respond_xs(c, c->pend_bytes, keep, h10);
    resume(c);
}

void db_finish(conn_t *c, int status, const char *ctype, const char *body, size_t len, int keep,
               int http10) {
    c->waiting = 0;
    if (c->dead) {
        conn_free(c);
        return;
    }
    respond_db(c, status, ctype, body, len, keep, http10);
    resume(c);
}

static void accept_all(loop_t *l) {
    for (;;) {
        int fd = accept4(l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN) perror("c-epoll: accept");
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn_t *c = calloc(1, sizeof *c);
        if (!c) { close(fd); continue; }
        c->fd = fd;
        c->loop = l;
        if (tls_ctx && !(c->ssl = tls_new(tls_ctx, fd))) { close(fd); free(c); continue; }
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};
        if (epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
            perror("c-epoll: epoll_ctl");
            if (c->ssl) SSL_free(c->ssl);
            close(fd);
            free(c);
        }
    }
}

static void *loop_run(void *arg) {
    loop_t *l = arg;
    struct epoll_event evs[256];
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, l->lfd, &lev) < 0) {
        perror("c-epoll: epoll_ctl");
        exit(1);
    }
    for (;;) {
        int timeout = -1;
        if (l->nheap) {
            uint64_t now = now_ns(), due = l->heap[0].due_ns;
            timeout = due <= now ? 0 : (int)((due - now + 999999) / 1000000);
        }
        int n = epoll_wait(l->ep, evs, 256, timeout);
        if (n < 0 && errno != EINTR) {
            perror("c-epoll: epoll_wait");
            exit(1);
        }
        date_refresh(&l->date);
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            if (!c) accept_all(l);
            else if (l->db && db_owns(l->db, c)) db_on_event(l->db, c, evs[i].events);
            else if (c->fd < 0) continue; /* closed while waiting for a timer or the database */
            else if (evs[i].events & ~(uint32_t)EPOLLOUT) drive(c);
            else if (c->out.len > c->out_off || (c->ssl && SSL_want_write(c->ssl)))
                drive(c); /* room to send what was left, or what OpenSSL's handshake holds */
        }
        if (l->nheap) {
            uint64_t now = now_ns();
            while (l->nheap && l->heap[0].due_ns <= now) fire_timer(heap_pop(l).c);
        }
        if (l->db) db_after_batch(l->db);
    }
    return NULL;
}

/* ---- start-up -------------------------------------------------------------------------- */

/* SO_REUSEPORT lets another process of ours join the port silently; binding once without it
 * first makes "port already in use" a start-up error, as SPEC wants. */
static void probe_port(const char *host, const char *port);

static int listen_on(const char *host, const char *port, int reuseport) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc) {
        fprintf(stderr, "c-epoll: cannot resolve %s:%s: %s\n", host, port, gai_strerror(rc));
        exit(1);
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) ||
        bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 4096) < 0) {
        fprintf(stderr, "c-epoll: cannot listen on %s:%s: %s\n", host, port, strerror(errno));
        exit(1);
    }
    freeaddrinfo(res);
    return fd;
}

static void probe_port(const char *host, const char *port) {
    close(listen_on(host, port, 0));
}

static int default_workers(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static const char *env_or(const char *name, const char *def) {
    const char *v = getenv(name);
    return v && *v ? v : def;
}

/* Gives each loop its share of $DB_POOL connections (at least one: a loop serves its own
 * requests). Without $DATABASE_URL the loops have none and the database paths answer 503. */
static void open_databases(loop_t *loops, int workers) {
    const char *url = getenv("DATABASE_URL");
    if (!url || !*url) return;
    const char *pool_s = env_or("DB_POOL", NULL);
    char *end = NULL;
    long pool = pool_s ? strtol(pool_s, &end, 10) : workers; /* default: one per loop */
    if (pool_s && (*end || pool < 1 || pool > 10000)) {
        fprintf(stderr, "c-epoll: DB_POOL=%s is not a connection count; set it to an integer from 1 to 10000\n",
                pool_s);
        exit(1);
    }
    if (pool < workers)
        fprintf(stderr, "c-epoll: DB_POOL=%ld is below WORKERS=%d: opening one connection per loop (%d)\n",
                pool, workers, workers);
    for (int i = 0; i < workers; i++) {
        int share = (int)(pool / workers) + (i < pool % workers);
        unsigned seed = (unsigned)time(NULL) ^ ((unsigned)i * 2654435761u); /* loops draw different ids */
        loops[i].db = db_open(url, share > 0 ? share : 1, loops[i].ep, seed);
    }
}

int main(void) {
    const char *host = env_or("HOST", "127.0.0.1");
    const char *port = env_or("PORT", "8080");
    hello_file = env_or("HELLO_FILE", "hello.html");
    int workers = atoi(env_or("WORKERS", "0"));
    if (workers <= 0) workers = default_workers();

    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    read_compress_doc();
    tls_ctx = tls_setup(); /* before the bind: a bad TLS setting fails before "listening" */
    probe_port(host, port);
    loop_t *loops = calloc((size_t)workers, sizeof *loops);
    for (int i = 0; i < workers; i++) {
        loops[i].lfd = listen_on(host, port, 1); /* SO_REUSEPORT: one listener per loop */
        loops[i].ep = epoll_create1(EPOLL_CLOEXEC);
        if (loops[i].ep < 0) { perror("c-epoll: epoll_create1"); return 1; }
        date_refresh(&loops[i].date);
    }
    open_databases(loops, workers);
    fprintf(stderr, "c-epoll: listening on %s:%s%s with %d epoll loops\n", host, port,
            tls_ctx ? " (TLS)" : "", workers);
    for (int i = 1; i < workers; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, loop_run, &loops[i]) != 0) {
            perror("c-epoll: pthread_create");
            return 1;
        }
    }
    loop_run(&loops[0]); /* SIGTERM's default action ends the process */
    return 0;
}
