"""The client-bound rule, written once: measuring applies it to each load as it ends, reporting to
figures stored with a run (a peer tool's busiest 0.2 s), so it lives below both.

A load generator can use at most the cores it was given (loadgen: `min(threads, client CPUs)`; a
peer tool: its threads, or one for a single-threaded tool). It is *saturated* when its CPU time over
wall time reaches 90 % of those cores: the server's figures may then be the client's limit.
"""
from __future__ import annotations

SATURATION = 0.90


def saturated(cpu_percent: float, cores: int) -> bool:
    """Whether a client that used `cpu_percent` (100 = one core) of `cores` usable cores was
    the bottleneck."""
    return cpu_percent >= SATURATION * 100.0 * cores


__all__ = ["SATURATION", "saturated"]
