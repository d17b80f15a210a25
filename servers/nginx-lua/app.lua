-- nginx-lua: the request handlers, run by the nginx Lua module (OpenResty's ngx_lua) inside
-- each nginx worker process's event loop. Every response sets Content-Length itself so that
-- nginx never falls back to chunked (or, for HTTP/1.0, close-delimited) bodies.
local cjson = require "cjson"

local ngx = ngx
local HELLO = "Hello, World!"
local MAX_MS = 60000
local MAX_BYTES = 1048576
local hello_file = os.getenv("HELLO_FILE")
local COMPRESS_KB_MAX = 4096

-- /compress's document, read once when this module loads (init_by_lua, in the master: the workers inherit it).
local compress_doc
do
    local f = assert(io.open(os.getenv("COMPRESS_FILE"), "rb"))
    compress_doc = f:read("*a")
    f:close()
end

local _M = {}

local function send(status, content_type, body)
    ngx.status = status
    ngx.header["Content-Type"] = content_type
    ngx.header["Content-Length"] = #body
    ngx.print(body)
    return ngx.exit(status)
end

-- Only GET is allowed on the read-only endpoints.
local function want(method)
    if ngx.req.get_method() ~= method then
        return ngx.exit(ngx.HTTP_NOT_ALLOWED)
    end
end

-- A query parameter as an integer in [0, max]; default when absent, nil when invalid.
local function int_arg(args, name, default, max)
    local v = args[name]
    if v == nil then return default end
    if type(v) ~= "string" or not v:match("^%d+$") or #v > 9 then return nil end
    local n = tonumber(v)
    if n > max then return nil end
    return n
end

function _M.root()
    want("GET")
    return send(200, "text/plain", HELLO)
end

function _M.json()
    want("GET")
    return send(200, "application/json", cjson.encode({ message = HELLO }))
end

-- Read from disk on every request with plain Lua io: a blocking read on the worker's loop.
function _M.file()
    want("GET")
    local f, err = io.open(hello_file, "rb")
    if not f then
        ngx.log(ngx.ERR, "cannot open ", hello_file, ": ", err)
        return send(500, "text/plain", "cannot read file")
    end
    local data = f:read("*a")
    f:close()
    return send(200, "text/html", data)
end

function _M.delay()
    want("GET")
    local args = ngx.req.get_uri_args()
    local ms = int_arg(args, "ms", 0, MAX_MS)
    local bytes = int_arg(args, "bytes", 0, MAX_BYTES)
    if not ms or not bytes then
        return send(400, "text/plain", "bad ms or bytes")
    end
    if ms > 0 then ngx.sleep(ms / 1000) end   -- a timer; the worker serves others meanwhile
    return send(200, "text/plain", string.rep("x", bytes))
end

function _M.tenth()
    want("GET")
    local ms = int_arg(ngx.req.get_uri_args(), "ms", 2000, MAX_MS)
    if not ms then
        return send(400, "text/plain", "bad ms")
    end
    -- shared dict incr is atomic across the worker processes
    local n = ngx.shared.counter:incr("tenth", 1, 0)
    if n % 10 == 0 and ms > 0 then ngx.sleep(ms / 1000) end
    return send(200, "text/plain", tostring(n))
end

-- Compressed on every request, off the worker's event loop: ngx.run_worker_thread hands the slice to a thread
-- of nginx's "compress" thread pool (compress_worker.lua) and this request's coroutine yields until it returns;
-- ngx_lua's docs name it for "CPU bound task"s and for "external Lua library not based on cosocket or nginx".
function _M.compress()
    want("GET")
    local kb = int_arg(ngx.req.get_uri_args(), "kb", 0, COMPRESS_KB_MAX)
    if not kb or kb == 0 then
        return send(400, "text/plain", "bad kb")
    end
    local ok, gz = ngx.run_worker_thread("compress", "compress_worker", "gzip", compress_doc:sub(1, kb * 1024))
    if not ok then
        ngx.log(ngx.ERR, "compress: ", gz)
        return send(500, "text/plain", "compression failed")
    end
    ngx.header["Content-Encoding"] = "gzip"
    return send(200, "application/json", gz)
end

function _M.echo()
    want("POST")
    ngx.req.read_body()   -- nginx answers 413 itself above client_max_body_size
    local body = ngx.req.get_body_data()
    if not body then
        local path = ngx.req.get_body_file()   -- only if nginx spilled it to disk
        if path then
            local f = assert(io.open(path, "rb"))
            body = f:read("*a")
            f:close()
        end
    end
    return send(200, "application/octet-stream", body or "")
end

return _M
