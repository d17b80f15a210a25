"""The processes a measurement starts, watches and stops, each by PID: a server under test, the
load generator, the sampler that reads their CPU and memory.

server.py      the `Server` protocol every kind of server under test implements, with its sampler
supervisor.py  start a row's server pinned to its CPUs, wait for readiness (over TLS with the run's CA
               for a TLS start), stop its process group
sampler.py     psutil sampling of a process tree: totals, a per-second series, its death
memlimit.py    a memory ceiling for a server's tree (cgroup v2, else an RSS watchdog)
loadgen.py     loadgen's command line (built here only), run pinned to the client CPUs, its JSON validated
               (a TLS point's `tls` object into rules/tlsfigures.py's figures)
target.py      `--target URL`: a server the harness did not start (no sampler, no CPU figures)
idle.py        waiting for a server's tree (and the database's) to go quiet before an open-load window
speed.py       the machine's own speed: a short CPU probe in a thread pinned to given CPUs, and their steal

May import: paths, model, catalog, rules (the TLS figures, the client-bound rule). Hands out `Server`, `run_server`, `Sampler`,
`run_loadgen`, `command_line` to verify, cluster, run, crosscheck and cost; `speed.probe`,
`speed.cpu_times` to run (the measuring core).
"""
