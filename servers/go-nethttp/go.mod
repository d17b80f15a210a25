module serverbench/go-nethttp

go 1.22
