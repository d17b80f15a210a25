"""Behaviour over time (workload kinds `overload` and `soak`): a cell's seconds and their verdicts.

timeline.py  one cell's loadgen seconds and server seconds on one axis
overload.py  the peak and the overload verdict of one cell, the rules as data
soak.py      the steadiness of one cell (worst one-second p99, spread)
figures.py   a group's over-time figures across its repetitions (part of the one aggregation): the
             verdict all repetitions gave, or split with the counts (rules/agreement.py)

May import: model, rules (the repetitions' agreement). Hands out verdicts and per-second figures to run (stored per cell),
results (aggregated), charts and exporters (drawn and explained).
"""
