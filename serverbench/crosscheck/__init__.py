"""`serverbench crosscheck`: one workload through established load tools and loadgen, each compared
with what the server counted (docs/DESIGN.md, "Cross-check"). Modules, in dependency order:
tools (where a tool is, which version; the table of tools is rules/tools.py) → translate (workload point → a tool's
command line or script) → parsers (a tool's own output → figures) → servercount (the /tenth counter)
→ execute (a tool run pinned, bounded, with its rusage) → session (servers × tools → stored cells).
The comparison itself is judged in results/aggregate_tools.py, read by every output.
Every measurement goes through run/measure.py (the gate, the repetition order, the warm-up, the
sampling, the client-bound rule), as a run's does; nothing here imports run/runner.py.
May import: paths, model, store, catalog, rules, processes, run (the measuring core, the run's life).
Hands out `run_crosscheck` to the CLI."""
