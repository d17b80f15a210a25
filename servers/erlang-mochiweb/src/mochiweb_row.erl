%% erlang-mochiweb: MochiWeb's HTTP server on the BEAM. MochiWeb accepts with a
%% pool of acceptor processes; each accepted connection is served by its own
%% Erlang process running loop/1 for every request on it. MochiWeb parses the
%% request, decodes chunked bodies, keeps connections alive and adds a Date header
%% (mochiweb_clock caches it, updated once a second).
-module(mochiweb_row).
-export([main/0, loop/1]).

-define(NAME, "erlang-mochiweb").
-define(TEXT, "text/plain").

main() ->
    {Ip, Port} = sb_contract:settings(?NAME),
    sb_db:start(?NAME),
    Options = [{name, ?MODULE}, {ip, Ip}, {port, Port}, {loop, fun ?MODULE:loop/1},
               {backlog, 4096},
               %% MochiWeb's default cap is 2048 open connections; SPEC asks for 10,000+.
               {max, 1000000}]
              ++ ssl_options(sb_contract:tls(?NAME)),
    sb_contract:start(?NAME, "mochiweb_http, a process per connection",
                      fun() -> case mochiweb_http:start(Options) of
                                   {ok, _} -> ok;
                                   Error -> Error
                               end
                      end).

%% With $TLS_CERT/$TLS_KEY: MochiWeb's documented TLS options, on OTP's ssl. MochiWeb's own
%% default versions are every one ssl has but SSLv3 (mochiweb_socket:add_safe_protocol_versions,
%% TLS 1.0 and 1.1 included), so the versions are set to 1.2 and 1.3 (SPEC: minimum 1.2).
ssl_options(plaintext) -> [];
ssl_options(TlsFiles) -> [{ssl, true}, {ssl_opts, [{versions, ['tlsv1.3', 'tlsv1.2']} | TlsFiles]}].

%% One request: route by path, then by method.
loop(Req) ->
    Method = mochiweb_request:get(method, Req),
    case {mochiweb_request:get(path, Req), Method} of
        {"/echo", 'POST'} -> echo(Req);
        {"/echo", _} -> text(Req, 405, "Method Not Allowed");
        {Path, 'GET'} -> get(Path, Req);
        {Path, _} ->
            case lists:member(Path, ["/", "/json", "/file", "/delay", "/tenth",
                                     "/db", "/queries", "/fortunes", "/updates", "/compress"]) of
                true -> text(Req, 405, "Method Not Allowed");
                false -> text(Req, 404, "Not Found")
            end
    end.

get("/", Req) ->
    text(Req, 200, "Hello, World!");
get("/json", Req) ->
    Json = mochijson2:encode({struct, [{<<"message">>, <<"Hello, World!">>}]}),
    respond(Req, {200, [{"Content-Type", "application/json"}], Json});
get("/file", Req) ->
    {ok, Bytes} = sb_contract:read_hello(),
    respond(Req, {200, [{"Content-Type", "text/html"}], Bytes});
get("/delay", Req) ->
    case sb_contract:delay_params(mochiweb_request:parse_qs(Req)) of
        bad -> text(Req, 400, "Bad Request");
        {Ms, Bytes} ->
            timer:sleep(Ms),   % only this connection's process waits
            text(Req, 200, sb_contract:xs(Bytes))
    end;
get("/tenth", Req) ->
    case sb_contract:tenth_params(mochiweb_request:parse_qs(Req)) of
        bad -> text(Req, 400, "Bad Request");
        Ms ->
            N = sb_contract:next_tenth(),
            N rem 10 =:= 0 andalso timer:sleep(Ms),
            text(Req, 200, integer_to_list(N))
    end;
get("/compress", Req) ->
    %% gzipped in this connection's process (sb_contract:compress/1, Erlang's zlib)
    case sb_contract:compress(mochiweb_request:parse_qs(Req)) of
        bad -> text(Req, 400, "Bad Request");
        {ok, Gzip} ->
            respond(Req, {200, [{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}], Gzip})
    end;
get("/db", Req) ->
    db(Req, fun() -> json(Req, world_json(sb_db:world())) end);
get("/queries", Req) ->
    db(Req, fun() -> json(Req, [world_json(W) || W <- sb_db:worlds(queries(Req))]) end);
get("/updates", Req) ->
    db(Req, fun() -> json(Req, [world_json(W) || W <- sb_db:update(queries(Req))]) end);
get("/fortunes", Req) ->
    %% MochiWeb's HTML escaping: & < > and " (escape_attr; escape/1 leaves the quote).
    db(Req, fun() -> respond(Req, {200, [{"Content-Type", "text/html; charset=utf-8"}],
                                   sb_db:fortunes_page(fun mochiweb_html:escape_attr/1)}) end);
get(_, Req) ->
    text(Req, 404, "Not Found").

%% The database paths (../_shared/erlang-db): 503 without $DATABASE_URL. MochiWeb's
%% own Server header goes with every response.
db(Req, Serve) ->
    case sb_db:configured() of
        true -> Serve();
        false -> text(Req, 503, "no database configured (DATABASE_URL is not set)")
    end.

queries(Req) -> sb_db:queries(mochiweb_request:parse_qs(Req)).

world_json({Id, Rn}) -> {struct, [{<<"id">>, Id}, {<<"randomNumber">>, Rn}]}.

json(Req, Doc) ->
    respond(Req, {200, [{"Content-Type", "application/json"}], mochijson2:encode(Doc)}).

%% POST /echo: MochiWeb reads the body by Content-Length or chunked framing and
%% exits with body_too_large past the limit. An unread body makes MochiWeb close
%% the connection after the response, so it is never taken for a request.
%% MochiWeb joins repeated headers ("5, 65") and then reads no body at all, which
%% would leave the body to be parsed as the next request: such a Content-Length
%% (or any that is not a number) is refused here, and the connection closed: MochiWeb
%% does not act on a response's "Connection: close", so the process exits, and its
%% socket closes with it.
echo(Req) ->
    Max = sb_contract:max_body(),
    case mochiweb_request:get_header_value("content-length", Req) of
        undefined -> echo_body(Req, Max);
        Declared ->
            case catch list_to_integer(Declared) of
                N when is_integer(N), N > Max -> text(Req, 413, "Content Too Large");
                N when is_integer(N), N >= 0 -> echo_body(Req, Max);
                _ ->
                    mochiweb_request:respond({400, [{"Content-Type", ?TEXT}, {"Connection", "close"}],
                                              "Bad Request"}, Req),
                    exit(normal)
            end
    end.

echo_body(Req, Max) ->
    try mochiweb_request:recv_body(Max, Req) of
        Body ->
            Body1 = case Body of undefined -> <<>>; _ -> Body end,
            respond(Req, {200, [{"Content-Type", "application/octet-stream"}], Body1})
    catch
        exit:{body_too_large, _} -> text(Req, 413, "Content Too Large")
    end.

text(Req, Code, Body) ->
    respond(Req, {Code, [{"Content-Type", ?TEXT}], Body}).

%% MochiWeb keeps an HTTP/1.0 connection open when the request says exactly
%% "Connection: Keep-Alive" (ab -k's spelling; any other spelling is answered with
%% "Connection: close" and closed), but does not say so in the response: it adds only
%% "Connection: close" (mochiweb_request:format_response_header/2 upstream). An
%% HTTP/1.0 client then reads the response as "the server will close" and waits for
%% a close that never comes: ab -k -n 2000 -c 10 never finished. So the response
%% announces the keep-alive MochiWeb has decided on (RFC 9112 §9.3).
respond(Req, {Code, Headers, Body}) ->
    KeptAlive = mochiweb_request:get(version, Req) =:= {1, 0}
        andalso not mochiweb_request:should_close(Req),
    Headers1 = case KeptAlive of
                   true -> [{"Connection", "Keep-Alive"} | Headers];
                   false -> Headers
               end,
    mochiweb_request:respond({Code, Headers1, Body}, Req).
