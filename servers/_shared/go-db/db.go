// Package godb does the database endpoints' work (SPEC.md, "Database endpoints") with
// pgx v5 through its pool, pgxpool, as a Go user deploys it; the rows wrap it in their
// own HTTP handlers. Every query runs on a pooled connection in pgx's default mode
// (QueryExecModeCacheStatement), which prepares each statement once per connection and
// then executes it; each query waits for its answer before the next is sent. The calls
// block the calling goroutine only: the Go runtime parks it on the netpoller.
package godb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"math/rand/v2"
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

// NoDatabase is the body of the 503 a row answers on a database path without $DATABASE_URL.
var NoDatabase = []byte("no database configured (DATABASE_URL is not set)")

// World is one row of the World table, in SPEC's JSON shape.
type World struct {
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

// DB serves the database work from its pool; Pool is nil without $DATABASE_URL.
type DB struct{ Pool *pgxpool.Pool }

// Open builds the pool from $DATABASE_URL with at most $DB_POOL connections; a nil
// pool without $DATABASE_URL. pgxpool connects lazily, so starting needs no database yet.
// row names the server in its messages; a bad setting exits with status 2.
func Open(row string) DB {
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return DB{}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		fail(row, "DATABASE_URL is not a PostgreSQL URL (%v); set it to postgres://user:password@host:port/db", err)
	}
	size, err := strconv.Atoi(os.Getenv("DB_POOL"))
	if err != nil || size < 1 {
		fail(row, "DB_POOL=%q is not a positive integer; set it to the most connections this process may open", os.Getenv("DB_POOL"))
	}
	cfg.MaxConns = int32(size)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		fail(row, "cannot create the database pool (%v); check DATABASE_URL", err)
	}
	return DB{Pool: pool}
}

func fail(row, format string, args ...any) {
	fmt.Fprintf(os.Stderr, row+": "+format+"\n", args...)
	os.Exit(2)
}

// Configured reports whether there is a database to query (else the paths answer 503).
func (d DB) Configured() bool { return d.Pool != nil }

// QueryCount is the value of ?queries=N clamped to 1..500; missing, empty or not an
// integer is 1. An integer too large for an int comes back from Atoi as the largest one.
func QueryCount(value string) int {
	n, err := strconv.Atoi(value)
	if (err != nil && !errors.Is(err, strconv.ErrRange)) || n < 1 {
		return 1
	}
	return min(n, maxQueries)
}

func randomID() int32 { return rand.Int32N(worldRows) + 1 }

// One reads one random World row with its own SELECT (/db).
func (d DB) One(ctx context.Context) (World, error) {
	var row World
	err := d.Pool.QueryRow(ctx, selectWorld, randomID()).Scan(&row.ID, &row.RandomNumber)
	return row, err
}

// Many reads n random World rows, each with its own SELECT (/queries).
func (d DB) Many(ctx context.Context, n int) ([]World, error) {
	rows := make([]World, n)
	for i := range rows {
		var err error
		if rows[i], err = d.One(ctx); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// Update reads n random rows, each with its own SELECT, then writes each new value with
// its own UPDATE (autocommit: one statement per transaction, so concurrent requests
// cannot deadlock) and returns the new values (/updates).
func (d DB) Update(ctx context.Context, n int) ([]World, error) {
	rows, err := d.Many(ctx, n)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].RandomNumber = randomID()
		if _, err := d.Pool.Exec(ctx, updateWorld, rows[i].RandomNumber, rows[i].ID); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// Fortunes reads every Fortune row, adds the request-time one, sorts by message and
// renders the page with html/template (/fortunes).
func (d DB) Fortunes(ctx context.Context) ([]byte, error) {
	rows, err := d.Pool.Query(ctx, selectFortune)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []fortune{{0, "Additional fortune added at request time."}}
	var f fortune
	for rows.Next() {
		if err := rows.Scan(&f.ID, &f.Message); err != nil {
			return nil, err
		}
		list = append(list, f)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b fortune) int { return strings.Compare(a.Message, b.Message) })
	var page bytes.Buffer
	if err := fortunesPage.Execute(&page, list); err != nil {
		return nil, err
	}
	return page.Bytes(), nil
}
