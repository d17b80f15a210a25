// go-nethttp: the standard library's net/http server (a goroutine per connection,
// HTTP parsing, keep-alive and pipelining handled by net/http).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

const (
	maxBody    = 1 << 20
	maxDelayMS = 60000
)

var (
	helloFile string
	counter   atomic.Int64
	xs        = bytes.Repeat([]byte{'x'}, maxBody) // /delay bodies are slices of this
)

func main() {
	host := envOr("HOST", "127.0.0.1")
	port := envOr("PORT", "8080")
	helloFile = envOr("HELLO_FILE", "../../assets/hello.html")
	if w, err := strconv.Atoi(os.Getenv("WORKERS")); err == nil && w > 0 {
		runtime.GOMAXPROCS(w)
	}

	mux := http.NewServeMux()
	// Method patterns make ServeMux answer 405 for a known path with another method.
	mux.HandleFunc("GET /{$}", hello)
	mux.HandleFunc("GET /json", jsonHandler)
	mux.HandleFunc("GET /file", file)
	mux.HandleFunc("GET /delay", delay)
	mux.HandleFunc("GET /tenth", tenth)
	mux.HandleFunc("POST /echo", echo)

	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-nethttp: listen:", err)
		os.Exit(1)
	}
	fmt.Printf("go-nethttp listening on %s (GOMAXPROCS=%d)\n", ln.Addr(), runtime.GOMAXPROCS(0))
	srv := &http.Server{Handler: mux} // defaults: no timeouts, so idle keep-alive connections stay open
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "go-nethttp:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
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
	out, err := json.Marshal(struct {
		Message string `json:"message"`
	}{"Hello, World!"})
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
	q := r.URL.Query()
	ms, ok1 := intParam(q, "ms", maxDelayMS, 0)
	n, ok2 := intParam(q, "bytes", maxBody, 0)
	if !ok1 || !ok2 {
		badRequest(w)
		return
	}
	time.Sleep(time.Duration(ms) * time.Millisecond) // parks only this goroutine
	reply(w, 200, "text/plain", xs[:n])
}

func tenth(w http.ResponseWriter, r *http.Request) {
	ms, ok := intParam(r.URL.Query(), "ms", maxDelayMS, 2000)
	if !ok {
		badRequest(w)
		return
	}
	v := counter.Add(1)
	if v%10 == 0 {
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	reply(w, 200, "text/plain", strconv.AppendInt(nil, v, 10))
}

func echo(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > maxBody {
		w.Header().Set("Connection", "close") // the unread body makes the connection unusable
		reply(w, http.StatusRequestEntityTooLarge, "text/plain", []byte("Content Too Large"))
		return
	}
	// net/http has already decoded chunked framing; MaxBytesReader caps it.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
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

// intParam parses an optional decimal parameter within [0, hi].
func intParam(q url.Values, key string, hi, def int) (int, bool) {
	if _, present := q[key]; !present {
		return def, true
	}
	s := q.Get(key)
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, _ := strconv.Atoi(s)
	return n, n <= hi
}
