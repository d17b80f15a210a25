// The database endpoints (SPEC.md, "Database endpoints"): pgx v5 through its pool,
// pgxpool, as a Go user deploys it. Every query runs on a pooled connection in pgx's
// default mode, which prepares each statement once per connection and then executes
// the prepared statement; each query waits for its answer before the next is sent.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	selectWorld   = "SELECT id, randomNumber FROM World WHERE id = $1"
	updateWorld   = "UPDATE World SET randomNumber = $1 WHERE id = $2"
	selectFortune = "SELECT id, message FROM Fortune"
	worldRows     = 10000
	maxQueries    = 500
)

type world struct {
	ID           int32 `json:"id"`
	RandomNumber int32 `json:"randomNumber"`
}

type fortune struct {
	ID      int32
	Message string
}

// html/template escapes every {{.Message}} for its HTML context (& < > " ' among others).
var fortunesPage = template.Must(template.New("fortunes").Parse(
	`<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>` +
		`<tr><th>id</th><th>message</th></tr>` +
		`{{range .}}<tr><td>{{.ID}}</td><td>{{.Message}}</td></tr>{{end}}` +
		`</table></body></html>`))

// dbHandlers serves the database paths from pool; a nil pool (no $DATABASE_URL) answers 503.
type dbHandlers struct{ pool *pgxpool.Pool }

// openPool builds the pool from $DATABASE_URL with at most $DB_POOL connections; nil
// without $DATABASE_URL. pgxpool connects lazily, so starting needs no database yet.
func openPool() *pgxpool.Pool {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return nil
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		fail("DATABASE_URL is not a PostgreSQL URL (%v); set it to postgres://user:password@host:port/db", err)
	}
	size, err := strconv.Atoi(os.Getenv("DB_POOL"))
	if err != nil || size < 1 {
		fail("DB_POOL=%q is not a positive integer; set it to the most connections this process may open", os.Getenv("DB_POOL"))
	}
	cfg.MaxConns = int32(size)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		fail("cannot create the database pool (%v); check DATABASE_URL", err)
	}
	return pool
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go-nethttp: "+format+"\n", args...)
	os.Exit(2)
}

func (d dbHandlers) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /db", d.guard(d.single))
	mux.HandleFunc("GET /queries", d.guard(d.queries))
	mux.HandleFunc("GET /fortunes", d.guard(d.fortunes))
	mux.HandleFunc("GET /updates", d.guard(d.updates))
}

// guard sets the Server header (net/http adds Date) and answers 503 without a database.
func (d dbHandlers) guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "go-nethttp")
		if d.pool == nil {
			reply(w, http.StatusServiceUnavailable, "text/plain", []byte("no database configured (DATABASE_URL is not set)"))
			return
		}
		h(w, r)
	}
}

// queryCount is ?queries=N clamped to 1..500; missing, empty or not an integer is 1.
// An integer too large for an int comes back from Atoi as the largest one, with ErrRange.
func queryCount(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("queries"))
	if (err != nil && !errors.Is(err, strconv.ErrRange)) || n < 1 {
		return 1
	}
	return min(n, maxQueries)
}

func randomID() int32 { return rand.Int32N(worldRows) + 1 }

func (d dbHandlers) readWorld(ctx context.Context) (world, error) {
	var row world
	err := d.pool.QueryRow(ctx, selectWorld, randomID()).Scan(&row.ID, &row.RandomNumber)
	return row, err
}

func (d dbHandlers) single(w http.ResponseWriter, r *http.Request) {
	row, err := d.readWorld(r.Context())
	if err != nil {
		serverError(w, err)
		return
	}
	sendJSON(w, row)
}

func (d dbHandlers) queries(w http.ResponseWriter, r *http.Request) {
	rows := make([]world, queryCount(r))
	for i := range rows {
		var err error
		if rows[i], err = d.readWorld(r.Context()); err != nil {
			serverError(w, err)
			return
		}
	}
	sendJSON(w, rows)
}

// updates reads each row with its own SELECT, then writes each new value with its own
// UPDATE (autocommit: one statement per transaction, so concurrent requests cannot deadlock).
func (d dbHandlers) updates(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rows := make([]world, queryCount(r))
	for i := range rows {
		var err error
		if rows[i], err = d.readWorld(ctx); err != nil {
			serverError(w, err)
			return
		}
		rows[i].RandomNumber = randomID()
	}
	for _, row := range rows {
		if _, err := d.pool.Exec(ctx, updateWorld, row.RandomNumber, row.ID); err != nil {
			serverError(w, err)
			return
		}
	}
	sendJSON(w, rows)
}

func (d dbHandlers) fortunes(w http.ResponseWriter, r *http.Request) {
	rows, err := d.pool.Query(r.Context(), selectFortune)
	if err != nil {
		serverError(w, err)
		return
	}
	list := []fortune{{0, "Additional fortune added at request time."}}
	var f fortune
	for rows.Next() {
		if err := rows.Scan(&f.ID, &f.Message); err != nil {
			rows.Close()
			serverError(w, err)
			return
		}
		list = append(list, f)
	}
	if err := rows.Err(); err != nil {
		serverError(w, err)
		return
	}
	slices.SortFunc(list, func(a, b fortune) int { return strings.Compare(a.Message, b.Message) })
	var page bytes.Buffer
	if err := fortunesPage.Execute(&page, list); err != nil {
		serverError(w, err)
		return
	}
	reply(w, http.StatusOK, "text/html; charset=utf-8", page.Bytes())
}

func sendJSON(w http.ResponseWriter, v any) {
	out, err := json.Marshal(v)
	if err != nil {
		serverError(w, err)
		return
	}
	reply(w, http.StatusOK, "application/json", out)
}

func serverError(w http.ResponseWriter, err error) {
	reply(w, http.StatusInternalServerError, "text/plain", []byte(err.Error()))
}
