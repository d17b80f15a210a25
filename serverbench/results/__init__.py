"""THE aggregation: a stored run's cells → groups of repetitions, their figures, warnings, order
and verdicts. Every output (console, HTML, Markdown, CSV, JSON, compare) reads what this hands
out and recomputes nothing.

aggregate.py        `load(store, run_id) -> (RunRow, RunResults)`: groups, points, workloads
group_figures.py    `GroupFigures`, the figures of one group by concern, shown flat (a CSV row, a JSON object)
group_warnings.py   the warnings of one group ("warnings are data")
ranking.py          the order of a point's groups and the "at a glance" verdict, by kind
stats.py            summary figures, the median's interval, noise and outlier rules, `judge`
outliers.py         the CPU outlier rule across a runtime family
aggregate_tools.py  cross-check cells: each tool's rate against the server's count
noisy.py            the noisy workload's verdicts: each noise point against its quiet twin
compare.py          two runs' groups as ratios judged against the noise
pick_runs.py        which stored run stands for a workload when none is named (most rows, newest among equals)
profile_columns.py  the profile table's columns as data: each kind of work and the point that stands for it
profile.py          the profile table across kinds of work, gathered from the store's runs on this machine and commit
model_notes.py      what each concurrency model predicts (data for the reports)
formatting.py       number formatting shared by the console and the human-readable exporters

May import: paths, model, store, catalog, rules (warm-up, cores, merge, fingerprint, tool table,
client-bound, fairness, admission),
overtime; never verify or the measuring folders (run, processes, cluster, crosscheck): a
report reads what was stored and the pure rules only.
"""
