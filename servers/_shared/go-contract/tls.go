package gocontract

import (
	"fmt"
	"os"
)

// TLSFiles reads SPEC.md's TLS switch: with $TLS_CERT (PEM certificate) and $TLS_KEY
// (PEM PKCS#8 key) both set, ok is true and the row serves TLS on $PORT instead of
// plaintext, with Go's crypto/tls and its defaults. Neither set means plaintext. Only
// one of them set exits with status 1 and a line naming the missing one: serving
// plaintext then would quietly measure the wrong thing.
func TLSFiles(row string) (cert, key string, ok bool) {
	cert, key, err := tlsFiles(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", row, err)
		os.Exit(1)
	}
	return cert, key, cert != ""
}

func tlsFiles(getenv func(string) string) (cert, key string, err error) {
	cert, key = getenv("TLS_CERT"), getenv("TLS_KEY")
	switch {
	case cert != "" && key == "":
		return "", "", fmt.Errorf("TLS_CERT is set but TLS_KEY is not: set both (PEM certificate, PEM PKCS#8 key) or neither")
	case cert == "" && key != "":
		return "", "", fmt.Errorf("TLS_KEY is set but TLS_CERT is not: set both (PEM certificate, PEM PKCS#8 key) or neither")
	}
	return cert, key, nil
}
