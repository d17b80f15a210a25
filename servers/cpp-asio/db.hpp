// cpp-asio's database endpoints (SPEC.md, "Database endpoints"): libpq used non-blocking on
// each io_context (db.cpp says how and why).
#pragma once

#include <asio.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace db {

// Receives the response of a database path: status, Content-Type and body.
using Reply = std::function<void(int status, std::string_view ctype, std::string body)>;

// Reads $DATABASE_URL and $DB_POOL once, before any loop opens its connections; returns
// how many connections each of the workers io_contexts gets (0 without $DATABASE_URL).
void configure(int workers);

// Opens this io_context's share of connections; call it on the io_context's own thread,
// before run(): the connections are then used only by that thread.
void open_loop(asio::io_context& ctx, int loop);

bool is_path(std::string_view path);

// Serves a GET on a database path from this thread's connections. reply runs once the
// answers are in, on this thread: later, from the io_context, or at once (without
// $DATABASE_URL: 503; or when the query cannot even be sent).

void serve(std::string_view path, std::string_view query, Reply reply);

}  // namespace db
