"""The published studies serverbench reproduces, as data, and their tables and claims set beside stored runs.

studies.py   the seeds/*.toml files (one per study: source, hardware, versions, method, its table,
             its own caveats, each published row's serverbench rows or its servers/_left_out.toml
             entry, its claims with their rules): pydantic models and the loader, which refuses a
             broken file with one line naming the file, the field and the fix
compare.py   per study and compared column: the rows both tables have, the pairs that keep their
             order and those that flip, Kendall's tau, and each flip's cause chosen only from what
             the study published or this run stored (else "unexplained")
claims.py    each claim answered yes / no / partly / not measured from stored figures only: the
             rows' overload verdicts (with "out of memory" from the stored memory limit) or a ratio
             of a figure between rows, with the evidence per row or pair; not settled where a row's
             repetitions disagree (a split verdict), with what would settle it
section.py   the "The published studies, re-measured" section as Markdown lines and HTML, which
             `serverbench seeds` and the Markdown and HTML reports show: tables, claims, the rows
             not built here with servers/_left_out.toml's reason
plan.py      what re-measuring the studies needs: per workload, the rows, repetitions and memory ceiling
reading.py   what the section reads (`Read`): one run whole, or one run per workload, each text naming the run it read
runs.py      the stored runs the section reads when no single run is named

May import: paths, catalog (left_out), overtime (overload's verdicts), rules (fingerprint, agreement),
results (the aggregation's RunResults, its formatting); it reads stored results only and never measures.
"""
