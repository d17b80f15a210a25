"""The noisy workload's section, shared by Markdown and HTML: one row per server, one column per
noise shape (its legitimate p99 and rate as ratios of the quiet twin, and the verdict), the rules
beside it, then how each server ended the noise connections. Figures from GroupFigures only."""
from __future__ import annotations

from typing import Any

from ..results.formatting import fmt_num, fmt_us
from ..results.noisy import INTRO, RULES, verdict_text
from ..rules.agreement import SPLIT

KIND = "noisy"
ENDED_INTRO = ("How each server ended the noise connections (medians over the repetitions of loadgen's counters): "
               "connections held at the peak, 4xx answers (garbage), and how the ones that ended did — closed by the "
               "server, reset, given up by the client after 2 s without an answer (garbage), or still open at the end.")


def column(g: Any) -> str | None:
    """A noise group's column: its shape, and in a cores sweep the count ("heavy at 2 cores"): the same
    shape at two counts is two columns."""
    shape, k = g.figures.noise.noise_shape, g.figures.cores.server_cores
    return f"{shape} at {k} cores" if shape and k is not None else shape


def shapes(wl: Any) -> list[str]:
    """The noise shapes (columns) of a noisy workload, in the order of its points."""
    out: list[str] = []
    for pt in wl.points:
        for g in pt.groups:
            s = column(g)
            if s and s not in out:
                out.append(s)
    return out


def twin_group(wl: Any, server: str) -> Any | None:
    """The quiet twin's group of `server` (the point every noise point of it names)."""
    twins = {g.figures.noise.noise_twin for pt in wl.points for g in pt.groups if g.figures.noise.noise_twin}
    for pt in wl.points:
        if pt.label in twins:
            return next((g for g in pt.groups if g.server == server), None)
    return None


def _by_shape(wl: Any) -> dict[tuple[str, str], Any]:
    return {(g.server, col): g for pt in wl.points for g in pt.groups if (col := column(g))}


def rules() -> list[str]:
    return [INTRO] + [f"{v}: {text}" for v, text in RULES]


def headers(wl: Any) -> list[str]:
    return ["server", "model", "quiet p99 (median)", "quiet req/s"] + [f"{s}: p99 ×, rate × → verdict" for s in shapes(wl)]


def _effect(g: Any | None) -> str:
    if g is None:
        return "—"
    f = g.figures
    if f.noise.noise_verdict is None:
        return "not judged (no result" + (")" if g.throughput is not None else f" — {_status(g)})")
    p99 = f"{f.noise.noise_p99_ratio:.2f}" if f.noise.noise_p99_ratio is not None else "—"
    rate = f"{f.noise.noise_rate_ratio:.2f}" if f.noise.noise_rate_ratio is not None else "—"
    return f"{p99}, {rate} → {verdict_text(f.noise)}"


def _status(g: Any) -> str:
    return g.bad[0].status if g.bad else "no data"


def rows(wl: Any) -> list[list[str]]:
    """One row per server (in the quiet point's ranked order), one cell per noise shape."""
    by = _by_shape(wl)
    servers = sorted({g.server for pt in wl.points for g in pt.groups})
    quiet = {s: twin_group(wl, s) for s in servers}
    servers.sort(key=lambda s: (quiet[s] is None or quiet[s].place is None, quiet[s].place if quiet[s] else 0, s))
    out = []
    for s in servers:
        q = quiet[s]
        model = next(g.model for pt in wl.points for g in pt.groups if g.server == s)
        p99 = fmt_us(q.median(lambda m: m.latency.p99_us)) if q is not None and q.throughput else "—"
        out.append([s, model, p99, _quiet_rate(q)]
                   + [_effect(by.get((s, shape))) for shape in shapes(wl)])
    return out


def _quiet_rate(q: Any | None) -> str:
    if q is None or not q.rps:
        return "—"
    return fmt_num(q.rps.median) + (f" ⚠ did not hold {fmt_num(q.target_rate)}" if q.held is False else "")


def ended_headers(wl: Any) -> list[str]:
    return ["server"] + shapes(wl)


def _ended(g: Any | None) -> str:
    if g is None or g.figures.noise.noise_held_peak is None:
        return "—"
    f = g.figures
    parts = [f"held {fmt_num(f.noise.noise_held_peak)}"]
    for label, v in (("4xx", f.noise.noise_4xx), ("closed", f.noise.noise_closed), ("reset", f.noise.noise_reset),
                     ("gave up", f.noise.noise_timeout), ("open at end", f.noise.noise_open_at_end)):
        if v:
            parts.append(f"{label} {fmt_num(v)}")
    return " · ".join(parts)


def ended_rows(wl: Any) -> list[list[str]]:
    by = _by_shape(wl)
    servers = [r[0] for r in rows(wl)]
    return [[s] + [_ended(by.get((s, shape))) for shape in shapes(wl)] for s in servers]


def ratios(wl: Any) -> dict[str, dict[str, tuple[float | None, str | None]]]:
    """shape → server → (p99 ratio to the quiet twin, verdict): the chart's data."""
    by = _by_shape(wl)
    return {shape: {s: (g.figures.noise.noise_p99_ratio, verdict_text(g.figures.noise))
                    for (s, sh), g in by.items() if sh == shape}
            for shape in shapes(wl)}


def verdict_counts(wl: Any) -> str:
    """One line: how many rows got each verdict per shape (the section's summary), split rows apart."""
    by = _by_shape(wl)
    parts = []
    for shape in shapes(wl):
        got = [g.figures.noise.noise_verdict for (s, sh), g in by.items()
               if sh == shape and g.figures.noise.noise_verdict]
        counts = ", ".join(f"{got.count(v)} {v}" for v in [v for v, _ in RULES] + [SPLIT] if got.count(v))
        parts.append(f"{shape}: {counts or 'not judged'}")
    return "; ".join(parts)
