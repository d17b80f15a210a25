"""The cost-of-ownership view of a run: each server's latest profile beside its throughput.

Read by the HTML and Markdown exporters and the cost charts; the figures are the stored
`ServerProfile`s (aggregate.RunResults.profiles) and the run's own aggregated groups.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..results.aggregate import Group, RunResults
from ..catalog.manifests import MODELS
from ..store import ServerProfile

# The throughput the trade-off charts plot: the run's prantl-wrk requests/s (successful, median).
THROUGHPUT_WORKLOAD = "prantl-wrk"


@dataclass
class CostRow:
    server: str
    language: str
    model: str
    profile: ServerProfile
    rps: float | None  # THROUGHPUT_WORKLOAD in this run; None when not measured here
    steady_s: float | None = None  # this run's time to a steady rate on a fresh start (warmup.py)
    not_steady: bool = False

    @property
    def rss_per_1000_mib(self) -> float | None:
        r = self.profile.rss_per_connection_bytes
        return None if r is None else 1000 * r / 2**20


def _model_order(model: str) -> int:
    return MODELS.index(model) if model in MODELS else len(MODELS)


def _throughput(groups: list[Group]) -> float | None:
    """The median successful rps of the workload's heaviest (last) point with a result."""
    measured = [g for g in groups if g.workload == THROUGHPUT_WORKLOAD and g.rps is not None]
    return measured[-1].rps.median if measured and measured[-1].rps else None


def _steady(groups: list[Group]) -> tuple[float | None, bool]:
    """(time to steady, not steady) of the first group of the run warmed to steady state
    (the throughput workload's first when it was run): what a new instance pays before full speed."""
    warmed = [g for g in groups if any(c.metrics.warmup.warmup_steady is not None for c in g.ok)]
    warmed.sort(key=lambda g: g.workload != THROUGHPUT_WORKLOAD)
    if not warmed:
        return None, False
    return warmed[0].figures.warmup.steady_s, warmed[0].not_steady


def cost_rows(results: RunResults) -> list[CostRow]:
    """One row per server of the run that has a profile, grouped by concurrency model."""
    by_server: dict[str, list[Group]] = {}
    for g in results.groups:
        by_server.setdefault(g.server, []).append(g)
    rows = []
    for server, profile in results.profiles.items():
        gs = by_server.get(server, [])
        first = gs[0] if gs else None
        rows.append(CostRow(server, first.language if first else "", first.model if first else "unknown",
                            profile, _throughput(gs), *_steady(gs)))
    return sorted(rows, key=lambda r: (_model_order(r.model), r.model, r.server))


def by_model(rows: list[CostRow]) -> list[tuple[str, list[CostRow]]]:
    out: dict[str, list[CostRow]] = {}
    for r in rows:
        out.setdefault(r.model, []).append(r)
    return list(out.items())


def cold_cell(p: ServerProfile) -> str:
    """Cold build seconds, with the download step when it was timed apart."""
    if p.build_cold_s is None:
        return "—"
    text = f"{p.build_cold_s:,.1f}"
    if p.build_download_s is not None:
        text += f" (+{p.build_download_s:,.1f} download)"
    elif p.build_cold_includes_download:
        text += " (download included)"
    return text


def _mib(b: float | None, digits: int = 1) -> str:
    return "—" if b is None else f"{b / 2**20:,.{digits}f}"


def _num(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


COLUMNS = ["model", "server", "language", "code lines (own + shared)", "direct deps", "Debian packages",
           "cold build s", "warm build s", "artifact MiB", "artifact", "runtime needed", "start-up ms",
           "idle RSS MiB", "RSS per 1,000 idle conns MiB", "time to steady s", f"{THROUGHPUT_WORKLOAD} req/s",
           "profiled"]


def table(rows: list[CostRow]) -> list[list[str]]:
    """The cost table's cells (COLUMNS), grouped by model: the model named on its first row."""
    out = []
    for model, rs in by_model(rows):
        for i, r in enumerate(rs):
            p = r.profile
            lines = "—" if p.source_lines is None else (
                f"{p.source_lines:,}" + (f" ({p.own_source_lines:,} + {p.shared_source_lines:,})"
                                         if p.shared_source_lines else ""))
            deps = _num(p.dependencies) + (f" ({p.dependency_manifest})" if p.dependency_manifest else "")
            points = p.rss_slope_points or [lv.held for lv in p.rss_levels]
            between = " → ".join("idle" if n == 0 else f"{n:,}" for n in points)
            per_1000 = _num(r.rss_per_1000_mib, 2) + (f" ({between})" if between and r.rss_per_1000_mib is not None
                                                      else "")
            out.append([model if i == 0 else "", r.server, r.language, lines, deps, str(len(p.system_packages)),
                        cold_cell(p), _num(p.build_warm_s, 1), _mib(p.artifact_bytes, 2), p.artifact_kind or "—",
                        p.runtime_needed or "—", _num(p.startup_ms, 1), _mib(p.idle_rss_bytes),
                        per_1000, "not steady" if r.not_steady else _num(r.steady_s), _num(r.rps),
                        p.measured_at[:16].replace("T", " ")])
    return out


def problems(rows: list[CostRow]) -> list[str]:
    return [f"{r.server}: {e}" for r in rows for e in r.profile.errors]


NOTE = ("Code lines count code only (pygount): blank and comment lines, lock files, generated files and "
        "server.toml are left out; shared code is what the row declares in `shares`. Direct deps come from "
        "the row's language manifest; rows that get their libraries from Debian packages count them under "
        "Debian packages (which also holds the toolchain). Cold build: empty caches in a copy of the row "
        "(dependency download timed apart where the tool has a step for it); warm build: the build command "
        "again with everything built. Start-up: process start to the first 200 on GET /, median of the starts. "
        "Memory: RSS of the whole process tree 2 s after ready, and per connection the slope between the two "
        "idle keep-alive connection levels (bounded models only up to their max_connections); kernel socket "
        "buffers are not in RSS. Time to steady: this run's seconds of load on a fresh start until the rate "
        "was steady (the warm-up section), what every new instance of an autoscaled service pays. Start-up and build times vary with whatever else the machine is running.")


__all__ = ["CostRow", "cost_rows", "by_model", "cold_cell", "table", "problems", "COLUMNS", "NOTE",
           "THROUGHPUT_WORKLOAD"]
