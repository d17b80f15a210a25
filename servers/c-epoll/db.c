/* c-epoll's database paths on libpq's non-blocking API (see db.h).
 *
 * Every connection runs in pipeline mode with a Sync after every query, so each query is its own
 * implicit transaction and queries of one request (and of concurrent requests) are in flight
 * together. The queries sent on a connection wait in a FIFO (`sent`): PostgreSQL answers in order,
 * so the oldest entry owns the next result. libpq 15 (Debian 12) flushes on every PQpipelineSync,
 * so each query goes out in its own send(); libpq 17's PQsendPipelineSync would batch them.
 * A connection that breaks fails the requests waiting on it; the next request reopens it without
 * blocking (PQconnectStartParams/PQconnectPoll), meanwhile the loop's other connections carry on,
 * and with none open its database paths answer 503.
 */
#define _GNU_SOURCE
#include "db.h"

#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#define MAX_QUERIES 500
#define WORLD_ROWS 10000

enum { ST_WORLD, ST_FORTUNE, ST_UPDATE };
static const char *const STMT_NAME[] = {"world", "fortune", "update"};
static const char *const STMT_SQL[] = {
    "SELECT id, randomNumber FROM World WHERE id = $1",
    "SELECT id, message FROM Fortune",
    "UPDATE World SET randomNumber = $2 WHERE id = $1",
};
/* $DATABASE_URL as dbname (expand_dbname = 1), UTF-8 asked for the fortunes page */
static const char *const CONN_KEYS[] = {"dbname", "client_encoding", NULL};

typedef struct job {
    struct conn *c;
    enum db_kind kind;
    int keep, http10;
    int n;               /* world rows: 1 for /db, N for /queries and /updates */
    int *ids, *nums;     /* the rows' ids and randomNumbers */
    int pending;         /* queries sent whose Sync has not come back */
    int writing;         /* /updates: the UPDATEs are out */
    int failed;
    PGresult *fortunes;  /* /fortunes: the rows, kept until the page is rendered */
    struct job *next;    /* on the done list */
} job_t;

typedef struct {
    job_t *job;          /* NULL: a PQsendPrepare of a reopened connection */
    int row;
} sent_t;

typedef struct pgc {
    PGconn *pg;          /* NULL while the connection is down */
    struct db *db;
    int fd;              /* the socket in the epoll set, -1 when none */
    int connecting;      /* reopening: PQconnectPoll is under way */
    int out_armed;       /* EPOLLOUT requested: libpq has unsent bytes */
    time_t retry_at;     /* a down connection is reopened by a request from this second on */
    sent_t *sent;        /* ring buffer of queries awaiting their results, oldest at head */
    size_t head, len, cap;
} pgc_t;

struct db {
    const char *url;
    pgc_t *conns;
    int n;
    int ep;
    unsigned short rnd[3]; /* nrand48 state, one per loop */
    job_t *done, *done_tail;
};

/* ---- connections ----------------------------------------------------------------------- */

/* At start-up: connects and prepares with blocking calls, so a wrong $DATABASE_URL or schema
 * stops the server with libpq's message; then non-blocking pipeline mode for the loop. */
static PGconn *connect_one(const char *url) {
    const char *values[] = {url, "UTF8", NULL};
    PGconn *pg = PQconnectdbParams(CONN_KEYS, values, 1);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "c-epoll: cannot connect to $DATABASE_URL: %s", PQerrorMessage(pg));
        exit(1);
    }
    for (int s = ST_WORLD; s <= ST_UPDATE; s++) {
        PGresult *r = PQprepare(pg, STMT_NAME[s], STMT_SQL[s], 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "c-epoll: cannot prepare %s: %s", STMT_NAME[s], PQerrorMessage(pg));
            exit(1);
        }
        PQclear(r);
    }
    if (PQsetnonblocking(pg, 1) != 0 || !PQenterPipelineMode(pg)) {
        fprintf(stderr, "c-epoll: cannot enter non-blocking pipeline mode: %s", PQerrorMessage(pg));
        exit(1);
    }
    return pg;
}

/* Registers the connection's socket for `events`, level-triggered (PQconsumeInput need not read
 * the socket dry). While connecting, libpq may have closed the socket and opened another. */
static void watch(pgc_t *p, uint32_t events) {
    int fd = PQsocket(p->pg);
    struct epoll_event ev = {.events = events, .data.ptr = p};
    if (fd != p->fd && p->fd >= 0) epoll_ctl(p->db->ep, EPOLL_CTL_DEL, p->fd, NULL); /* may be gone */
    if (epoll_ctl(p->db->ep, EPOLL_CTL_MOD, fd, &ev) < 0 &&
        (errno != ENOENT || epoll_ctl(p->db->ep, EPOLL_CTL_ADD, fd, &ev) < 0)) {
        perror("c-epoll: epoll_ctl");
        exit(1);
    }
    p->fd = fd;
    p->out_armed = (events & EPOLLOUT) != 0;
}

db_t *db_open(const char *url, int n, int ep, unsigned seed) {
    db_t *db = calloc(1, sizeof *db);
    pgc_t *conns = calloc((size_t)n, sizeof *conns);
    if (!db || !conns) { perror("c-epoll: calloc"); exit(1); }
    db->url = url;
    db->conns = conns;
    db->n = n;
    db->ep = ep;
    db->rnd[0] = (unsigned short)seed;
    db->rnd[1] = (unsigned short)(seed >> 16);
    db->rnd[2] = 0x330e;
    for (int i = 0; i < n; i++) {
        pgc_t *p = &db->conns[i];
        p->db = db;
        p->fd = -1;
        p->pg = connect_one(url);
        watch(p, EPOLLIN);
    }
    return db;
}

int db_owns(const db_t *db, const void *ptr) {
    uintptr_t a = (uintptr_t)ptr, lo = (uintptr_t)db->conns, hi = (uintptr_t)(db->conns + db->n);
    return a >= lo && a < hi;
}

static void arm_out(pgc_t *p, int on) {
    if (p->out_armed != on) watch(p, EPOLLIN | (on ? EPOLLOUT : 0));
}

static void job_done(db_t *db, job_t *j) {
    j->next = NULL;
    if (db->done_tail) db->done_tail->next = j;
    else db->done = j;
    db->done_tail = j;
}

/* One query of `j` answered (its Sync came back): the next step once all are in. */
static void query_finished(pgc_t *p, job_t *j);

/* The connection broke (or did not reopen): every query waiting on it fails. A lost connection
 * is reopened by the next request, one that failed to reopen a second later. */
static void pgc_down(pgc_t *p) {
    fprintf(stderr, "c-epoll: database connection %s: %s", p->connecting ? "not reopened" : "lost",
            PQerrorMessage(p->pg));
    if (p->fd >= 0) epoll_ctl(p->db->ep, EPOLL_CTL_DEL, p->fd, NULL);
    PQfinish(p->pg);
    p->pg = NULL;
    p->fd = -1;
    p->retry_at = p->connecting ? time(NULL) + 1 : 0;
    p->connecting = 0;
    while (p->len) {
        job_t *j = p->sent[p->head].job;
        p->head = (p->head + 1) % p->cap;
        p->len--;
        if (!j) continue;
        j->failed = 1;
        query_finished(p, j);
    }
}

/* Remembers who waits for the next result of the connection. */
static void sent_push(pgc_t *p, job_t *j, int row) {
    if (p->len == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        sent_t *s = malloc(cap * sizeof *s);
        if (!s) { perror("c-epoll: malloc"); exit(1); }
        for (size_t i = 0; i < p->len; i++) s[i] = p->sent[(p->head + i) % p->cap];
        free(p->sent);
        p->sent = s;
        p->cap = cap;
        p->head = 0;
    }
    p->sent[(p->head + p->len) % p->cap] = (sent_t){j, row};
    p->len++;
}

/* Sends one prepared statement with a Sync after it. */
static int send_query(pgc_t *p, job_t *j, int row, int stmt) {
    char id[16], num[16];
    const char *params[2] = {id, num};
    int nparams = 0;
    if (stmt != ST_FORTUNE) {
        snprintf(id, sizeof id, "%d", j->ids[row]);
        snprintf(num, sizeof num, "%d", j->nums[row]);
        nparams = stmt == ST_UPDATE ? 2 : 1;
    }
    if (!PQsendQueryPrepared(p->pg, STMT_NAME[stmt], nparams, params, NULL, NULL, 0) ||
        !PQpipelineSync(p->pg))
        return -1;
    sent_push(p, j, row);
    j->pending++;
    return 0;
}

/* Sends what libpq holds; EPOLLOUT tells when to go on. */
static void flush(pgc_t *p) {
    int f = PQflush(p->pg);
    if (f < 0) pgc_down(p);
    else arm_out(p, f == 1);
}

/* Starts reopening a down connection without blocking; its socket then drives connect_step.
 * (PQconnectStartParams would block only to resolve a host name: $DB_HOST is an address.) */
static void reopen(pgc_t *p) {
    const char *values[] = {p->db->url, "UTF8", NULL};
    p->pg = PQconnectStartParams(CONN_KEYS, values, 1);
    p->connecting = 1;
    if (!p->pg || PQstatus(p->pg) == CONNECTION_BAD) {
        pgc_down(p);
        return;
    }
    watch(p, EPOLLOUT); /* libpq: first wait as if PQconnectPoll had said PGRES_POLLING_WRITING */
}

/* Advances a reopening connection; once open, its statements are prepared in the pipeline, ahead
 * of the queries that follow (their results are only checked for errors). */
static void connect_step(pgc_t *p) {
    switch (PQconnectPoll(p->pg)) {
    case PGRES_POLLING_READING: watch(p, EPOLLIN); return;
    case PGRES_POLLING_WRITING: watch(p, EPOLLOUT); return;
    case PGRES_POLLING_OK: break;
    default: pgc_down(p); return;
    }
    if (PQsetnonblocking(p->pg, 1) != 0 || !PQenterPipelineMode(p->pg)) {
        pgc_down(p);
        return;
    }
    for (int s = ST_WORLD; s <= ST_UPDATE; s++) {
        if (!PQsendPrepare(p->pg, STMT_NAME[s], STMT_SQL[s], 0, NULL) || !PQpipelineSync(p->pg)) {
            pgc_down(p);
            return;
        }
        sent_push(p, NULL, 0);
    }
    p->connecting = 0;
    watch(p, EPOLLIN);
    flush(p);
}

/* Sends the queries of one step of `j`: its SELECTs, or the UPDATEs of /updates. A connection that
 * refuses a query is broken: pgc_down fails the job with everything else waiting there. */
static void send_step(pgc_t *p, job_t *j) {
    int stmt = j->kind == DB_FORTUNES ? ST_FORTUNE : j->writing ? ST_UPDATE : ST_WORLD;
    int count = j->kind == DB_FORTUNES ? 1 : j->n;
    for (int i = 0; i < count; i++) {
        if (send_query(p, j, i, stmt) < 0) {
            int waiting = j->pending > 0; /* then pgc_down finishes the job with its queries */
            j->failed = 1;
            pgc_down(p);
            if (!waiting) job_done(p->db, j);
            return;
        }
    }
    flush(p);
}

static void query_finished(pgc_t *p, job_t *j) {
    if (--j->pending) return;
    if (j->kind == DB_UPDATES && !j->writing && !j->failed) {
        /* every row read: give each a new random number and write it back */
        for (int i = 0; i < j->n; i++) j->nums[i] = 1 + (int)(nrand48(p->db->rnd) % WORLD_ROWS);
        j->writing = 1;
        send_step(p, j);
        return;
    }
    job_done(p->db, j);
}

/* A result for the oldest query of the connection (the Sync result ends that query). */
static void on_result(pgc_t *p, PGresult *r) {
    sent_t *s = &p->sent[p->head];
    job_t *j = s->job;
    ExecStatusType st = PQresultStatus(r);
    if (st == PGRES_PIPELINE_SYNC) {
        PQclear(r);
        p->head = (p->head + 1) % p->cap;
        p->len--;
        if (j) query_finished(p, j);
        return;
    }
    if (!j) { /* a statement prepared on a reopened connection */
        if (st != PGRES_COMMAND_OK) fprintf(stderr, "c-epoll: prepare failed: %s", PQresultErrorMessage(r));
        PQclear(r);
        return;
    }
    if (st == PGRES_TUPLES_OK && j->kind == DB_FORTUNES) {
        j->fortunes = r; /* rendered from the result itself, then cleared */
        return;
    }
    if (st == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        j->ids[s->row] = atoi(PQgetvalue(r, 0, 0));
        j->nums[s->row] = atoi(PQgetvalue(r, 0, 1));
    } else if (st != PGRES_COMMAND_OK || j->kind != DB_UPDATES) {
        if (st == PGRES_FATAL_ERROR) fprintf(stderr, "c-epoll: query failed: %s", PQresultErrorMessage(r));
        j->failed = 1; /* an error, or a row that does not exist */
    }
    PQclear(r);
}

void db_on_event(db_t *db, void *ptr, uint32_t events) {
    (void)db;
    pgc_t *p = ptr;
    if (!p->pg) return;
    if (p->connecting) {
        connect_step(p);
        return;
    }
    if (events & EPOLLOUT) {
        flush(p);
        if (!p->pg) return;
    }
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP))) return;
    if (!PQconsumeInput(p->pg)) { pgc_down(p); return; }
    /* PQgetResult gives NULL after each query's results; two in a row mean nothing more is here */
    int nulls = 0;
    while (p->len && p->pg && !PQisBusy(p->pg) && nulls < 2) {
        PGresult *r = PQgetResult(p->pg);
        if (!r) { nulls++; continue; }
        nulls = 0;
        on_result(p, r);
    }
}

int db_submit(db_t *db, struct conn *c, enum db_kind kind, int n, int keep, int http10) {
    pgc_t *best = NULL; /* the open connection with the fewest queries waiting */
    time_t now = time(NULL);
    for (int i = 0; i < db->n; i++) {
        pgc_t *p = &db->conns[i];
        if (!p->pg && p->retry_at <= now) reopen(p);
        else if (p->pg && !p->connecting && (!best || p->len < best->len)) best = p;
    }
    if (!best) return -1;
    job_t *j = calloc(1, sizeof *j);
    if (kind == DB_ONE || kind == DB_FORTUNES) n = 1;
    int *rows = calloc(2 * (size_t)n, sizeof *rows);
    if (!j || !rows) { perror("c-epoll: calloc"); exit(1); }
    *j = (job_t){.c = c, .kind = kind, .keep = keep, .http10 = http10, .n = n, .ids = rows, .nums = rows + n};
    for (int i = 0; i < n; i++) j->ids[i] = 1 + (int)(nrand48(db->rnd) % WORLD_ROWS);
    send_step(best, j);
    return 0;
}

/* ---- responses ------------------------------------------------------------------------- */

/* World rows as JSON: C has no JSON library in its standard library, and these objects hold only
 * integers, so they are printed directly. /db answers one object, the others an array. */
static char *render_world(const job_t *j, size_t *len) {
    char *out = malloc((size_t)j->n * 40 + 3), *w = out;
    if (!out) { perror("c-epoll: malloc"); exit(1); }
    int array = j->kind != DB_ONE;
    if (array) *w++ = '[';
    for (int i = 0; i < j->n; i++)
        w += sprintf(w, "%s{\"id\":%d,\"randomNumber\":%d}", i ? "," : "", j->ids[i], j->nums[i]);
    if (array) *w++ = ']';
    *len = (size_t)(w - out);
    return out;
}

/* C has no HTML escaping function in its standard library: this one replaces the five characters
 * that matter in HTML text (& < > " '). `dst` has room for 6 bytes per input byte. */
static char *html_escape(char *dst, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': dst = stpcpy(dst, "&amp;"); break;
        case '<': dst = stpcpy(dst, "&lt;"); break;
        case '>': dst = stpcpy(dst, "&gt;"); break;
        case '"': dst = stpcpy(dst, "&quot;"); break;
        case '\'': dst = stpcpy(dst, "&#39;"); break;
        default: *dst++ = *s;
        }
    }
    return dst;
}

typedef struct {
    const char *id, *message;
} fortune_t;

static int by_message(const void *a, const void *b) {
    return strcmp(((const fortune_t *)a)->message, ((const fortune_t *)b)->message);
}

static char *render_fortunes(PGresult *r, size_t *len) {
    static const char head[] = "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
                               "<tr><th>id</th><th>message</th></tr>";
    static const char tail[] = "</table></body></html>";
    int n = PQntuples(r);
    fortune_t *f = malloc(((size_t)n + 1) * sizeof *f);
    if (!f) { perror("c-epoll: malloc"); exit(1); }
    size_t cap = sizeof head + sizeof tail;
    for (int i = 0; i < n; i++) {
        f[i] = (fortune_t){PQgetvalue(r, i, 0), PQgetvalue(r, i, 1)};
        cap += 32 + strlen(f[i].id) + 6 * strlen(f[i].message);
    }
    f[n] = (fortune_t){"0", "Additional fortune added at request time."};
    cap += 32 + 1 + 6 * strlen(f[n].message);
    qsort(f, (size_t)n + 1, sizeof *f, by_message);
    char *out = malloc(cap), *w = out;
    if (!out) { perror("c-epoll: malloc"); exit(1); }
    w = stpcpy(w, head);
    for (int i = 0; i <= n; i++) {
        w = stpcpy(stpcpy(stpcpy(w, "<tr><td>"), f[i].id), "</td><td>");
        w = stpcpy(html_escape(w, f[i].message), "</td></tr>");
    }
    w = stpcpy(w, tail);
    free(f);
    *len = (size_t)(w - out);
    return out;
}

static void deliver(job_t *j) {
    if (j->failed || (j->kind == DB_FORTUNES && !j->fortunes)) {
        static const char msg[] = "database error";
        db_finish(j->c, 500, "text/plain", msg, sizeof msg - 1, j->keep, j->http10);
    } else {
        size_t len;
        int html = j->kind == DB_FORTUNES;
        char *body = html ? render_fortunes(j->fortunes, &len) : render_world(j, &len);
        db_finish(j->c, 200, html ? "text/html; charset=utf-8" : "application/json", body, len, j->keep,
                  j->http10);
        free(body);
    }
    PQclear(j->fortunes);
    free(j->ids);
    free(j);
}

void db_after_batch(db_t *db) {
    /* delivering may answer pipelined requests that queue new jobs (and those may fail at once) */
    while (db->done) {
        job_t *j = db->done;
        db->done = j->next;
        if (!db->done) db->done_tail = NULL;
        deliver(j);
    }
}

int db_count_param(const char *q, size_t qn) {
    size_t i = 0;
    while (i < qn) {
        size_t j = i;
        while (j < qn && q[j] != '&') j++;
        if (j - i >= 8 && memcmp(q + i, "queries=", 8) == 0) {
            long v = 0;
            size_t k = i + 8;
            if (k == j) return 1;
            for (; k < j; k++) {
                if (q[k] < '0' || q[k] > '9') return 1; /* not a number, or negative */
                if (v <= MAX_QUERIES) v = v * 10 + (q[k] - '0');
            }
            return v < 1 ? 1 : v > MAX_QUERIES ? MAX_QUERIES : (int)v;
        }
        i = j + 1;
    }
    return 1;
}
