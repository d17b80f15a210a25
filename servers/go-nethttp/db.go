// The database endpoints (SPEC.md, "Database endpoints"): net/http handlers around the
// shared go-db module, pgx v5 through its pool, pgxpool, as a Go user deploys it (every
// query in pgx's default mode: prepared once per connection, then executed; each query
// waits for its answer before the next is sent). A handler's goroutine serves only its
// request: a query parks that goroutine alone.
package main

import (
	"encoding/json"
	"net/http"

	"serverbench/godb"
)

// dbHandlers serves the database paths; without $DATABASE_URL they answer 503.
type dbHandlers struct{ db godb.DB }

// openPool builds the pool from $DATABASE_URL with at most $DB_POOL connections (lazily
// connected); a bad setting exits with a line.
func openPool() godb.DB { return godb.Open("go-nethttp") }

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
		if !d.db.Configured() {
			reply(w, http.StatusServiceUnavailable, "text/plain", godb.NoDatabase)
			return
		}
		h(w, r)
	}
}

func queryCount(r *http.Request) int { return godb.QueryCount(r.URL.Query().Get("queries")) }

func (d dbHandlers) single(w http.ResponseWriter, r *http.Request) {
	row, err := d.db.One(r.Context())
	sendJSON(w, row, err)
}

func (d dbHandlers) queries(w http.ResponseWriter, r *http.Request) {
	rows, err := d.db.Many(r.Context(), queryCount(r))
	sendJSON(w, rows, err)
}

func (d dbHandlers) updates(w http.ResponseWriter, r *http.Request) {
	rows, err := d.db.Update(r.Context(), queryCount(r))
	sendJSON(w, rows, err)
}

func (d dbHandlers) fortunes(w http.ResponseWriter, r *http.Request) {
	page, err := d.db.Fortunes(r.Context())
	if err != nil {
		serverError(w, err)
		return
	}
	reply(w, http.StatusOK, "text/html; charset=utf-8", page)
}

func sendJSON(w http.ResponseWriter, v any, err error) {
	var out []byte
	if err == nil {
		out, err = json.Marshal(v)
	}
	if err != nil {
		serverError(w, err)
		return
	}
	reply(w, http.StatusOK, "application/json", out)
}

func serverError(w http.ResponseWriter, err error) {
	reply(w, http.StatusInternalServerError, "text/plain", []byte(err.Error()))
}
