"""`serverbench profile`: what each contestant costs to build, ship and run idle.

One `ServerProfile` per contestant, stored with its folder hash (store.record_profile):
source lines (code_lines), direct dependencies (dependencies), cold and warm build (build_cost),
the artifact (artifact), start-up and idle memory (idle_cost). A step that fails leaves its
figures None and one line in `errors`; the other steps still run. A profile without a cold build
(`--no-cold`) keeps the cold figures of the latest earlier profile of the same code; with
`only_changed` (make bench) a row whose latest profile is complete and of the same code is not
measured again.
"""
from __future__ import annotations

import os
import statistics
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ..catalog import build, doctor
from ..processes import supervisor
from .artifact import measure_artifact
from .build_cost import cold_build, warm_build
from ..catalog.manifests import Manifest
from .code_lines import count_lines
from .dependencies import ManifestError, direct_dependencies
from .idle_cost import LEVELS, Startup, connection_levels, measure_memory, measure_startup
from ..store import ServerProfile
from ..store import Store, now_iso

DEFAULT_STARTS = 5


@dataclass
class ProfileOptions:
    cold: bool = True
    # `make bench` (quick) skips the warm rebuild: its build step has just built every row, and
    # rebuilding all 32 took 132 s of its 32 min (crystal alone 62 s); `serverbench profile` keeps it
    warm: bool = True
    starts: int = DEFAULT_STARTS
    levels: tuple[int, ...] = LEVELS
    server_cpus: list[int] = field(default_factory=list)
    client_cpus: list[int] = field(default_factory=list)
    workers: int | None = None
    ready_timeout: float = 60.0
    # keep a row's latest profile when it is of the same code and complete (make bench)
    only_changed: bool = False
    # start-up times (ms) a run already measured per row (idle_cost.startups_of): `make bench` takes a
    # row's start-up from its run's starts instead of starting it again
    startups: dict[str, list[float]] = field(default_factory=dict)


def _static(m: Manifest, p: ServerProfile) -> None:
    lines = count_lines(m)
    p.source_lines, p.own_source_lines, p.shared_source_lines = lines.total, lines.own, lines.shared
    p.source_files, p.source_lines_by_language = lines.files, lines.by_language
    try:
        deps = direct_dependencies(m)
        p.dependencies, p.dependency_names, p.dependency_manifest = deps.count, deps.names, deps.manifest
        p.system_packages = deps.system_packages
    except ManifestError as e:
        p.errors.append(str(e))


def _carry_cold(p: ServerProfile, previous: ServerProfile | None) -> None:
    """Keep an earlier cold build of the same code (nothing lost that was already measured)."""
    if previous is None or previous.build_cold_s is None or previous.folder_hash != p.folder_hash:
        return
    p.build_cold_s, p.build_download_s = previous.build_cold_s, previous.build_download_s
    p.build_cold_includes_download = previous.build_cold_includes_download
    p.build_cold_at = previous.build_cold_at or previous.measured_at


def _carry_warm(p: ServerProfile, previous: ServerProfile | None) -> None:
    """Keep an earlier warm rebuild of the same code when this profile skips it."""
    if previous is not None and previous.build_warm_s is not None and previous.folder_hash == p.folder_hash:
        p.build_warm_s = previous.build_warm_s


@contextmanager
def _harness_on(cpus: list[int]) -> Iterator[None]:
    """The harness (probes, sampler) on the client CPUs while a server runs, as in a run; builds
    before and after keep the whole machine."""
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpus) or own)
    try:
        yield
    finally:
        os.sched_setaffinity(0, own)


def profile_server(m: Manifest, opts: ProfileOptions, previous: ServerProfile | None = None,
                   on_step: Callable[[str], None] = lambda _: None) -> ServerProfile:
    """Measure one contestant (its toolchain must be available for anything beyond the source)."""
    p = ServerProfile(server=m.id, measured_at=now_iso())
    on_step(f"{m.id}: source lines and dependencies")
    _static(m, p)
    avail = doctor.check(m)
    if not avail.available:
        p.errors.append(f"toolchain unavailable ({avail.reason}); only source and dependencies measured")
        p.folder_hash = build.folder_hash(m)
        return p
    if opts.warm:
        on_step(f"{m.id}: warm build")
        warm = warm_build(m)
        p.build_warm_s = None if warm.seconds is None else round(warm.seconds, 3)
        if warm.error:
            p.errors.append(warm.error)
            p.folder_hash = build.folder_hash(m)
            return p  # nothing to ship or start
    p.folder_hash = build.folder_hash(m)
    if not opts.warm:
        if not build.is_built(m):
            p.errors.append("not built (run `serverbench build`); warm build skipped, so nothing to start")
            return p
        _carry_warm(p, previous)
    art = measure_artifact(m)
    p.artifact_bytes, p.artifact_kind, p.artifact_paths, p.runtime_needed = art.bytes, art.kind, art.paths, art.runtime
    if opts.cold and m.build.strip():
        on_step(f"{m.id}: cold build (empty caches; slow)")
        cold = cold_build(m)
        p.build_cold_s = None if cold.seconds is None else round(cold.seconds, 3)
        p.build_download_s = None if cold.download_s is None else round(cold.download_s, 3)
        # without a download step of its own, a row with dependencies downloads them inside the build
        p.build_cold_includes_download = (cold.includes_download and bool(p.dependencies)
                                          if cold.seconds is not None else None)
        p.build_cold_at = p.measured_at if cold.seconds is not None else None
        if cold.error:
            p.errors.append(cold.error)
    elif not opts.cold:
        _carry_cold(p, previous)
    p.workers = opts.workers or m.workers or len(opts.server_cpus or supervisor.online_cpus())
    p.bound = m.bound(p.workers)
    if opts.startups.get(m.id):
        st = Startup(statistics.median(opts.startups[m.id]), list(opts.startups[m.id]))
        on_step(f"{m.id}: start-up from the run's {len(st.runs_ms)} starts")
    else:
        on_step(f"{m.id}: start-up × {opts.starts}")
        with _harness_on(opts.client_cpus):
            st = measure_startup(m, starts=opts.starts, cpus=opts.server_cpus or None, workers=p.workers,
                                 ready_timeout=opts.ready_timeout)
    p.startup_ms, p.startup_runs_ms = st.median_ms, st.runs_ms
    if st.error:
        p.errors.append(st.error)
        return p
    levels = connection_levels(opts.levels, p.bound)
    on_step(f"{m.id}: memory idle and with {', '.join(f'{n:,}' for n in levels)} idle connections")
    with _harness_on(opts.client_cpus):
        mem = measure_memory(m, levels=levels, server_cpus=opts.server_cpus or None,
                             client_cpus=opts.client_cpus or None, workers=p.workers,
                             ready_timeout=opts.ready_timeout)
    p.idle_rss_bytes, p.rss_levels = mem.idle_rss_bytes, mem.levels
    p.rss_per_connection_bytes = None if mem.per_connection_bytes is None else round(mem.per_connection_bytes, 1)
    p.rss_slope_points = mem.slope_points
    p.errors += mem.errors
    return p


def profile_servers(ms: list[Manifest], store: Store, opts: ProfileOptions,
                    on_step: Callable[[str], None] = lambda _: None) -> Iterator[ServerProfile]:
    """Profile each server in turn, storing each profile as soon as it is measured."""
    if not opts.server_cpus or not opts.client_cpus:
        s_cpus, c_cpus = supervisor.default_cpu_split()
        opts.server_cpus = opts.server_cpus or s_cpus
        opts.client_cpus = opts.client_cpus or c_cpus
    for m in ms:
        previous = store.latest_profile(m.id)
        if opts.only_changed and _still_valid(m, previous, opts.cold, opts.warm):
            on_step(f"{m.id}: unchanged since its profile of {previous.measured_at[:16]}; kept")  # type: ignore[union-attr]
            yield previous  # type: ignore[misc]
            continue
        p = profile_server(m, opts, previous, on_step)
        store.record_profile(p)
        yield p


def _still_valid(m: Manifest, previous: ServerProfile | None, cold: bool, warm: bool = True) -> bool:
    """A complete profile of the code as it is now: every runtime figure there (notes in `errors`
    about lost idle connections are findings, not gaps), a cold figure when one is asked for."""
    return (previous is not None and previous.folder_hash == build.folder_hash(m)
            and None not in (previous.startup_ms, previous.idle_rss_bytes, previous.rss_per_connection_bytes)
            and (not warm or previous.build_warm_s is not None or not m.build.strip())
            and (not cold or previous.build_cold_s is not None or not m.build.strip()))


__all__ = ["ProfileOptions", "profile_server", "profile_servers", "DEFAULT_STARTS"]
