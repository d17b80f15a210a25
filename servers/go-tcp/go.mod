module serverbench/go-tcp

go 1.22
