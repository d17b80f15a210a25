# serverbench contestant: Nim's standard asynchttpserver. One process, one
# thread, one asyncdispatch event loop (epoll); every connection is an async
# proc on that loop, so $WORKERS has nothing to set.
import std/[asyncdispatch, asynchttpserver, json, os, strutils, times, uri]
import database

const
  MaxBody = 1_048_576       # POST /echo limit and the largest /delay body
  MaxMs = 60_000            # /delay and /tenth wait at most this long
  TenthDefaultMs = 2000     # /tenth's wait on every tenth request without ms=

# /tenth: one counter for the process (one thread, so no increment is lost).
var tenthCounter = 0

# The value of query parameter `key` as a whole number in 0..max, `default`
# when absent, -1 (a 400) otherwise. Only plain ASCII digits count.
proc intParam(query, key: string, max, default: int): int =
  result = default
  for (k, v) in decodeQuery(query):
    if k == key:
      if v.len == 0 or v.len > 9 or not v.allCharsInSet(Digits):
        return -1
      let n = parseInt(v)
      return (if n <= max: n else: -1)

proc main() {.async.} =
  let host = getEnv("HOST", "127.0.0.1")
  let port = getEnv("PORT", "8080")
  let helloFile = getEnv("HELLO_FILE", "../../assets/hello.html")

  # asynchttpserver writes no Date header, so each response gets this one:
  # formatted at most once a second, the same string reused in between.
  var dateSecond = 0'i64
  var dateValue = ""

  proc httpDate(): string =
    let now = getTime()
    if now.toUnix != dateSecond:
      dateSecond = now.toUnix
      dateValue = now.utc.format("ddd, dd MMM yyyy HH:mm:ss 'GMT'")
    dateValue

  proc reply(req: Request, code: HttpCode, contentType, body: string,
             extra: openArray[(string, string)] = []): Future[void] =
    let headers = newHttpHeaders({"Content-Type": contentType, "Date": httpDate()})
    # asynchttpserver keeps an HTTP/1.0 connection open when the request asks for
    # keep-alive, but does not say so; an HTTP/1.0 client (ab -k) then waits for
    # a close that never comes. Announce it (an extra Connection: close wins).
    if req.protocol.minor == 0 and
        cmpIgnoreCase(req.headers.getOrDefault("connection"), "keep-alive") == 0:
      headers["Connection"] = "keep-alive"
    for (k, v) in extra:
      headers[k] = v
    req.respond(code, body, headers)

  proc handle(req: Request) {.async.} =
    # asynchttpserver passes on a request line without an HTTP version
    # ("GET /"); answer it 400 (asynchttpserver then closes the connection,
    # as for any version other than 1.0 and 1.1).
    if req.protocol.major != 1:
      await req.reply(Http400, "text/plain", "Bad Request", [("Connection", "close")])
      return
    let path = req.url.path
    let allowed =
      case path
      of "/", "/json", "/file", "/delay", "/tenth": HttpGet
      of "/echo": HttpPost
      of "/db", "/queries", "/fortunes", "/updates": HttpGet
      else:
        await req.reply(Http404, "text/plain", "Not Found")
        return
    if req.reqMethod != allowed:
      await req.reply(Http405, "text/plain", "Method Not Allowed", [("Allow", $allowed)])
      return

    case path
    of "/":
      await req.reply(Http200, "text/plain", "Hello, World!")
    of "/json":
      await req.reply(Http200, "application/json", $(%*{"message": "Hello, World!"}))
    of "/file":
      await req.reply(Http200, "text/html", readFile(helloFile)) # from disk on every request
    of "/delay":
      let ms = intParam(req.url.query, "ms", MaxMs, 0)
      let bytes = intParam(req.url.query, "bytes", MaxBody, 0)
      if ms < 0 or bytes < 0:
        await req.reply(Http400, "text/plain", "Bad Request")
        return
      if ms > 0:
        await sleepAsync(ms) # a timer on the event loop
      await req.reply(Http200, "text/plain", repeat('x', bytes))
    of "/tenth":
      let ms = intParam(req.url.query, "ms", MaxMs, TenthDefaultMs)
      if ms < 0:
        await req.reply(Http400, "text/plain", "Bad Request") # not counted
        return
      inc tenthCounter
      let count = tenthCounter
      if count mod 10 == 0 and ms > 0:
        await sleepAsync(ms)
      await req.reply(Http200, "text/plain", $count)
    of "/db", "/queries", "/fortunes", "/updates":
      # Blocking libpq calls (database.nim): the event loop waits for them. SPEC asks
      # for a Server header here; asynchttpserver writes none.
      let (code, contentType, body) = dbAnswer(path, req.url.query)
      await req.reply(code, contentType, body, [("Server", "Nim asynchttpserver")])
    of "/echo":
      # asynchttpserver has read the whole body (Content-Length or chunked)
      # up to its own 8 MiB maxBody; SPEC's limit is 1 MiB.
      if req.body.len > MaxBody:
        await req.reply(Http413, "text/plain", "Content Too Large")
      else:
        await req.reply(Http200, "application/octet-stream", req.body)

  openDatabase()
  let server = newAsyncHttpServer()
  try:
    server.listen(Port(parseInt(port)), host)
  except OSError, ValueError:
    stderr.writeLine("nim: cannot listen on " & host & ":" & port & ": " & getCurrentExceptionMsg())
    quit(1)
  echo "nim listening on ", host, ":", port, " (one thread, one event loop)"
  while true:
    if server.shouldAcceptRequest():
      try:
        await server.acceptRequest(handle)
      except OSError:
        stderr.writeLine("accept: " & getCurrentExceptionMsg())
        await sleepAsync(10)
    else:
      # Too many open descriptors (maxFDs): wait for some to close.
      await sleepAsync(500)

asyncCheck main()
# A connection that fails (e.g. reset by its client) surfaces here through
# asynchttpserver's asyncCheck; it ends that connection only, not the server.
while true:
  try:
    runForever()
  except CatchableError:
    stderr.writeLine("connection error: " & getCurrentExceptionMsg())
