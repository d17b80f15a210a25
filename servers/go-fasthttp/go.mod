module serverbench/go-fasthttp

go 1.26.0

// SPEC.md rules shared with the other Go rows: a local, std-only module.
require serverbench/gocontract v0.0.0

require github.com/valyala/fasthttp v1.78.0

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
)

replace serverbench/gocontract => ../_shared/go-contract
