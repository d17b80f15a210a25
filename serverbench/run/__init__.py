"""Measuring: servers × workloads × repetitions → stored cells. The only stage that loads a server.

runner.py       the matrix: verdict gates, server starts, warm-up, points, resume, one cell per rep
warmup.py       warm-up to steady state: the rule, the one-second rounds, their figures
capacity.py     capacity points: step the rate up, bisect the bracket
cores.py        the cores sweep: points per server CPU count, and its figures and warnings
split.py        `--split auto`: the server/client CPU split from a short calibration
fingerprint.py  the environment a run was measured in, stored with it
lifecycle.py    a stored run's life: finished, interrupted or failed
events.py       what the runner reports while it measures (the CLI renders it)

May import: paths, model, store, catalog, processes, verify, overtime, cluster.
Hands out `run_matrix` and `MatrixResult` to the CLI; results reads warmup's, cores' and
fingerprint's figures of stored cells.
"""
