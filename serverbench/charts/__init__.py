"""Plotly figures of a run report, one function per chart, drawn from aggregated groups.

figures.py      throughput, latency, CPU, errors, capacity charts and the shared styles
timecharts.py   behaviour over time: one small-multiple row per server
cost_charts.py  the cost-of-ownership section's charts

May import: results (and its formatting), cost, overtime. Hands out figures to exporters, which place
them on the page beside a table of the exact figures.
"""
