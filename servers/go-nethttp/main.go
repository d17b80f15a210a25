// go-nethttp: the standard library's net/http server (a goroutine per connection,
// HTTP parsing, keep-alive and pipelining handled by net/http).
package main

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"serverbench/gocontract"
)

var helloFile string

func main() {
	cert, key, useTLS := gocontract.TLSFiles("go-nethttp")       // before the bind: one of the pair alone exits first
	protocols, err := serveProtocols(os.Getenv("HTTP2"), useTLS) // before the bind: a bad $HTTP2 exits first
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-nethttp:", err)
		os.Exit(1)
	}
	db := dbHandlers{openPool()}               // before the bind: a bad DATABASE_URL or DB_POOL exits first
	ln, env := gocontract.Listen("go-nethttp") // settings, GOMAXPROCS, bind (exits on failure)
	helloFile = env.HelloFile

	mux := http.NewServeMux()
	// Method patterns make ServeMux answer 405 for a known path with another method.
	mux.HandleFunc("GET /{$}", hello)
	mux.HandleFunc("GET /json", jsonHandler)
	mux.HandleFunc("GET /file", file)
	mux.HandleFunc("GET /delay", delay)
	mux.HandleFunc("GET /tenth", tenth)
	mux.HandleFunc("POST /echo", echo)
	mux.HandleFunc("GET /compress", compress)
	db.register(mux) // /db, /queries, /fortunes, /updates (db.go)

	srv := &http.Server{Handler: mux} // defaults: no timeouts, so idle keep-alive connections stay open
	// $HTTP2 (SPEC.md, "HTTP/2") picks the protocols net/http serves (Server.Protocols, Go 1.24+):
	// without it HTTP/1 only, as ever; net/http's own HTTP/2 server with its default settings
	// (srv.HTTP2 nil: MaxConcurrentStreams 250, net/http's windows) beside HTTP/1 otherwise.
	srv.Protocols = protocols
	if useTLS {
		// HTTPS the net/http way: ServeTLS with crypto/tls's defaults (TLS 1.2 minimum,
		// 1.3 offered). ALPN offers what srv.Protocols enables: http/1.1 alone without
		// $HTTP2; h2 and http/1.1 with HTTP2=h2.
		err = srv.ServeTLS(ln, cert, key)
	} else {
		err = srv.Serve(ln)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-nethttp:", err)
		os.Exit(1)
	}
}

// serveProtocols is SPEC.md's $HTTP2 switch as net/http's Protocols (documented since Go 1.24;
// no golang.org/x/net): unset, HTTP/1 only, cleartext or TLS, as before HTTP/2 came in; "h2c",
// HTTP/1 and HTTP/2 over cleartext with prior knowledge (UnencryptedHTTP2); "h2" (with the TLS
// files), HTTP/2 and HTTP/1 over TLS, ALPN h2 and http/1.1. Anything else, or a mode without its
// transport, is an error: serving another protocol would quietly measure the wrong thing.
func serveProtocols(mode string, useTLS bool) (*http.Protocols, error) {
	var p http.Protocols
	p.SetHTTP1(true)
	switch {
	case mode == "":
	case mode == "h2c" && !useTLS:
		p.SetUnencryptedHTTP2(true)
	case mode == "h2" && useTLS:
		p.SetHTTP2(true)
	case mode == "h2c":
		return nil, errors.New("HTTP2=h2c is HTTP/2 over cleartext TCP: unset TLS_CERT/TLS_KEY, or use HTTP2=h2")
	case mode == "h2":
		return nil, errors.New("HTTP2=h2 is HTTP/2 over TLS: set TLS_CERT and TLS_KEY, or use HTTP2=h2c")
	default:
		return nil, fmt.Errorf("HTTP2=%q: want h2c, h2 or unset", mode)
	}
	return &p, nil
}

// reply always sets Content-Length so large bodies are not sent chunked.
func reply(w http.ResponseWriter, status int, ctype string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func badRequest(w http.ResponseWriter) {
	reply(w, http.StatusBadRequest, "text/plain", []byte("Bad Request"))
}

func hello(w http.ResponseWriter, r *http.Request) {
	reply(w, 200, "text/plain", []byte("Hello, World!"))
}

func jsonHandler(w http.ResponseWriter, r *http.Request) {
	out, err := gocontract.HelloJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	reply(w, 200, "application/json", out)
}

func file(w http.ResponseWriter, r *http.Request) {
	out, err := os.ReadFile(helloFile)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	reply(w, 200, "text/html", out)
}

func delay(w http.ResponseWriter, r *http.Request) {
	wait, body, ok := gocontract.Delay(r.URL.RawQuery)
	if !ok {
		badRequest(w)
		return
	}
	time.Sleep(wait) // parks only this goroutine
	reply(w, 200, "text/plain", body)
}

func tenth(w http.ResponseWriter, r *http.Request) {
	count, wait, ok := gocontract.Tenth(r.URL.RawQuery)
	if !ok {
		badRequest(w)
		return
	}
	if wait > 0 { // every tenth request only
		time.Sleep(wait)
	}
	reply(w, 200, "text/plain", strconv.AppendInt(nil, count, 10))
}

// compress gzips the first kb KiB of $COMPRESS_FILE on every request with
// compress/gzip at level 6 (gocontract.Gzip), inline: net/http serves each
// connection on its own goroutine, and Go's scheduler preempts a long-running
// one, so CPU work in a handler needs no pool.
func compress(w http.ResponseWriter, r *http.Request) {
	data, ok, err := gocontract.CompressInput(r.URL.RawQuery)
	if !ok {
		badRequest(w)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	reply(w, 200, "application/json", gocontract.Gzip(data))
}

func echo(w http.ResponseWriter, r *http.Request) {
	// Over HTTP/1 the unread body makes the connection unusable, hence "Connection: close"; over
	// HTTP/2 net/http drops that header and answers it with a graceful GOAWAY (h2_bundle.go,
	// writeChunk): this stream's 413 and the streams already open still complete.
	if r.ContentLength > gocontract.MaxBody {
		w.Header().Set("Connection", "close")
		reply(w, http.StatusRequestEntityTooLarge, "text/plain", []byte("Content Too Large"))
		return
	}
	// net/http has already decoded chunked framing; MaxBytesReader caps it.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, gocontract.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		w.Header().Set("Connection", "close")
		if errors.As(err, &tooBig) {
			reply(w, http.StatusRequestEntityTooLarge, "text/plain", []byte("Content Too Large"))
		} else {
			badRequest(w) // e.g. malformed chunked framing
		}
		return
	}
	reply(w, 200, "application/octet-stream", body)
}
