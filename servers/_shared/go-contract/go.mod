module serverbench/gocontract

// std only: go-tcp and go-nethttp require this module through a local `replace`,
// so it must build offline and needs no go.sum.
go 1.22
