// go-fasthttp: valyala/fasthttp's Server with its defaults: a pool of worker
// goroutines serves the connections (fasthttp parses HTTP, keeps connections
// alive, answers pipelined requests and adds the Date header). The only default
// changed is ReadBufferSize (see main).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"serverbench/gocontract"
	"serverbench/godb"
)

var helloFile string

func main() {
	cert, key, useTLS := gocontract.TLSFiles("go-fasthttp") // before the bind: one of the pair alone exits first
	db = godb.Open("go-fasthttp")                           // pgxpool of at most $DB_POOL connections (lazily connected); before the bind: bad settings exit first
	ln, env := gocontract.Listen("go-fasthttp")             // settings, GOMAXPROCS from WORKERS, bind (exits on failure)
	helloFile = env.HelloFile

	srv := &fasthttp.Server{
		Handler: handler,
		// The one changed default: the 4 KiB read buffer bounds the request head,
		// and SPEC.md requires 8 KiB heads with 64 fields to be accepted.
		ReadBufferSize: 16 * 1024,
	}
	var err error
	if useTLS {
		err = srv.ServeTLS(ln, cert, key) // crypto/tls with its defaults (no ALPN: fasthttp serves HTTP/1 only)
	} else {
		err = srv.Serve(ln)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-fasthttp:", err)
		os.Exit(1)
	}
}

// handler routes by path and method, the way plain fasthttp handlers do.
func handler(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	if dbRoute(ctx, path) {
		return
	}
	var method string
	switch path {
	case "/":
		method = fasthttp.MethodGet
		if ctx.IsGet() {
			reply(ctx, fasthttp.StatusOK, "text/plain", []byte("Hello, World!"))
			return
		}
	case "/json":
		method = fasthttp.MethodGet
		if ctx.IsGet() {
			jsonHandler(ctx)
			return
		}
	case "/file":
		method = fasthttp.MethodGet
		if ctx.IsGet() {
			file(ctx)
			return
		}
	case "/delay":
		method = fasthttp.MethodGet
		if ctx.IsGet() {
			delay(ctx)
			return
		}
	case "/tenth":
		method = fasthttp.MethodGet
		if ctx.IsGet() {
			tenth(ctx)
			return
		}
	case "/compress":
		method = fasthttp.MethodGet
		if ctx.IsGet() {
			compress(ctx)
			return
		}
	case "/echo":
		method = fasthttp.MethodPost
		if ctx.IsPost() {
			echo(ctx)
			return
		}
	default:
		reply(ctx, fasthttp.StatusNotFound, "text/plain", []byte("Not Found"))
		return
	}
	ctx.Response.Header.Set("Allow", method)
	reply(ctx, fasthttp.StatusMethodNotAllowed, "text/plain", []byte("Method Not Allowed"))
}

func reply(ctx *fasthttp.RequestCtx, status int, ctype string, body []byte) {
	ctx.SetStatusCode(status)
	ctx.SetContentType(ctype)
	ctx.SetBody(body)
}

func badRequest(ctx *fasthttp.RequestCtx) {
	reply(ctx, fasthttp.StatusBadRequest, "text/plain", []byte("Bad Request"))
}

type message struct {
	Message string `json:"message"`
}

func jsonHandler(ctx *fasthttp.RequestCtx) {
	out, err := json.Marshal(message{Message: "Hello, World!"}) // encoding/json, per request
	if err != nil {
		reply(ctx, fasthttp.StatusInternalServerError, "text/plain", []byte(err.Error()))
		return
	}
	reply(ctx, fasthttp.StatusOK, "application/json", out)
}

func file(ctx *fasthttp.RequestCtx) {
	out, err := os.ReadFile(helloFile) // from disk on every request
	if err != nil {
		reply(ctx, fasthttp.StatusInternalServerError, "text/plain", []byte(err.Error()))
		return
	}
	reply(ctx, fasthttp.StatusOK, "text/html", out)
}

func delay(ctx *fasthttp.RequestCtx) {
	wait, body, ok := gocontract.Delay(string(ctx.URI().QueryString()))
	if !ok {
		badRequest(ctx)
		return
	}
	time.Sleep(wait) // parks this worker goroutine only
	reply(ctx, fasthttp.StatusOK, "text/plain", body)
}

func tenth(ctx *fasthttp.RequestCtx) {
	count, wait, ok := gocontract.Tenth(string(ctx.URI().QueryString()))
	if !ok {
		badRequest(ctx)
		return
	}
	if wait > 0 { // every tenth request only
		time.Sleep(wait)
	}
	reply(ctx, fasthttp.StatusOK, "text/plain", strconv.AppendInt(nil, count, 10))
}

// compress gzips the first kb KiB of $COMPRESS_FILE on every request with
// fasthttp's own helper, AppendGzipBytesLevel at CompressDefaultCompression (6):
// klauspost/compress's gzip, pinned by go.sum. fasthttp runs it through its
// stackless wrapper (a pool of GOMAXPROCS goroutines, keeping the deflate stack
// off the many worker goroutines); the handler's worker goroutine waits for it.
func compress(ctx *fasthttp.RequestCtx) {
	data, ok, err := gocontract.CompressInput(string(ctx.URI().QueryString()))
	if !ok {
		badRequest(ctx)
		return
	}
	if err != nil {
		reply(ctx, fasthttp.StatusInternalServerError, "text/plain", []byte(err.Error()))
		return
	}
	ctx.Response.Header.Set(fasthttp.HeaderContentEncoding, "gzip")
	reply(ctx, fasthttp.StatusOK, "application/json",
		fasthttp.AppendGzipBytesLevel(nil, data, fasthttp.CompressDefaultCompression))
}

func echo(ctx *fasthttp.RequestCtx) {
	// fasthttp has read (and de-chunked) the body; its own limit is 4 MiB.
	body := ctx.PostBody()
	if len(body) > gocontract.MaxBody {
		ctx.SetConnectionClose()
		reply(ctx, fasthttp.StatusRequestEntityTooLarge, "text/plain", []byte("Content Too Large"))
		return
	}
	reply(ctx, fasthttp.StatusOK, "application/octet-stream", body)
}
