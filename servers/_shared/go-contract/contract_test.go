package gocontract

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestIntParam(t *testing.T) {
	ok := map[string]int{
		"":             7, // absent: the default
		"bytes=3":      7,
		"ms=0":         0,
		"ms=10":        10,
		"a=1&ms=4&b":   4,
		"ms=1&ms=2":    1, // the first one wins
		"ms=%31":       1, // percent-decoded, as url.ParseQuery does
		"ms=000000010": 10,
	}
	for query, want := range ok {
		q, _ := url.ParseQuery(query)
		if n, good := intParam(q, "ms", 10, 7); !good || n != want {
			t.Errorf("%q: got (%d, %v), want (%d, true)", query, n, good, want)
		}
	}
	for _, query := range []string{"ms=11", "ms=", "ms", "ms=-1", "ms=+1", "ms=1.5", "ms=abc",
		"ms= 1", "ms=+", "ms=0000000001", "ms=99999999999999999999999"} {
		q, _ := url.ParseQuery(query)
		if n, good := intParam(q, "ms", 10, 7); good {
			t.Errorf("%q: got (%d, true), want a 400", query, n)
		}
	}
}

func TestCompress(t *testing.T) {
	doc := bytes.Repeat([]byte(`{"id":1,"name":"x"},`), 300000) // > 4 MiB
	path := t.TempDir() + "/doc.json"
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COMPRESS_FILE", path) // before the first CompressInput: the file is read once
	for _, kb := range []int{1, 64, 4096} {
		data, ok, err := CompressInput("kb=" + strconv.Itoa(kb))
		if !ok || err != nil || !bytes.Equal(data, doc[:kb*1024]) {
			t.Fatalf("kb=%d: got (%d bytes, %v, %v)", kb, len(data), ok, err)
		}
		out := Gzip(data)
		if out[0] != 0x1f || out[1] != 0x8b { // RFC 1952 magic
			t.Fatalf("kb=%d: not gzip: % x", kb, out[:2])
		}
		zr, err := gzip.NewReader(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		back, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("kb=%d: gunzip: %d bytes, %v", kb, len(back), err)
		}
	}
	for _, query := range []string{"", "kb=", "kb=0", "kb=-1", "kb=4097", "kb=abc", "kb=1.5", "n=1"} {
		if _, ok, _ := CompressInput(query); ok {
			t.Errorf("%q: want a 400", query)
		}
	}
}

func TestDelay(t *testing.T) {
	wait, body, ok := Delay("")
	if !ok || wait != 0 || len(body) != 0 {
		t.Errorf("no parameters: got (%v, %d bytes, %v)", wait, len(body), ok)
	}
	wait, body, ok = Delay("ms=200&bytes=1000")
	if !ok || wait != 200*time.Millisecond || !bytes.Equal(body, bytes.Repeat([]byte("x"), 1000)) {
		t.Errorf("ms=200&bytes=1000: got (%v, %d bytes, %v)", wait, len(body), ok)
	}
	if wait, body, ok = Delay("ms=60000&bytes=1048576"); !ok || wait != time.Minute || len(body) != MaxBody {
		t.Errorf("the maxima: got (%v, %d bytes, %v)", wait, len(body), ok)
	}
	for _, query := range []string{"ms=60001", "bytes=1048577", "ms=1&bytes=x", "ms=-5"} {
		if _, _, ok := Delay(query); ok {
			t.Errorf("%q: want a 400", query)
		}
	}
}

func TestTenth(t *testing.T) {
	if _, _, ok := Tenth("ms=60001"); ok {
		t.Fatal("ms=60001: want a 400")
	}
	first, _, _ := Tenth("")
	if first != 1 {
		t.Fatalf("a 400 must not count: first count %d, want 1", first)
	}
	for want := first + 1; want <= 20; want++ {
		query := ""
		if want > 10 {
			query = "ms=5"
		}
		count, wait, ok := Tenth(query)
		if !ok || count != want {
			t.Fatalf("got count %d (ok %v), want %d", count, ok, want)
		}
		switch {
		case count == 10 && wait != 2*time.Second, count == 20 && wait != 5*time.Millisecond:
			t.Errorf("count %d (%q): wait %v", count, query, wait)
		case count%10 != 0 && wait != 0:
			t.Errorf("count %d: waits %v, want no wait", count, wait)
		}
	}
}

func TestFromEnv(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, k := range []string{"HOST", "PORT", "HELLO_FILE", "WORKERS"} {
		t.Setenv(k, "")
	}
	before := runtime.GOMAXPROCS(0)
	if e := FromEnv(); e != (Env{"127.0.0.1:8080", "../../assets/hello.html"}) || runtime.GOMAXPROCS(0) != before {
		t.Errorf("defaults: got %+v, GOMAXPROCS %d", e, runtime.GOMAXPROCS(0))
	}
	t.Setenv("WORKERS", "many")
	if FromEnv(); runtime.GOMAXPROCS(0) != before {
		t.Errorf("WORKERS=many must leave GOMAXPROCS alone")
	}
	t.Setenv("HOST", "::1")
	t.Setenv("PORT", "9000")
	t.Setenv("HELLO_FILE", "/h.html")
	t.Setenv("WORKERS", "3")
	if e := FromEnv(); e != (Env{"[::1]:9000", "/h.html"}) || runtime.GOMAXPROCS(0) != 3 {
		t.Errorf("set: got %+v, GOMAXPROCS %d", e, runtime.GOMAXPROCS(0))
	}
}

func TestHelloJSON(t *testing.T) {
	if out, err := HelloJSON(); err != nil || string(out) != `{"message":"Hello, World!"}` {
		t.Errorf("got %s, %v", out, err)
	}
}

func TestListen(t *testing.T) {
	if os.Getenv("GOCONTRACT_LISTEN_CHILD") == "1" { // the child of the bind-failure case below
		Listen("row")
		return
	}
	t.Setenv("HOST", "127.0.0.1")
	t.Setenv("PORT", "0")
	ln, env := Listen("row")
	defer ln.Close()
	if env.Addr != "127.0.0.1:0" || ln.Addr().(*net.TCPAddr).Port == 0 {
		t.Fatalf("got %v for %+v", ln.Addr(), env)
	}

	// A port in use: exit 1 with "<row>: listen: ..." on stderr.
	t.Setenv("PORT", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	cmd := exec.Command(os.Args[0], "-test.run=^TestListen$")
	cmd.Env = append(os.Environ(), "GOCONTRACT_LISTEN_CHILD=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.HasPrefix(stderr.String(), "row: listen: ") {
		t.Errorf("bind failure: %v, stderr %q", err, stderr.String())
	}
}

func TestHTTPDate(t *testing.T) {
	for unix, want := range map[int64]string{
		0:          "Thu, 01 Jan 1970 00:00:00 GMT",
		784111777:  "Sun, 06 Nov 1994 08:49:37 GMT", // RFC 9110's example
		951782400:  "Tue, 29 Feb 2000 00:00:00 GMT",
		1700000000: "Tue, 14 Nov 2023 22:13:20 GMT",
	} {
		// A local zone must not leak into the value.
		if got := string(dateAt(time.Unix(unix, 5e8).In(time.FixedZone("X", 5*3600)))); got != want {
			t.Errorf("%d: got %q, want %q", unix, got, want)
		}
	}

	// Within one second every caller gets the same formatted bytes, without allocating.
	now := time.Unix(1700000000, 0)
	a := dateAt(now)
	if b := dateAt(now.Add(999 * time.Millisecond)); &a[0] != &b[0] {
		t.Error("formatted again within the same second")
	}
	if allocs := testing.AllocsPerRun(100, func() { dateAt(now) }); allocs != 0 {
		t.Errorf("%v allocations per call within a second", allocs)
	}
	if got := string(dateAt(now.Add(time.Second))); got != "Tue, 14 Nov 2023 22:13:21 GMT" {
		t.Errorf("next second: got %q", got)
	}

	// HTTPDate is the current second (or the next, at a turn).
	before := time.Now().Unix()
	got := string(HTTPDate())
	if got != string(dateAt(time.Unix(before, 0))) && got != string(dateAt(time.Unix(before+1, 0))) {
		t.Errorf("HTTPDate() = %q at %d", got, before)
	}
}

func TestTLSFiles(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	if c, k, err := tlsFiles(env(nil)); err != nil || c != "" || k != "" {
		t.Errorf("neither set: got (%q, %q, %v), want plaintext", c, k, err)
	}
	both := map[string]string{"TLS_CERT": "c.pem", "TLS_KEY": "k.pem"}
	if c, k, err := tlsFiles(env(both)); err != nil || c != "c.pem" || k != "k.pem" {
		t.Errorf("both set: got (%q, %q, %v)", c, k, err)
	}
	for _, one := range []map[string]string{{"TLS_CERT": "c.pem"}, {"TLS_KEY": "k.pem"}} {
		if _, _, err := tlsFiles(env(one)); err == nil || !strings.Contains(err.Error(), "set both") {
			t.Errorf("%v: got %v, want an error naming the fix", one, err)
		}
	}
}
