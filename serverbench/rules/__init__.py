"""The pure rules both sides read: measuring applies them, reporting reads what they produced from the
stored cells. Nothing here starts a process, opens a socket or reads a file.

warmup.py       warm-up to steady state: the rule, the one-second rounds that apply it, their figures
cores.py        the cores sweep: the core counts, a sweep point's expansion, its figures and warnings
shards.py       the exact merge of N shards' loadgen reports (counts, histograms, timelines, noise)
fingerprint.py  a stored fingerprint's normal form, and the words for how its CPUs were split
tools.py        the load tools a cross-check can drive, and the rate of the server's own count
tlsfigures.py   a TLS point's figures from loadgen's `tls` object, and the handshake figures a report reads

May import: paths, model, fairness, saturation, formatting, catalog.
Hands out the warm-up rule, the sweep, the merge, the fingerprint's normal form, the tool table and the TLS figures to
run, cluster, crosscheck (which apply them) and results, exporters (which read them).
"""
