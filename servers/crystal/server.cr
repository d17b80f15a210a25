# serverbench contestant: Crystal's standard HTTP::Server. Every connection is a
# fiber; all fibers share one thread and its libevent event loop (Crystal's
# default build, without -Dpreview_mt), so $WORKERS has nothing to set.
require "http/server"
require "json"
require "compress/gzip"

MAX_BODY         = 1_048_576 # POST /echo limit and the largest /delay body
MAX_MS           =    60_000 # /delay and /tenth wait at most this long
TENTH_DEFAULT_MS =      2000 # /tenth's wait on every tenth request without ms=

HOST       = ENV.fetch("HOST", "127.0.0.1")
PORT       = ENV.fetch("PORT", "8080")
HELLO_FILE = ENV.fetch("HELLO_FILE", "../../assets/hello.html")

# /compress: the document, read once at start; each request gzips its first kb KiB anew.
COMPRESS_DOC    = File.read(ENV.fetch("COMPRESS_FILE", "../../assets/compress.json")).to_slice
COMPRESS_KB_MAX = 4096

# /tenth: one counter for the whole process. Fibers on one thread cannot
# interleave an increment, but an Atomic states (and keeps) "no lost updates".
TENTH = Atomic(Int64).new(0)

# HTTP::Server writes no Date header, so each response gets this one:
# formatted at most once a second, the same String reused in between.
module DateHeader
  @@second = 0_i64
  @@value = ""

  def self.value : String
    now = Time.utc
    if now.to_unix != @@second
      @@second = now.to_unix
      @@value = HTTP.format_time(now)
    end
    @@value
  end
end

# The value of query parameter `key` as a whole number in 0..max, `default`
# when absent, nil (a 400) otherwise. Only plain ASCII digits count.
def int_param(params : URI::Params, key : String, max : Int32, default : Int32) : Int32?
  value = params[key]?
  return default if value.nil?
  return nil unless 0 < value.size <= 9 && value.each_char.all?(&.ascii_number?)
  n = value.to_i
  n <= max ? n : nil
end

def reply(response : HTTP::Server::Response, status : Int32, content_type : String, body : String | Bytes) : Nil
  response.status_code = status
  response.content_type = content_type
  response.content_length = body.bytesize
  response.write(body.to_slice)
end

def bad_request(response) : Nil
  reply(response, 400, "text/plain", "Bad Request")
end

ALLOWED = {
  "/"         => "GET",
  "/json"     => "GET",
  "/file"     => "GET",
  "/delay"    => "GET",
  "/tenth"    => "GET",
  "/compress" => "GET",
  "/echo"     => "POST",
}

server = HTTP::Server.new do |context|
  request = context.request
  response = context.response
  response.headers["Date"] = DateHeader.value

  path = request.path
  allowed = ALLOWED[path]?
  if allowed.nil?
    reply(response, 404, "text/plain", "Not Found")
    next
  end
  if request.method != allowed
    response.headers["Allow"] = allowed
    reply(response, 405, "text/plain", "Method Not Allowed")
    next
  end

  case path
  when "/"
    reply(response, 200, "text/plain", "Hello, World!")
  when "/json"
    reply(response, 200, "application/json", {message: "Hello, World!"}.to_json)
  when "/file"
    reply(response, 200, "text/html", File.read(HELLO_FILE)) # from disk on every request
  when "/delay"
    params = request.query_params
    ms = int_param(params, "ms", MAX_MS, 0)
    bytes = int_param(params, "bytes", MAX_BODY, 0)
    if ms.nil? || bytes.nil?
      bad_request(response)
      next
    end
    sleep ms.milliseconds if ms > 0 # suspends this fiber on an event-loop timer
    reply(response, 200, "text/plain", "x" * bytes)
  when "/tenth"
    ms = int_param(request.query_params, "ms", MAX_MS, TENTH_DEFAULT_MS)
    if ms.nil?
      bad_request(response) # a rejected request does not count
      next
    end
    count = TENTH.add(1) + 1
    sleep ms.milliseconds if count % 10 == 0 && ms > 0
    reply(response, 200, "text/plain", count.to_s)
  when "/compress"
    kb = int_param(request.query_params, "kb", COMPRESS_KB_MAX, 0)
    if kb.nil? || kb == 0
      bad_request(response)
      next
    end
    # Compress::Gzip::Writer (the stdlib's zlib binding) at level 6, inline on this fiber: in the default
    # build every fiber runs on the one thread (spawn makes another fiber on it), so there is nowhere to
    # move the work to, and the other connections wait while it compresses.
    gzipped = IO::Memory.new
    Compress::Gzip::Writer.open(gzipped, level: 6) do |gzip|
      gzip.write(COMPRESS_DOC[0, kb * 1024])
    end
    response.headers["Content-Encoding"] = "gzip"
    reply(response, 200, "application/json", gzipped.to_slice)
  when "/echo"
    # HTTP::Server has already decoded chunked framing in request.body.
    if (request.content_length || 0) > MAX_BODY
      response.headers["Connection"] = "close" # the body stays unread
      reply(response, 413, "text/plain", "Content Too Large")
      next
    end
    body = IO::Memory.new
    if input = request.body
      IO.copy(input, body, MAX_BODY + 1)
    end
    if body.size > MAX_BODY
      response.headers["Connection"] = "close"
      reply(response, 413, "text/plain", "Content Too Large")
      next
    end
    reply(response, 200, "application/octet-stream", body.to_slice)
  end
end

# TLS (SPEC "TLS"): with $TLS_CERT and $TLS_KEY, the same server on the same port over TLS
# instead of plaintext. Context::Server's defaults (OpenSSL, TLS 1.0/1.1 off, Mozilla's
# intermediate ciphers, no ALPN) are kept. Read before the bind, so a bad setting fails first.
def tls_context : OpenSSL::SSL::Context::Server?
  cert, key = ENV["TLS_CERT"]?.presence, ENV["TLS_KEY"]?.presence
  return nil unless cert || key
  unless cert && key
    set, unset = cert ? {"TLS_CERT", "TLS_KEY"} : {"TLS_KEY", "TLS_CERT"}
    STDERR.puts "crystal: #{set} is set but #{unset} is not; set both (PEM certificate and PKCS#8 key) or neither"
    exit 1
  end
  context = OpenSSL::SSL::Context::Server.new
  begin
    context.certificate_chain = cert
    context.private_key = key
  rescue ex : OpenSSL::Error
    STDERR.puts "crystal: cannot load TLS_CERT #{cert} / TLS_KEY #{key}: #{ex.message}; point them at a PEM certificate and its key"
    exit 1
  end
  context
end

tls = tls_context
begin
  address = tls ? server.bind_tls(HOST, PORT.to_i, tls) : server.bind_tcp(HOST, PORT.to_i)
rescue ex : Socket::Error | ArgumentError
  STDERR.puts "crystal: cannot listen on #{HOST}:#{PORT}: #{ex.message}"
  exit 1
end
puts "crystal listening on #{address} (one thread, one event loop)"
server.listen
