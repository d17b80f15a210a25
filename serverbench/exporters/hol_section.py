"""The head-of-line workload's section (issue 48), shared by Markdown and HTML: one row per server with the light
requests' p99 alone and beside the heavy ones, the ratio and verdict (results/noisy.py's rules), the row's
declared `cpu_work` and the server CPU each heavy request cost; then one row per concurrency model with the
median ratio. Figures from GroupFigures only (the quiet twin's group and the heavy point's group)."""
from __future__ import annotations

import statistics
from typing import Any

from ..results.formatting import fmt_us
from ..results.noisy import verdict_text
from . import noisy_section

INTRO = ("Light requests at a fixed rate alone (the quiet twin) and, in the same server start, with heavy "
         "/compress?kb=1024 requests mixed in on connections of their own. The light p99 is over every due light "
         "request; the ratio is beside-heavy ÷ alone within each repetition, the median over the repetitions; "
         "server CPU per heavy request is the server's CPU per second beside the heavy class minus its quiet "
         "twin's, over the heavy requests served per second. cpu_work is what the row declares (SPEC.md, CPU work): "
         "inline on the thread or loop that serves the request, or moved off it.")
MODEL_INTRO = ("Per concurrency model: the median over its rows of the light p99 ratio and of the server CPU per "
               "heavy request, and how many rows got each verdict.")
HEADERS = ["server", "model", "cpu_work", "light p99 alone", "light p99 beside heavy", "ratio", "verdict",
           "server CPU per heavy request", "heavy p99"]
MODEL_HEADERS = ["model", "rows", "median light p99 ratio", "median server CPU per heavy request", "verdicts"]


def _heavy_groups(wl: Any) -> list[tuple[Any, Any | None]]:
    """(heavy point's group, its quiet twin's group: the point it names, the same server) per server and, in a
    cores sweep, per count; in the quiet point's order, then by count."""
    by_label = {(pt.label, g.server): g for pt in wl.points for g in pt.groups}
    order = {s: i for i, s in enumerate(r[0] for r in noisy_section.rows(wl))}
    heavy = [g for pt in wl.points for g in pt.groups if g.figures.noise.noise_shape == "heavy"]
    heavy.sort(key=lambda g: (order.get(g.server, len(order)), g.figures.cores.server_cores or 0))
    return [(g, by_label.get((g.figures.noise.noise_twin, g.server))) for g in heavy]


def swept(wl: Any) -> bool:
    """Whether the workload's heavy points ran at several server core counts (a cores sweep)."""
    return len({g.figures.cores.server_cores for g, _ in _heavy_groups(wl)}) > 1


def headers(wl: Any) -> list[str]:
    return HEADERS[:2] + ["server cores"] + HEADERS[2:] if swept(wl) else HEADERS


def _cpu_work(g: Any) -> str:
    c = (g.info or {}).get("choices") or {}
    return str(c.get("cpu_work") or "not declared")


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f} ms"


def rows(wl: Any) -> list[list[str]]:
    out = []
    for g, q in _heavy_groups(wl):
        n = g.figures.noise
        alone = q.median(lambda m: m.latency.p99_us) if q is not None and q.ok else None
        beside = g.median(lambda m: m.latency.p99_us) if g.ok else None
        ratio = f"{n.noise_p99_ratio:.2f}" if n.noise_p99_ratio is not None else "—"
        verdict = verdict_text(n) or ("not judged (no result)" if not g.ok else "not judged")
        k = g.figures.cores.server_cores
        cores = [f"{k}{' ⚠ shared a CPU with the load generator' if g.figures.cores.cpu_overlap else ''}"] \
            if swept(wl) else []
        out.append([g.server, g.model, *cores, _cpu_work(g), fmt_us(alone), fmt_us(beside), ratio, verdict,
                    _ms(n.noise_heavy_cpu_ms), fmt_us(n.noise_heavy_p99_us)])
    return out


def lines(wl: Any) -> list[tuple[str, str, list[tuple[int, float, bool]]]]:
    """The cores chart's data: per server (model), its (cores, light p99 ratio, shared a CPU) by count."""
    out: dict[str, tuple[str, list[tuple[int, float, bool]]]] = {}
    for g, _ in _heavy_groups(wl):
        k, ratio = g.figures.cores.server_cores, g.figures.noise.noise_p99_ratio
        if k is not None and ratio is not None:
            out.setdefault(g.server, (g.model, []))[1].append((k, ratio, g.figures.cores.cpu_overlap))
    return [(s, m, sorted(pts)) for s, (m, pts) in out.items()]


def model_rows(wl: Any) -> list[list[str]]:
    """Per model (and count, in a sweep): the median light p99 ratio and server CPU per heavy request."""
    by: dict[str, list[Any]] = {}
    for g, _ in _heavy_groups(wl):
        k = g.figures.cores.server_cores
        by.setdefault(f"{g.model} at {k} cores" if swept(wl) else g.model, []).append(g.figures.noise)
    out = []
    for model, ns in sorted(by.items()):
        ratios = [n.noise_p99_ratio for n in ns if n.noise_p99_ratio is not None]
        cpu = [n.noise_heavy_cpu_ms for n in ns if n.noise_heavy_cpu_ms is not None]
        verdicts = [n.noise_verdict for n in ns if n.noise_verdict]
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts))
        out.append([model, str(len(ns)), f"{statistics.median(ratios):.2f}" if ratios else "—",
                    _ms(statistics.median(cpu) if cpu else None), counts or "not judged"])
    return out


__all__ = ["INTRO", "MODEL_INTRO", "HEADERS", "MODEL_HEADERS", "headers", "rows", "model_rows", "swept", "lines"]
