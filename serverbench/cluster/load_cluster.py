"""Load shards on Dask distributed workers: one point's load split over N loadgen processes.

`--cluster local:N` starts a LocalCluster of N worker processes on 127.0.0.1 (they inherit
the harness's affinity, i.e. the client CPUs); `--cluster tcp://HOST:PORT` (or tls://) joins an
existing scheduler. With `--server-on-cluster` one more worker (for `local:N`), or the worker
started with the resource `server`, holds the server (remote_server.py) and runs no shard.
Workers started with the resource `loadgen` run the shards, one each: shard
i of N gets `--shard i/N` and one `--start-at` instant for all, so their measured windows line
up; the reports are merged exactly by `shards.merge`. Dask is imported only here, and only when
a cluster is used, so the CLI stays fast without it.
"""
from __future__ import annotations

import os
import socket
import time
from typing import Any

from ..rules import shards
from ..processes.loadgen import LoadgenError, LoadgenResult, client_cores, deadline_for, run_loadgen
from ..rules.saturation import saturated
from ..model import LoadgenReport
from ..catalog.workloads import Point

# Time from submitting the shards to their common start: dispatch to a worker takes ms on a
# LAN; the margin keeps a busy worker from missing the instant.
LEAD_S = 1.0
WORKER_WAIT_S = 30.0
RESOURCE = "loadgen"
SERVER = "server"


def check_spec(spec: str, tls: dict[str, str] | None = None) -> None:
    """ValueError (one line, naming the fix) unless `spec` is local:N or a scheduler address."""
    if spec.startswith("local:"):
        n = spec.split(":", 1)[1]
        if not n.isdigit() or int(n) < 1:
            raise ValueError(f"{spec}: give local:N with N >= 1, e.g. local:2")
        if tls:
            raise ValueError("a local cluster listens on 127.0.0.1 only; TLS options are for a remote scheduler")
        return
    if not spec.startswith(("tcp://", "tls://")) or ":" not in spec.split("://", 1)[1]:
        raise ValueError(f"{spec}: give local:N or a Dask scheduler address tcp://HOST:PORT (tls://HOST:PORT)")
    if tls and not spec.startswith("tls://"):
        raise ValueError(f"{spec}: TLS options need a tls:// scheduler address")
    if spec.startswith("tls://") and not (tls and {"ca_file", "cert", "key"} <= tls.keys()):
        raise ValueError("a tls:// scheduler needs --cluster-tls-ca, --cluster-tls-cert and --cluster-tls-key")


def security(tls: dict[str, str] | None) -> Any:
    """Dask's Security for a TLS scheduler (mutual TLS, encryption required); None without TLS."""
    if not tls:
        return None
    from distributed.security import Security
    return Security(tls_ca_file=tls["ca_file"], tls_client_cert=tls["cert"], tls_client_key=tls["key"],
                    require_encryption=True)


def run_shard(url: str, point: Point, default_path: str, rate: float | None, index: int, count: int,
              start_at: float, client_cpus: list[int] | None) -> dict[str, Any]:
    """On a worker: run shard `index` of `count` and return its report with where and how it ran."""
    late = time.time() - start_at
    if late > -0.05:
        raise LoadgenError(f"shard {index}/{count} reached its worker {late:.3f}s after the planned start "
                           "(a worker was replaced mid-cell?)")
    waited = start_at - time.time()
    r = run_loadgen(url, point, default_path=default_path, client_cpus=client_cpus, rate=rate,
                    shard=(index, count), start_at=start_at, time_limit=deadline_for(point) + LEAD_S)
    # CPU share over the time the shard ran load, not the wait for the common start
    active = max(r.wall_s - waited, 1e-3)
    pct = 100.0 * r.client_cpu_s / active
    rep = r.report.dump()
    return {"index": index, "host": socket.gethostname(), "pid": os.getpid(), "started_at": rep.get("started_at"),
            "start_skew_basis_s": shards.actual_start_s(rep), "wall_s": round(r.wall_s, 3),
            "client_cpu_s": round(r.client_cpu_s, 3), "client_cpu_percent": round(pct, 1),
            "client_saturated": saturated(pct, r.client_cores), "client_cores": r.client_cores,
            "host_cpus": client_cores(client_cpus), "loadgen": rep}


def _warm() -> bool:
    """On a worker: import what a shard needs, so the first shard is not late for its start."""
    from ..processes import loadgen
    from ..rules import shards as _shards
    from ..catalog import workloads  # noqa: F401  (imports are the point)
    return True


class LoadCluster:
    """A Dask client (and, for `local:N`, its LocalCluster) that runs sharded loadgen points."""

    def __init__(self, spec: str, *, security: Any = None, server: bool = False) -> None:
        self.spec, self.security, self.with_server = spec, security, server
        self.local_workers: int | None = None
        self._cluster: Any = None
        self._client: Any = None
        self._hosts: dict[str, tuple[Any, Any]] = {}  # server id -> (future, actor): the future keeps it

    def start(self) -> "LoadCluster":
        import dask
        from distributed import Client, LocalCluster
        # the Security object stands for the three TLS files check_spec asks of the CLI
        check_spec(self.spec, dict.fromkeys(("ca_file", "cert", "key"), "given") if self.security is not None else None)
        if self.spec.startswith("local:"):
            n = int(self.spec.split(":", 1)[1])
            self.local_workers = n
            # a worker that dies fails its shard at once instead of being retried on another
            # worker after the common start instant has passed
            # --server-on-cluster: one more worker; it holds the server and runs no shard
            extra, res = (1, {RESOURCE: 1, SERVER: 1}) if self.with_server else (0, {RESOURCE: 1})
            # the scheduler serves HTTP even with its dashboard off (on 8787 unless told): no routes,
            # a free loopback port, so nothing collides with or is reachable beside the user's own
            with dask.config.set({"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.http.routes": []}):
                self._cluster = LocalCluster(n_workers=n + extra, threads_per_worker=1, processes=True,
                                             host="127.0.0.1", dashboard_address=None, resources=res,
                                             scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
            self._client = Client(self._cluster)
        else:
            self._client = Client(self.spec, security=self.security, timeout=WORKER_WAIT_S)
        return self

    def close(self) -> None:
        self._hosts.clear()  # releasing the futures releases the actors (their leases stop servers)
        for thing in (self._client, self._cluster):
            if thing is not None:
                try:
                    thing.close()
                except Exception:  # closing is best effort: the run's result is already stored
                    pass
        self._client = self._cluster = None

    def __enter__(self) -> "LoadCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def client(self) -> Any:
        return self._client

    def _workers(self, resource: str) -> list[str]:
        """Addresses of the workers that offer `resource`, in a stable order."""
        if self.local_workers:
            self._client.wait_for_workers(self.local_workers + self.with_server, timeout=WORKER_WAIT_S)
        info = self._client.scheduler_info(n_workers=-1)["workers"] if _takes_n_workers(self._client) \
            else self._client.scheduler_info()["workers"]
        return sorted(a for a, w in info.items() if (w.get("resources") or {}).get(resource, 0) >= 1)

    def server_worker(self) -> str:
        """The worker that holds the server: the first that offers the resource `server`."""
        out = self._workers(SERVER)
        if not out:
            raise LoadgenError(f"no Dask worker with the resource {SERVER} on {self.spec}; on the server machine "
                               f"start `dask worker ADDRESS --resources {SERVER}=1`")
        return out[0]

    def server_host(self, manifest: Any) -> Any:
        """The ServerHost actor for `manifest` on the server worker (one per server, kept for the run)."""
        held = self._hosts.get(manifest.id)
        if held is not None and getattr(held[1], "_address", None) not in self._workers(SERVER):
            del self._hosts[manifest.id]  # its worker died (and was restarted, or not): a new actor
        if manifest.id not in self._hosts:
            from .remote_server import ServerHost
            fut = self._client.submit(ServerHost, manifest, actor=True, workers=[self.server_worker()],
                                      allow_other_workers=False, key=f"server-host-{manifest.id}-{time.time():.6f}")
            self._hosts[manifest.id] = (fut, fut.result(timeout=WORKER_WAIT_S))
        return self._hosts[manifest.id][1]

    def server_cpus_online(self) -> list[int]:
        """The CPUs the server's worker may use (its machine's, minus any affinity it was given)."""
        from ..processes.supervisor import online_cpus
        addr = self.server_worker()
        return list(self._client.run(online_cpus, workers=[addr])[addr])

    def loaders(self) -> list[str]:
        """Addresses of the workers that offer the `loadgen` resource, in a stable order, the
        server's worker excluded."""
        out = self._workers(RESOURCE)
        if self.with_server:
            held = set(self._workers(SERVER)[:1])
            out = [a for a in out if a not in held]
        if not out:
            raise LoadgenError(f"no Dask worker with the resource {RESOURCE} on {self.spec}; start workers with "
                               f"`dask worker ADDRESS --resources {RESOURCE}=1`")
        # a new (or restarted) worker imports the harness first: seconds that must not eat the lead
        self._client.run(_warm, workers=out)
        return out

    def run(self, url: str, point: Point, *, default_path: str, client_cpus: list[int] | None,
            rate: float | None = None) -> LoadgenResult:
        """Run `point` as one shard per loadgen worker; the merged result (raises LoadgenError)."""
        from distributed import wait
        workers = self.loaders()
        n = len(workers)
        cpus = client_cpus if self.local_workers else None  # a remote worker uses its own machine
        start_at = time.time() + LEAD_S
        futures = [self._client.submit(run_shard, url, point, default_path, rate, i, n, start_at, cpus,
                                       workers=[addr], allow_other_workers=False, resources={RESOURCE: 1},
                                       pure=False, key=f"shard-{i}-of-{n}-{start_at:.6f}")
                   for i, addr in enumerate(workers)]
        limit = LEAD_S + deadline_for(point) + 60.0
        # wait for every shard, failed or not, so none still runs when the next point starts
        wait(futures, timeout=limit, return_when="ALL_COMPLETED")
        results, errors = [], []
        for i, (f, addr) in enumerate(zip(futures, workers)):
            try:
                results.append(f.result(timeout=1))
            except Exception as e:  # KilledWorker, LoadgenError, timeouts: the shard failed
                msg = str(e).splitlines()[0] if str(e) else type(e).__name__
                errors.append(f"shard {i}/{n} on {addr}: {type(e).__name__}: {msg}")
        if errors:
            for f in futures:
                f.cancel()
            raise LoadgenError("; ".join(errors))
        return merged_result(results)


def _takes_n_workers(client: Any) -> bool:
    import inspect
    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def merged_result(results: list[dict[str, Any]]) -> LoadgenResult:
    """One LoadgenResult from the shards' results: the merged report, with the shards inside it."""
    results = sorted(results, key=lambda r: r["index"])
    reports = [r["loadgen"] for r in results]
    merged = shards.merge(reports)
    skew = shards.start_skew_ms(reports)
    merged["shards"] = [{k: v for k, v in r.items() if k != "start_skew_basis_s"} for r in results]
    merged["start_skew_ms"] = skew
    report = LoadgenReport.parse(merged, "merged shards")
    cpu = sum(r["client_cpu_s"] for r in results)
    wall = max(r["wall_s"] for r in results)
    # shards on one machine share its CPUs (local:N shares the client CPUs): saturation is
    # judged per host, against the cores its shards could use together
    cores, bound = 0, any(r["client_saturated"] for r in results)
    for host in {r["host"] for r in results}:
        on = [r for r in results if r["host"] == host]
        c = min(sum(r["client_cores"] for r in on), min(r.get("host_cpus") or 1 for r in on))
        cores += c
        bound |= saturated(sum(r["client_cpu_percent"] for r in on), c)
    return LoadgenResult(report=report, args=[], wall_s=wall, client_cpu_s=cpu,
                         client_cpu_percent=sum(r["client_cpu_percent"] for r in results),
                         client_saturated=bound, client_cores=cores,
                         extra={"shards": len(results), "shard_start_skew_ms": skew})


__all__ = ["LoadCluster", "run_shard", "merged_result", "check_spec", "security", "LEAD_S"]
