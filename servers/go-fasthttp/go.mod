module serverbench/go-fasthttp

go 1.26.0

// SPEC.md rules shared with the other Go rows: a local, std-only module.
require serverbench/gocontract v0.0.0

// The database work (pgx v5 + pgxpool), shared with go-tcp: a local module whose
// dependencies go.sum below pins.
require serverbench/godb v0.0.0

require github.com/valyala/fasthttp v1.78.0

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace serverbench/gocontract => ../_shared/go-contract

replace serverbench/godb => ../_shared/go-db
