"""Cost of ownership (`serverbench profile`): what a row costs besides its requests per second.

artifact.py      what must be shipped to run a built row, and the runtime it needs
build_cost.py    cold build (fresh caches) and warm build times
code_lines.py    source lines of a row and its shared code (pygount)
dependencies.py  direct third-party dependencies from the row's manifest
idle_clients.py  a child process holding idle keep-alive connections open
idle_cost.py     start-up time, idle RSS, RSS per held connection
profiler.py      every step per row, each profile stored
table.py         a run's cost rows: the latest profiles beside the run's own throughput

May import: paths, model, store, catalog, processes, results. Hands out `profile_servers` to the
CLI and `cost_rows`/`table` to charts and exporters.
"""
