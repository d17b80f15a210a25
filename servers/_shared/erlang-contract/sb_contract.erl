%% What SPEC.md fixes for the Erlang rows (erlang-mochiweb, erlang-yaws,
%% erlang-inets), written once: the settings the harness passes, the /delay and
%% /tenth query rules and bodies, the process-wide /tenth counter, the /echo limit,
%% the /compress parameter and gzip, and the bind-failure exit. Serving connections
%% stays in each row.
-module(sb_contract).
-export([settings/1, int_param/4, delay_params/1, tenth_params/1, next_tenth/0,
         xs/1, read_hello/0, compress/1, max_body/0, cannot_listen/2, start/3, tls/1]).

-define(MAX_BODY, 1048576).   % POST /echo limit and the most /delay?bytes= asks for
-define(MAX_MS, 60000).       % /delay and /tenth wait at most this long
-define(TENTH, {?MODULE, tenth}).
-define(HELLO, {?MODULE, hello_file}).
-define(COMPRESS, {?MODULE, compress_doc}).
-define(MAX_KB, 4096).        % /compress?kb= at most 4 MiB

-type query() :: [{string(), string()}].

%% {Ip, Port} from $HOST and $PORT; also creates the /tenth counter,
%% remembers $HELLO_FILE and reads $COMPRESS_FILE (once). Call once at start-up.
-spec settings(string()) -> {inet:ip_address(), inet:port_number()}.
settings(Name) ->
    Host = env("HOST", "127.0.0.1"),
    Port = list_to_integer(env("PORT", "8080")),
    persistent_term:put(?TENTH, counters:new(1, [atomics])),
    persistent_term:put(?HELLO, env("HELLO_FILE", "../../assets/hello.html")),
    read_compress_file(env("COMPRESS_FILE", "")),
    case inet:parse_address(Host) of
        {ok, Ip} -> {Ip, Port};
        {error, _} -> cannot_listen(Name, {bad_host, Host})
    end.

-spec max_body() -> pos_integer().
max_body() -> ?MAX_BODY.

%% Value of query parameter Key in [0, Max]; Default if absent; bad if malformed.
-spec int_param(query(), string(), non_neg_integer(), non_neg_integer()) -> non_neg_integer() | bad.
int_param(Query, Key, Max, Default) ->
    case proplists:get_all_values(Key, Query) of
        [] -> Default;
        Values -> lists:foldl(fun(V, Acc) -> checked(V, Max, Acc) end, Default, Values)
    end.

checked(_, _, bad) -> bad;
checked(V, Max, _) ->
    Digits = is_list(V) andalso V =/= "" andalso length(V) =< 9 andalso lists:all(fun(C) -> C >= $0 andalso C =< $9 end, V),
    case Digits andalso list_to_integer(V) of
        false -> bad;
        N when N =< Max -> N;
        _ -> bad
    end.

%% /delay?ms=N&bytes=B: {Ms, Bytes}, or bad (answer 400).
-spec delay_params(query()) -> {non_neg_integer(), non_neg_integer()} | bad.
delay_params(Query) ->
    case {int_param(Query, "ms", ?MAX_MS, 0), int_param(Query, "bytes", ?MAX_BODY, 0)} of
        {bad, _} -> bad;
        {_, bad} -> bad;
        Params -> Params
    end.

%% /tenth?ms=N: the wait (default 2000 ms), or bad.
-spec tenth_params(query()) -> non_neg_integer() | bad.
tenth_params(Query) -> int_param(Query, "ms", ?MAX_MS, 2000).

%% The next /tenth value, from one atomic counter shared by the whole VM.
-spec next_tenth() -> pos_integer().
next_tenth() ->
    Ref = persistent_term:get(?TENTH),
    counters:add(Ref, 1, 1),
    counters:get(Ref, 1).

%% B bytes of "x": a sub-binary of one shared 1 MiB binary, never copied.
-spec xs(non_neg_integer()) -> binary().
xs(Bytes) ->
    All = case persistent_term:get({?MODULE, xs}, undefined) of
              undefined ->
                  B = binary:copy(<<"x">>, ?MAX_BODY),
                  persistent_term:put({?MODULE, xs}, B),
                  B;
              B -> B
          end,
    binary:part(All, 0, Bytes).

%% The bytes of $HELLO_FILE, read from disk on every call.
-spec read_hello() -> {ok, binary()} | {error, term()}.
read_hello() -> file:read_file(persistent_term:get(?HELLO)).

%% The document /compress serves, read once at start: a refc binary, so the
%% persistent term holds a reference and binary:part/3 below copies nothing.
read_compress_file("") -> ok;
read_compress_file(Path) ->
    {ok, Doc} = file:read_file(Path),
    persistent_term:put(?COMPRESS, Doc).

%% /compress?kb=N (1..4096): {ok, Gzip} of the first N KiB of $COMPRESS_FILE, or bad
%% (answer 400). Compressed on every call, in the calling process (the request's own:
%% the BEAM gives each connection a process), with Erlang's zlib module: zlib:gzip/1 is
%% deflateInit(Z, default, deflated, 16+15, 8, default), and zlib's default level is 6
%% (Z_DEFAULT_COMPRESSION; the output is byte-identical to deflateInit with level 6).
%% Since OTP 20 zlib is a NIF fed 8 KiB of input per call from an Erlang loop
%% (zlib.erl's dequeue_all_chunks), so the process is preempted between chunks like any
%% other and needs no dirty scheduler or helper process.
-spec compress([{string(), string()}]) -> {ok, binary()} | bad.
compress(Query) ->
    case int_param(Query, "kb", ?MAX_KB, 0) of
        bad -> bad;
        0 -> bad;   % kb=0, or no kb at all
        Kb -> {ok, zlib:gzip(binary:part(persistent_term:get(?COMPRESS), 0, Kb * 1024))}
    end.

%% Bind failure: a message on stderr and a non-zero exit (SPEC.md, Process).
-spec cannot_listen(string(), term()) -> no_return().
cannot_listen(Name, Why) ->
    io:format(standard_error, "~s: cannot listen: ~p~n", [Name, Why]),
    erlang:halt(1).

-spec listening(string(), string()) -> ok.
listening(Name, How) ->
    {Ip, Port} = {env("HOST", "127.0.0.1"), env("PORT", "8080")},
    io:format("~s listening on ~s:~s (~s, ~b schedulers)~n",
              [Name, Ip, Port, How, erlang:system_info(schedulers_online)]).

%% Runs Start() in a process that then stays alive (it owns the listener) and
%% returns, so that `erl -s Mod main` finishes booting and the VM's SIGTERM
%% handler (init:stop) is not held up by a start-up function that never returns.
%% Start() returns ok or {error, Why}; an error exits like a bind failure.
-spec start(string(), string(), fun(() -> ok | {error, term()})) -> ok.
start(Name, How, Start) ->
    sb_sigterm:install(),
    Parent = self(),
    Holder = spawn(fun() -> Parent ! {self(), Start()}, receive after infinity -> ok end end),
    receive
        {Holder, ok} -> listening(Name, How);
        {Holder, {error, Why}} -> cannot_listen(Name, Why)
    end.

%% SPEC "TLS": with $TLS_CERT (PEM certificate) and $TLS_KEY (its PEM key) set, the row
%% serves the same endpoints over TLS instead of plaintext, on OTP's own ssl application with
%% its defaults (OTP 25: TLS 1.2 and 1.3 only, no ALPN unless asked). Returns the two files
%% as ssl options, with ssl started, or plaintext. One variable alone or a file that cannot
%% be read ends the VM with one line, before anything listens.
-spec tls(string()) -> plaintext | [{certfile | keyfile, string()}].
tls(Name) ->
    case {env("TLS_CERT", ""), env("TLS_KEY", "")} of
        {"", ""} -> plaintext;
        {"", _} -> tls_exit(Name, "TLS_KEY is set but TLS_CERT is not", []);
        {_, ""} -> tls_exit(Name, "TLS_CERT is set but TLS_KEY is not", []);
        {Cert, Key} ->
            readable(Name, "TLS_CERT", Cert),
            readable(Name, "TLS_KEY", Key),
            {ok, _} = application:ensure_all_started(ssl),
            [{certfile, Cert}, {keyfile, Key}]
    end.

readable(Name, Var, Path) ->
    case file:read_file_info(Path) of
        {ok, _} -> ok;
        {error, Why} -> tls_exit(Name, "cannot read ~s ~s (~s)", [Var, Path, file:format_error(Why)])
    end.

tls_exit(Name, Format, Args) ->
    io:format(standard_error, "~s: " ++ Format ++ "; set TLS_CERT and TLS_KEY to a PEM certificate and its key, or neither~n",
              [Name | Args]),
    erlang:halt(1).

env(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        "" -> Default;
        V -> V
    end.
