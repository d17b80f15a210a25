// go-tcp: a goroutine per connection speaking hand-written HTTP/1.1 over net.Conn.
// The Go runtime parks goroutines blocked in Read/Sleep on its netpoller, so plain
// blocking code per connection scales to many thousands of connections.
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"serverbench/gocontract"
	"serverbench/godb"
)

const (
	maxBody      = gocontract.MaxBody // largest /echo body
	maxHeadBytes = 16 << 10           // request line + headers; SPEC asks for 8 KiB
)

var helloFile string

// errBad ends the connection with the given status (malformed or refused request).
type errBad struct{ status int }

func (e errBad) Error() string { return "http " + strconv.Itoa(e.status) }

type request struct {
	method, target, path, query string
	http10                      bool
	keepAlive                   bool
	contentLength               int64 // -1 when absent
	chunked                     bool
	expectContinue              bool
}

func main() {
	certFile, keyFile, useTLS := gocontract.TLSFiles("go-tcp") // before the bind: one of the pair alone exits first
	db = godb.Open("go-tcp")                                   // pgxpool of at most $DB_POOL connections (lazily connected); before the bind: bad settings exit first
	ln, env := gocontract.Listen("go-tcp")                     // settings, GOMAXPROCS, bind (exits on failure)
	helloFile = env.HelloFile
	if useTLS {
		// TLS the crypto/tls way: the listener hands out *tls.Conn, and the rest of the
		// row reads and writes them as any net.Conn. crypto/tls's defaults: TLS 1.2
		// minimum, 1.3 offered, no ALPN (no NextProtos).
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "go-tcp: TLS_CERT/TLS_KEY:", err)
			os.Exit(1)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			// Transient errors (e.g. EMFILE): back off briefly instead of spinning.
			fmt.Fprintln(os.Stderr, "go-tcp: accept:", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go serve(c)
	}
}

func serve(c net.Conn) {
	defer lingeringClose(c)
	r := bufio.NewReaderSize(c, maxHeadBytes)
	w := bufio.NewWriterSize(c, 8<<10)
	for {
		req, err := readHead(r)
		if err != nil {
			var bad errBad
			if errors.As(err, &bad) {
				refuse(w, bad.status)
			}
			return // EOF between requests, or a broken request: close
		}
		keep, err := handle(req, r, w)
		if err != nil {
			return
		}
		// Batch responses to pipelined requests; flush once the input runs dry.
		if !keep || r.Buffered() == 0 {
			if w.Flush() != nil || !keep {
				return
			}
		}
	}
}

// lingeringClose sends FIN, then briefly drains unread input (say the rest of a refused
// 2 MiB upload): closing with unread data makes the kernel send RST, which can destroy
// the last response before the client has read it. Both *net.TCPConn and *tls.Conn
// have CloseWrite; the TLS one sends close_notify before the FIN.
func lingeringClose(c net.Conn) {
	if hc, ok := c.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		io.Copy(io.Discard, io.LimitReader(c, 8<<20))
	}
	c.Close()
}

// readLine returns one CRLF- (or LF-) terminated line without its terminator.
func readLine(r *bufio.Reader, budget *int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	*budget -= len(line)
	if err == bufio.ErrBufferFull || *budget < 0 {
		return nil, errBad{431}
	}
	if err != nil {
		if len(line) > 0 && err == io.EOF {
			return nil, errBad{400} // connection ended mid-line
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

func readHead(r *bufio.Reader) (*request, error) {
	budget := maxHeadBytes
	line, err := readLine(r, &budget)
	for i := 0; err == nil && len(line) == 0 && i < 4; i++ { // RFC 9112 §2.2: skip stray CRLFs
		line, err = readLine(r, &budget)
	}
	if err != nil {
		return nil, err
	}
	parts := strings.Split(string(line), " ")
	if len(parts) != 3 || parts[0] == "" || !isToken(parts[0]) {
		return nil, errBad{400}
	}
	req := &request{method: parts[0], target: parts[1], contentLength: -1}
	switch parts[2] {
	case "HTTP/1.1":
	case "HTTP/1.0":
		req.http10 = true
	default:
		if strings.HasPrefix(parts[2], "HTTP/") {
			return nil, errBad{505}
		}
		return nil, errBad{400}
	}
	if _, rest, ok := strings.Cut(req.target, "://"); ok && !strings.HasPrefix(req.target, "/") {
		// absolute-form (RFC 9112 §3.2.2): only the path and query matter here
		req.target = "/"
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			req.target = rest[i:]
		}
	}
	if !strings.HasPrefix(req.target, "/") {
		return nil, errBad{400}
	}
	req.path, req.query, _ = strings.Cut(req.target, "?")

	var connClose, connKeep bool
	for {
		line, err := readLine(r, &budget)
		if err != nil {
			if err == io.EOF {
				err = errBad{400}
			}
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(name) == 0 || !isToken(string(name)) { // also rejects obs-fold and "Name :"
			return nil, errBad{400}
		}
		v := strings.TrimSpace(string(value))
		switch strings.ToLower(string(name)) {
		case "content-length":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || !isDigits(v) || (req.contentLength >= 0 && req.contentLength != n) {
				return nil, errBad{400}
			}
			req.contentLength = n
		case "transfer-encoding":
			if !strings.EqualFold(v, "chunked") || req.chunked {
				return nil, errBad{400} // only a single "chunked" coding is supported
			}
			req.chunked = true
		case "connection":
			for _, tok := range strings.Split(v, ",") {
				tok = strings.TrimSpace(tok)
				connClose = connClose || strings.EqualFold(tok, "close")
				connKeep = connKeep || strings.EqualFold(tok, "keep-alive")
			}
		case "expect":
			req.expectContinue = strings.EqualFold(v, "100-continue")
		}
	}
	if req.chunked && req.contentLength >= 0 {
		return nil, errBad{400} // ambiguous framing (request smuggling vector)
	}
	if req.http10 {
		req.keepAlive = connKeep && !connClose
	} else {
		req.keepAlive = !connClose
	}
	return req, nil
}

// readBody reads the whole request body, refusing anything over maxBody.
func readBody(req *request, r *bufio.Reader, w *bufio.Writer) ([]byte, error) {
	if req.contentLength > maxBody {
		return nil, errBad{413}
	}
	if req.contentLength <= 0 && !req.chunked {
		return nil, nil
	}
	if req.expectContinue && !req.http10 {
		w.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
	if !req.chunked {
		body := make([]byte, req.contentLength)
		_, err := io.ReadFull(r, body)
		return body, err
	}
	var body []byte
	budget := maxHeadBytes // bounds chunk-size lines and trailers together
	for {
		line, err := readLine(r, &budget)
		if err != nil {
			return nil, err
		}
		sizeStr, _, _ := bytes.Cut(line, []byte{';'}) // chunk extensions are ignored
		sizeStr = bytes.TrimRight(sizeStr, " \t")
		size, err := strconv.ParseUint(string(sizeStr), 16, 32)
		if err != nil || len(sizeStr) == 0 || sizeStr[0] == '+' {
			return nil, errBad{400}
		}
		if size == 0 {
			break
		}
		if uint64(len(body))+size > maxBody {
			return nil, errBad{413}
		}
		start := len(body)
		body = append(body, make([]byte, size)...)
		if _, err := io.ReadFull(r, body[start:]); err != nil {
			return nil, err
		}
		if line, err := readLine(r, &budget); err != nil || len(line) != 0 {
			return nil, errBad{400} // chunk data must be followed by CRLF
		}
	}
	for { // trailer section, discarded
		line, err := readLine(r, &budget)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			return body, nil
		}
	}
}

// handle answers one request; it reports whether the connection stays open.
func handle(req *request, r *bufio.Reader, w *bufio.Writer) (bool, error) {
	body, err := readBody(req, r, w)
	if err != nil {
		var bad errBad
		if errors.As(err, &bad) {
			refuse(w, bad.status)
		}
		return false, err
	}
	status, ctype, out := route(req, body, w)
	gzipped := req.path == "/compress" && status == 200 // the one encoded body
	writeHead(w, status, ctype, len(out), req.keepAlive, req.http10, isDBPath(req.path), gzipped)
	if req.method != "HEAD" {
		w.Write(out)
	}
	return req.keepAlive, nil
}

func route(req *request, body []byte, w *bufio.Writer) (int, string, []byte) {
	get := req.method == "GET" || req.method == "HEAD"
	switch req.path {
	case "/db", "/queries", "/fortunes", "/updates":
		if !get {
			return 405, "text/plain", []byte("Method Not Allowed")
		}
		return dbRoute(req)
	case "/", "/json", "/file", "/delay", "/tenth", "/compress":
		if !get {
			return 405, "text/plain", []byte("Method Not Allowed")
		}
	case "/echo":
		if req.method != "POST" {
			return 405, "text/plain", []byte("Method Not Allowed")
		}
		return 200, "application/octet-stream", body
	default:
		return 404, "text/plain", []byte("Not Found")
	}

	switch req.path {
	case "/":
		return 200, "text/plain", []byte("Hello, World!")
	case "/json":
		out, err := gocontract.HelloJSON()
		if err != nil {
			return 500, "text/plain", []byte("Internal Server Error")
		}
		return 200, "application/json", out
	case "/file":
		out, err := os.ReadFile(helloFile)
		if err != nil {
			return 500, "text/plain", []byte("Internal Server Error")
		}
		return 200, "text/html", out
	case "/delay":
		wait, out, ok := gocontract.Delay(req.query)
		if !ok {
			return 400, "text/plain", []byte("Bad Request")
		}
		sleep(wait, w)
		return 200, "text/plain", out
	case "/compress":
		// compress/gzip at level 6 (gocontract.Gzip) on every request, inline on the
		// connection's goroutine: Go's scheduler preempts a long one, so the other
		// goroutines keep running (no pool needed).
		data, ok, err := gocontract.CompressInput(req.query)
		if !ok {
			return 400, "text/plain", []byte("Bad Request")
		}
		if err != nil {
			return 500, "text/plain", []byte("Internal Server Error")
		}
		return 200, "application/json", gocontract.Gzip(data)
	default: // "/tenth"
		count, wait, ok := gocontract.Tenth(req.query)
		if !ok {
			return 400, "text/plain", []byte("Bad Request")
		}
		sleep(wait, w)
		return 200, "text/plain", strconv.AppendInt(nil, count, 10)
	}
}

// sleep blocks this goroutine only; earlier pipelined responses go out first.
func sleep(d time.Duration, w *bufio.Writer) {
	if d > 0 {
		w.Flush()
		time.Sleep(d)
	}
}

// writeHead writes the status line and headers; server adds the Server header that
// SPEC asks of the database paths, gzipped Content-Encoding: gzip (/compress).
func writeHead(w *bufio.Writer, status int, ctype string, n int, keep, http10, server, gzipped bool) {
	w.WriteString("HTTP/1.1 ")
	w.WriteString(strconv.Itoa(status))
	w.WriteByte(' ')
	w.WriteString(statusText(status))
	w.WriteString("\r\nContent-Type: ")
	w.WriteString(ctype)
	if gzipped {
		w.WriteString("\r\nContent-Encoding: gzip")
	}
	w.WriteString("\r\nContent-Length: ")
	w.WriteString(strconv.Itoa(n))
	w.WriteString("\r\nDate: ")
	w.Write(gocontract.HTTPDate()) // formatted once a second, shared
	if server {
		w.WriteString("\r\nServer: go-tcp")
	}
	switch {
	case !keep:
		w.WriteString("\r\nConnection: close")
	case http10:
		w.WriteString("\r\nConnection: keep-alive")
	}
	w.WriteString("\r\n\r\n")
}

// refuse answers a request that ends the connection (malformed, too large).
func refuse(w *bufio.Writer, status int) {
	text := statusText(status)
	writeHead(w, status, "text/plain", len(text), false, false, false, false)
	w.WriteString(text)
	w.Flush()
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 503:
		return "Service Unavailable"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 413:
		return "Content Too Large"
	case 431:
		return "Request Header Fields Too Large"
	case 505:
		return "HTTP Version Not Supported"
	}
	return "Internal Server Error"
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isToken reports whether s is an RFC 9110 token (method and header-name syntax).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}
