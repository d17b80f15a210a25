"""The pure rules both sides read: measuring applies them, reporting reads what they produced from the
stored cells. Nothing here starts a process, opens a socket or reads a file.

warmup.py       warm-up to steady state: the rule, the one-second rounds that apply it, their figures
cores.py        the cores sweep: the core counts, a sweep point's expansion, its figures and warnings
shards.py       the exact merge of N shards' loadgen reports (counts, histograms, timelines, noise)
fingerprint.py  a stored fingerprint's normal form, the words for how its CPUs were split, when two runs compare
tools.py        the load tools a cross-check can drive, and the rate of the server's own count
tlsfigures.py   a TLS point's figures from loadgen's `tls` object, and the handshake figures a report reads
saturation.py   the client-bound rule, once: a client at 90 % of the cores it could use limited the figures
fairness.py     connection fairness: the merge of shards' per-slot figures and the *unfair* rule
admission.py    what each verify check protects and what a row's verdict lets it run
needs.py        what a measuring command needs stored (one run per workload), and which stored run meets it
agreement.py    when a row's repetitions agree on a verdict: all the same, else *split* with the counts
machine_speed.py  whether the machine's speed moved during a run (the cells' probes), and the steal warning

May import: paths, model (a workload point is read through a Protocol: rules/ is below catalog/).
Hands out the warm-up rule, the sweep, the merge, the fingerprint's normal form, the tool table, the TLS figures,
the client-bound rule, the fairness rule and admission to verify, run, cluster, crosscheck (which apply them) and
results, exporters (which read them); the repetitions' agreement to overtime and results (the overload and noisy
verdicts) and seeds (a claim on a split row is not settled); the machine's speed and steal to results.
"""
