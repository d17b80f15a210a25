module serverbench/godb

// The database endpoints' work (SPEC.md, "Database endpoints") shared by the Go rows
// (go-nethttp, go-fasthttp, go-tcp), whose HTTP stacks differ: pgx v5 and its pool, pgxpool.
// Each row requires this module through a local `replace`; its go.sum pins pgx too.
// `go 1.25.0` is what pgx v5.12.0 itself requires.
go 1.25.0

require github.com/jackc/pgx/v5 v5.12.0

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
