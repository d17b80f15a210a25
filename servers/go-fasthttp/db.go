// The database endpoints (SPEC.md, "Database endpoints"): fasthttp handlers around the
// shared go-db module (pgx v5 through pgxpool). A handler runs on one of fasthttp's
// worker goroutines; a query blocks that goroutine only (the runtime parks it on the
// netpoller), so the other connections keep being served.
package main

import (
	"context"
	"encoding/json"

	"github.com/valyala/fasthttp"

	"serverbench/godb"
)

var db godb.DB // opened in main; no pool without $DATABASE_URL

// dbRoute answers the database paths; it reports false for any other path. fasthttp
// adds Date and its default "Server: fasthttp" header to every response.
func dbRoute(ctx *fasthttp.RequestCtx, path string) bool {
	var serve func(*fasthttp.RequestCtx)
	switch path {
	case "/db":
		serve = single
	case "/queries":
		serve = queries
	case "/fortunes":
		serve = fortunes
	case "/updates":
		serve = updates
	default:
		return false
	}
	switch {
	case !ctx.IsGet():
		ctx.Response.Header.Set("Allow", fasthttp.MethodGet)
		reply(ctx, fasthttp.StatusMethodNotAllowed, "text/plain", []byte("Method Not Allowed"))
	case !db.Configured():
		reply(ctx, fasthttp.StatusServiceUnavailable, "text/plain", godb.NoDatabase)
	default:
		serve(ctx)
	}
	return true
}

// fasthttp never cancels a request's context when its client goes away, so the queries
// run under context.Background(), as fasthttp's own database examples do.
func single(ctx *fasthttp.RequestCtx) {
	row, err := db.One(context.Background())
	sendJSON(ctx, row, err)
}

func queries(ctx *fasthttp.RequestCtx) {
	rows, err := db.Many(context.Background(), queryCount(ctx))
	sendJSON(ctx, rows, err)
}

func updates(ctx *fasthttp.RequestCtx) {
	rows, err := db.Update(context.Background(), queryCount(ctx))
	sendJSON(ctx, rows, err)
}

func fortunes(ctx *fasthttp.RequestCtx) {
	page, err := db.Fortunes(context.Background())
	if err != nil {
		serverError(ctx, err)
		return
	}
	reply(ctx, fasthttp.StatusOK, "text/html; charset=utf-8", page)
}

func queryCount(ctx *fasthttp.RequestCtx) int {
	return godb.QueryCount(string(ctx.QueryArgs().Peek("queries")))
}

func sendJSON(ctx *fasthttp.RequestCtx, v any, err error) {
	var out []byte
	if err == nil {
		out, err = json.Marshal(v)
	}
	if err != nil {
		serverError(ctx, err)
		return
	}
	reply(ctx, fasthttp.StatusOK, "application/json", out)
}

func serverError(ctx *fasthttp.RequestCtx, err error) {
	reply(ctx, fasthttp.StatusInternalServerError, "text/plain", []byte(err.Error()))
}
