%% erlang-inets: OTP's own HTTP server (inets httpd) with this module as its only
%% httpd module: httpd calls do/1 for every request. httpd runs a request
%% handler process per connection; it parses requests, reads bodies (by
%% Content-Length or chunked, refusing more than max_content_length with 413),
%% keeps connections alive and writes Date and Server headers.
-module(inets_row).
-export([main/0, do/1]).

-include_lib("inets/include/httpd.hrl").

-define(NAME, "erlang-inets").
-define(PAGES, ["/", "/json", "/file", "/delay", "/tenth", "/db", "/queries", "/fortunes", "/updates", "/compress"]).

main() ->
    {Ip, Port} = sb_contract:settings(?NAME),
    sb_db:start(?NAME),
    Root = filename:absname("."),
    Config = [{port, Port}, {bind_address, Ip}, {server_name, "localhost"},
              {server_root, Root}, {document_root, Root},
              {modules, [?MODULE]},
              {max_clients, 1000000},               % httpd's default is 150; SPEC asks for 10,000+
              {keep_alive, true},
              %% httpd answers 413 past max_body_size, but a chunked body past it stalls the
              %% connection (neither answered nor closed): the limit is checked in echo/1 instead.
              {max_content_length, 2 * sb_contract:max_body()}]
             ++ socket_type(sb_contract:tls(?NAME)),
    sb_contract:start(?NAME, "inets httpd, a process per connection",
                      fun() -> started(inets:start(), Config) end).

%% With $TLS_CERT/$TLS_KEY: httpd's documented TLS socket type, on OTP's ssl and its defaults.
socket_type(plaintext) -> [];
socket_type(TlsFiles) -> [{socket_type, {ssl, TlsFiles}}].

started(ok, Config) ->
    case inets:start(httpd, Config) of
        {ok, _} -> ok;
        Error -> Error
    end;
started(Error, _) -> Error.

%% The httpd module callback: every request comes here; the answer ends the chain.
do(#mod{method = Method, request_uri = Uri} = M) ->
    {Path, Query} = case string:split(Uri, "?") of
                        [P, Q] -> {P, Q};
                        [P] -> {P, ""}
                    end,
    Answer = case {Path, Method} of
                 {"/echo", "POST"} -> echo(M);
                 {"/echo", _} -> text(405, "Method Not Allowed");
                 {_, "GET"} -> get(Path, Query);
                 _ ->
                     case lists:member(Path, ?PAGES) of
                         true -> text(405, "Method Not Allowed");
                         false -> text(404, "Not Found")
                     end
             end,
    {proceed, [{response, Answer}]}.

get("/", _) ->
    text(200, "Hello, World!");
get("/json", _) ->
    reply(200, "application/json", json_object("message", "Hello, World!"));
get("/file", _) ->
    {ok, Bytes} = sb_contract:read_hello(),
    reply(200, "text/html", Bytes);
get("/delay", Query) ->
    case sb_contract:delay_params(query(Query)) of
        bad -> text(400, "Bad Request");
        {Ms, Bytes} ->
            timer:sleep(Ms),   % only this connection's process waits
            text(200, sb_contract:xs(Bytes))
    end;
get("/tenth", Query) ->
    case sb_contract:tenth_params(query(Query)) of
        bad -> text(400, "Bad Request");
        Ms ->
            N = sb_contract:next_tenth(),
            N rem 10 =:= 0 andalso timer:sleep(Ms),
            text(200, integer_to_list(N))
    end;
get("/compress", Query) ->
    %% gzipped in this connection's process (sb_contract:compress/1, Erlang's zlib)
    case sb_contract:compress(query(Query)) of
        bad -> text(400, "Bad Request");
        {ok, Gzip} -> reply(200, "application/json", [{content_encoding, "gzip"}], Gzip)
    end;
get("/db", _) ->
    db(fun() -> json(world_json(sb_db:world())) end);
get("/queries", Query) ->
    db(fun() -> json(json_array(sb_db:worlds(sb_db:queries(query(Query))))) end);
get("/updates", Query) ->
    db(fun() -> json(json_array(sb_db:update(sb_db:queries(query(Query))))) end);
get("/fortunes", _) ->
    db(fun() -> reply(200, "text/html; charset=utf-8", sb_db:fortunes_page(fun html_escape/1)) end);
get(_, _) ->
    text(404, "Not Found").

%% The database paths (../_shared/erlang-db): 503 without $DATABASE_URL. httpd's own
%% Server header goes with every response.
db(Serve) ->
    case sb_db:configured() of
        true -> Serve();
        false -> text(503, "no database configured (DATABASE_URL is not set)")
    end.

json(Body) -> reply(200, "application/json", Body).

%% World rows hold two integers: nothing to escape.
world_json({Id, Rn}) ->
    ["{\"id\":", integer_to_binary(Id), ",\"randomNumber\":", integer_to_binary(Rn), "}"].

json_array(Worlds) ->
    [$[, lists:join($,, [world_json(W) || W <- Worlds]), $]].

%% inets has no HTML escaping of its own: the five characters, byte by byte (UTF-8's
%% multi-byte sequences never hold an ASCII byte).
html_escape(Bin) -> [html_char(C) || <<C>> <= Bin].

html_char($&) -> "&amp;";
html_char($<) -> "&lt;";
html_char($>) -> "&gt;";
html_char($") -> "&quot;";
html_char($') -> "&#39;";
html_char(C) -> C.

%% POST /echo: httpd has read the whole body (a list of bytes), by Content-Length
%% or chunked framing.
echo(#mod{entity_body = Body}) ->
    Bin = iolist_to_binary(Body),
    case byte_size(Bin) > sb_contract:max_body() of
        true -> text(413, "Content Too Large");
        false -> reply(200, "application/octet-stream", Bin)
    end.

query(Query) ->
    case uri_string:dissect_query(Query) of
        Pairs when is_list(Pairs) -> Pairs;
        {error, _, _} -> [{"ms", bad}]   % undecodable: treated as a malformed parameter
    end.

%% OTP 25's standard library has no JSON encoder (json arrived in OTP 27): one
%% object of string fields, escaped here per RFC 8259.
json_object(Key, Value) ->
    [${, json_string(Key), $:, json_string(Value), $}].

json_string(S) ->
    [$", [escape(C) || C <- S], $"].

escape($") -> "\\\"";
escape($\\) -> "\\\\";
escape(C) when C < 16#20 -> io_lib:format("\\u~4.16.0b", [C]);
escape(C) -> C.

text(Code, Body) ->
    reply(Code, "text/plain", Body).

reply(Code, Type, Body) ->
    reply(Code, Type, [], Body).

reply(Code, Type, Headers, Body) ->
    Bin = iolist_to_binary(Body),
    {response, [{code, Code}, {content_type, Type}, {content_length, integer_to_list(byte_size(Bin))} | Headers],
     Bin}.
