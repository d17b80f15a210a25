module serverbench/go-nethttp

go 1.25.0

// SPEC.md rules shared with the other Go rows: a local, std-only module (no go.sum entry).
require serverbench/gocontract v0.0.0

// The database work (pgx v5 + pgxpool), shared with go-fasthttp and go-tcp: a local module;
// pgx comes from the Go module proxy, pinned by go.sum. `go 1.25.0` above is what pgx
// v5.12.0 itself requires.
require serverbench/godb v0.0.0

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace serverbench/gocontract => ../_shared/go-contract

replace serverbench/godb => ../_shared/go-db
