%% beamcore's scheduler micro-benchmarks (apps/bench/sched.rs) written for Erlang/OTP, run by
%% scripts/peers.py as `erl -noshell +S 1:1 ... -run peers main <bench> <n>`: one scheduler,
%% n rounds of one benchmark, then halt. The script counts the whole run's instructions at two
%% values of n and takes the difference, so start-up and halt cancel out.
%%   yield      two processes each call erlang:yield() n times (2n yields)
%%   hop        a pinger and an echo process exchange n round trips of a small integer (2n hops)
%%   spawn_exit n times: spawn_monitor a process that returns at once, receive its 'DOWN' (n)
-module(peers).
-export([main/1]).

main([Bench, Rounds]) ->
    N = list_to_integer(Rounds),
    run(list_to_atom(Bench), N),
    % Written straight to stderr by the emulator: scripts/peers.py checks that the rounds ran.
    erlang:display(peers_done),
    halt(0, [{flush, false}]).

run(yield, N) ->
    Parent = self(),
    Yielder = fun() -> yield_loop(N), Parent ! done end,
    spawn(Yielder),
    spawn(Yielder),
    receive done -> ok end,
    receive done -> ok end;
run(hop, N) ->
    Parent = self(),
    Echo = spawn(fun() -> receive Pinger -> echo_loop(Pinger, N) end end),
    Pinger = spawn(fun() -> ping_loop(Echo, N), Parent ! done end),
    Echo ! Pinger,
    receive done -> ok end;
run(spawn_exit, N) ->
    spawn_loop(N).

yield_loop(0) -> ok;
yield_loop(N) -> erlang:yield(), yield_loop(N - 1).

echo_loop(_Pinger, 0) -> ok;
echo_loop(Pinger, N) ->
    receive Word -> Pinger ! Word end,
    echo_loop(Pinger, N - 1).

ping_loop(_Echo, 0) -> ok;
ping_loop(Echo, N) ->
    Echo ! N,
    receive _ -> ok end,
    ping_loop(Echo, N - 1).

spawn_loop(0) -> ok;
spawn_loop(N) ->
    {Pid, Ref} = spawn_monitor(fun() -> ok end),
    receive {'DOWN', Ref, process, Pid, _} -> ok end,
    spawn_loop(N - 1).
