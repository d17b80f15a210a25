"""The published studies serverbench reproduces, as data, and their tables set beside a stored run.

studies.py   the seeds/*.toml files (one per study: source, hardware, versions, method, its table,
             its own caveats, each published row's serverbench rows): pydantic models and the loader,
             which refuses a broken file with one line naming the file, the field and the fix
compare.py   per study and compared column: the rows both tables have, the pairs that keep their
             order and those that flip, Kendall's tau, and each flip's cause chosen only from what
             the study published or this run stored (else "unexplained")
section.py   the "The published studies, re-measured" section as Markdown lines and HTML, which
             `serverbench seeds` and the Markdown and HTML reports show

May import: paths, formatting, rules (fingerprint), results (the aggregation's RunResults); it reads
stored results only and never measures.
"""
