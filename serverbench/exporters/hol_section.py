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
    """(heavy point's group, its quiet twin's group) per server, in the quiet point's order."""
    by = {g.server: g for pt in wl.points for g in pt.groups if g.figures.noise.noise_shape == "heavy"}
    order = [r[0] for r in noisy_section.rows(wl)]
    return [(by[s], noisy_section.twin_group(wl, s)) for s in order if s in by]


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
        out.append([g.server, g.model, _cpu_work(g), fmt_us(alone), fmt_us(beside), ratio, verdict,
                    _ms(n.noise_heavy_cpu_ms), fmt_us(n.noise_heavy_p99_us)])
    return out


def model_rows(wl: Any) -> list[list[str]]:
    by: dict[str, list[Any]] = {}
    for g, _ in _heavy_groups(wl):
        by.setdefault(g.model, []).append(g.figures.noise)
    out = []
    for model, ns in sorted(by.items()):
        ratios = [n.noise_p99_ratio for n in ns if n.noise_p99_ratio is not None]
        cpu = [n.noise_heavy_cpu_ms for n in ns if n.noise_heavy_cpu_ms is not None]
        verdicts = [n.noise_verdict for n in ns if n.noise_verdict]
        counts = ", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts))
        out.append([model, str(len(ns)), f"{statistics.median(ratios):.2f}" if ratios else "—",
                    _ms(statistics.median(cpu) if cpu else None), counts or "not judged"])
    return out


__all__ = ["INTRO", "MODEL_INTRO", "HEADERS", "MODEL_HEADERS", "rows", "model_rows"]
