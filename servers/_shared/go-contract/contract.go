// Package gocontract is what SPEC.md fixes for both Go rows (go-tcp, go-nethttp),
// written once instead of twice: the settings the harness passes and the bind, the
// limits, the /json body, the /delay, /tenth and /compress query rules and bodies
// (with compress/gzip for the rows that use the standard library's), the
// process-wide /tenth counter, and the cached Date value for the row that writes its
// own response head (go-tcp; net/http adds its own).
//
// std only (a local module: offline, no go.sum). Nothing here accepts, serves a
// connection or waits: that is each row's concurrency model and stays in the row;
// per request this only decides what to answer, allocating no more than the rows
// did before (one url.ParseQuery per /delay or /tenth).
package gocontract

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const (
	MaxBody        = 1 << 20 // POST /echo limit, and the most /delay?bytes= asks for
	MaxDelayMS     = 60000   // /delay and /tenth wait at most this long
	TenthDefaultMS = 2000    // /tenth waits this long on every tenth request when no ms is given
	MaxCompressKB  = 4096    // /compress?kb= at most this (the whole $COMPRESS_FILE is a little more)
)

var (
	xs      = bytes.Repeat([]byte{'x'}, MaxBody) // /delay bodies are slices of this: no copy per request
	counter atomic.Int64                         // /tenth: one per process, no lost updates
)

// Env is the process settings SPEC.md defines.
type Env struct {
	Addr      string // HOST:PORT, for net.Listen
	HelloFile string // served by /file (read on every request)
}

// Listen reads the settings (FromEnv) and listens on HOST:PORT. A bind failure
// exits with status 1 and "<row>: listen: <error>" on stderr, as SPEC.md asks.
// Accepting and serving, the row's own concurrency model, is left to the caller.
func Listen(row string) (net.Listener, Env) {
	env := FromEnv()
	ln, err := net.Listen("tcp", env.Addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: listen: %v\n", row, err)
		os.Exit(1)
	}
	fmt.Printf("%s listening on %s (GOMAXPROCS=%d)\n", row, ln.Addr(), runtime.GOMAXPROCS(0))
	return ln, env
}

// FromEnv reads HOST, PORT and HELLO_FILE with SPEC.md's defaults, and makes a
// positive integer WORKERS the GOMAXPROCS; otherwise Go's default (the CPUs of the
// affinity mask, so taskset governs parallelism) stays.
func FromEnv() Env {
	if w, err := strconv.Atoi(os.Getenv("WORKERS")); err == nil && w > 0 {
		runtime.GOMAXPROCS(w)
	}
	return Env{
		Addr: net.JoinHostPort(envOr("HOST", "127.0.0.1"), envOr("PORT", "8080")),
		// Run from servers/<id>/, this is the repository's assets/hello.html.
		HelloFile: envOr("HELLO_FILE", "../../assets/hello.html"),
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// HelloJSON is the /json body, serialized per request by encoding/json (SPEC.md).
func HelloJSON() ([]byte, error) {
	return json.Marshal(struct {
		Message string `json:"message"`
	}{"Hello, World!"})
}

// imfFixdate is the layout of SPEC.md's Date value (RFC 9110 §5.6.7), as net/http's
// TimeFormat; written out so that go-tcp does not link net/http for it.
const imfFixdate = "Mon, 02 Jan 2006 15:04:05 GMT"

// dateStamp is one second's Date value.
type dateStamp struct {
	unix  int64
	value []byte // IMF-fixdate of unix, shared read-only by every goroutine
}

var date atomic.Pointer[dateStamp]

// HTTPDate is the Date value (IMF-fixdate) of the current second. It is formatted
// at most once a second, by the first caller in a new second (two callers racing
// at the turn both format it, harmlessly); everyone else gets the same slice, which
// must not be modified. No allocation per request.
func HTTPDate() []byte {
	return dateAt(time.Now())
}

func dateAt(now time.Time) []byte {
	sec := now.Unix()
	if d := date.Load(); d != nil && d.unix == sec {
		return d.value
	}
	d := &dateStamp{sec, time.Unix(sec, 0).UTC().AppendFormat(make([]byte, 0, 29), imfFixdate)}
	date.Store(d)
	return d.value
}

// Delay applies the rules of GET /delay?ms=N&bytes=B to a raw query string: how
// long to wait, then the body (B bytes of 'x': a shared buffer, never to be
// modified). ok false means 400.
func Delay(rawQuery string) (wait time.Duration, body []byte, ok bool) {
	q, _ := url.ParseQuery(rawQuery)
	ms, okMS := intParam(q, "ms", MaxDelayMS, 0)
	n, okN := intParam(q, "bytes", MaxBody, 0)
	if !okMS || !okN {
		return 0, nil, false
	}
	return time.Duration(ms) * time.Millisecond, xs[:n], true
}

// Tenth applies the rules of GET /tenth?ms=N: it checks ms first (a 400, ok
// false, does not count), then bumps the counter; count is the body (in decimal),
// and wait is nonzero only on every tenth request.
func Tenth(rawQuery string) (count int64, wait time.Duration, ok bool) {
	q, _ := url.ParseQuery(rawQuery)
	ms, ok := intParam(q, "ms", MaxDelayMS, TenthDefaultMS)
	if !ok {
		return 0, 0, false
	}
	count = counter.Add(1)
	if count%10 == 0 {
		wait = time.Duration(ms) * time.Millisecond
	}
	return count, wait, true
}

// compressDoc is $COMPRESS_FILE, read once, at the first /compress.
var compressDoc = sync.OnceValues(func() ([]byte, error) {
	return os.ReadFile(os.Getenv("COMPRESS_FILE"))
})

// CompressInput applies the rules of GET /compress?kb=N to a raw query string: the
// first N KiB of $COMPRESS_FILE (a slice of the document read once, never to be
// modified), to be compressed by the caller on this request. ok false means 400
// (kb missing, empty, not plain digits, or outside 1..4096); err is a failed read
// of the file (500).
func CompressInput(rawQuery string) (data []byte, ok bool, err error) {
	q, _ := url.ParseQuery(rawQuery)
	kb, ok := intParam(q, "kb", MaxCompressKB, 0) // absent: 0, refused below
	if !ok || kb < 1 {
		return nil, false, nil
	}
	doc, err := compressDoc()
	if err != nil {
		return nil, true, err
	}
	return doc[:min(kb*1024, len(doc))], true, nil
}

// Gzip is data gzipped (RFC 1952) with the standard library's compress/gzip at
// level 6 (gzip.DefaultCompression is 6: compress/flate, Go's own deflate, not
// zlib), the way a net/http user writes it; a new Writer per call, nothing cached.
// It runs on the calling goroutine: Go gives each request or connection its own,
// and the scheduler preempts a long one, so CPU work stays inline.
func Gzip(data []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // the error is only for an invalid level
	zw.Write(data)                                              // into a bytes.Buffer: cannot fail
	zw.Close()
	return buf.Bytes()
}

// intParam is the first value of key as a whole number in [0, max], def when key
// is absent. Only plain ASCII digits count (no sign, no spaces, not empty), at most
// 9 of them, so Atoi cannot overflow.
func intParam(q url.Values, key string, max, def int) (int, bool) {
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
	return n, n <= max
}
