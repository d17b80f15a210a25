%% The database endpoints' work for the Erlang rows (SPEC.md, "Database endpoints"),
%% written once: p1_pgsql (Debian's erlang-p1-pgsql, the driver of ejabberd) behind a
%% poolboy pool (Debian's erlang-poolboy) of $DB_POOL connections opened at start-up,
%% each with its three statements prepared. A request checks one connection out for
%% all of its queries and waits for each answer before sending the next (p1_pgsql
%% sends one query at a time); only the request's own process waits. Each row turns
%% the rows into JSON with its own encoder and escapes the fortunes with its own
%% HTML escaping; the HTTP side stays in the row.
-module(sb_db).
-export([start/1, configured/0, queries/1, world/0, worlds/1, update/1, fortunes_page/1]).
-export([start_link/1]).   % poolboy's worker_module callback

-define(POOL, sb_db_pool).
-define(ON, {?MODULE, configured}).
-define(WORLD_ROWS, 10000).
-define(MAX_QUERIES, 500).
%% Named prepared statements (p1_pgsql's prepare/3 and execute/3), one set per connection.
-define(STATEMENTS, [{"world", "SELECT id, randomNumber FROM World WHERE id = $1"},
                     {"update", "UPDATE World SET randomNumber = $1 WHERE id = $2"},
                     {"fortune", "SELECT id, message FROM Fortune"}]).

-type world() :: {pos_integer(), pos_integer()}.

%% With $DATABASE_URL set: the pool of $DB_POOL connections, opened now (the harness
%% starts the database first). Without it the database paths answer 503 (configured/0).
%% A missing or bad setting, or a database that cannot be reached, ends the VM with one line.
-spec start(string()) -> ok.
start(Name) ->
    case os:getenv("DATABASE_URL", "") of
        "" -> persistent_term:put(?ON, false);
        _ -> open_pool(Name, pool_size(Name))
    end.

open_pool(Name, Size) ->
    %% p1_pgsql answers PostgreSQL's SCRAM authentication through p1_stringprep's NIF,
    %% which its application loads; p1_pgsql's .app does not list it, so it is started here.
    {ok, _} = application:ensure_all_started(stringprep),
    Conn = [{host, env("DB_HOST")}, {port, list_to_integer(env("DB_PORT"))},
            {database, env("DB_NAME")}, {user, env("DB_USER")}, {password, env("DB_PASSWORD")},
            {as_binary, true}],
    %% Not linked to this start-up process, which ends once the row listens.
    %% max_overflow 0: never more than $DB_POOL connections; poolboy's own defaults
    %% otherwise (a request waits up to 5 s for a free connection).
    PoolArgs = [{name, {local, ?POOL}}, {worker_module, ?MODULE}, {size, Size}, {max_overflow, 0}],
    case poolboy:start(PoolArgs, Conn) of
        {ok, _} -> persistent_term:put(?ON, true);
        {error, Why} -> fail(Name, "cannot open the database pool (~p); check DATABASE_URL and DB_*", [Why])
    end.

%% poolboy's worker: one p1_pgsql connection process, its statements prepared. poolboy
%% replaces a connection that dies with a new one made here.
-spec start_link(list()) -> {ok, pid()} | {error, term()}.
start_link(Conn) ->
    case pgsql_proto:start_link(Conn) of
        {ok, Db} ->
            lists:foreach(fun({Name, Sql}) -> {ok, _, _, _} = pgsql:prepare(Db, Name, Sql) end, ?STATEMENTS),
            {ok, Db};
        Error -> Error
    end.

pool_size(Name) ->
    case catch list_to_integer(os:getenv("DB_POOL", "")) of
        N when is_integer(N), N >= 1 -> N;
        _ -> fail(Name, "DB_POOL=~p is not a positive integer; set it to the most connections this process may open",
                  [os:getenv("DB_POOL", "")])
    end.

%% Whether there is a database to query (else the database paths answer 503).
-spec configured() -> boolean().
configured() -> persistent_term:get(?ON, false).

%% ?queries=N from the parsed query string: an integer clamped to 1..500; missing,
%% empty, 0, negative or not a number is 1.
-spec queries([{string(), string()}]) -> 1..?MAX_QUERIES.
queries(Query) ->
    case catch list_to_integer(proplists:get_value("queries", Query, "")) of
        N when is_integer(N), N > ?MAX_QUERIES -> ?MAX_QUERIES;
        N when is_integer(N), N >= 1 -> N;
        _ -> 1
    end.

%% /db: one random World row, read with its own SELECT.
-spec world() -> world().
world() -> poolboy:transaction(?POOL, fun select/1).

%% /queries: N random World rows, each read with its own SELECT.
-spec worlds(pos_integer()) -> [world()].
worlds(N) -> poolboy:transaction(?POOL, fun(Db) -> [select(Db) || _ <- lists:seq(1, N)] end).

%% /updates: N random rows, each read with its own SELECT, then each new random value
%% written back with its own UPDATE (autocommit: one statement per transaction, so
%% concurrent requests cannot deadlock); the new values.
-spec update(pos_integer()) -> [world()].
update(N) ->
    poolboy:transaction(?POOL, fun(Db) ->
        New = [{Id, random_id()} || {Id, _} <- [select(Db) || _ <- lists:seq(1, N)]],
        [{ok, {'UPDATE', 1}} = pgsql:execute(Db, "update", [Rn, Id]) || {Id, Rn} <- New],
        New
    end).

%% /fortunes: every Fortune row plus the request-time one, sorted by message (UTF-8
%% bytes: code point order), rendered with Escape, the row's HTML escaping of a binary.
-spec fortunes_page(fun((binary()) -> iodata())) -> iodata().
fortunes_page(Escape) ->
    {ok, {_, Rows}} = poolboy:transaction(?POOL, fun(Db) -> pgsql:execute(Db, "fortune", []) end),
    Added = {0, <<"Additional fortune added at request time.">>},
    Fortunes = lists:keysort(2, [Added | [{int(Id), Msg} || [Id, {_, Msg}] <- Rows]]),
    ["<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>",
     "<tr><th>id</th><th>message</th></tr>",
     [["<tr><td>", integer_to_binary(Id), "</td><td>", Escape(Msg), "</td></tr>"] || {Id, Msg} <- Fortunes],
     "</table></body></html>"].

select(Db) ->
    {ok, {_, [[Id, Rn]]}} = pgsql:execute(Db, "world", [random_id()]),
    {int(Id), int(Rn)}.

%% p1_pgsql hands an int4 column over as {int4, <<"digits">>}.
int({int4, Digits}) -> binary_to_integer(Digits).

random_id() -> rand:uniform(?WORLD_ROWS).

env(Var) -> os:getenv(Var, "").

fail(Name, Format, Args) ->
    io:format(standard_error, "~s: " ++ Format ++ "~n", [Name | Args]),
    erlang:halt(2).
