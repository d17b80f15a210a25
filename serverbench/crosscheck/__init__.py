"""`serverbench crosscheck`: one workload through established load tools and loadgen, each compared
with what the server counted (docs/DESIGN.md, "Cross-check"). Modules, in dependency order:
tools (which tools, where, which version, how installed) → translate (workload point → a tool's
command line or script) → parsers (a tool's own output → figures) → servercount (the /tenth counter)
→ execute (a tool run pinned, bounded, with its rusage) → session (servers × tools → stored cells).
The comparison itself is judged in results/aggregate_tools.py, read by every output.
May import: paths, model, store, catalog, processes, run (the verdict gate, the run's life).
Hands out `run_crosscheck` to the CLI and the tool table to results."""
