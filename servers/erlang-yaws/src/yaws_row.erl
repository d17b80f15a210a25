%% erlang-yaws: Yaws in embedded mode, one appmod (out/1) mounted at "/" for
%% every request. Yaws accepts with a pool of acceptors and serves each
%% connection in its own Erlang process; it parses requests, reads bodies
%% (Content-Length or chunked), keeps connections alive and writes the Date.
-module(yaws_row).
-export([main/0, out/1]).

-include("yaws_api.hrl").

-define(NAME, "erlang-yaws").
-define(PAGES, ["/", "/json", "/file", "/delay", "/tenth", "/db", "/queries", "/fortunes", "/updates", "/compress"]).

main() ->
    {Ip, Port} = sb_contract:settings(?NAME),
    sb_db:start(?NAME),
    %% Yaws wants a log directory, but with its three logs off it writes nothing there:
    %% access_log (one line per request; SPEC: no per-request logging) and auth_log (a
    %% <servername>:<port>.auth file per start, a new one for every port) are per-server
    %% flags, copy_error_log (report.log) a global one; errors still reach the console.
    LogDir = os:getenv("TMPDIR", "/tmp"),
    Server = [{servername, "localhost"}, {listen, Ip}, {port, Port},
              {appmods, [{"/", ?MODULE}]},
              {flags, [{access_log, false}, {auth_log, false}]},
              {partial_post_size, nolimit}]     % hand out/1 the whole body (10 KiB by default)
             ++ ssl_conf(sb_contract:tls(?NAME)),
    Global = [{logdir, LogDir}, {flags, [{copy_error_log, false}]}, {max_connections, nolimit}],
    sb_contract:start(?NAME, "Yaws embedded, an appmod, a process per connection",
                      fun() -> started(yaws:start_embedded(".", Server, Global, ?NAME)) end).

%% With $TLS_CERT/$TLS_KEY: the server's ssl settings (Yaws's #ssl{} record from this list,
%% its other fields at Yaws's defaults), on OTP's ssl.
ssl_conf(plaintext) -> [];
ssl_conf(TlsFiles) -> [{ssl, TlsFiles}].

started(ok) -> ok;
started({error, _} = Error) -> Error;
started(Other) -> {error, Other}.

%% The appmod: every request on every path comes here.
out(A) ->
    close_if_asked(A, route(A)).

%% Yaws closes a connection after the response only when the request's Connection
%% value is exactly "close" (yaws:dcc/2 compares the string), so "Connection: CLOSE"
%% or "Connection: Close" kept the connection open until the client gave up. The
%% token is case-insensitive (RFC 9110 §7.6.1): where Yaws missed it, out/1 asks for
%% the close with {header, {connection, "close"}}, Yaws's documented reply for it.
close_if_asked(_, {get_more, _, _} = More) -> More;   % the body is still coming
close_if_asked(A, Reply) ->
    case (A#arg.headers)#headers.connection of
        undefined -> Reply;
        "close" -> Reply;   % Yaws closes by itself
        Value ->
            Tokens = [string:trim(T) || T <- string:split(string:lowercase(Value), ",", all)],
            case lists:member("close", Tokens) of
                true -> Reply ++ [{header, {connection, "close"}}];
                false -> Reply
            end
    end.

route(A) ->
    Req = A#arg.req,
    case {A#arg.server_path, Req#http_request.method} of
        {"/echo", 'POST'} -> echo(A);
        {"/echo", _} -> text(405, "Method Not Allowed");
        {Path, 'GET'} -> get(Path, A);
        {Path, _} ->
            case lists:member(Path, ?PAGES) of
                true -> text(405, "Method Not Allowed");
                false -> text(404, "Not Found")
            end
    end.

get("/", _) ->
    text(200, "Hello, World!");
get("/json", _) ->
    %% json2 is the JSON module Yaws ships
    [{status, 200}, {content, "application/json", json2:encode({struct, [{"message", "Hello, World!"}]})}];
get("/file", _) ->
    {ok, Bytes} = sb_contract:read_hello(),
    [{status, 200}, {content, "text/html", Bytes}];
get("/delay", A) ->
    case sb_contract:delay_params(yaws_api:parse_query(A)) of
        bad -> text(400, "Bad Request");
        {Ms, Bytes} ->
            timer:sleep(Ms),   % only this connection's process waits
            text(200, sb_contract:xs(Bytes))
    end;
get("/tenth", A) ->
    case sb_contract:tenth_params(yaws_api:parse_query(A)) of
        bad -> text(400, "Bad Request");
        Ms ->
            N = sb_contract:next_tenth(),
            N rem 10 =:= 0 andalso timer:sleep(Ms),
            text(200, integer_to_list(N))
    end;
get("/compress", A) ->
    %% gzipped in this connection's process (sb_contract:compress/1, Erlang's zlib)
    case sb_contract:compress(yaws_api:parse_query(A)) of
        bad -> text(400, "Bad Request");
        {ok, Gzip} ->
            [{status, 200}, {header, {"Content-Encoding", "gzip"}}, {content, "application/json", Gzip}]
    end;
get("/db", _) ->
    db(fun() -> json(world_json(sb_db:world())) end);
get("/queries", A) ->
    db(fun() -> json({array, [world_json(W) || W <- sb_db:worlds(queries(A))]}) end);
get("/updates", A) ->
    db(fun() -> json({array, [world_json(W) || W <- sb_db:update(queries(A))]}) end);
get("/fortunes", _) ->
    %% Yaws's HTML escaping, yaws_api:htmlize/1 (& < > and ").
    db(fun() -> [{status, 200}, {content, "text/html; charset=utf-8",
                                 sb_db:fortunes_page(fun yaws_api:htmlize/1)}] end);
get(_, _) ->
    text(404, "Not Found").

%% The database paths (../_shared/erlang-db): 503 without $DATABASE_URL. Yaws's own
%% Server header goes with every response.
db(Serve) ->
    case sb_db:configured() of
        true -> Serve();
        false -> text(503, "no database configured (DATABASE_URL is not set)")
    end.

queries(A) -> sb_db:queries(yaws_api:parse_query(A)).

world_json({Id, Rn}) -> {struct, [{"id", Id}, {"randomNumber", Rn}]}.

json(Doc) ->
    [{status, 200}, {content, "application/json", json2:encode(Doc)}].

%% POST /echo: with partial_post_size nolimit Yaws hands out/1 a Content-Length
%% body whole; a chunked body comes chunk by chunk as {partial, Bin}, and out/1
%% asks for the rest with {get_more, Cont, State}, the Yaws way to stream a body.
echo(A) ->
    Got = case A#arg.state of undefined -> []; Earlier -> Earlier end,
    Max = sb_contract:max_body(),
    case A#arg.clidata of
        {partial, Bin} ->
            Parts = [Bin | Got],
            case iolist_size(Parts) > Max of
                true -> text(413, "Content Too Large");
                false -> {get_more, A#arg.cont, Parts}
            end;
        Bin ->
            Body = iolist_to_binary(lists:reverse([Bin | Got])),
            case byte_size(Body) > Max of
                true -> text(413, "Content Too Large");
                false -> [{status, 200}, {content, "application/octet-stream", Body}]
            end
    end.

text(Code, Body) ->
    [{status, Code}, {content, "text/plain", Body}].
