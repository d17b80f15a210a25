"""Where a run's server and load ran: the sentence every report opens with.

A plain run pins both to this machine's CPUs; `--cluster` splits the load over Dask workers'
shards (their hosts and the largest start skew are read from the stored shards);
`--server-on-cluster` runs the server on the cluster's `server` worker; `--target` measures a
server serverbench did not start. Markdown and HTML say it with the same words.
"""
from __future__ import annotations

from typing import Any

from ..results.aggregate import RunResults
from ..rules.fingerprint import normalize
from ..results.formatting import cpus


def _shards(results: RunResults) -> tuple[set[str], int, float | None]:
    """(shard hosts, most shards in a cell, largest start skew in ms) over the run's measured cells."""
    hosts: set[str] = set()
    most, skew = 0, None
    for g in results.groups:
        for c in g.ok:
            m = c.metrics
            if not m.client.shards:
                continue
            most = max(most, m.client.shards)
            if m.client.shard_start_skew_ms is not None:
                skew = max(skew or 0.0, m.client.shard_start_skew_ms)
            extra = (c.loadgen.model_extra or {}) if c.loadgen is not None else {}
            hosts |= {s.get("host") for s in extra.get("shards") or [] if s.get("host")}
    return hosts, most, skew


def describe(run: Any, results: RunResults) -> str:
    """One sentence: the server's CPUs (or where it ran) and the load generator's."""
    fp = normalize(run.fingerprint)
    opts = run.options or {}
    cluster = opts.get("cluster")
    local = bool(cluster) and str(cluster).startswith("local:")
    if opts.get("target"):
        server = f"server at {opts['target']}, not started by serverbench (no server CPU or memory figures)"
    elif opts.get("server_on_cluster"):
        hosts = sorted({c.metrics.client.server_host for g in results.groups for c in g.ok
                        if c.metrics.client.server_host})
        where = "this machine" if local else ", ".join(hosts) or "?"
        server = f"server on the Dask worker with the resource server ({where}), CPU {cpus(fp.get('server_cpus'))}"
    else:
        server = f"server on CPU {cpus(fp.get('server_cpus'))}"
    if not cluster:
        return f"{server}, load generator on CPU {cpus(fp.get('client_cpus'))}"
    hosts, most, skew = _shards(results)
    on = f"this machine's CPU {cpus(fp.get('client_cpus'))}" if local else ", ".join(sorted(hosts)) or "?"
    skewed = f", start skew at most {skew:.1f} ms" if skew is not None else ""
    count = f"{most} loadgen shard{'s' if most != 1 else ''}" if most else "loadgen shards"
    return f"{server}; load from {count} on Dask ({cluster}: {on}{skewed})"


__all__ = ["describe"]
