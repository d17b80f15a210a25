/* c-epoll's database paths (/db, /queries, /fortunes, /updates) on libpq's non-blocking API.
 *
 * Each epoll loop owns a db_t: its share of $DB_POOL PostgreSQL connections, whose sockets sit in
 * the loop's own epoll set. A request's queries are queued on one connection (pipeline mode, a
 * Sync after every query); its response is handed back to server.c once the last result is in.
 */
#ifndef C_EPOLL_DB_H
#define C_EPOLL_DB_H

#include <stddef.h>
#include <stdint.h>

struct conn;
typedef struct db db_t;

enum db_kind { DB_ONE, DB_QUERIES, DB_FORTUNES, DB_UPDATES };

/* Opens `n` connections to `url` at start-up (blocking: the loop is not running yet), prepares the
 * statements and registers the sockets in epoll set `ep`. Exits with a message on failure. */
db_t *db_open(const char *url, int n, int ep, unsigned seed);

/* Is `ptr` (an epoll event's data.ptr) one of this db's connections? */
int db_owns(const db_t *db, const void *ptr);

/* Handles readiness of the database connection `ptr`: sends what is queued, reads results. */
void db_on_event(db_t *db, void *ptr, uint32_t events);

/* Queues the queries of one request of `c`. Returns 0, or -1 when no connection can take it. */
int db_submit(db_t *db, struct conn *c, enum db_kind kind, int n, int keep, int http10);

/* Hands finished responses to db_finish. Called after an epoll batch, so that no connection is
 * freed while a later event of the same batch still points to it. */
void db_after_batch(db_t *db);

/* Defined in server.c: writes the response of the request that waited on the database. */
void db_finish(struct conn *c, int status, const char *ctype, const char *body, size_t len, int keep,
               int http10);

/* `queries=N` of a query string: clamped to 1..500; missing, empty, 0, negative or not a number: 1. */
int db_count_param(const char *q, size_t qn);

#endif
