// The database endpoints on libpq (PostgreSQL's C client library, what a C++ user without an
// ORM links), used non-blocking inside Asio: each io_context owns its share of $DB_POOL
// connections, and each connection's socket is watched with a posix::stream_descriptor's
// async_wait, so a query out never stalls the loop's other connections (db_wait "async").
// We chose this over a blocking PQexec on the loop's thread because Asio's whole point is
// that its thread never waits, and libpq's asynchronous API (PQsendQueryPrepared, PQflush,
// PQconsumeInput, PQisBusy, PQgetResult) is documented for exactly this use.
// A connection runs one query at a time (no pipeline mode): queries queue in FIFO order
// behind the one out. Statements are prepared once per connection (PQprepare).
#include "db.hpp"

#include <libpq-fe.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <memory>
#include <random>
#include <utility>
#include <vector>

namespace db {
namespace {

constexpr int kWorldRows = 10000;
constexpr long kMaxQueries = 500;

std::string g_url;  // empty: no database, the paths answer 503
int g_workers = 1;
long g_pool = 0;

// Prepared once per connection, then run with PQsendQueryPrepared.
const std::pair<const char*, const char*> kStatements[] = {
    {"world", "SELECT id, randomNumber FROM World WHERE id = $1"},
    {"update", "UPDATE World SET randomNumber = $1 WHERE id = $2"},
    {"fortune", "SELECT id, message FROM Fortune"},
};

struct Query {
    const char* statement;
    std::vector<std::string> params;  // text format
    std::function<void(const PGresult*)> done;  // nullptr: the query failed
};

// One libpq connection driven by its io_context. Lives as long as its thread.
class PgConn {
public:
    explicit PgConn(asio::io_context& ctx) : socket_(ctx) { connect(); }

    std::size_t load() const { return queue_.size(); }

    void submit(Query q) {
        queue_.push_back(std::move(q));
        next();
    }

private:
    PGconn* conn_ = nullptr;
    asio::posix::stream_descriptor socket_;  // libpq's socket, watched only (libpq owns the fd)
    std::deque<Query> queue_;                // front: the query out, when out_
    PGresult* result_ = nullptr;
    bool out_ = false;                       // a query was sent and its answer is awaited
    bool broken_ = false;

    // Blocking connect (or reconnect) and prepare: at start, before the loop runs, or after
    // the server dropped the connection (rare; the loop waits for it then).
    bool connect() {
        if (socket_.is_open()) socket_.release();
        if (conn_) PQreset(conn_);
        else conn_ = PQconnectdb(g_url.c_str());
        broken_ = PQstatus(conn_) != CONNECTION_OK;
        for (auto& [name, sql] : kStatements) {
            if (broken_) break;
            PGresult* r = PQprepare(conn_, name, sql, 0, nullptr);
            broken_ = PQresultStatus(r) != PGRES_COMMAND_OK;
            PQclear(r);
        }
        if (broken_) {
            std::cerr << "cpp-asio: database: " << PQerrorMessage(conn_);
            return false;
        }
        PQsetnonblocking(conn_, 1);
        socket_.assign(PQsocket(conn_));
        return true;
    }

    // Sends the front query unless one is already out.
    void next() {
        if (out_ || queue_.empty()) return;
        out_ = true;
        if (broken_ && !connect()) return finish(false);
        Query& q = queue_.front();
        std::vector<const char*> values;
        for (auto& p : q.params) values.push_back(p.c_str());
        if (!PQsendQueryPrepared(conn_, q.statement, static_cast<int>(values.size()), values.data(), nullptr,
                                 nullptr, 0))
            return finish(false);
        flush();
    }

    // Sends what libpq still holds, waiting for the socket to take more when it is full.
    void flush() {
        int r = PQflush(conn_);
        if (r < 0) return finish(false);
        if (r == 1)
            return socket_.async_wait(asio::posix::descriptor_base::wait_write, [this](asio::error_code ec) {
                if (ec) return finish(false);
                flush();
            });
        collect();
    }

    // Takes the results libpq has parsed; waits for the socket to be readable for more.
    void collect() {
        while (!PQisBusy(conn_)) {
            PGresult* r = PQgetResult(conn_);
            if (!r) return finish(true);  // the query's results are all in
            if (result_) PQclear(r);
            else result_ = r;
        }
        socket_.async_wait(asio::posix::descriptor_base::wait_read, [this](asio::error_code ec) {
            if (ec || !PQconsumeInput(conn_)) return finish(false);
            collect();
        });
    }

    // Hands the result to the front query, then sends the next one. Its callback may
    // submit more queries here: the first of them goes out at once (out_ is false again).
    void finish(bool ok) {
        if (!ok) {
            std::cerr << "cpp-asio: database: " << PQerrorMessage(conn_);
            broken_ = true;  // reconnect before the next query: the connection's state is unknown
        }
        PGresult* r = std::exchange(result_, nullptr);
        Query q = std::move(queue_.front());
        queue_.pop_front();
        out_ = false;
        q.done(ok ? r : nullptr);
        PQclear(r);
        next();
    }
};

// This io_context's connections; a request goes to the one with the fewest queries waiting.
struct LoopPool {
    std::vector<std::unique_ptr<PgConn>> conns;
    PgConn& pick() {
        return **std::min_element(conns.begin(), conns.end(),
                                  [](auto& a, auto& b) { return a->load() < b->load(); });
    }
};
thread_local LoopPool t_pool;

int random_id() {
    thread_local std::mt19937 rng{std::random_device{}()};
    return std::uniform_int_distribution<int>(1, kWorldRows)(rng);
}

struct World {
    int id = 0, random_number = 0;
};

bool read_world(const PGresult* r, World& w) {
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) return false;
    w.id = std::atoi(PQgetvalue(r, 0, 0));
    w.random_number = std::atoi(PQgetvalue(r, 0, 1));
    return true;
}

nlohmann::json to_json(const World& w) { return {{"id", w.id}, {"randomNumber", w.random_number}}; }

void send_error(const Reply& reply) { reply(500, "text/plain", "database error"); }

// ?queries=N: 1..500; missing, empty, 0, negative or not a number → 1; above 500 → 500.
long query_count(std::string_view q) {
    while (!q.empty()) {
        auto amp = q.find('&');
        std::string_view pair = q.substr(0, amp);
        if (pair.substr(0, 8) == "queries=") {
            std::string_view v = pair.substr(8);
            long n = 0;
            for (char c : v) {
                if (c < '0' || c > '9') return 1;
                n = std::min(n * 10 + (c - '0'), kMaxQueries + 1);
            }
            return std::clamp(n, 1L, kMaxQueries);
        }
        if (amp == std::string_view::npos) break;
        q.remove_prefix(amp + 1);
    }
    return 1;
}

// The rows of one /queries or /updates request and the answers still awaited.
struct Batch {
    std::vector<World> rows;
    std::size_t left = 0;
    bool failed = false;
};

// Reads every row of b with its own SELECT of a random id, then calls done.
void select_rows(PgConn& c, std::shared_ptr<Batch> b, std::function<void()> done) {
    auto fin = std::make_shared<std::function<void()>>(std::move(done));
    b->left = b->rows.size();
    for (std::size_t i = 0; i < b->rows.size(); i++)
        c.submit({"world", {std::to_string(random_id())}, [b, i, fin](const PGresult* r) {
                      if (!read_world(r, b->rows[i])) b->failed = true;
                      if (--b->left == 0) (*fin)();
                  }});
}

// Gives every row of b a new random number, written with one UPDATE per row (autocommit:
// one statement per transaction, so concurrent requests cannot deadlock), then calls done.
void update_rows(PgConn& c, std::shared_ptr<Batch> b, std::function<void()> done) {
    auto fin = std::make_shared<std::function<void()>>(std::move(done));
    b->left = b->rows.size();
    for (World& w : b->rows) {
        w.random_number = random_id();
        c.submit({"update", {std::to_string(w.random_number), std::to_string(w.id)}, [b, fin](const PGresult* r) {
                      if (!r || PQresultStatus(r) != PGRES_COMMAND_OK) b->failed = true;
                      if (--b->left == 0) (*fin)();
                  }});
    }
}

void send_rows(const Batch& b, const Reply& reply) {
    if (b.failed) return send_error(reply);
    nlohmann::json out = nlohmann::json::array();
    for (const World& w : b.rows) out.push_back(to_json(w));
    reply(200, "application/json", out.dump());
}

void single(Reply reply) {
    t_pool.pick().submit({"world", {std::to_string(random_id())}, [reply](const PGresult* r) {
                              World w;
                              if (!read_world(r, w)) return send_error(reply);
                              reply(200, "application/json", to_json(w).dump());
                          }});
}

void queries(long n, Reply reply) {
    auto b = std::make_shared<Batch>();
    b->rows.resize(static_cast<std::size_t>(n));
    select_rows(t_pool.pick(), b, [b, reply] { send_rows(*b, reply); });
}

void updates(long n, Reply reply) {
    auto b = std::make_shared<Batch>();
    b->rows.resize(static_cast<std::size_t>(n));
    PgConn& c = t_pool.pick();
    select_rows(c, b, [b, reply, &c] {
        if (b->failed) return send_error(reply);
        update_rows(c, b, [b, reply] { send_rows(*b, reply); });
    });
}

// HTML escaping of & < > " ' (C++ has no standard template engine: users escape by hand).
void append_escaped(std::string& out, std::string_view s) {
    for (char ch : s) {
        switch (ch) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default: out += ch;
        }
    }
}

void fortunes(Reply reply) {
    t_pool.pick().submit({"fortune", {}, [reply](const PGresult* r) {
                              if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) return send_error(reply);
                              std::vector<std::pair<int, std::string>> list{
                                  {0, "Additional fortune added at request time."}};
                              for (int i = 0; i < PQntuples(r); i++)
                                  list.emplace_back(std::atoi(PQgetvalue(r, i, 0)), PQgetvalue(r, i, 1));
                              std::sort(list.begin(), list.end(),
                                        [](auto& a, auto& b) { return a.second < b.second; });
                              std::string page =
                                  "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>"
                                  "<tr><th>id</th><th>message</th></tr>";
                              for (auto& [id, message] : list) {
                                  page += "<tr><td>" + std::to_string(id) + "</td><td>";
                                  append_escaped(page, message);
                                  page += "</td></tr>";
                              }
                              page += "</table></body></html>";
                              reply(200, "text/html; charset=utf-8", std::move(page));
                          }});
}

}  // namespace

void configure(int workers) {
    const char* url = std::getenv("DATABASE_URL");
    if (!url || !*url) return;
    const char* pool = std::getenv("DB_POOL");
    char* end = nullptr;
    g_pool = pool && *pool ? std::strtol(pool, &end, 10) : 0;
    if (!pool || !*pool || *end || g_pool < 1) {
        std::cerr << "cpp-asio: DB_POOL=" << (pool ? pool : "") << " is not a positive integer; set it to the most"
                  << " database connections this process may open\n";
        std::exit(2);
    }
    g_url = url;
    g_workers = workers;
    if (g_pool < workers)  // SPEC: an event loop that owns its connections opens at least one
        std::cerr << "cpp-asio: DB_POOL=" << g_pool << " is below WORKERS=" << workers
                  << ": opening one database connection per io_context (" << workers << ")\n";
}

void open_loop(asio::io_context& ctx, int loop) {
    if (g_url.empty()) return;
    long share = std::max(1L, g_pool / g_workers + (loop < g_pool % g_workers));
    for (long i = 0; i < share; i++) t_pool.conns.push_back(std::make_unique<PgConn>(ctx));
}

bool is_path(std::string_view path) {
    return path == "/db" || path == "/queries" || path == "/fortunes" || path == "/updates";
}

void serve(std::string_view path, std::string_view query, Reply reply) {
    if (g_url.empty()) return reply(503, "text/plain", "no database configured (DATABASE_URL is not set)");
    if (path == "/db") single(std::move(reply));
    else if (path == "/queries") queries(query_count(query), std::move(reply));
    else if (path == "/updates") updates(query_count(query), std::move(reply));
    else fortunes(std::move(reply));
}

}  // namespace db
