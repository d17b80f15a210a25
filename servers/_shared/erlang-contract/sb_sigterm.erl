%% SIGTERM → exit now. The VM's own handler runs init:stop(), an orderly shutdown
%% of every application that took 1.3–2.9 s here on a loaded machine, against
%% SPEC.md's 5 s; these rows hold no state worth shutting down in order.
-module(sb_sigterm).
-behaviour(gen_event).
-export([install/0, init/1, handle_event/2, handle_call/2]).

%% Replaces the VM's default signal handler with this one.
-spec install() -> ok.
install() ->
    ok = gen_event:swap_handler(erl_signal_server, {erl_signal_handler, []}, {?MODULE, []}).

init(_) -> {ok, nostate}.

handle_event(sigterm, State) ->
    erlang:halt(0),
    {ok, State};
handle_event(_Signal, State) ->
    {ok, State}.

handle_call(_Request, State) -> {ok, ok, State}.
