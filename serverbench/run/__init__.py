"""Measuring: servers × workloads × repetitions → stored cells. The only stage that loads a server.

measure.py      the measuring core every path shares (runner, cross-check, `--split auto`): the sampling
                interval, the admission gate, the repetition order, the warm-up, a server sampled while
                a load runs, the CellMetrics records of what was measured
runner.py       the matrix: server starts, points, resume, one cell per rep, through measure.py
fixed_rate.py   the fixed-rate step: a client-bound block or a tie at the top measured again at one common rate
capacity.py     capacity points: step the rate up, bisect the bracket
database_run.py the run's PostgreSQL: started once for the db workloads, a db row's environment, its CPU
                sampled beside the server's, a cell's database figures
tls_run.py      the TLS workloads: which rows may run them, the run's certificates (made once), a start per
                key type with its `$TLS_*` and CA
split.py        `--split auto`: the server/client CPU split from a short calibration
fingerprint.py  the environment a run was measured in, stored with it
lifecycle.py    a stored run's life: finished, interrupted or failed
events.py       what the runner reports while it measures (the CLI renders it)

May import: paths, model, store, catalog, rules, processes, database, verify, overtime, cluster, tls.
Hands out `run_matrix` and `MatrixResult` to the CLI, measure.py's core to crosscheck; results reads rules/, not run/.
"""
