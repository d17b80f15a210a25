-- lua: LuaSocket + Copas. One process, one event loop: every connection is a coroutine that
-- Copas resumes when its socket is ready (socket.select underneath). HTTP/1.1 is read line by
-- line and written by hand; pipelined requests are answered in order because each connection's
-- coroutine handles its requests one after the other.
--
-- Debian 12 ships Copas 1.x (Lua 5.1/5.2 only), which has no copas.sleep: /delay and /tenth park
-- the coroutine in a small timer heap here, and the main loop runs copas.step() with a timeout
-- up to the next deadline, then resumes the coroutines that are due.
--
-- The database paths are in db.lua (LuaSQL: a blocking query on this one loop).
local copas = require "copas"
local db = require "db"
local socket = require "socket"
local cjson = require "cjson"
local zlib = require "zlib"

local HOST = os.getenv("HOST") or "127.0.0.1"
local PORT = tonumber(os.getenv("PORT") or "8080")
local HELLO_FILE = os.getenv("HELLO_FILE") or "hello.html"
local COMPRESS_FILE = os.getenv("COMPRESS_FILE") or "../../assets/compress.json"
local COMPRESS_KB_MAX = 4096
local HELLO = "Hello, World!"
local MAX_HEAD = 16 * 1024       -- request line + headers (SPEC asks for 8 KiB)
local MAX_FIELDS = 128           -- SPEC asks for 64
local MAX_BODY = 1048576
local MAX_MS = 60000
-- socket.select() works on an fd_set of FD_SETSIZE (1024) descriptors: LuaSocket raises an
-- error for a descriptor beyond it, so connections past this many are closed at once.
local MAX_CONNECTIONS = 1000

---------------------------------------------------------------------------------------------
-- Timers: a binary min-heap of parked coroutines, resumed by the main loop.

local heap = {}

local function heap_push(e)
  heap[#heap + 1] = e
  local i = #heap
  while i > 1 do
    local p = math.floor(i / 2)
    if heap[p].due <= e.due then break end
    heap[i], heap[p] = heap[p], e
    i = p
  end
end

local function heap_pop()
  local top, last = heap[1], heap[#heap]
  heap[#heap] = nil
  local n = #heap
  if n > 0 then
    local i = 1
    while true do
      local c = 2 * i
      if c > n then break end
      if c < n and heap[c + 1].due < heap[c].due then c = c + 1 end
      if last.due <= heap[c].due then break end
      heap[i] = heap[c]
      i = c
    end
    heap[i] = last
  end
  return top
end

-- Copas resumes a coroutine by the (key, queue) pair it yields: this queue files the coroutine
-- in the timer heap instead of a socket set.
local sleepers = {
  insert = function() end,
  push = function(_, entry, co) entry.co = co; heap_push(entry) end,
}

local function sleep(skt, ms)
  coroutine.yield({ due = socket.gettime() + ms / 1000, skt = skt }, sleepers)
end

-- Resume a due coroutine the way Copas does: file it under whatever it yields next, or close
-- its socket when its handler has finished.
local function wake(entry)
  local ok, key, queue = coroutine.resume(entry.co)
  if ok and key and queue then
    queue:insert(key)
    queue:push(key, entry.co)
  else
    if not ok then io.stderr:write("lua: handler error: ", tostring(key), "\n") end
    entry.skt:close()
  end
end

---------------------------------------------------------------------------------------------
-- HTTP

local date_sec, date_text = nil, nil

local function http_date()   -- formatted at most once a second
  local now = os.time()
  if now ~= date_sec then
    date_sec, date_text = now, os.date("!%a, %d %b %Y %H:%M:%S GMT", now)
  end
  return date_text
end

local REASONS = {
  [200] = "OK", [400] = "Bad Request", [404] = "Not Found", [405] = "Method Not Allowed",
  [413] = "Payload Too Large", [431] = "Request Header Fields Too Large",
  [500] = "Internal Server Error", [501] = "Not Implemented", [503] = "Service Unavailable",
  [505] = "HTTP Version Not Supported",
}

-- `server`: send a Server header (SPEC: database paths send one beside Date); `encoding`: a Content-Encoding.
local function response(status, ctype, body, keep, http10, server, encoding)
  local conn = ""
  if not keep then conn = "Connection: close\r\n"
  elseif http10 then conn = "Connection: keep-alive\r\n" end
  return table.concat({
    "HTTP/1.1 ", status, " ", REASONS[status], "\r\n",
    server and "Server: lua\r\n" or "",
    "Date: ", http_date(), "\r\n",
    "Content-Type: ", ctype, "\r\n",
    encoding and "Content-Encoding: " .. encoding .. "\r\n" or "",
    "Content-Length: ", #body, "\r\n",
    conn, "\r\n", body,
  })
end

-- An integer query parameter in [0, max]: default when absent, nil when invalid.
local function int_param(query, name, default, max)
  local value = default
  for pair in query:gmatch("[^&]+") do
    local k, v = pair:match("^([^=]*)=?(.*)$")
    if k == name then
      if not v:match("^%d+$") or #v > 9 or tonumber(v) > max then return nil end
      value = tonumber(v)
    end
  end
  return value
end

local function has_token(value, token)
  for t in value:gmatch("[^,]+") do
    if t:match("^%s*(.-)%s*$"):lower() == token then return true end
  end
  return false
end

local counter = 0   -- /tenth: one process, one thread, so a plain variable has no lost updates

-- /compress's document, read once at start.
local compress_doc
do
  local f = assert(io.open(COMPRESS_FILE, "rb"))
  compress_doc = f:read("*a")
  f:close()
end

local function read_file()
  local f, err = io.open(HELLO_FILE, "rb")   -- on every request (a blocking read on the loop)
  if not f then return nil, err end
  local data = f:read("*a")
  f:close()
  return data
end

-- Answers one parsed request; returns the response.
local function handle(skt, method, target, body, keep, http10)
  local path, query = target:match("^([^?]*)%??(.*)$")
  local function reply(status, ctype, b) return response(status, ctype, b, keep, http10) end
  local get = method == "GET"
  if db.paths[path] then
    if not get then return response(405, "text/plain", "Method Not Allowed", keep, http10, true) end
    local status, ctype, b = db.handle(path, query)
    return response(status, ctype, b, keep, http10, true)
  elseif path == "/" then
    if not get then return reply(405, "text/plain", "Method Not Allowed") end
    return reply(200, "text/plain", HELLO)
  elseif path == "/json" then
    if not get then return reply(405, "text/plain", "Method Not Allowed") end
    return reply(200, "application/json", cjson.encode({ message = HELLO }))
  elseif path == "/file" then
    if not get then return reply(405, "text/plain", "Method Not Allowed") end
    local data = read_file()
    if not data then return reply(500, "text/plain", "cannot read file") end
    return reply(200, "text/html", data)
  elseif path == "/delay" then
    if not get then return reply(405, "text/plain", "Method Not Allowed") end
    local ms, bytes = int_param(query, "ms", 0, MAX_MS), int_param(query, "bytes", 0, MAX_BODY)
    if not ms or not bytes then return reply(400, "text/plain", "bad ms or bytes") end
    if ms > 0 then sleep(skt, ms) end
    return reply(200, "text/plain", string.rep("x", bytes))
  elseif path == "/tenth" then
    if not get then return reply(405, "text/plain", "Method Not Allowed") end
    local ms = int_param(query, "ms", 2000, MAX_MS)
    if not ms then return reply(400, "text/plain", "bad ms") end
    counter = counter + 1
    local n = counter
    if n % 10 == 0 and ms > 0 then sleep(skt, ms) end
    return reply(200, "text/plain", tostring(n))
  elseif path == "/compress" then
    if not get then return reply(405, "text/plain", "Method Not Allowed") end
    local kb = int_param(query, "kb", 0, COMPRESS_KB_MAX)
    if not kb or kb == 0 then return reply(400, "text/plain", "bad kb") end
    -- lua-zlib: a deflate stream at level 6 with windowBits 15 + 16 (zlib writes the gzip header and
    -- trailer), finished in one call. Inline on the one Copas loop: the other connections wait meanwhile.
    local gz = zlib.deflate(6, 15 + 16)(compress_doc:sub(1, kb * 1024), "finish")
    return response(200, "application/json", gz, keep, http10, false, "gzip")
  elseif path == "/echo" then
    if method ~= "POST" then return reply(405, "text/plain", "Method Not Allowed") end
    return reply(200, "application/octet-stream", body)
  end
  return reply(404, "text/plain", "Not Found")
end

-- Reads a chunked body; returns the body, or nil and an HTTP status (nil status: connection lost).
local function read_chunked(client)
  local parts, size = {}, 0
  while true do
    local line = client:receive("*l")
    if not line then return nil end
    local hex, ext = line:match("^(%x+)(.*)$")
    if not hex or (ext ~= "" and not ext:match("^[ \t;]")) then return nil, 400 end
    if #hex > 8 then return nil, 413 end
    local n = tonumber(hex, 16)
    if n == 0 then
      repeat   -- trailer fields up to the empty line
        line = client:receive("*l")
        if not line then return nil end
      until line == ""
      return table.concat(parts)
    end
    size = size + n
    if size > MAX_BODY then return nil, 413 end
    local data = client:receive(n)
    if not data then return nil end
    parts[#parts + 1] = data
    if client:receive("*l") ~= "" then return nil, 400 end
  end
end

local active = 0

local function serve(client)
  while true do
    -- request line (empty lines before it are skipped)
    local line, err
    repeat
      line, err = client:receive("*l")
      if not line then return end
    until line ~= ""
    local send_error = function(status)
      client:send(response(status, "text/plain", REASONS[status], false, false))
    end
    local method, target, version = line:match("^([!#$%%&'*+%-.^_`|~%w]+) (/[^ ]*) HTTP/(%d%.%d)$")
    if not method or target:find("[\0-\32\127]") then return send_error(400) end
    if version ~= "1.1" and version ~= "1.0" then return send_error(505) end
    local http10 = version == "1.0"
    -- header fields
    local head_size, fields = #line, 0
    local length, chunked, conn_close, conn_keep = nil, false, false, false
    while true do
      line = client:receive("*l")
      if not line then return end
      if line == "" then break end
      head_size, fields = head_size + #line + 2, fields + 1
      if head_size > MAX_HEAD or fields > MAX_FIELDS then return send_error(431) end
      local name, value = line:match("^([!#$%%&'*+%-.^_`|~%w]+):[ \t]*(.-)[ \t]*$")
      if not name then return send_error(400) end
      name = name:lower()
      if name == "content-length" then
        if not value:match("^%d+$") then return send_error(400) end
        if #value > 15 then return send_error(413) end
        local n = tonumber(value)
        if length and length ~= n then return send_error(400) end
        length = n
      elseif name == "transfer-encoding" then
        if value:lower() ~= "chunked" then return send_error(501) end
        chunked = true
      elseif name == "connection" then
        conn_close = conn_close or has_token(value, "close")
        conn_keep = conn_keep or has_token(value, "keep-alive")
      end
    end
    if chunked and length then return send_error(400) end
    local keep
    if http10 then keep = conn_keep and not conn_close else keep = not conn_close end
    -- body
    local body = ""
    if chunked then
      local status
      body, status = read_chunked(client)
      if not body then
        if status then send_error(status) end
        return
      end
    elseif length and length > 0 then
      if length > MAX_BODY then return send_error(413) end
      body = client:receive(length)
      if not body then return end
    end
    client:send(handle(client.socket, method, target, body, keep, http10))
    if not keep then return end
  end
end

local function handler(skt)
  if active >= MAX_CONNECTIONS then return end   -- Copas closes it
  active = active + 1
  skt:setoption("tcp-nodelay", true)
  local ok, err = pcall(serve, copas.wrap(skt))
  active = active - 1
  if not ok then io.stderr:write("lua: ", tostring(err), "\n") end
end

-- The row serves no TLS (server.toml's tls_out): refuse SPEC.md's TLS switch rather than answer
-- plaintext to a caller that asked for TLS.
if os.getenv("TLS_CERT") or os.getenv("TLS_KEY") then
  io.stderr:write("lua: TLS_CERT/TLS_KEY are set, but this row serves no TLS (Debian 12's Copas 1.x has none; see tls_out in server.toml): unset them\n")
  os.exit(2)
end

local server, err = socket.bind(HOST, PORT, 1024)
if not server then
  io.stderr:write(string.format("lua: cannot listen on %s:%d: %s\n", HOST, PORT, err))
  os.exit(1)
end
copas.addserver(server, handler)
io.stderr:write(string.format("lua: listening on %s:%d (%s, %s)\n", HOST, PORT, _VERSION, copas._VERSION))

while true do
  local timeout
  if heap[1] then timeout = math.max(0, heap[1].due - socket.gettime()) end
  copas.step(timeout)
  local now = socket.gettime()
  while heap[1] and heap[1].due <= now do wake(heap_pop()) end
end
