// cpp-asio: standalone Asio, one io_context per worker thread ($WORKERS of them).
//
// The acceptor lives on the first io_context and hands each accepted socket to the next
// io_context in turn; from then on a connection is served entirely by its own io_context's
// thread. HTTP/1.1 is parsed and written by hand over Asio's async reads and writes; /delay and
// /tenth wait on an asio::steady_timer. Pipelined requests are answered in order: a parked
// request holds back the ones behind it on its connection.
#include <asio.hpp>
#include <asio/ssl.hpp>
#include <nlohmann/json.hpp>

#include "db.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <zlib.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

using asio::ip::tcp;
using namespace std::literals;

namespace {

constexpr std::size_t kMaxHead = 16 * 1024;   // request line + headers (SPEC asks for 8 KiB)
constexpr int kMaxFields = 128;               // SPEC asks for 64
constexpr std::size_t kMaxBody = 1 << 20;     // largest /echo body
constexpr long kMaxDelayMs = 60000;
constexpr long kMaxCompressKb = 4096;         // /compress?kb= at most this
constexpr std::size_t kOutHighWater = 1 << 20;  // stop answering pipelined requests while this much is queued

const std::string kHello = "Hello, World!";
std::string g_hello_file;
std::atomic<unsigned long> g_tenth{0};
std::optional<std::string> g_compress_doc;  // $COMPRESS_FILE, read once at start (nullopt: unset or unreadable)

// gzip (RFC 1952) of data with zlib, compressed on every call: deflateInit2 with windowBits
// 15 + 16 for the gzip wrapper, level 6 (Z_DEFAULT_COMPRESSION); nullopt when zlib fails.
std::optional<std::string> gzip(std::string_view data) {
    z_stream zs{};
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return std::nullopt;
    std::string out(deflateBound(&zs, data.size()), '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    zs.avail_in = static_cast<uInt>(data.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    int rc = deflate(&zs, Z_FINISH);  // one call: deflateBound leaves room for all of it
    out.resize(zs.total_out);
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) return std::nullopt;
    return out;
}

// Date header: formatted at most once a second per io_context thread, reused otherwise.
const std::string& http_date() {
    thread_local std::time_t cached_sec = 0;
    thread_local std::string cached;
    std::time_t now = std::time(nullptr);
    if (now != cached_sec) {
        std::tm tm{};
        gmtime_r(&now, &tm);
        char buf[40];
        std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);  // C locale: English names
        cached = buf;
        cached_sec = now;
    }
    return cached;
}

const char* reason(int status) {
    switch (status) {
        case 100: return "Continue";
        case 200: return "OK";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 413: return "Payload Too Large";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return "Unknown";
    }
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); i++)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

std::string_view trim(std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
}

bool has_token(std::string_view v, std::string_view tok) {
    while (!v.empty()) {
        auto comma = v.find(',');
        if (iequals(trim(v.substr(0, comma)), tok)) return true;
        if (comma == std::string_view::npos) break;
        v.remove_prefix(comma + 1);
    }
    return false;
}

bool is_tchar(unsigned char c) {
    return std::isalnum(c) || (c && std::strchr("!#$%&'*+-.^_`|~", c));
}

// Strict non-negative decimal in [0, max]; nullopt otherwise.
std::optional<long> parse_uint(std::string_view s, long max) {
    if (s.empty() || s.size() > 10) return std::nullopt;
    long v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
    }
    if (v > max) return std::nullopt;
    return v;
}

// A query parameter: def when absent, nullopt when invalid.
std::optional<long> query_param(std::string_view q, std::string_view name, long def, long max) {
    std::optional<long> result = def;
    while (!q.empty()) {
        auto amp = q.find('&');
        std::string_view pair = q.substr(0, amp);
        auto eq = pair.find('=');
        if (pair.substr(0, eq) == name) {
            if (eq == std::string_view::npos) return std::nullopt;
            result = parse_uint(pair.substr(eq + 1), max);
            if (!result) return std::nullopt;
        }
        if (amp == std::string_view::npos) break;
        q.remove_prefix(amp + 1);
    }
    return result;
}

struct Request {
    std::string_view method, target;
    bool http10 = false;
    bool keep = true;
    long content_length = -1;
    bool chunked = false;
    bool expect_continue = false;
};

// Parses a head ending with CRLFCRLF. Returns 0 or an HTTP error status.
int parse_head(std::string_view head, Request& rq) {
    auto eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    auto sp1 = line.find(' ');
    if (sp1 == 0 || sp1 == std::string_view::npos) return 400;
    auto sp2 = line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return 400;
    rq.method = line.substr(0, sp1);
    rq.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::string_view version = line.substr(sp2 + 1);
    for (unsigned char c : rq.method)
        if (!is_tchar(c)) return 400;
    if (rq.target.front() != '/') return 400;
    for (unsigned char c : rq.target)
        if (c <= 0x20 || c >= 0x7f) return 400;
    if (version == "HTTP/1.1") rq.http10 = false;
    else if (version == "HTTP/1.0") rq.http10 = true;
    else if (version.size() == 8 && version.substr(0, 5) == "HTTP/") return 505;
    else return 400;

    bool conn_close = false, conn_keep = false, te = false;
    int fields = 0;
    std::size_t pos = eol + 2;
    while (pos < head.size() - 2) {
        auto le = head.find("\r\n", pos);
        std::string_view field = head.substr(pos, le - pos);
        pos = le + 2;
        if (++fields > kMaxFields) return 431;
        auto colon = field.find(':');
        if (colon == 0 || colon == std::string_view::npos) return 400;
        std::string_view name = field.substr(0, colon);
        for (unsigned char c : name)
            if (!is_tchar(c)) return 400;
        std::string_view value = trim(field.substr(colon + 1));
        if (iequals(name, "content-length")) {
            if (value.size() > 18) return 413;
            auto cl = parse_uint(value, 999999999999999999L);
            if (!cl) return 400;
            if (rq.content_length >= 0 && rq.content_length != *cl) return 400;
            rq.content_length = *cl;
        } else if (iequals(name, "transfer-encoding")) {
            te = true;
            if (!iequals(value, "chunked")) return 501;  // the only coding understood
            rq.chunked = true;
        } else if (iequals(name, "connection")) {
            conn_close |= has_token(value, "close");
            conn_keep |= has_token(value, "keep-alive");
        } else if (iequals(name, "expect")) {
            rq.expect_continue = iequals(value, "100-continue");
        }
    }
    if (te && rq.content_length >= 0) return 400;  // ambiguous framing
    rq.keep = rq.http10 ? (conn_keep && !conn_close) : !conn_close;
    return 0;
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Decodes a chunked body at the start of p. 1 = complete (*used bytes consumed, body in out),
// 0 = need more bytes, -400 = bad framing, -413 = decoded body over kMaxBody.
int parse_chunked(std::string_view p, std::size_t& used, std::string& out) {
    std::size_t i = 0;
    out.clear();
    for (;;) {
        auto le = p.find("\r\n", i);
        if (le == std::string_view::npos) return p.size() - i > 1024 ? -400 : 0;
        std::string_view line = p.substr(i, le - i);
        std::size_t size = 0, k = 0;
        for (; k < line.size() && hex_digit(line[k]) >= 0; k++) {
            if (k >= 8) return -413;
            size = size * 16 + static_cast<std::size_t>(hex_digit(line[k]));
        }
        if (k == 0 || (k < line.size() && line[k] != ';' && line[k] != ' ' && line[k] != '\t')) return -400;
        i = le + 2;
        if (size == 0) {  // trailer fields, then the empty line
            for (;;) {
                auto e = p.find("\r\n", i);
                if (e == std::string_view::npos) return 0;
                if (e == i) {
                    used = e + 2;
                    return 1;
                }
                i = e + 2;
            }
        }
        if (out.size() + size > kMaxBody) return -413;
        if (p.size() - i < size + 2) return 0;
        out.append(p.substr(i, size));
        i += size;
        if (p.substr(i, 2) != "\r\n") return -400;
        i += 2;
    }
}

using tls_stream = asio::ssl::stream<tcp::socket>;

// Stream: tcp::socket (plaintext) or tls_stream (with $TLS_CERT/$TLS_KEY); the HTTP code is the
// same for both, and the plaintext one carries no TLS branch.
template <class Stream>
class Connection : public std::enable_shared_from_this<Connection<Stream>> {
    static constexpr bool tls = std::is_same_v<Stream, tls_stream>;

public:
    explicit Connection(Stream socket) : socket_(std::move(socket)), timer_(socket_.get_executor()) {}

    void start() {
        asio::error_code ec;
        socket_.lowest_layer().set_option(tcp::no_delay(true), ec);
        if constexpr (tls) {
            socket_.async_handshake(asio::ssl::stream_base::server,
                                    [self = this->shared_from_this()](asio::error_code ec) {
                                        if (ec) return self->abort();
                                        self->step();
                                    });
        } else {
            step();
        }
    }

private:
    Stream socket_;
    asio::steady_timer timer_;
    std::array<char, 16 * 1024> rbuf_{};
    std::string in_;          // received, not yet answered
    std::size_t scan_from_ = 0;
    std::string pend_;        // responses waiting to be written
    std::string wbuf_;        // the write in flight
    std::string chunked_;
    bool reading_ = false, writing_ = false, waiting_ = false;
    bool close_after_ = false, peer_eof_ = false, sent_continue_ = false;
    bool in_process_ = false;  // process() is running: a reply that comes at once must not step()

    // server: the Server header that SPEC asks of the database paths; gzipped: the body is
    // gzip-encoded (/compress).
    void respond(int status, std::string_view ctype, std::string_view body, bool keep, bool http10,
                 bool server = false, bool gzipped = false) {
        pend_ += "HTTP/1.1 ";
        pend_ += std::to_string(status);
        pend_ += ' ';
        pend_ += reason(status);
        pend_ += "\r\nDate: ";
        pend_ += http_date();
        if (server) pend_ += "\r\nServer: cpp-asio";
        pend_ += "\r\nContent-Type: ";
        pend_ += ctype;
        if (gzipped) pend_ += "\r\nContent-Encoding: gzip";
        pend_ += "\r\nContent-Length: ";
        pend_ += std::to_string(body.size());
        pend_ += !keep ? "\r\nConnection: close\r\n\r\n" : http10 ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\n\r\n";
        pend_ += body;
        if (!keep) close_after_ = true;
    }

    void respond_error(int status) {
        respond(status, "text/plain", reason(status), false, false);
    }

    // Parks the connection for ms, then answers with the given body.
    void park(long ms, std::string body, bool keep, bool http10) {
        waiting_ = true;
        timer_.expires_after(std::chrono::milliseconds(ms));
        timer_.async_wait([self = this->shared_from_this(), body = std::move(body), keep, http10](asio::error_code ec) {
            self->waiting_ = false;
            if (ec) return;
            self->respond(200, "text/plain", body, keep, http10);
            if (!self->reading_ && !self->writing_) self->step();
        });
    }

    // Parks the connection until the database answers (db.cpp: no wait on this thread).
    void ask_db(std::string_view path, std::string_view query, bool keep, bool http10) {
        waiting_ = true;
        db::serve(path, query, [self = this->shared_from_this(), keep, http10](int status, std::string_view ctype,
                                                                              std::string body) {
            self->waiting_ = false;
            self->respond(status, ctype, body, keep, http10, true);
            if (!self->in_process_ && !self->reading_ && !self->writing_) self->step();
        });
    }

    void dispatch(const Request& rq, std::string_view body) {
        std::string_view target = rq.target;
        auto qm = target.find('?');
        std::string_view path = target.substr(0, qm);
        std::string_view query = qm == std::string_view::npos ? ""sv : target.substr(qm + 1);
        bool keep = rq.keep, h10 = rq.http10, get = rq.method == "GET";
        auto not_allowed = [&] { respond(405, "text/plain", "Method Not Allowed", keep, h10); };

        if (path == "/") {
            if (!get) return not_allowed();
            respond(200, "text/plain", kHello, keep, h10);
        } else if (path == "/json") {
            if (!get) return not_allowed();
            respond(200, "application/json", nlohmann::json{{"message", kHello}}.dump(), keep, h10);
        } else if (path == "/file") {
            if (!get) return not_allowed();
            // read from disk on every request (a blocking read on this io_context's thread)
            std::ifstream f(g_hello_file, std::ios::binary);
            if (!f) return respond(500, "text/plain", "cannot read file", keep, h10);
            std::ostringstream data;
            data << f.rdbuf();
            respond(200, "text/html", data.str(), keep, h10);
        } else if (path == "/delay") {
            if (!get) return not_allowed();
            auto ms = query_param(query, "ms", 0, kMaxDelayMs);
            auto bytes = query_param(query, "bytes", 0, kMaxBody);
            if (!ms || !bytes) return respond(400, "text/plain", "bad ms or bytes", keep, h10);
            std::string body_x(static_cast<std::size_t>(*bytes), 'x');
            if (*ms == 0) return respond(200, "text/plain", body_x, keep, h10);
            park(*ms, std::move(body_x), keep, h10);
        } else if (path == "/tenth") {
            if (!get) return not_allowed();
            auto ms = query_param(query, "ms", 2000, kMaxDelayMs);
            if (!ms) return respond(400, "text/plain", "bad ms", keep, h10);
            unsigned long v = g_tenth.fetch_add(1) + 1;
            if (v % 10 == 0 && *ms > 0) return park(*ms, std::to_string(v), keep, h10);
            respond(200, "text/plain", std::to_string(v), keep, h10);
        } else if (path == "/compress") {
            if (!get) return not_allowed();
            auto kb = query_param(query, "kb", 0, kMaxCompressKb);  // absent: 0, refused
            if (!kb || *kb < 1) return respond(400, "text/plain", "bad kb", keep, h10);
            if (!g_compress_doc) return respond(500, "text/plain", "no $COMPRESS_FILE", keep, h10);
            // compressed on this request, inline on this io_context's thread: Asio runs handlers on
            // the threads that run the io_context, and with one io_context per core there is no
            // pool to hand CPU work to (the loop's other connections wait: what is measured)
            auto out = gzip(std::string_view(*g_compress_doc).substr(0, static_cast<std::size_t>(*kb) * 1024));
            if (!out) return respond(500, "text/plain", "zlib failed", keep, h10);
            respond(200, "application/json", *out, keep, h10, false, true);
        } else if (db::is_path(path)) {
            if (!get) return not_allowed();
            ask_db(path, query, keep, h10);
        } else if (path == "/echo") {
            if (rq.method != "POST") return not_allowed();
            respond(200, "application/octet-stream", body, keep, h10);
        } else {
            respond(404, "text/plain", "Not Found", keep, h10);
        }
    }

    // Answers complete requests from in_ while the connection is not parked.
    void process() {
        std::size_t off = 0;
        while (!waiting_ && !close_after_ && pend_.size() < kOutHighWater && off < in_.size()) {
            if (in_[off] == '\r' || in_[off] == '\n') {  // empty lines between requests
                off++;
                continue;
            }
            std::string_view avail(in_.data() + off, in_.size() - off);
            std::size_t from = scan_from_ > off + 3 ? scan_from_ - 3 - off : 0;
            auto he = avail.find("\r\n\r\n", from);
            if (he == std::string_view::npos) {
                scan_from_ = in_.size();
                if (avail.size() > kMaxHead) respond_error(431);
                break;
            }
            std::size_t head_len = he + 4;
            if (head_len > kMaxHead) {
                respond_error(431);
                break;
            }
            Request rq;
            if (int st = parse_head(avail.substr(0, head_len), rq)) {
                respond_error(st);
                break;
            }
            std::string_view rest = avail.substr(head_len), body;
            std::size_t used = head_len;
            bool complete = true;
            if (rq.chunked) {
                std::size_t consumed = 0;
                int r = parse_chunked(rest, consumed, chunked_);
                if (r < 0) {
                    respond_error(-r);
                    break;
                }
                complete = r == 1;
                body = chunked_;
                used += consumed;
            } else if (rq.content_length > 0) {
                if (rq.content_length > static_cast<long>(kMaxBody)) {
                    respond_error(413);
                    break;
                }
                complete = rest.size() >= static_cast<std::size_t>(rq.content_length);
                body = rest.substr(0, static_cast<std::size_t>(rq.content_length));
                used += body.size();
            }
            if (!complete) {
                if (rq.expect_continue && !rq.http10 && !sent_continue_) {
                    pend_ += "HTTP/1.1 100 Continue\r\n\r\n";
                    sent_continue_ = true;
                }
                scan_from_ = off;  // re-parse this head when more arrives
                break;
            }
            dispatch(rq, body);
            off += used;
            scan_from_ = off;
            sent_continue_ = false;
        }
        in_.erase(0, off);
        scan_from_ -= std::min(scan_from_, off);
    }

    // Runs whenever no read or write is in flight: answer, write, or read more.
    void step() {
        if (!waiting_ && !close_after_) {
            in_process_ = true;
            process();
            in_process_ = false;
        }
        if (!pend_.empty()) {
            wbuf_.swap(pend_);
            pend_.clear();
            writing_ = true;
            asio::async_write(socket_, asio::buffer(wbuf_),
                              [self = this->shared_from_this()](asio::error_code ec, std::size_t) {
                                  self->writing_ = false;
                                  self->wbuf_.clear();
                                  if (ec) return self->abort();
                                  if (self->close_after_) return self->close();
                                  self->step();
                              });
            return;
        }
        if (waiting_) return;  // the timer calls step()
        if (close_after_ || peer_eof_) return close();
        reading_ = true;
        socket_.async_read_some(asio::buffer(rbuf_), [self = this->shared_from_this()](asio::error_code ec, std::size_t n) {
            self->reading_ = false;
            // over TLS, eof is the client's close_notify; stream_truncated a TCP close without one,
            // taken like a half-closed plaintext client
            if (ec == asio::error::eof || (tls && ec == asio::ssl::error::stream_truncated)) {
                self->peer_eof_ = true;  // answer what is complete, then close
            } else if (ec) {
                return self->abort();
            }
            self->in_.append(self->rbuf_.data(), n);
            self->step();
        });
    }

    // The end of a connection in good order: over TLS, close_notify first (SPEC), with Asio's
    // async_shutdown, which then waits for the client's close_notify or its TCP close; the timer
    // bounds that wait for a client that does neither.
    void close() {
        if constexpr (tls) {
            timer_.expires_after(std::chrono::seconds(5));
            timer_.async_wait([self = this->shared_from_this()](asio::error_code ec) {
                if (!ec) self->abort();
            });
            socket_.async_shutdown([self = this->shared_from_this()](asio::error_code) { self->abort(); });
        } else {
            abort();
        }
    }

    // After an error: the TCP close only.
    void abort() {
        asio::error_code ec;
        timer_.cancel();
        auto& s = socket_.lowest_layer();
        s.shutdown(tcp::socket::shutdown_both, ec);
        s.close(ec);
    }
};

class Server {
public:
    Server(std::vector<std::unique_ptr<asio::io_context>>& contexts, const tcp::endpoint& ep,
           asio::ssl::context* tls)
        : contexts_(contexts), acceptor_(*contexts[0]), retry_(*contexts[0]), tls_(tls) {
        acceptor_.open(ep.protocol());
        acceptor_.set_option(tcp::acceptor::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen(4096);
    }

    void accept() {
        // each new connection goes to the next io_context, round robin
        asio::io_context& target = *contexts_[next_++ % contexts_.size()];
        acceptor_.async_accept(target, [this](asio::error_code ec, tcp::socket socket) {
            if (!ec) {
                if (tls_)
                    std::make_shared<Connection<tls_stream>>(tls_stream(std::move(socket), *tls_))->start();
                else
                    std::make_shared<Connection<tcp::socket>>(std::move(socket))->start();
                accept();
            } else {
                // e.g. out of file descriptors: back off briefly instead of spinning
                std::cerr << "cpp-asio: accept: " << ec.message() << "\n";
                retry_.expires_after(10ms);
                retry_.async_wait([this](asio::error_code) { accept(); });
            }
        });
    }

private:
    std::vector<std::unique_ptr<asio::io_context>>& contexts_;
    tcp::acceptor acceptor_;
    asio::steady_timer retry_;
    asio::ssl::context* tls_;  // null: plaintext
    std::size_t next_ = 0;
};

std::string env_or(const char* name, const char* def) {
    const char* v = std::getenv(name);
    return v && *v ? v : def;
}

// With $TLS_CERT and $TLS_KEY: one server context for every connection (OpenSSL through
// asio::ssl). Asio's tls_server still allows TLS 1.0 and 1.1 (its minimum is TLS1_VERSION):
// they are switched off with its no_tlsv1 options. Otherwise OpenSSL's defaults: ciphers,
// tickets, no ALPN. One variable alone, or a file OpenSSL rejects, ends the process with a line.
std::unique_ptr<asio::ssl::context> tls_context() {
    const char* cert = std::getenv("TLS_CERT");
    const char* key = std::getenv("TLS_KEY");
    bool have_cert = cert && *cert, have_key = key && *key;
    if (!have_cert && !have_key) return nullptr;
    if (!have_cert || !have_key) {
        std::cerr << "cpp-asio: " << (have_cert ? "TLS_CERT" : "TLS_KEY") << " is set but "
                  << (have_cert ? "TLS_KEY" : "TLS_CERT")
                  << " is not; set both (PEM certificate and PKCS#8 key) or neither\n";
        std::exit(1);
    }
    auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
    ctx->set_options(asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    try {
        ctx->use_certificate_chain_file(cert);
    } catch (const std::exception& e) {
        std::cerr << "cpp-asio: cannot load TLS_CERT " << cert << ": " << e.what() << "; point it at a PEM certificate\n";
        std::exit(1);
    }
    try {
        ctx->use_private_key_file(key, asio::ssl::context::pem);
    } catch (const std::exception& e) {
        std::cerr << "cpp-asio: cannot load TLS_KEY " << key << ": " << e.what()
                  << "; point it at the PEM private key of TLS_CERT\n";
        std::exit(1);
    }
    return ctx;
}

int default_workers() {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

int main() {
    std::string host = env_or("HOST", "127.0.0.1");
    std::string port = env_or("PORT", "8080");
    g_hello_file = env_or("HELLO_FILE", "hello.html");
    if (const char* doc = std::getenv("COMPRESS_FILE"); doc && *doc) {
        std::ifstream f(doc, std::ios::binary);
        std::ostringstream data;
        if (f && data << f.rdbuf()) g_compress_doc = data.str();
    }
    int workers = std::atoi(env_or("WORKERS", "0").c_str());
    if (workers <= 0) workers = default_workers();

    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    std::vector<std::unique_ptr<asio::io_context>> contexts;
    for (int i = 0; i < workers; i++) contexts.push_back(std::make_unique<asio::io_context>(1));

    std::unique_ptr<asio::ssl::context> tls = tls_context();  // before the bind: fail before "listening"
    db::configure(workers);
    std::unique_ptr<Server> server;
    try {
        tcp::resolver resolver(*contexts[0]);
        tcp::endpoint ep = *resolver.resolve(host, port, tcp::resolver::passive).begin();
        server = std::make_unique<Server>(contexts, ep, tls.get());
    } catch (const std::exception& e) {
        std::cerr << "cpp-asio: cannot listen on " << host << ":" << port << ": " << e.what() << "\n";
        return 1;
    }
    server->accept();
    std::cerr << "cpp-asio: listening on " << host << ":" << port << (tls ? " (TLS)" : "") << " with " << workers << " io_contexts\n";

    // SIGTERM's default action ends the process; the io_contexts never run out of work.
    std::vector<std::thread> threads;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    for (auto& ctx : contexts) guards.push_back(asio::make_work_guard(*ctx));
    // each thread opens its io_context's database connections, then runs it
    for (int i = 1; i < workers; i++)
        threads.emplace_back([&contexts, i] {
            db::open_loop(*contexts[i], i);
            contexts[i]->run();
        });
    db::open_loop(*contexts[0], 0);
    contexts[0]->run();
    for (auto& t : threads) t.join();
    return 0;
}
