// The database endpoints (SPEC.md, "Database endpoints"): the shared go-db module
// (pgx v5 through pgxpool) behind this row's hand-written HTTP. A query blocks the
// connection's goroutine only (the runtime parks it on the netpoller), as the rest of
// this row's blocking-style code does.
package main

import (
	"context"
	"encoding/json"
	"net/url"

	"serverbench/godb"
)

var db godb.DB // opened in main; no pool without $DATABASE_URL

// isDBPath reports whether path is a database path (those responses carry a Server header).
func isDBPath(path string) bool {
	switch path {
	case "/db", "/queries", "/fortunes", "/updates":
		return true
	}
	return false
}

// dbRoute answers a GET on a database path.
func dbRoute(req *request) (int, string, []byte) {
	if !db.Configured() {
		return 503, "text/plain", godb.NoDatabase
	}
	ctx := context.Background() // the connection's goroutine is the request: nothing to cancel
	switch req.path {
	case "/db":
		row, err := db.One(ctx)
		return sendJSON(row, err)
	case "/queries":
		rows, err := db.Many(ctx, queryCount(req.query))
		return sendJSON(rows, err)
	case "/updates":
		rows, err := db.Update(ctx, queryCount(req.query))
		return sendJSON(rows, err)
	default: // "/fortunes"
		page, err := db.Fortunes(ctx)
		if err != nil {
			return 500, "text/plain", []byte(err.Error())
		}
		return 200, "text/html; charset=utf-8", page
	}
}

// queryCount reads ?queries=N (a query string that does not parse counts as missing: 1).
func queryCount(query string) int {
	values, _ := url.ParseQuery(query)
	return godb.QueryCount(values.Get("queries"))
}

func sendJSON(v any, err error) (int, string, []byte) {
	var out []byte
	if err == nil {
		out, err = json.Marshal(v)
	}
	if err != nil {
		return 500, "text/plain", []byte(err.Error())
	}
	return 200, "application/json", out
}
