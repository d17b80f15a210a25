"""Number formatting shared by the console and the human-readable exporters (HTML, Markdown)."""
from __future__ import annotations

from typing import Any


def fmt_us(us: float | None) -> str:
    if us is None:
        return "—"
    if us < 1000:
        return f"{us:.0f} µs"
    if us < 1_000_000:
        return f"{us / 1000:.3g} ms"
    return f"{us / 1e6:.3g} s"


def fmt_num(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def fmt_cpu(g: Any) -> str:
    """Server CPU of a group as 'mean % / user+sys seconds'."""
    pct, secs = g.median(lambda m: m.usage.cpu_percent), g.cpu_s
    if pct is None and secs is None:
        return "—"
    parts = [f"{pct:.0f} %" if pct is not None else None, f"{secs:.1f} s" if secs is not None else None]
    return " / ".join(p for p in parts if p)


def cpus(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v) or "?"
    return "?" if v is None else str(v)
