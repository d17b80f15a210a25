module serverbench/go-nethttp

go 1.22

// SPEC.md rules shared with the other Go row: a local, std-only module (no go.sum, no network).
require serverbench/gocontract v0.0.0

replace serverbench/gocontract => ../_shared/go-contract
